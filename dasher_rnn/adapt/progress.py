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
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from dasher_rnn.files import append_line, atomic_write

PROGRESS_FILE = "progress.jsonl"
MAX_BYTES = 1 << 20  # about 7000 messages before the older ones are merged in pairs
MAX_READ_BYTES = 8 << 20  # a larger file is not ours: it is not read


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
        """From one parsed line; ValueError when it is not a record."""
        if not isinstance(data, dict):
            raise ValueError("not an object")

        def number(key: str, integer: bool = False, default: float | None = None, signed: bool = False) -> float:
            value = data.get(key, default)
            if isinstance(value, bool) or not isinstance(value, int if integer else int | float) \
                    or not math.isfinite(value) or (value < 0 and not signed):
                raise ValueError(f"{key} is not a {'number' if signed else 'count'}")
            return value

        speed = data.get("speed_bps")
        return cls(str(data.get("time", "")), int(number("characters", True)), float(number("seconds")),
                   float(number("bits", signed=True)), int(number("corrections", True, 0)),
                   max(1, int(number("messages", True, 1))),
                   float(speed) if isinstance(speed, int | float) and not isinstance(speed, bool) else None)


def merge(a: MessageRecord, b: MessageRecord) -> MessageRecord:
    """Two records in a row as one (totals kept; the first one's time, the later one's speed)."""
    return MessageRecord(a.time, a.characters + b.characters, a.seconds + b.seconds, a.bits + b.bits,
                         a.corrections + b.corrections, a.messages + b.messages, b.speed_bps)


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class ProgressLog:
    """The progress records of one profile (its folder is made on the first record)."""

    def __init__(self, folder: str | Path, max_bytes: int = MAX_BYTES):
        self.folder = Path(folder)
        self.path = self.folder / PROGRESS_FILE
        self.max_bytes = max_bytes

    @classmethod
    def for_profile(cls, store, name: str) -> ProgressLog:
        """The log of profile ``name`` in a ``ProfileStore``."""
        return cls(store.path(name))

    def record(self, record: MessageRecord) -> None:
        """Append one finished message (OSError when it cannot be written)."""
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        append_line(self.path, record.to_line(), private=True)
        if self.path.stat().st_size > self.max_bytes:
            self.compact()

    def compact(self) -> None:
        """Merge the older half of the records in pairs, so the file shrinks and the whole story stays."""
        records = self.read()
        half = len(records) // 2
        older = [merge(records[i], records[i + 1]) if i + 1 < half else records[i] for i in range(0, half, 2)]
        atomic_write(self.path, b"".join(r.to_line() for r in older + records[half:]), private=True)

    def read(self) -> list[MessageRecord]:
        """Every record, oldest first (none when there is no file; unreadable lines are skipped)."""
        try:
            if self.path.stat().st_size > MAX_READ_BYTES:
                return []
            lines = self.path.read_bytes().splitlines()
        except FileNotFoundError:
            return []
        records = []
        for line in lines:
            try:
                records.append(MessageRecord.from_json(json.loads(line)))
            except (ValueError, KeyError, RecursionError):
                continue  # a line torn by a crash, or edited by hand
        return records
