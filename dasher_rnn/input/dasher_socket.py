"""Dasher's socket input: labelled coordinate lines over UDP, so trackers and bridges written for Dasher
drive this app unchanged.

Each datagram holds one or more lines ``label value``, each ended by a newline, for example::

    x 0.42
    y 0.61

A line starting with the x label sets the horizontal position, one starting with the y label the
vertical one; a datagram may carry either, both or neither. Values are mapped linearly from the ranges
the user sets (``x_range``, ``y_range``: (min, max)) onto the writing area: x min is its left edge and
x max its right edge, y min its top and y max its bottom. Swapping min and max inverts an axis.

What this matches in Dasher (``Src/DasherCore/SocketInputBase.cpp``, ``ReadForever`` and
``ParseMessage``, and ``Doc/development/socketinput.txt``, dasher-project/dasher at 0ec7d646):

- UDP on port 20320 by default (``LP_SOCKET_PORT``); labels ``x`` and ``y`` and ranges 0..1 by default
  (``SP_SOCKET_INPUT_X_LABEL`` ..., ``LP_SOCKET_INPUT_X_MIN`` ... are thousandths, 0 and 1000).
- One read takes at most 4095 bytes (``char buffer[4096]``, ``recv(..., sizeof(buffer) - 1)``): the rest
  of a longer datagram is lost. Here the same first 4095 bytes are parsed, and the datagram is also
  counted as a bad one, so that the user learns why the end of it had no effect.
- The datagram is a C string: a NUL byte ends it.
- Only lines ended by ``\\n`` are read (``while ((p = strchr(message, '\\n')) != NULL)``): text after the
  last newline is never used. Dasher drops it silently; here it is counted as a bad line ("no newline at
  the end"), since it is almost always a bridge that forgot the newline.
- A line belongs to a coordinate if it *starts with* that coordinate's label, compared byte for byte
  (``strncmp(label, line, strlen(label))``): with label ``x``, ``x 0.5`` and ``x0.5`` both set x, and
  ``xy 0.5`` is an x line whose value does not parse. Both coordinates may share one label; a line then
  sets both. Labels are at most 128 bytes (``DASHER_SOCKET_INPUT_MAX_COORDINATE_LABEL_LENGTH``).
- Lines that start with neither label are ignored: other data may share the stream (the protocol note's
  ``OtherData 12s``). They are counted in ``ignored``, not as bad lines.
- The value is what ``sscanf(rest, "%lf")`` reads after the label, reproduced by ``scan_double``
  (checked against the C library in the tests): leading white space skipped, then the longest number
  (decimal with optional exponent, C99 hexadecimal float, ``inf``/``infinity``, ``nan``), anything after
  it ignored (``x 0.5 px`` is 0.5). A labelled line with no number after the label is a bad line (Dasher
  mentions it only in its debug output).
- Values outside [min, max] are clipped to it (counted in ``clipped``), whichever way round min and max
  are; an infinite value is clipped like any other.
- Several coordinate lines in one datagram are applied in order (the last one for an axis wins); the
  point is pushed once per datagram that set a coordinate.

The input token (``token``, when the user has set one): a datagram counts only if one of its lines is
``token SECRET`` (the label ``token``, one space, the token; ended by a newline like every line). Dasher ignores
a line whose label is neither of its own, so a bridge that sends the token line still drives Dasher unchanged.
A token line is never read as a coordinate, whatever the labels. Without a token set, it is a line with another
label, as in Dasher.

Where this differs, on purpose:

- A NaN value is a bad line (in Dasher, converting NaN to a pixel is undefined behaviour).
- min equal to max is refused when the input starts (Dasher silently never moves that axis), and so is
  a label that is empty, has control characters or is longer than 128 bytes (Dasher truncates it).
- A coordinate that has not arrived yet sits at the centre of the writing area (Dasher: pixel 2048).
- Dasher holds the last position for ever; here, as with gaze, the app pauses when no coordinate has
  arrived for ``stale_after`` seconds (1 s by default), so a tracker that stops cannot steer on. Send
  positions periodically, as Dasher's note recommends anyway.
- Dasher listens on every network interface; this listens on 127.0.0.1 unless given another host.
- Dasher's one-dimensional mode (only the y label) is not offered: the writing area needs both axes.
- The x axis: Dasher's note says x min is the left edge, and the code's comment means that, but since
  Dasher moved to screen coordinates (commit 09ffc998, 2011) its code maps x min to the right edge. This
  follows the note; a bridge tuned to current Dasher's mirrored x can swap x min and x max.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dasher_rnn.input.gaze import GazeSample, GazeSourceError
from dasher_rnn.input.one_euro import OneEuroFilter
from dasher_rnn.input.udp import UDPSource

DEFAULT_PORT = 20320
TOKEN_LINE = b"token "  # the input token's line: this, then the token
DEFAULT_X_LABEL, DEFAULT_Y_LABEL = "x", "y"
DEFAULT_RANGE = (0.0, 1.0)
MAX_READ = 4095  # bytes of a datagram Dasher reads
MAX_LABEL_BYTES = 128
RANGE_LIMIT = 2147480.0  # Dasher's preferences accept -2147480000..2147480000 thousandths
_C_SPACE = b" \t\n\v\f\r"  # isspace() in the C locale, which %lf skips
_DECIMAL = re.compile(rb"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_HEX = re.compile(rb"([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?[0-9]+))?")
_HEX_DIGITS = b"0123456789abcdefABCDEF."


def scan_double(text: bytes) -> float | None:
    """What glibc's ``sscanf(text, "%lf", &d)`` stores in d, or None where it matches nothing.

    Beyond strtod: ``0x`` with no hexadecimal digit or point after it, and a word that starts like
    ``infinity`` but stops short (``infin``), match nothing, as in glibc.
    """
    s = text.lstrip(_C_SPACE)
    sign = 1.0
    if s[:1] in (b"+", b"-"):
        sign, s = (-1.0 if s[:1] == b"-" else 1.0), s[1:]
    if s[:2] in (b"0x", b"0X"):
        rest = s[2:]
        if not rest or rest[:1] not in _HEX_DIGITS:
            return None
        match = _HEX.match(rest)
        assert match is not None  # always matches (possibly empty)
        whole, frac, exponent = match.groups()
        try:
            return sign * float.fromhex(f"0x{(whole or b'0').decode()}.{(frac or b'0').decode()}"
                                        f"p{(exponent or b'0').decode()}")
        except OverflowError:
            return sign * math.inf
    lower = s[:8].lower()
    if lower.startswith(b"inf"):
        if lower[3:4] == b"i" and lower != b"infinity":
            return None  # glibc reads on into "infinity" and fails if the word stops short
        return sign * math.inf
    if lower.startswith(b"nan"):
        return math.nan
    match = _DECIMAL.match(s)
    return sign * float(match.group()) if match else None


def check_label(label: str) -> str:
    """The label if Dasher's socket input can use it; ValueError saying why not."""
    if not isinstance(label, str) or not label:
        raise ValueError("a label must be a non-empty string")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in label):
        raise ValueError(f"a label cannot contain control characters (newline, tab...): {label!r}")
    if len(label.encode("utf-8")) > MAX_LABEL_BYTES:
        raise ValueError(f"a label can have at most {MAX_LABEL_BYTES} bytes, as in Dasher")
    return label


