"""A profile's record of progress: how each finished message was written, kept beside what the model learned.

One line of JSON per message in ``<profiles>/<name>/progress.jsonl``: when it was finished, its characters,
the seconds spent writing it, the net bits zoomed (about what the model's boxes made the text cost, so
bits per character falls as the model learns the person) and the characters backed out of. The window
appends a line when a message is finished (New message, Clear, closing); ``dasher-rnn stats`` and the
window's Progress view draw them. Nothing leaves the machine: the file is readable by the user only.

Appending is one ``files.append_line`` (written and fsynced; a line torn by a crash is skipped when
reading). The file stays bounded without losing the start of the story: past ``MAX_BYTES`` the older half
of the records is merged in pairs (totals kept, ``messages`` counting how many each line holds), and the
result replaces the file through ``files.atomic_write``.

The file is a user's to edit, copy or break, so reading it never raises and never waits: it is read with
``files.read_bounded`` (a regular file of at most ``MAX_READ_BYTES``), every number is range-checked, and a
line that is not a record is skipped and counted (``skipped``, ``notice``). Reading keeps at most
``MAX_RECORDS`` records, merging older ones in pairs as it goes, so memory stays bounded whatever the file
holds. Only writing a record may move the file, and it is never emptied: one that cannot be read at all (a
FIFO, a device, larger than the bound) is set aside with ``files.set_aside`` before the new line is appended,
and a compaction that leaves out lines that were not records sets the file as it was aside first.
"""

from __future__ import annotations

import io
import json
import logging
import math
import os
import stat
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from dasher_rnn.files import UnreadableFile, append_line, atomic_write, parse_json, read_bounded, set_aside

log = logging.getLogger(__name__)

PROGRESS_FILE = "progress.jsonl"
MAX_BYTES = 1 << 20  # about 7000 messages before the older ones are merged in pairs
MAX_READ_BYTES = 64 << 20  # a larger file is not one this program wrote: it is set aside at the next record
MAX_RECORDS = 1 << 15  # records kept in memory while reading; past it the older half is merged in pairs
MAX_COUNT = 10 ** 12  # characters, corrections or messages in one line (a lifetime of writing is ~10^9)
MAX_SECONDS = 1e12
MAX_BITS = 1e15
MAX_SPEED = 1e6  # bits per second: a larger speed is not a setting, it is left out
MAX_TIME_CHARS = 64


@dataclass(frozen=True)
class MessageRecord:
    """One finished message (or, after merging, several in a row: ``messages``)."""

    time: str  # local time it was finished (the first of them, after merging), ISO 8601
    characters: int
    seconds: float  # writing (running), not stopped
    bits: float  # net zoom
    corrections: int  # characters backed out of or undone
    messages: int = 1
    speed_bps: float | None = None  # the speed setting at the end

    @property
    def chars_per_minute(self) -> float:
        return 60.0 * self.characters / self.seconds if self.seconds > 0 else 0.0

    @property
    def bits_per_char(self) -> float:
        return max(0.0, self.bits) / self.characters if self.characters else 0.0

    def to_line(self) -> bytes:
        return (json.dumps({k: v for k, v in asdict(self).items() if v is not None}) + "\n").encode()

    @classmethod
    def from_json(cls, data: object) -> MessageRecord:
        """From one parsed line; ValueError when it is not a record (a wrong type, a number out of range)."""
        if not isinstance(data, dict):
            raise ValueError("not an object")

        def number(key: str, limit: float, integer: bool = False, default: float | None = None,
                   signed: bool = False) -> float:
            value = data.get(key, default)
            # compared before any conversion: an int of 400 digits compares exactly, float() of it would raise
            if isinstance(value, bool) or not isinstance(value, int if integer else int | float) \
                    or not -limit <= value <= limit or (value < 0 and not signed) or not math.isfinite(value):
                raise ValueError(f"{key} is not a {'number' if signed else 'count'} within {limit:g}")
            return value

        stamp = data.get("time", "")
        if not isinstance(stamp, str) or len(stamp) > MAX_TIME_CHARS:
            raise ValueError("time is not a short text")
        speed = data.get("speed_bps")
        if isinstance(speed, bool) or not isinstance(speed, int | float) or not 0 <= speed <= MAX_SPEED:
            speed = None  # the speed is an aside: a bad one is left out, the record kept
        return cls(stamp, int(number("characters", MAX_COUNT, True)), float(number("seconds", MAX_SECONDS)),
                   float(number("bits", MAX_BITS, signed=True)), int(number("corrections", MAX_COUNT, True, 0)),
                   max(1, int(number("messages", MAX_COUNT, True, 1))),
                   None if speed is None else float(speed))


def merge(a: MessageRecord, b: MessageRecord) -> MessageRecord:
    """Two records in a row as one (totals kept, within the bounds a line is read with; the first one's time,
    the later one's speed)."""
    return MessageRecord(a.time, min(a.characters + b.characters, MAX_COUNT), min(a.seconds + b.seconds, MAX_SECONDS),
                         max(-MAX_BITS, min(a.bits + b.bits, MAX_BITS)), min(a.corrections + b.corrections, MAX_COUNT),
                         min(a.messages + b.messages, MAX_COUNT), b.speed_bps)


