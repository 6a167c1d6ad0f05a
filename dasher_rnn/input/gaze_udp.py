"""Gaze points from any eye tracker through a small bridge program sending UDP datagrams.

Message format (the public contract for eye-tracker bridges), one message per datagram, UTF-8:

- JSON object: ``{"x": 0.42, "y": 0.61, "t": 1763712000.125}``

  - ``x``, ``y`` (numbers, required): the gaze point normalised to the screen, 0..1 from left to right
    and from top to bottom. Values slightly outside are allowed; they are clamped to [-0.5, 1.5].
  - ``t`` (number, optional): the sample time in seconds, on any clock that increases steadily (only
    differences are used, for smoothing). If missing, the arrival time is used.
  - ``valid`` (boolean, optional): ``false`` marks a lost sample (blink, eyes not found); x and y may
    then be absent. Lost samples are counted and otherwise ignored. Other keys are ignored.

- plain text, for simple scripts: ``x y`` or ``x y t``, numbers separated by spaces,
  e.g. ``0.42 0.61`` or ``0.42 0.61 1763712000.125``.

Listens on 127.0.0.1:5577 by default. Bad datagrams (not UTF-8, not JSON, missing or non-finite x or y)
are counted in ``rejected`` and logged once per kind, never raised. When no sample has arrived for
``stale_after`` seconds, ``latest()`` returns None and the app pauses.

Example bridge::

    import json, socket, time
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.sendto(json.dumps({"x": 0.5, "y": 0.5, "t": time.time()}).encode(), ("127.0.0.1", 5577))
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections.abc import Callable

from dasher_rnn.input.gaze import GazeSample, GazeSource, GazeSourceError
from dasher_rnn.input.one_euro import OneEuroFilter

DEFAULT_PORT = 5577
MAX_DATAGRAM = 4096
_POLL = 0.1  # seconds between checks for close() while no datagram arrives


class BadDatagram(ValueError):
    """A datagram that does not follow the message format; kind groups the warnings."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadDatagram("bad field", f"{name} is not a number: {value!r}")
    if not math.isfinite(value):
        raise BadDatagram("non-finite", f"{name} = {value!r}")
    return float(value)


def parse_datagram(data: bytes) -> tuple[float, float, float | None] | None:
    """(x, y, t or None) from one datagram; None for a lost sample (``"valid": false``).

    Raises BadDatagram for anything not in the message format.
    """
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise BadDatagram("not UTF-8", str(exc)) from None
    if text.startswith("{"):
        try:
            message = json.loads(text)
        except ValueError as exc:
            raise BadDatagram("not JSON", f"{exc}: {text[:80]!r}") from None
        if not isinstance(message, dict):
            raise BadDatagram("not JSON", f"not a JSON object: {text[:80]!r}")
        valid = message.get("valid", True)
        if not isinstance(valid, bool):
            raise BadDatagram("bad field", f"valid is not true or false: {valid!r}")
        if not valid:
            return None
        if "x" not in message or "y" not in message:
            raise BadDatagram("missing x or y", repr(text[:80]))
        t = message.get("t")
        return _number(message["x"], "x"), _number(message["y"], "y"), None if t is None else _number(t, "t")
    fields = text.split()
    if len(fields) not in (2, 3):
        raise BadDatagram("not JSON", f"neither a JSON object nor 'x y [t]': {text[:80]!r}")
    try:
        values = [float(f) for f in fields]
    except ValueError:
        raise BadDatagram("bad field", f"not numbers: {text[:80]!r}") from None
    for name, value in zip("xyt", values, strict=False):
        _number(value, name)
    return values[0], values[1], values[2] if len(values) == 3 else None


class GazeUDPSource(GazeSource):
    """Listens for gaze datagrams on a daemon thread; ``port=0`` picks a free port (see ``.port``)."""

    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT, smoothing: OneEuroFilter | None = None,
                 stale_after: float = 0.5, on_sample: Callable[[GazeSample], None] | None = None) -> None:
        super().__init__(smoothing, stale_after, on_sample)
        self._sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self._sock.bind((host, port))
        except (OSError, OverflowError) as exc:
            self._sock.close()
            raise GazeSourceError(f"cannot listen for gaze data on {host}:{port}: {exc}") from exc
        self._sock.settimeout(_POLL)
        self.host, self.port = host, self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"gaze-udp:{self.port}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self._sock.recv(MAX_DATAGRAM)
            except TimeoutError:
                continue
            except OSError:  # socket closed under us
                break
            self._handle(data)

    def _handle(self, data: bytes) -> None:
        """Process one datagram: a point, a lost sample or a rejected one."""
        try:
            point = parse_datagram(data)
        except BadDatagram as exc:
            self._reject(exc.kind, exc.detail)
            return
        if point is None:
            self._lost()
            return
        x, y, t = point
        self._push(x, y, time.time() if t is None else t)

    def close(self) -> None:
        """Stop the receiver thread and close the socket (idempotent)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        self._sock.close()