def check_range(low: float, high: float, axis: str = "") -> tuple[float, float]:
    """(min, max) as floats if usable; ValueError saying why not."""
    name = f"{axis} " if axis else ""
    for value in (low, high):
        if isinstance(value, bool) or not isinstance(value, int | float) or not -RANGE_LIMIT <= value <= RANGE_LIMIT:
            raise ValueError(f"{name}min and max must be numbers from {-RANGE_LIMIT:g} to {RANGE_LIMIT:g}, "
                             f"got {str(low)[:40]} and {str(high)[:40]}")
    if low == high:
        raise ValueError(f"{name}min and max are both {low}: the range must not be empty")
    return float(low), float(high)


@dataclass
class SocketReading:
    """What one datagram said: positions (0..1 on the writing area) for the axes it set, and its faults."""

    x: float | None = None
    y: float | None = None
    bad: list[tuple[str, str]] = field(default_factory=list)  # (kind, detail) per bad line
    ignored: int = 0  # lines with other labels
    clipped: int = 0  # values outside [min, max], clipped
    token: bytes | None = None  # the input token's line, when the parser reads them: the token (the last one)


class SocketParser:
    """Parses datagrams of Dasher's socket protocol for one configuration of labels and ranges; ``tokens``: lines
    ``token SECRET`` are the input token's (``SocketReading.token``), not coordinates nor other data."""

    def __init__(self, x_label: str = DEFAULT_X_LABEL, y_label: str = DEFAULT_Y_LABEL,
                 x_range: tuple[float, float] = DEFAULT_RANGE, y_range: tuple[float, float] = DEFAULT_RANGE,
                 tokens: bool = False) -> None:
        self.tokens = tokens
        self.x_label, self.y_label = check_label(x_label), check_label(y_label)
        self.x_range, self.y_range = check_range(*x_range, axis="x"), check_range(*y_range, axis="y")
        self._axes = [(x_label.encode("utf-8"), self.x_range), (y_label.encode("utf-8"), self.y_range)]

    def parse(self, data: bytes) -> SocketReading:
        """Read one datagram as Dasher does (see the module docstring); never raises."""
        reading = SocketReading()
        if len(data) > MAX_READ:
            reading.bad.append(("too long", f"datagram of {len(data)} bytes: only the first {MAX_READ} are read"))
        *lines, tail = data[:MAX_READ].split(b"\0", 1)[0].split(b"\n")
        positions: list[float | None] = [None, None]
        for line in lines:
            if self.tokens and line.startswith(TOKEN_LINE):
                reading.token = line[len(TOKEN_LINE):].rstrip(_C_SPACE)
                continue
            matched, used, problem = False, False, ""
            for axis, (label, (low, high)) in enumerate(self._axes):
                if not line.startswith(label):
                    continue
                matched = True
                value = scan_double(line[len(label):])
                if value is None or math.isnan(value):
                    problem = "no number after the label" if value is None else "value is NaN"
                    continue
                clipped = min(max(value, min(low, high)), max(low, high))
                reading.clipped += clipped != value
                positions[axis] = (clipped - low) / (high - low)
                used = True
            if problem and not used:  # (with labels "x" and "xy", "xy 1" is a failed x line but a good y one)
                reading.bad.append((problem, _show(line)))
            elif not matched and line.strip(_C_SPACE):
                reading.ignored += 1
        if tail.strip(_C_SPACE):
            reading.bad.append(("no newline at the end", f"{_show(tail)} (Dasher ignores such a line too)"))
        reading.x, reading.y = positions
        return reading


