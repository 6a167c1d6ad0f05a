"""Reading user-supplied text files with clear errors instead of tracebacks.

Control bytes, as Dasher reads them: a text file may carry a few stray control bytes (Dasher 5's Finnish training
text has two NULs and Dasher reads it). The control bytes are C0 controls other than tab, newline, vertical tab,
form feed and carriage return (those are whitespace, and ``normalise`` maps them), plus DEL: bytes 0x00-0x08,
0x0E-0x1F and 0x7F. They are dropped, and one ``TextNotice`` says how many and where the first was. A file is
refused as binary (``TextFileError``) when more than 1 in 100 of its bytes are control bytes and there are more
than 2 of them: text has next to none, while images, archives, executables and UTF-16 text have far more (UTF-16
is half NULs), so one rule tells them apart and a short text with a stray byte or two still reads.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from pathlib import Path

from dasher_rnn.files import read_bounded

MAX_BYTES = 1 << 30  # one text file; a training corpus is many of them
CONTROL_BYTES = bytes([*range(0x00, 0x09), *range(0x0E, 0x20), 0x7F])  # dropped from text; tab, LF, VT, FF, CR kept
BINARY_SHARE = 0.01  # more control bytes than this share of the file (and more than BINARY_MIN): binary, refused
BINARY_MIN = 2
_CONTROL = re.compile(b"[" + re.escape(CONTROL_BYTES) + b"]")


class TextFileError(ValueError):
    """A text file could not be read as UTF-8 text; the message names the file and offset."""


class TextNotice(UserWarning):
    """Something in a text file was dropped or replaced as it was read: one line naming the file, said once."""


def _name_byte(byte: int) -> str:
    return "NUL byte" if byte == 0 else f"control byte 0x{byte:02x}"


def drop_control_bytes(data: bytes, path: str | Path = "text") -> bytes:
    """``data`` without its control bytes (``CONTROL_BYTES``), with a ``TextNotice`` saying how many there were and
    where the first was; ``TextFileError`` when there are so many that it looks like a binary file (the module's
    docstring gives the rule)."""
    first = _CONTROL.search(data)
    if first is None:
        return data
    kept = data.translate(None, CONTROL_BYTES)
    count = len(data) - len(kept)
    where = f"{_name_byte(data[first.start()])} at offset {first.start()}"
    if count > BINARY_MIN and count > BINARY_SHARE * len(data):
        hint = " (UTF-16? re-encode it as UTF-8)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise TextFileError(f"{path}: looks like a binary file ({where}; {count:,} control bytes in "
                            f"{len(data):,}){hint}")
    warnings.warn(f"{path}: {count:,} control {'byte' if count == 1 else 'bytes'} dropped, the first a {where}",
                  TextNotice, stacklevel=3)
    return kept


def read_text(path: str | Path, *, replace_errors: bool = False, limit: int = MAX_BYTES) -> str:
    """Read a UTF-8 text file of at most ``limit`` bytes.

    A few stray control bytes (NUL and the like) are dropped with a ``TextNotice``; a binary file (many of them:
    the module's docstring gives the rule) and invalid UTF-8 raise ``TextFileError`` naming the file and byte
    offset, as do a FIFO, a device or a larger file (``files.read_bounded``). With ``replace_errors`` invalid
    bytes become U+FFFD and a ``TextNotice`` says how many there were.
    """
    path = Path(path)
    try:
        data = read_bounded(path, limit)
    except OSError as exc:
        raise TextFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    data = drop_control_bytes(data, path)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not replace_errors:
            raise TextFileError(
                f"{path}: not valid UTF-8 at byte offset {exc.start} "
                "(re-encode the file as UTF-8, or ask for replacement decoding)"
            ) from None
    text = data.decode("utf-8", errors="replace")
    warnings.warn(f"{path}: {text.count(chr(0xFFFD))} undecodable bytes replaced", TextNotice, stacklevel=2)
    return text


def expand_paths(paths: Iterable[str | Path], suffixes: tuple[str, ...] = (".txt", ".md")) -> list[Path]:
    """Files named directly, plus files with ``suffixes`` found under folders, in sorted order."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in suffixes))
        elif p.exists():
            files.append(p)
        else:
            raise TextFileError(f"{p}: no such file or folder")
    return files
