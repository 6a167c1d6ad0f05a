"""Progress of the long commands (``eval``, ``languages``, ``simulate``): tqdm's bar where stderr is a terminal, and
elsewhere (a log file, a pipe, CI) a plain line at least every few seconds while the work advances, so that no long
command is silent until it ends. Not the profile's record of a person's progress (``adapt/progress.py``)."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from tqdm import tqdm

LINE_EVERY_S = 5.0  # off a terminal: at most one line this often (tqdm's mininterval)


class _Lines:
    """A stream for tqdm off a terminal: each refresh a line of its own (tqdm redraws a line with carriage returns,
    which a log shows as one ever longer line)."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        line = text.replace("\r", "").strip("\n")
        if line.strip():  # a bar that is cleared (leave=False) writes blanks: nothing to show
            self.stream.write(line.rstrip() + "\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def progress_bar(enabled: bool = True, stream: TextIO | None = None, **kwargs: Any) -> tqdm:
    """A tqdm bar on ``stream`` (stderr): drawn on a terminal, a line every ``LINE_EVERY_S`` elsewhere; none when
    not ``enabled`` (``--no-progress``). ``kwargs`` go to tqdm (total, unit, desc...)."""
    stream = stream if stream is not None else sys.stderr
    if not enabled:
        return tqdm(disable=True, **kwargs)
    if stream.isatty():
        return tqdm(file=stream, **kwargs)
    return tqdm(file=_Lines(stream), mininterval=LINE_EVERY_S, ascii=True, ncols=100, **kwargs)
