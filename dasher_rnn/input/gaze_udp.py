"""Gaze points from any eye tracker through a small bridge program sending UDP datagrams.

Message format (the public contract for eye-tracker bridges), one message per datagram, UTF-8:

- JSON object: ``{"x": 0.42, "y": 0.61, "t": 1763712000.125}``

  - ``x``, ``y`` (numbers, required): the gaze point normalised to the screen, 0..1 from left to right
    and from top to bottom. Values slightly outside are allowed; they are clamped to [-0.5, 1.5].
  - ``t`` (number, optional): the sample time in seconds, on any clock that increases steadily (only
    differences are used, for smoothing). If missing, the arrival time is used.
  - ``valid`` (boolean, optional): ``false`` marks a lost sample (blink, eyes not found); x and y may
    then be absent. Lost samples are counted and otherwise ignored. Other keys are ignored.
  - ``token`` (string): the input token, when the user has set one (``--input-token``); a datagram
    without it is then ignored, whatever else it holds. Without a token set, it is ignored.

- plain text, for simple scripts: ``x y`` or ``x y t``, numbers separated by spaces,
  e.g. ``0.42 0.61`` or ``0.42 0.61 1763712000.125``. It has no place for the input token: with one set,
  send JSON.

Listens on 127.0.0.1:5577 by default. Bad datagrams (over 4096 bytes, not UTF-8, not JSON, nested
deeper than a message can be, missing or non-finite x or y, numbers too large for a float) are counted in
``rejected`` and logged once per kind, never raised, and the newest reason reaches the status bar
(``problems()``). When no sample has arrived for ``stale_after`` seconds, ``latest()`` returns None and
the app pauses.

Example bridge::

    import json, socket, time
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.sendto(json.dumps({"x": 0.5, "y": 0.5, "t": time.time()}).encode(), ("127.0.0.1", 5577))
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from dasher_rnn.input.gaze import GazeSample
from dasher_rnn.input.one_euro import OneEuroFilter
from dasher_rnn.input.udp import UDPSource

DEFAULT_PORT = 5577
MAX_DATAGRAM = 4096


class BadDatagram(ValueError):
    """A datagram that does not follow the message format; kind groups the warnings."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadDatagram("bad field", f"{name} is not a number: {str(value)[:80]!r}")
    try:
        number = float(value)  # a JSON integer can be any size: 401 digits overflow a float
    except OverflowError:
        raise BadDatagram("non-finite", f"{name} is an integer too large for a float") from None
    if not math.isfinite(number):
        raise BadDatagram("non-finite", f"{name} = {number!r}")
    return number


def token_of(data: bytes) -> bytes | None:
    """The input token a datagram carries (its JSON object's ``"token"`` string), or None; never raises."""
    if len(data) > MAX_DATAGRAM or not data.lstrip().startswith(b"{"):
        return None
    try:
        message = json.loads(data)
    except (ValueError, RecursionError):  # not JSON (UnicodeDecodeError is a ValueError), or nested too deeply
        return None
    token = message.get("token") if isinstance(message, dict) else None
    return token.encode("utf-8", "surrogatepass") if isinstance(token, str) else None


def parse_datagram(data: bytes) -> tuple[float, float, float | None] | None:
    """(x, y, t or None) from one datagram; None for a lost sample (``"valid": false``).

    Raises BadDatagram for anything not in the message format, and nothing else: whatever is in the
    datagram, an error from parsing it becomes a BadDatagram.
    """
    try:
        return _parse(data)
    except BadDatagram:
        raise
    except Exception as exc:  # a defect of the parser must cost one datagram, not the input
        raise BadDatagram("unparsable", f"{type(exc).__name__}: {str(exc)[:80]}") from exc


def _parse(data: bytes) -> tuple[float, float, float | None] | None:
    if len(data) > MAX_DATAGRAM:
        raise BadDatagram("too long", f"{len(data)} bytes, at most {MAX_DATAGRAM}")
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise BadDatagram("not UTF-8", str(exc)) from None
    if text.startswith("{"):
        try:
            message = json.loads(text)
        except RecursionError:  # nesting deeper than the interpreter's stack, in 4 KB: never a gaze message
            raise BadDatagram("not JSON", f"nested too deeply: {text[:80]!r}") from None
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


class GazeUDPSource(UDPSource):
    """Listens for gaze datagrams on a daemon thread; ``port=0`` picks a free port (see ``.port``)."""

    label = "Gaze over UDP"
    listens_for = "gaze"

    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT, smoothing: OneEuroFilter | None = None,
                 stale_after: float = 0.5, on_sample: Callable[[GazeSample], None] | None = None,
                 token: str | None = None) -> None:
        super().__init__(host, port, smoothing, stale_after, on_sample, token)

    def _handle(self, data: bytes, sender: tuple) -> None:
        """Process one datagram: a point, a lost sample or a rejected one (or one without the input token)."""
        if not self._authorised(token_of(data) if self._token is not None else None, sender):
            return
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


def open_source(options: Mapping[str, Any], smoothing: OneEuroFilter) -> GazeUDPSource:
    """The registry's opener (input/registry.py): gaze over UDP on the options' (the preferences') port and input token."""
    return GazeUDPSource(port=options["gaze_port"], smoothing=smoothing, token=options["input_token"] or None)