def merge_older_half(records: list[MessageRecord]) -> list[MessageRecord]:
    """The older half of ``records`` merged in pairs, the newer half as it is."""
    half = len(records) // 2
    older = [merge(records[i], records[i + 1]) if i + 1 < half else records[i] for i in range(0, half, 2)]
    return older + records[half:]


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class ProgressLog:
    """The progress records of one profile (its folder is made on the first record). After ``read`` (and
    ``record``), ``skipped`` counts the lines that were not records and ``notice`` says what went wrong, for
    the user (None when nothing did)."""

    def __init__(self, folder: str | Path, max_bytes: int = MAX_BYTES):
        self.folder = Path(folder)
        self.path = self.folder / PROGRESS_FILE
        self.max_bytes = max_bytes
        self.skipped = 0
        self.notice: str | None = None

    @classmethod
    def for_profile(cls, store, name: str) -> ProgressLog:
        """The log of profile ``name`` in a ``ProfileStore``."""
        return cls(store.path(name))

    def record(self, record: MessageRecord) -> None:
        """Append one finished message (OSError when it cannot be written). A file that cannot be read is set
        aside first; a compaction that fails leaves the file as it is (the record is in it) and says so in
        ``notice``. Nothing else is raised."""
        self.notice = None
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._set_aside_if_unusable()
        append_line(self.path, record.to_line(), private=True)
        try:
            if self.path.stat().st_size > self.max_bytes:
                self.compact()
        except OSError as exc:
            self._tell(f"The record of progress {self.path} could not be made smaller ({exc}); it is kept as it is")

    def _tell(self, message: str) -> None:
        log.warning("%s", message)
        self.notice = message if self.notice is None else f"{self.notice}. {message}"

    def _set_aside_if_unusable(self) -> None:
        """A progress file that cannot be read (not a regular file, or larger than ``MAX_READ_BYTES``) is moved
        aside, kept for the user, so that the new record starts a file that can be."""
        try:
            info = os.stat(self.path)
            if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_READ_BYTES:
                return  # the usual case, known without reading it
            read_bounded(self.path, MAX_READ_BYTES)  # refuses at once, saying what it is
            return
        except UnreadableFile as exc:
            reason = str(exc)
        except OSError:
            return  # none yet (or unreachable: appending says what is wrong)
        self._tell(f"The record of progress was unusable ({reason}); it was kept as {set_aside(self.path)} and a "
                   "new one was started")

    def compact(self) -> None:
        """Merge the older half of the records in pairs (again, until the file is within ``max_bytes``), so the
        file shrinks and the whole story stays. When some lines were not records, the file as it was is set aside
        (kept) before the compacted one replaces it. Nothing is written when the file cannot be read: it is
        never emptied. OSError when the new file cannot be written or the old one kept."""
        records, problem = self._load()
        if problem is not None:
            raise OSError(problem)
        while True:
            records = merge_older_half(records)
            data = b"".join(r.to_line() for r in records)
            if len(data) <= self.max_bytes or len(records) <= 1:
                break
        if self.skipped:
            self._tell(f"{self._skipped_lines()} in the record of progress; the file as it was is kept as "
                       f"{set_aside(self.path)}")
        atomic_write(self.path, data, private=True)

    def _skipped_lines(self) -> str:
        return f"{self.skipped:,} {'line was' if self.skipped == 1 else 'lines were'} not a record of a message"

    def read(self) -> list[MessageRecord]:
        """Every record, oldest first (at most ``MAX_RECORDS``, older ones merged in pairs beyond that); none when
        there is no file. Never raises: unusable lines are skipped and counted (``skipped``), and a file that
        cannot be read gives none; ``notice`` says what was wrong."""
        self.notice = None
        records, problem = self._load()
        if problem is not None:
            self._tell(problem)
        elif self.skipped:
            self._tell(f"{self._skipped_lines()} in {self.path} and {'was' if self.skipped == 1 else 'were'} skipped")
        return records

    def _load(self) -> tuple[list[MessageRecord], str | None]:
        """The records and, when the file could not be read at all, why (``skipped`` counts bad lines)."""
        self.skipped = 0
        try:
            data = read_bounded(self.path, MAX_READ_BYTES)
        except FileNotFoundError:
            return [], None
        except OSError as exc:  # UnreadableFile says what it is (a FIFO, a device, too large)
            return [], f"The record of progress could not be read ({exc})"
        records: list[MessageRecord] = []
        for line in io.BytesIO(data):
            if not line.strip():
                continue
            try:
                records.append(MessageRecord.from_json(parse_json(line, str(self.path))))
            except ValueError:  # a line torn by a crash, edited by hand, nested too deeply, or a number out of range
                self.skipped += 1
                continue
            if len(records) > MAX_RECORDS:
                records = merge_older_half(records)
        return records, None


def copy_records(source: str | Path, destination: str | Path) -> str | None:
    """The record of progress of the profile folder ``source`` written, checked, into the folder ``destination``
    (for an imported profile): only lines that are records go, and nothing when there is none. What was left
    out, for the user (None when nothing was); OSError when the copy cannot be written."""
    log_from = ProgressLog(source)
    records = log_from.read()
    if records:
        atomic_write(Path(destination) / PROGRESS_FILE, b"".join(r.to_line() for r in records), private=True)
    return log_from.notice
