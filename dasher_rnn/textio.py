"""Reading user-supplied text files with clear errors instead of tracebacks."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path

from dasher_rnn.files import read_bounded

MAX_BYTES = 1 << 30  # one text file; a training corpus is many of them

class TextFileError(ValueError):
    """A text file could not be read as UTF-8 text; the message names the file and offset."""


def read_text(path: str | Path, *, replace_errors: bool = False, limit: int = MAX_BYTES) -> str:
    """Read a UTF-8 text file of at most ``limit`` bytes.

    Binary files (containing NUL bytes) and invalid UTF-8 raise ``TextFileError`` naming the
    file and byte offset, as do a FIFO, a device or a larger file (``files.read_bounded``).
    With ``replace_errors`` invalid bytes become U+FFFD and a warning says how many there were.
    """
    path = Path(path)
    try:
        data = read_bounded(path, limit)
    except OSError as exc:
        raise TextFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    nul = data.find(b"\x00")
    if nul >= 0 and not replace_errors:
        raise TextFileError(f"{path}: looks like a binary file (NUL byte at offset {nul})")
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
    text = data.decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    warnings.warn(f"{path}: {text.count(chr(0xFFFD))} undecodable bytes replaced", stacklevel=2)
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
