"""The text being written, kept on disk as it grows, so a crash, a power cut or a kill loses at most a second.

The window notes the whole text every frame; the journal writes it (atomically, fsynced: ``files.atomic_write``)
when it changed and at least ``interval`` seconds passed since the last write, and at once when the window
closes. Saving the text to a file marks it saved. At the next start, text that was never saved is moved to
``recovered-<time>.json`` beside the journal and offered back (``pending``) until the user restores or
discards it, so writing before answering never overwrites it. JSON files in the user data folder
(``DASHER_RNN_JOURNAL`` overrides the journal's path), readable by the user only. They are read with
``files.read_bounded``: a corrupt or oversized one is set aside, one that is not a regular file (a FIFO, a link
to a device) is ignored (the next write replaces it), and a lone surrogate in the text (a hand edit: JSON
can say ``"\\ud800"``, which no file can hold) becomes U+FFFD, and the entry says so.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from dasher_rnn.files import UnreadableFile, atomic_write, read_json, set_aside

log = logging.getLogger(__name__)

ENV_VAR = "DASHER_RNN_JOURNAL"
FORMAT = 1
MAX_BYTES = 64 << 20  # a journal larger than this is not text someone wrote by hand: set it aside
_SURROGATE = re.compile("[\ud800-\udfff]")  # JSON decoding pairs the halves that belong together: these are lone


def default_path() -> Path:
    override = os.environ.get(ENV_VAR)
    return Path(override).expanduser() if override else platformdirs.user_data_path("dasher-rnn") / "journal.json"


@dataclass(frozen=True)
class Entry:
    """Text found in the journal at start-up."""

    text: str
    saved: bool  # it was saved to a file (or discarded) after it was last changed
    updated: str  # local time of the last write, for the user
    repaired: str = ""  # what was changed in the text to make it usable, for the user ("" when nothing)


def sanitise(text: str) -> tuple[str, int]:
    """``text`` with each lone surrogate (which cannot be encoded, shown or typed) as U+FFFD, and how many."""
    return _SURROGATE.subn("\ufffd", text)


class Journal:
    def __init__(self, path: str | Path | None = None, interval: float = 1.0, clock=time.monotonic):
        self.path = Path(path) if path is not None else default_path()
        self.interval, self.clock = interval, clock
        self.notice: str | None = None  # what went wrong reading or writing it, for the status bar
        self._text, self._saved = "", True
        self._written = ("", True)
        self._last_write = -float("inf")
        last = self._read(self.path)
        if last is not None and last.text and not last.saved:
            try:
                stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{time.time_ns()}"
                os.replace(self.path, self.path.with_name(f"recovered-{stamp}.json"))
            except OSError as exc:
                self.notice = f"Could not keep the unsaved text of {self.path} apart ({exc.strerror or exc})"
        self._recovered = sorted(self.path.parent.glob("recovered-*.json")) if self.path.parent.is_dir() else []

    @property
    def pending(self) -> Entry | None:
        """Unsaved text from an earlier run, to offer back (the newest first; None when there is none)."""
        while self._recovered:
            entry = self._read(self._recovered[-1])
            if entry is not None and entry.text:
                return entry
            self._recovered.pop().unlink(missing_ok=True)
        return None

    def _read(self, path: Path) -> Entry | None:
        try:
            data = read_json(path, MAX_BYTES)
            if not (isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("text"), str)
                    and isinstance(data.get("saved"), bool)):
                raise ValueError("not a journal of format 1")
            text, lone = sanitise(data["text"])
            repaired = f"{lone} {'character' if lone == 1 else 'characters'} that no file can hold (lone " \
                       f"surrogates) {'is' if lone == 1 else 'are'} shown as \ufffd" if lone else ""
            if repaired:
                log.warning("journal %s: %s", path, repaired)
            return Entry(text, data["saved"], str(data.get("updated", ""))[:100], repaired)
        except FileNotFoundError:
            return None
        except UnreadableFile as exc:
            if path.is_file():  # too large: kept aside, as a corrupt one is
                self._set_aside(path, exc)
                return None
            self.notice = f"The journal of unsaved text is unusable ({exc}); it is ignored, and replaced by the next write."
            log.warning(self.notice)
        except (OSError, ValueError) as exc:  # BadFile (not UTF-8, not JSON, nested too deeply) is a ValueError
            self._set_aside(path, exc)
        return None

    def _set_aside(self, path: Path, exc: Exception) -> None:
        """A journal that cannot be read is kept aside, and the user is told where."""
        try:
            moved = set_aside(path)
            self.notice = f"The journal of unsaved text was unreadable ({exc}); it was kept as {moved}."
        except OSError as move_error:
            self.notice = f"The journal of unsaved text {path} is unreadable ({exc}; {move_error})."
        log.warning(self.notice)

    # -- from the window ---------------------------------------------------------------------
    def note(self, text: str) -> None:
        """The text now (called every frame): written when it changed and ``interval`` has passed."""
        if text != self._text:
            self._text, self._saved = text, False
        if (self._text, self._saved) != self._written and self.clock() - self._last_write >= self.interval:
            self.flush()

    def mark_saved(self, text: str) -> None:
        """``text`` was saved where the user can find it: nothing to offer back unless it changes."""
        self._text, self._saved = text, True
        self.flush()

    def resolve(self) -> None:
        """The user restored the pending text (the window shows it now, and the journal keeps it from here on)
        or discarded it: it is no longer offered."""
        self.flush()
        if self._recovered:
            self._recovered.pop().unlink(missing_ok=True)

    def flush(self) -> None:
        """Write now (when anything changed since the last write). A failure is kept in ``notice``; the text
        stays in memory and the next write tries again."""
        state = (self._text, self._saved)
        self._last_write = self.clock()
        if state == self._written:
            return
        record = {"format": FORMAT, "text": self._text, "saved": self._saved,
                  "updated": time.strftime("%Y-%m-%d %H:%M:%S")}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            atomic_write(self.path, json.dumps(record, ensure_ascii=False).encode("utf-8"), private=True)
        except OSError as exc:
            message = f"Could not keep the text safe in {self.path} ({exc.strerror or exc}); save it to a file"
            if message != self.notice:
                log.warning(message)
            self.notice = message
            return
        self._written, self.notice = state, None
