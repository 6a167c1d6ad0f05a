"""Giving memory back to the system once sessions close.

A session's predictor and learner allocate on several threads (its own and the server's workers), and glibc's
malloc keeps what they free in per-thread arenas instead of returning it: measured on ``serve``, the resident
memory after four bursts of 20 sessions, every one closed, went 286 -> 3,170 -> 4,594 -> 5,577 MB with no
session, Writer or predictor left alive (``gc``); ``malloc_trim(0)`` brought it back to 379 MB. So every close
asks for a trim (``trim_soon``): one runs at a time on a thread of its own, and closes meanwhile share the next.
A closed session's objects lie in reference cycles, freed only by the cycle collector, so a trim collects first.
Where the C library has no ``malloc_trim`` (macOS, Windows, musl) nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


def _find_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_trim = _find_trim()
_lock = threading.Lock()
_pending = False
_running = False
trims = 0  # trims done (for tests and benchmarks)


def trim_now() -> bool:
    """Return freed memory to the system now (blocking; tens of milliseconds after big sessions close); False where
    the C library cannot."""
    global trims
    if _trim is None:
        return False
    gc.collect()  # a closed session's Writer, predictor and learner are in cycles: free them before trimming
    _trim(0)
    trims += 1
    return True


def trim_soon() -> None:
    """Ask for a trim on a background thread; a request while one runs is served by one more after it."""
    global _pending, _running
    if _trim is None:
        return
    with _lock:
        _pending = True
        if _running:
            return
        _running = True
    threading.Thread(target=_trimmer, name="memory-trim", daemon=True).start()


def _trimmer() -> None:
    global _pending, _running
    while True:
        with _lock:
            if not _pending:
                _running = False
                return
            _pending = False
        try:
            trim_now()
        except Exception:  # never let this take anything down
            log.exception("returning freed memory to the system failed")
