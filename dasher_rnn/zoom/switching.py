"""Switch access as Dasher's button modes do it, the frame every mode shares: its settings (``SwitchConfig``),
what it asks of the zoom (``Steering``), what it shows (``SwitchView``), and how it takes presses (``SwitchMode``).
The modes themselves, by name, are in ``switch_modes.py``; where presses come from (keys, devices) is the input
layer's (``input/switches.py``).

A mode is one or two switches instead of a pointer, without a toolkit. It takes press and release events, each with
a time in seconds (any monotonic clock, the same as the one ``update`` is given), and each frame (``update``) tells
the controller how to steer (``Steering``): a pointer in Dasher coordinates (the dynamic modes), a shift of the view
(two-button), or a scheduled zoom that makes a y-range fill the view (the scanning modes, Dasher's ``ScheduleZoom``).
It also says what the view should draw (``view``: target markers, the scanning boxes), as plain data in Dasher
coordinates, so that a front end only paints it and a right-to-left view mirrors it like everything else
(``geometry.py::Viewport``).

Unlike Dasher's, the dynamic modes stop by themselves after ``idle_stop_s`` (6 s) without a press, running or
reversing: their zoom never stops otherwise, and a user who was interrupted (or whose switch stuck) would come back to
words nobody chose. A switch held down that long is taken as stuck in every mode: the mode forgets it and stops.
The controller then takes back what the mode wrote since the last press (``timed_out``).

Events are never refused with an error: a release without a press, a switch number the mode does not use (a
one-switch mode takes either), a time that goes backwards (taken as the latest time seen), a time that is not a
number (ignored) or a burst of presses are all taken in their stride. Dasher's dedicated pause and backoff buttons
(``BP_BACKOFF_BUTTON``, off by default) and the two-button "double press is the other button" variant
(``BP_2B_INVERT_DOUBLE``) are not modelled.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from dasher_rnn.zoom.geometry import MAX_Y, ORIGIN_X, ORIGIN_Y

REVERSE_POINTER = (MAX_Y, ORIGIN_Y)  # where the dynamic modes steer to back out (Dasher: 41943, 2048; our zoom
# caps x at MAX_Y, which is its fastest zoom out)


class SwitchState(StrEnum):
    STOPPED = "stopped"
    RUNNING = "running"
    REVERSING = "reversing"  # the dynamic modes only


@dataclass(frozen=True)
class SwitchConfig:
    """The switch modes' values, validated (``ValueError`` naming the field). Dasher's defaults, from
    ``Parameters.cpp`` and the filters' ``sSettings`` (their ranges too, converted from milliseconds).

    Meant to be user preferences: ``long_press_s``, ``multi_press_s`` (the dynamic modes), ``scan_s`` (scanning),
    ``zoom_s`` and ``scan_boxes`` (both scanning modes), ``two_button_offset`` and ``swap_buttons`` (two-button);
    the zoom speed of the dynamic modes is the controller's speed, already a preference. The rest are Dasher's
    fixed geometry, kept here so that tests and the benchmark can vary them."""

    long_press_s: float = 1.0  # a press held this long reverses (Dasher's LP_HOLD_TIME, 1000 ms; 0.1-10 s)
    multi_press_s: float = 1.0  # two presses this close are a double press (LP_MULTIPRESS_TIME, 1000 ms; 0.1-10 s)
    scan_s: float = 1.0  # each box is highlighted this long (LP_BUTTON_SCAN_TIME: 600 ms on Dasher's iPhone, where
    # it scans by default; 0.2-10 s: step-scan is the mode for no scanning)
    zoom_s: float = 0.5  # a selected box comes to fill the view over this long (LP_ZOOMSTEPS, 32 frames; 0-5 s)
    scan_boxes: int = 4  # forward boxes in the scanning modes (LP_B, 4; 2-10), plus the back box
    safety: float = 25.0  # a selected box is zoomed with this margin each side, Dasher units (LP_S, 25; 0-256)
    scan_cycles: int = 2  # scanning stops after this many whole cycles without a press (0: never; 0-100)
    idle_stop_s: float = 6.0  # the dynamic modes stop after this long without a press, and a switch held down this
    # long is taken as stuck: the mode stops and forgets it (0: never; 0-120 s). Not Dasher's: its dynamic modes zoom
    # on until pressed, and write what nobody chose for a user who was interrupted or whose switch stuck
    two_button_offset: float = 0.4 * MAX_Y  # a two-button press shifts the view this far (LP_TWO_BUTTON_OFFSET, 1638;
    # 1024-2048)
    lag_s: float = 0.05  # two-button: the shift is enlarged by the zoom during this lag (LP_DYNAMIC_BUTTON_LAG; 0-1 s)
    swap_buttons: bool = False  # two-button: the first switch steers down, the second up (BP_TWOBUTTON_REVERSE)
    target_x: float = 100.0  # one-button's points (and two-button's marks): this far from the right edge (Dasher: 100) ...
    target_y: float = 100.0  # ... and this far from the top and from the bottom (Dasher: 100 and 3996 of 4096)

    def __post_init__(self) -> None:
        ranges: dict[str, tuple[float, float]] = {
            "long_press_s": (0.1, 10.0), "multi_press_s": (0.1, 10.0), "scan_s": (0.2, 10.0), "zoom_s": (0.0, 5.0),
            "scan_boxes": (2, 10), "safety": (0.0, 256.0), "scan_cycles": (0, 100), "idle_stop_s": (0.0, 120.0),
            "two_button_offset": (1024.0, 2048.0), "lag_s": (0.0, 1.0), "target_x": (1.0, ORIGIN_X),
            "target_y": (0.0, ORIGIN_Y)}
        for name, (lo, hi) in ranges.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
                raise ValueError(f"{name} must be a number from {lo} to {hi}, not {value!r}")
        for name in ("scan_boxes", "scan_cycles"):
            if not isinstance(getattr(self, name), int):
                raise ValueError(f"{name} must be a whole number, not {getattr(self, name)!r}")
        if not isinstance(self.swap_buttons, bool):
            raise ValueError(f"swap_buttons must be true or false, not {self.swap_buttons!r}")


@dataclass(frozen=True)
class Steering:
    """What a mode asks of the zoom for one frame (``SwitchMode.update``), in Dasher coordinates.

    The controller applies ``offset`` then ``zoom_to``, then steps the zoom towards ``pointer`` (a scheduled zoom,
    while it lasts, takes the place of the pointer); with neither a pointer nor a zoom under way nothing moves."""

    pointer: tuple[float, float] | None = None  # steer towards this point (x from the right edge), as a mouse would
    offset: float = 0.0  # shift the view down by this much first (negative: up); Dasher's CDasherModel::Offset
    zoom_to: tuple[float, float] | None = None  # start a zoom that makes this y-range fill the view (ScheduleZoom)


@dataclass(frozen=True)
class Marker:
    """A point the view marks for a dynamic mode. ``role`` is ``"target"`` (one-button: where the zoom heads when
    ``active``, the other one after the next press) or ``"shift"`` (two-button: the height a press of switch
    ``button`` brings to the crosshair). Dasher draws them beside the right edge (``DecorateView``); both modes put
    them ``target_x`` in from it, so that a mark drawn round its point is whole on the view."""

    x: float
    y: float
    role: str
    active: bool = False
    button: int = 0


@dataclass(frozen=True)
class ScanBox:
    """A scanning box, as Dasher's ``NewDrawGoTo`` outlines it: from the right edge (x = 0) to x = ``y2 - y1``,
    between heights ``y1`` and ``y2``. The back box is the whole view. The highlighted one is drawn bold."""

    index: int
    y1: float
    y2: float
    back: bool = False
    highlighted: bool = False


@dataclass(frozen=True)
class SwitchView:
    """Everything a front end draws for a mode, and the one-line hint for its status bar."""

    mode: str
    state: SwitchState
    markers: tuple[Marker, ...] = ()
    boxes: tuple[ScanBox, ...] = ()
    hint: str = ""


def _number(t: object) -> bool:
    return isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t)


class SwitchMode(ABC):
    """One way of writing with switches. Feed it ``press`` and ``release`` as they happen, ``update`` every frame,
    and draw ``view()``; ``start`` and ``stop`` come from the controller (its Start and Stop, the control box)."""

    name: ClassVar[str]
    label: ClassVar[str]
    switches: ClassVar[int]  # how many switches the mode uses

    def __init__(self, config: SwitchConfig | None = None) -> None:
        self.config = config or SwitchConfig()
        self.state = SwitchState.STOPPED
        self.timed_out = False
        self.presses = 0  # presses taken (a held switch's repeats and presses while one is held are not)
        self._now = 0.0
        self._held: int | None = None  # the switch held down, if any
        self._down_at = 0.0
        self._pressed_at = 0.0  # the last press, or the start
        self.stuck = 0  # switches held down for ``idle_stop_s`` and forgotten
        self._pending: list[Steering] = []  # what presses asked for since the last update

    @property
    def running(self) -> bool:
        """Writing: running or reversing (not stopped)."""
        return self.state != SwitchState.STOPPED

    def _time(self, t: object) -> float | None:
        """``t`` as the mode's time (never before the latest seen), or None for something that is not a time."""
        if not _number(t):
            return None
        assert isinstance(t, int | float)
        self._now = max(self._now, float(t))
        return self._now

    def press(self, button: int, t: float) -> None:
        """Switch ``button`` went down at time ``t`` (seconds)."""
        now = self._time(t)
        if now is None or isinstance(button, bool) or not isinstance(button, int) or self._held is not None:
            return
        self._held, self._down_at = button, now
        self._pressed_at = now
        self.presses += 1
        self._pressed(self._button(button), now)

    def release(self, button: int, t: float) -> None:
        """Switch ``button`` came up at time ``t``; a release without its press is ignored."""
        now = self._time(t)
        if now is None or self._held is None or button != self._held:
            return
        self._released(now)
        self._held = None

    def release_all(self, t: float) -> None:
        """Forget a switch held down, as if it had come up at ``t``: for a front end that may have missed its
        release (its window lost the focus with the key down), which would otherwise leave every later press
        ignored."""
        if self._held is not None:
            self.release(self._held, t)
            self._held = None

    def _button(self, button: int) -> int:
        """The switch as the mode uses it: a one-switch mode takes any switch as its one."""
        return 0 if self.switches == 1 else min(max(button, 0), self.switches - 1)

    def start(self, t: float) -> None:
        """Start writing (the controller's Start)."""
        now = self._time(t)
        if self.state == SwitchState.STOPPED:
            self.state = SwitchState.RUNNING
            self._pressed_at = self._now
            self._started(self._now if now is None else now)

    def stop(self) -> None:
        """Stop writing (the controller's Stop, the control box's Stop); a zoom under way is dropped."""
        self.state = SwitchState.STOPPED
        self.timed_out = False  # stopped by ``_timeouts``: nobody pressed (or a switch stuck)
        self._pending.clear()

    def update(self, t: float, speed_bps: float = 0.0) -> Steering:
        """One frame at time ``t``: what the presses since the last frame asked for, and where to steer now.
        ``speed_bps`` is the zoom's speed (two-button's lag compensation)."""
        self._time(t)
        self._tick(self._now)
        self._timeouts(self._now)
        pending, self._pending = self._pending, []
        offset = sum(s.offset for s in pending) * self.lag_factor(speed_bps)
        zoom_to = next((s.zoom_to for s in reversed(pending) if s.zoom_to is not None), None)
        if self.state == SwitchState.STOPPED:
            return Steering()
        return Steering(self._pointer(), offset, zoom_to)

    def _timeouts(self, t: float) -> None:
        """A switch held down for ``idle_stop_s`` is stuck (a switch left pressed on its socket, a controller's
        button wedged): the mode forgets it and stops. A mode that moves by itself stops after ``idle_stop_s``
        without a press (``idle_stops``)."""
        limit = self.config.idle_stop_s
        if not limit:
            return
        if self._held is not None and t - self._down_at >= limit:
            self._held = None
            self.stuck += 1
            self.stop()
            self.timed_out = True
        elif self.idle_stops and self.running and self._held is None and t - self._pressed_at >= limit:
            self.stop()
            self.timed_out = True

    idle_stops: ClassVar[bool] = False  # the mode moves without presses, so it stops after ``idle_stop_s`` of none

    def lag_factor(self, speed_bps: float) -> float:
        """What a shift asked for by a press is multiplied by at ``speed_bps`` (two-button's lag compensation)."""
        return 1.0

    @abstractmethod
    def view(self) -> SwitchView:
        """What the view draws now."""

    # -- what each mode does ------------------------------------------------------------------------------------
    @abstractmethod
    def _pressed(self, button: int, t: float) -> None: ...

    def _released(self, t: float) -> None:
        return None

    def _started(self, t: float) -> None:
        return None

    def _tick(self, t: float) -> None:
        return None

    def _pointer(self) -> tuple[float, float] | None:
        return None


__all__ = ["REVERSE_POINTER", "Marker", "ScanBox", "Steering", "SwitchConfig", "SwitchMode", "SwitchState",
           "SwitchView"]