def _show(line: bytes) -> str:
    return repr(line[:60].decode("utf-8", "replace")) + ("..." if len(line) > 60 else "")


class DasherSocketSource(UDPSource):
    """Listens for Dasher's socket protocol on a daemon thread; ``port=0`` picks a free port (``.port``).

    Raises GazeSourceError when the labels or ranges are unusable or the port cannot be had.
    """

    label = "Dasher socket input"
    bad_unit = "line"
    listens_for = "Dasher socket input"
    space = "view"

    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT, x_label: str = DEFAULT_X_LABEL,
                 y_label: str = DEFAULT_Y_LABEL, x_range: tuple[float, float] = DEFAULT_RANGE,
                 y_range: tuple[float, float] = DEFAULT_RANGE, smoothing: OneEuroFilter | None = None,
                 stale_after: float = 1.0, on_sample: Callable[[GazeSample], None] | None = None,
                 token: str | None = None) -> None:
        try:
            self.parser = SocketParser(x_label, y_label, x_range, y_range, tokens=token is not None)
        except ValueError as exc:
            raise GazeSourceError(str(exc)) from exc
        self.ignored = 0  # lines with neither label
        self.clipped = 0  # values outside their range
        self._x = self._y = 0.5  # an axis not heard from yet sits in the middle
        super().__init__(host, port, smoothing, stale_after, on_sample, token)  # starts the receiver thread: last

    @property
    def description(self) -> str:
        p = self.parser
        return (f"{super().description} (x: {p.x_label!r} {p.x_range[0]:g} to {p.x_range[1]:g}, "
                f"y: {p.y_label!r} {p.y_range[0]:g} to {p.y_range[1]:g})")

    def problems(self) -> str:
        text = super().problems()
        if self.ignored and not self.received:  # something arrives, but never with our labels
            p = self.parser
            hint = (f"{self.label}: {self.ignored} lines without the labels {p.x_label!r} or {p.y_label!r} "
                    f"ignored, and none with them")
            text = f"{text}; {hint}" if text else hint
        return text

    def _handle(self, data: bytes, sender: tuple) -> None:
        reading = self.parser.parse(data)
        if not self._authorised(reading.token, sender):
            return
        self.ignored += reading.ignored
        self.clipped += reading.clipped
        for kind, detail in reading.bad:
            self._reject(kind, detail)
        if reading.x is None and reading.y is None:
            return
        if reading.x is not None:
            self._x = reading.x
        if reading.y is not None:
            self._y = reading.y
        self._push(self._x, self._y, time.monotonic())


def open_source(options: Mapping[str, Any], smoothing: OneEuroFilter) -> DasherSocketSource:
    """The registry's opener (input/registry.py): Dasher's socket input as the options (the preferences) set it up."""
    return DasherSocketSource(port=options["socket_port"], x_label=options["socket_x_label"], y_label=options["socket_y_label"],
                              x_range=(options["socket_x_min"], options["socket_x_max"]),
                              y_range=(options["socket_y_min"], options["socket_y_max"]), smoothing=smoothing,
                              token=options["input_token"] or None)
