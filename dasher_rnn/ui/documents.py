"""Where Save puts the text without asking: a timestamped file in the user's documents folder.

Save must work with a pointer alone (no file dialog to type into), so it writes at once into
``<documents>/dasher-rnn/`` (platformdirs' user documents folder; ``DASHER_RNN_DOCUMENTS`` overrides the
folder) under a name made from the time, and the status bar says where. Save As keeps the file dialog for
keyboard users.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import platformdirs

ENV_VAR = "DASHER_RNN_DOCUMENTS"
SUBFOLDER = "dasher-rnn"


def documents_folder() -> Path:
    """The folder Save writes into (not created here)."""
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override).expanduser()
    return platformdirs.user_documents_path() / SUBFOLDER


def timestamped_path(folder: Path, now: float | None = None) -> Path:
    """A new file name in ``folder`` from the local time (``dasher-2026-11-23_11-40-05.txt``); a second save
    within the same second gets ``-2``, ``-3``... rather than overwriting the first."""
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(now))
    path = folder / f"dasher-{stamp}.txt"
    n = 2
    while path.exists():
        path = folder / f"dasher-{stamp}-{n}.txt"
        n += 1
    return path
