"""OptiKey's gaze datagrams over UDP, so that a tracker bridge written for OptiKey drives this app unchanged.

OptiKey (the open AAC keyboard) has a "Gaze Tracker" point source that reads points from UDP datagrams in the format of
the ITU Gaze Tracker's network output. What this matches (OptiKey/OptiKey at 6a97f6e6, ``src/JuliusSweetland.OptiKey
.Core``: ``OptiKeyApp.cs`` ``GazeTrackerUdpRegex``, ``Observables/PointSources/GazeTrackerSource.cs``, and the
``GazeTrackerUdpPort`` setting in ``app.config``):

- UDP to 127.0.0.1, port 6666 by default (``GazeTrackerUdpPort``). OptiKey binds the loopback address with
  SO_REUSEADDR; here the port is bound plainly, so OptiKey and this app cannot listen on it at the same time.
- One datagram is decoded as ASCII and matched, from its start, against the regular expression
  ``^STREAM_DATA\\s(?<instanceTime>\\d+)\\s(?<x>-?\\d+(\\.[0-9]+)?)\\s(?<y>-?\\d+(\\.[0-9]+)?)``, for example::

      STREAM_DATA 63871234567890 812.5 430

  ``instanceTime`` is a time in milliseconds (OptiKey reads it as .NET ticks of local time, i.e. milliseconds since
  0001-01-01, and drops points older than its point TTL: a bridge sends ``DateTime.Now.Ticks / 10000``); x and y are
  the gaze point in **screen pixels** (physical pixels of the desktop, as Windows' cursor position: (0, 0) the top left
  of the primary screen). Whatever follows y is ignored, so a datagram may carry more.
- A point at exactly (0, 0) is dropped ("GT hasn't been calibrated"), and so is a point equal to the one before
  (``DistinctUntilChanged``: "when GT loses the user's eyes it repeats the last value"; applied to the raw points
  with OptiKey's default ``GazeSmoothingLevel`` of 0, to its Kalman filter's output otherwise). Here both are lost samples
  (counted in ``lost``; ``repeated`` counts the second kind), so the app pauses after ``stale_after`` as OptiKey's point
  expires after its TTL, rather than steering on at a point the tracker no longer sees.
- A datagram that does not match is logged and dropped by OptiKey (with a note that the tracker may be reporting a
  calibration); here it is a bad datagram, counted and shown in the status bar.

The pixels are normalised to the screen by ``screen_size`` (width, height in physical pixels, 1920x1080 by default)
and ``screen_origin`` (the screen's top left in the same desktop pixels, (0, 0) for the primary screen): the app
should pass the size of the screen the tracker is set up for (Qt's logical size times its device pixel ratio).

The sample time is ``instanceTime`` / 1000 seconds (only its differences are used, for smoothing).

Where this differs, on purpose:

- Digits are ASCII digits only and the decimal point is ``.`` whatever the system's language (OptiKey's
  ``double.Parse`` follows the Windows locale, so on a German system it reads "812.5" as 8125).
- A number too large to be a finite double, or a time beyond .NET's largest date (OptiKey throws on both), is a bad
  datagram, and so is a datagram over 4096 bytes.
- The input token (``token``, when the user has set one): a datagram counts only if it carries `` token SECRET`` after
  y (white space, the word ``token``, white space, the token). OptiKey ignores what follows y, so a bridge that sends
  the token still drives OptiKey unchanged.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from dasher_rnn.input.gaze import GazeSample, GazeSourceError
from dasher_rnn.input.one_euro import OneEuroFilter
from dasher_rnn.input.udp import UDPSource

DEFAULT_PORT = 6666
DEFAULT_SCREEN_SIZE = (1920, 1080)
MAX_DATAGRAM = 4096
MAX_INSTANCE_TIME = 315_537_897_599_999  # milliseconds: DateTimeOffset.MaxValue (9999-12-31), beyond it OptiKey throws
MAX_PIXELS = 1_000_000  # a screen size or origin beyond this is a mistake
# OptiKey's GazeTrackerUdpRegex, as bytes: with re.ASCII, \d and \s match what they match in OptiKey's ASCII-decoded
# text (Encoding.ASCII turns every byte over 127 into "?", which neither matches).
STREAM_DATA = re.compile(rb"^STREAM_DATA\s(?P<instanceTime>\d+)\s(?P<x>-?\d+(\.[0-9]+)?)\s(?P<y>-?\d+(\.[0-9]+)?)",
                         re.ASCII)
_TOKEN = re.compile(rb"\stoken\s+(\S+)", re.ASCII)


class BadDatagram(ValueError):
    """A datagram that does not follow OptiKey's format; kind groups the warnings."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


def _show(data: bytes, limit: int = 60) -> str:
    return repr(data[:limit].decode("ascii", "replace")) + ("..." if len(data) > limit else "")


