"""Writing files so that nothing is ever half-written, and setting aside files that cannot be used.

Every file the program owns (profiles, settings, model folders, checkpoints, journals) is written
through ``atomic_write``: a temporary file beside the target, flushed and fsynced, renamed over the
target, and the folder fsynced, so a crash or a kill at any moment leaves either the old file or the
new one, never a mixture. Append-only records (a profile's progress) add a line with ``append_line``;
a crash can tear only that line, which their reader skips. A file that is corrupt or foreign is moved
aside with ``set_aside`` (one suffix everywhere, ``.broken-<time>``), kept for inspection, and the
program carries on without it.

Every file the program reads that a user, another program or a crash could have replaced is read through
``read_bounded``: opened without blocking, accepted only when it is a regular file (not a FIFO, a device, a
folder, or a link to one), and only up to a size bound, so nothing put in a file's place can hang the program
or fill its memory. A JSON file is read with ``read_json``: bounded as above, then its nesting depth is checked
before it is parsed (``MAX_DEPTH``; a file of ``'[' * 1000`` would otherwise end the parser in ``RecursionError``),
and anything wrong with it is a ``BadFile`` naming the file, never a traceback. ``is_storable`` says whether a string
can be written to a UTF-8 file (no lone surrogates, no NUL).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
import time
from pathlib import Path

BROKEN = ".broken-"
TEMP_SUFFIX = ".tmp"
MiB = 1024 * 1024


MAX_DEPTH = 64  # nesting of the JSON files the program reads: its own are at most 5 deep


class UnreadableFile(OSError):
    """A file that is not a regular file, or larger than the bound its reader sets."""


class BadFile(ValueError):
    """A file whose content cannot be used (not UTF-8, not JSON, nested too deeply); the message names the file."""


_JSON_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+\\?(?:"|\Z)', re.DOTALL)  # an unterminated one runs to the end
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def json_depth(data: bytes) -> int:
    """How deeply the arrays and objects of the JSON text ``data`` nest (brackets inside strings do not count),
    without parsing it: linear time, no recursion, so it can be asked of any text before ``json.loads`` is."""
    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for chunk in re.finditer(rb"[\[{]+|[\]}]+", brackets):  # runs of openers and closers, not byte by byte
        run = chunk.end() - chunk.start()
        if chunk.group()[0] in b"[{":
            depth += run
            deepest = max(deepest, depth)
        else:
            depth -= run
    return deepest


def parse_json(data: bytes, source: str = "<json>", max_depth: int = MAX_DEPTH) -> object:
    """``data`` (UTF-8 JSON, a byte-order mark allowed) parsed, or ``BadFile`` naming ``source`` and saying why: not
    UTF-8, nested deeper than ``max_depth``, not JSON. Never RecursionError."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    depth = json_depth(data)
    if depth > max_depth:
        raise BadFile(f"{source}: nested {depth:,} deep, more than the {max_depth} it may be")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BadFile(f"{source}: not UTF-8 (at byte {exc.start:,})") from None
    except json.JSONDecodeError as exc:
        raise BadFile(f"{source}: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:  # a number too long for int(), nesting the scan did not see
        raise BadFile(f"{source}: not usable JSON ({type(exc).__name__}: {str(exc)[:100]})") from None


def read_json(path: str | Path, limit: int, max_depth: int = MAX_DEPTH) -> object:
    """The JSON value in ``path``, read with ``read_bounded`` (a regular file of at most ``limit`` bytes) and
    ``parse_json`` (at most ``max_depth`` deep). ``FileNotFoundError`` when there is none, ``UnreadableFile`` (an
    OSError) when it is not a regular file or too large, ``BadFile`` (a ValueError) when its content is unusable."""
    return parse_json(read_bounded(path, limit), str(path), max_depth)


def is_storable(text: str) -> bool:
    """Whether ``text`` can be written to a UTF-8 file and read back as it was: no lone surrogate (a JSON escape
    such as \\ud800 can bring one), no NUL."""
    return "\x00" not in text and _SURROGATE.search(text) is None


def read_bounded(path: str | Path, limit: int) -> bytes:
    """The bytes of ``path`` when it is a regular file (or a link to one) of at most ``limit`` bytes; an
    ``UnreadableFile`` saying which it is not, a ``FileNotFoundError`` or another ``OSError`` otherwise. A FIFO or
    a device is never waited on (the file is opened non-blocking, then checked before anything is read)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode) else \
                "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else "not a regular file"
            raise UnreadableFile(f"{path} is {kind}, not a file this program reads")
        if info.st_size > limit:
            raise UnreadableFile(f"{path} has {info.st_size:,} bytes, more than the {limit:,} it may have")
        chunks, size = [], 0
        while size <= limit:  # read to the end, not to st_size: the file may have grown since
            chunk = os.read(fd, min(limit + 1 - size, MiB))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise UnreadableFile(f"{path} grew beyond the {limit:,} bytes it may have while being read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every file system lets a folder be opened for fsync
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: str | Path, data: bytes, private: bool = False) -> None:
    """Replace ``path`` with ``data`` in one step; ``private`` makes the file readable by the user only.
    The temporary file is removed when the write fails (a full disk, a read-only folder...)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            if private:
                os.fchmod(f.fileno(), 0o600)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)


def append_line(path: str | Path, line: bytes, private: bool = False) -> None:
    """Add ``line`` (ending in a newline) at the end of ``path`` (made when missing) and fsync it: for
    append-only records, where a crash can at worst tear the last line, which their reader skips; a torn last
    line is ended first, so it never swallows the new one. ``private``: readable by the user only."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600 if private else 0o666)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def set_aside(path: str | Path) -> Path:
    """Move a file or folder that cannot be used out of the way (``NAME.broken-YYYYmmdd-HHMMSS``, a counter
    added when that exists) and return where it went."""
    path = Path(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}{BROKEN}{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}{BROKEN}{stamp}-{n}")
    os.replace(path, target)
    return target


def is_temporary(path: Path) -> bool:
    """A temporary file left by an ``atomic_write`` that was killed."""
    return path.name.startswith(".") and path.name.endswith(TEMP_SUFFIX)
