"""The server's log never repeats itself: a record that was logged already (the same logger, level and message, or
for an error the same place in the code) is counted instead of written again.

The first time, a record is written in full (its traceback too). Repeats are counted, and at most once a
``period`` (60 s) one line says how many there were, without the traceback. ``RepeatFilter.flush`` writes the
counts still pending (the server does when it stops). So a fault that repeats thousands of times a second (a client
flood, descriptors running out) costs a few lines a minute, not megabytes.
"""

from __future__ import annotations

import logging
import re
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

PERIOD_S = 60.0  # at most one line a period for each repeated record
KEYS_KEPT = 1000  # records remembered; the oldest is forgotten beyond this
SERVER_LOGGERS = ("asyncio", "uvicorn.error")  # besides every dasher_rnn logger


@dataclass
class _Seen:
    first: float  # when it was first written (the clock's seconds)
    reported: float  # when it was last written
    repeats: int = 0  # not written since


def record_key(record: logging.LogRecord) -> tuple:
    """What makes two records the same: for an error, where it was raised (its traceback's files and lines) and its
    type; otherwise the message as written."""
    exc = record.exc_info
    if exc and exc[0] is not None:
        frames = tuple((f.filename, f.lineno) for f in traceback.extract_tb(exc[2]))
        return record.name, record.levelno, str(record.msg), exc[0].__qualname__, frames
    return record.name, record.levelno, _message(record)


def _message(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception:  # arguments that do not fit the message: logging reports that when it writes the record
        return str(record.msg)


class RepeatFilter(logging.Filter):
    """A filter for loggers (``install``): lets a record through the first time, then counts its repeats and lets
    one line through a ``period`` saying how many there were (no traceback: it was written the first time)."""

    def __init__(self, period: float = PERIOD_S, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.period, self.clock = period, clock
        self.seen: OrderedDict[tuple, _Seen] = OrderedDict()
        self._loggers: list[logging.Logger] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "repeat_count", None) is not None:  # a count written by flush
            return True
        key = record_key(record)
        now = self.clock()
        seen = self.seen.get(key)
        if seen is None:
            self.seen[key] = _Seen(now, now)
            while len(self.seen) > KEYS_KEPT:
                self.seen.popitem(last=False)
            return True
        self.seen.move_to_end(key)
        seen.repeats += 1
        if now - seen.reported < self.period:
            return False
        record.msg, record.args = _repeated(_message(record), seen.repeats, now - seen.reported), None
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        seen.repeats, seen.reported = 0, now
        return True

    def flush(self) -> None:
        """Write the repeats counted and not yet written, one line each."""
        now = self.clock()
        for key, seen in list(self.seen.items()):
            if seen.repeats:
                name, level, message = key[0], key[1], key[2]
                logging.getLogger(name).log(level, "%s", _repeated(message, seen.repeats, now - seen.reported),
                                            extra={"repeat_count": seen.repeats})
                seen.repeats, seen.reported = 0, now

    def install(self, names: Iterable[str] | None = None) -> None:
        """Filter the loggers ``names`` (by default the server's: asyncio's, uvicorn's errors and every dasher_rnn
        logger made so far)."""
        if names is None:
            made = [n for n in logging.root.manager.loggerDict if n == "dasher_rnn" or n.startswith("dasher_rnn.")]
            names = [*SERVER_LOGGERS, *made]
        for name in names:
            logger = logging.getLogger(name)
            logger.addFilter(self)
            self._loggers.append(logger)

    def uninstall(self) -> None:
        """Write the pending counts and take the filter off the loggers it was put on."""
        self.flush()
        for logger in self._loggers:
            logger.removeFilter(self)
        self._loggers = []


_QUERY_TOKEN = re.compile(r"([?&]token=)[^&\s\"']*", re.IGNORECASE)


class SecretFilter(logging.Filter):
    """Hides a token in a URL's query (``?token=...``, how a browser's WebSocket sends it) in every record of the
    loggers it is put on: uvicorn logs each WebSocket's path with its query at level info."""

    NAMES = ("uvicorn.error", "uvicorn.access")

    def __init__(self) -> None:
        super().__init__()
        self._loggers: list[logging.Logger] = []

    def filter(self, record: logging.LogRecord) -> bool:
        message = _message(record)
        if "token=" in message.lower():
            record.msg, record.args = _QUERY_TOKEN.sub(r"\1(hidden)", message), None
        return True

    def install(self) -> None:
        for name in self.NAMES:
            logger = logging.getLogger(name)
            logger.addFilter(self)
            self._loggers.append(logger)

    def uninstall(self) -> None:
        for logger in self._loggers:
            logger.removeFilter(self)
        self._loggers = []


def _repeated(message: str, count: int, seconds: float) -> str:
    return f"{message} [repeated {count} more time{'s' if count != 1 else ''} in {seconds:.0f} s; written in full " \
           "the first time]"