def parse_datagram(data: bytes) -> tuple[float, float, float]:
    """(x pixels, y pixels, time in seconds) from one datagram; BadDatagram for anything OptiKey would not read as
    a point (or could not: see the module docstring), and nothing else."""
    if len(data) > MAX_DATAGRAM:
        raise BadDatagram("too long", f"{len(data)} bytes, at most {MAX_DATAGRAM}")
    match = STREAM_DATA.match(data)
    if match is None:
        kind = "bad STREAM_DATA" if data.startswith(b"STREAM_DATA") else "not STREAM_DATA"
        raise BadDatagram(kind, f"{_show(data)} is not 'STREAM_DATA time x y'")
    digits = match["instanceTime"].lstrip(b"0") or b"0"
    if len(digits) > len(str(MAX_INSTANCE_TIME)) or int(digits) > MAX_INSTANCE_TIME:  # (never int() of 5000 digits)
        raise BadDatagram("bad time", f"instanceTime {_show(match['instanceTime'], 24)} ms is after the year 9999")
    millis = int(digits)
    x, y = float(match["x"]), float(match["y"])
    if not (math.isfinite(x) and math.isfinite(y)):
        raise BadDatagram("non-finite", f"({_show(match['x'], 24)}, {_show(match['y'], 24)}) is too large")
    return x, y, millis / 1000.0


def token_of(data: bytes) -> bytes | None:
    """The input token a datagram carries after its point (`` token SECRET``), or None; never raises."""
    match = STREAM_DATA.match(data[:MAX_DATAGRAM])
    if match is None:
        return None
    token = _TOKEN.match(data, match.end())
    return None if token is None else token[1]


def check_screen(size: tuple[int, int], origin: tuple[int, int] = (0, 0)) -> tuple[tuple[int, int], tuple[int, int]]:
    """(size, origin) if usable: a size of whole positive pixels, an origin of whole pixels; ValueError otherwise."""
    for name, pair, low in (("screen size", size, 1), ("screen origin", origin, -MAX_PIXELS)):
        if (not isinstance(pair, tuple | list) or len(pair) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) and low <= v <= MAX_PIXELS for v in pair)):
            raise ValueError(f"the {name} must be two whole numbers of pixels from {low} to {MAX_PIXELS}, "
                             f"got {str(pair)[:40]}")
    return (size[0], size[1]), (origin[0], origin[1])


class OptiKeyUDPSource(UDPSource):
    """Listens for OptiKey's gaze datagrams on a daemon thread; ``port=0`` picks a free port (``.port``).

    Raises GazeSourceError when the screen size, the token or the port is unusable.
    """

    label = "OptiKey gaze over UDP"
    listens_for = "OptiKey gaze"

    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT, smoothing: OneEuroFilter | None = None,
                 stale_after: float = 0.5, on_sample: Callable[[GazeSample], None] | None = None,
                 token: str | None = None, screen_size: tuple[int, int] = DEFAULT_SCREEN_SIZE,
                 screen_origin: tuple[int, int] = (0, 0)) -> None:
        """``screen_size``: (width, height) in the pixels the tracker sends; ``screen_origin``: where that screen's top
        left is in them ((0, 0) for the primary screen)."""
        try:
            self.screen_size, self.screen_origin = check_screen(screen_size, screen_origin)
        except ValueError as exc:
            raise GazeSourceError(str(exc)) from exc
        self.repeated = 0  # points equal to the one before: the tracker lost the eyes (also counted in lost)
        self._previous: tuple[float, float] | None = None
        super().__init__(host, port, smoothing, stale_after, on_sample, token)  # starts the receiver thread: last

    @property
    def description(self) -> str:
        (w, h), (left, top) = self.screen_size, self.screen_origin
        at = f" at {left},{top}" if (left, top) != (0, 0) else ""
        return f"{super().description} (pixels of a {w}x{h} screen{at})"

    def _handle(self, data: bytes, sender: tuple) -> None:
        """Process one datagram: a point, a lost sample, a rejected one (or one without the input token)."""
        if not self._authorised(token_of(data) if self._token is not None else None, sender):
            return
        try:
            x, y, t = parse_datagram(data)
        except BadDatagram as exc:
            self._reject(exc.kind, exc.detail)
            return
        if (x, y) == (0.0, 0.0):  # OptiKey drops these first, then repeats among the rest
            self._lost()
            return
        if (x, y) == self._previous:
            self.repeated += 1
            self._lost()
            return
        self._previous = (x, y)
        (w, h), (left, top) = self.screen_size, self.screen_origin
        self._push((x - left) / w, (y - top) / h, t)


def open_source(options: Mapping[str, Any], smoothing: OneEuroFilter) -> OptiKeyUDPSource:
    """The registry's opener (input/registry.py): OptiKey's datagrams on the options' port, with their input token;
    the pixels are of ``screen_size`` (and ``screen_origin``), which the window adds: its screen in physical pixels."""
    return OptiKeyUDPSource(port=options.get("optikey_port", DEFAULT_PORT), smoothing=smoothing,
                            token=options.get("input_token") or None,
                            screen_size=tuple(options.get("screen_size", DEFAULT_SCREEN_SIZE)),
                            screen_origin=tuple(options.get("screen_origin", (0, 0))))
