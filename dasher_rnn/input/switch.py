"""Switch access as Dasher's button modes do it: one or two switches instead of a pointer, without a toolkit.

A mode takes press and release events, each with a time in seconds (any monotonic clock, the same as the one
``update`` is given), and each frame (``update``) tells the controller how to steer (``Steering``): a pointer in
Dasher coordinates (the dynamic modes), a shift of the view (two-button), or a scheduled zoom that makes a
y-range fill the view (the scanning modes, Dasher's ``ScheduleZoom``). It also says what the view should draw
(``view``: target markers, the scanning boxes), as plain data in Dasher coordinates, so that a front end only
paints it and a right-to-left view mirrors it like everything else (``zoom/geometry.py::Viewport``).

Button 0 is the first switch, 1 the second. The modes, registered by name in ``SWITCH_MODES`` (as Dasher registers
its input filters by ID):

- ``one-button`` (Dasher's ``OneButtonDynamicFilter``): the zoom heads, at the set speed, for one of two points
  near the right edge, one near the top (y = 100 of 4096) and one near the bottom (y = 3996); a press swaps them,
  so the user steers by alternating. A double press (two presses within the multi-press gap, 1000 ms) or a long
  press (held 1000 ms) reverses: the zoom backs out until the next press.
- ``two-button`` (``TwoButtonDynamicFilter``): the zoom heads straight for the crosshair; a press of the first switch
  shifts the view down by 0.4 of the axis (Dasher's ``LP_TWO_BUTTON_OFFSET``, 1638 of 4096), so that what was that
  far above the crosshair comes to it; the second switch shifts it up. The shift is enlarged by what the zoom grew
  during the user's lag (``lag_s``, Dasher's ``LP_DYNAMIC_BUTTON_LAG``, 50 ms). Double or long press reverses.
- ``scanning`` (Dasher's menu mode, ``ButtonMode`` with a scan time, for those who cannot time a press against a
  moving target): the view is cut into ``scan_boxes`` boxes (Dasher's ``LP_B``, 4) and a back box (the whole view);
  they are highlighted in turn, ``scan_s`` each; a press zooms into the highlighted box (over ``zoom_s``, the box
  and a safety margin of ``LP_S`` = 25 units on each side coming to fill the view) and the highlight starts again
  from the first box; the back box zooms out by a factor of two (the view comes to fill half the height) and stays
  highlighted, so that repeated presses keep backing out.
- ``step-scan`` (menu mode without a scan time: Dasher's default on the desktop): the first switch moves the
  highlight to the next box, the second selects it.

The dynamic modes have Dasher's three states (``DynamicButtons``): stopped, running and reversing. Stopped, any
press starts (and does nothing else); reversing, any press stops; running, a press acts (a swap, a shift), a
double or long press reverses. A press that starts or stops never counts towards a double press
(``ButtonMultiPress`` clears its queue on ``run``, ``pause`` and ``reverse``). As in Dasher, the first press of a
double press has already acted (swapped or shifted) when the second reverses (Dasher's ``RevertPresses`` is empty
for both filters). A switch held down ignores further presses of any switch until it is released (key repeat), and
the second press of a double press is not also a long press.

Unlike Dasher's, the dynamic modes stop by themselves after ``idle_stop_s`` (6 s) without a press, running or
reversing: their zoom never stops otherwise, and a user who was interrupted (or whose switch stuck) would come back to
words nobody chose. A switch held down that long is taken as stuck in every mode: the mode forgets it and stops.
The controller then takes back what the mode wrote since the last press (``timed_out``).

The scanning modes are stopped or running. Stopped, a press starts scanning from the first box (and selects
nothing). Scanning stops by itself after ``scan_cycles`` whole cycles without a press (as Dasher's static
one-button filter stops after a sweep without one), so that a user who has walked away is not left with a moving
highlight; the next press starts it again. Step-scan never stops by itself. Every mode also stops through the
control box (``zoom/control.py``'s Stop), which all of them can reach: it is the bottom ``CONTROL_SHARE`` of every
letter box, steered to like any other box. The controller stops a mode through ``stop`` (its Stop button, the
control box) and starts it through ``start``.

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


class DynamicMode(SwitchMode):
    """Dasher's ``DynamicButtons`` and ``ButtonMultiPress``: stopped, running and reversing, with long and multiple
    presses of the same switch detected and passed to ``_act`` (kind 0: a single press, 1: long, n >= 2: the n-th
    press of a multiple press)."""

    max_clicks: ClassVar[int] = 2
    idle_stops = True

    def __init__(self, config: SwitchConfig | None = None) -> None:
        super().__init__(config)
        self._queue: list[float] = []  # times of the recent presses of ``_queue_button``
        self._queue_button = -1
        self._long_done = True  # the held press has been handled as a long press (or must not be)
        self.reversals = 0  # times the mode started reversing

    def _pressed(self, button: int, t: float) -> None:
        if button == self._queue_button and self._queue:
            if t - self._queue[-1] <= self.config.multi_press_s:  # the next press of a multiple press
                count = len(self._queue) + 1
                self._long_done = True  # a multiple press is never also a long press
                if count >= self.max_clicks:
                    self._queue.clear()
                else:
                    self._queue.append(t)
                self._event(button, count, t)
                return
            self._queue.clear()
        else:
            self._queue.clear()
            self._queue_button = button
        self._queue.append(t)
        self._long_done = False
        self._event(button, 0, t)

    def _released(self, t: float) -> None:
        self._check_long(t)  # released after the long-press time but before the frame that would have seen it

    def _tick(self, t: float) -> None:
        self._check_long(t)

    def _check_long(self, t: float) -> None:
        if self._held is not None and not self._long_done and t - self._down_at >= self.config.long_press_s:
            self._long_done = True
            self._event(self._button(self._held), 1, t)

    def _event(self, button: int, kind: int, t: float) -> None:
        """Dasher's ``ButtonEvent``: stopped, anything starts; reversing, anything stops; running, the mode acts."""
        if self.state == SwitchState.STOPPED:
            self.state = SwitchState.RUNNING
            self._queue.clear()
        elif self.state == SwitchState.REVERSING:
            self.stop()
        elif kind != 0:
            self.reverse()
        else:
            self._act(button, t)

    def reverse(self) -> None:
        """Back out until the next press."""
        self.state = SwitchState.REVERSING
        self._queue.clear()
        self.reversals += 1

    def stop(self) -> None:
        super().stop()
        self._queue.clear()

    def _started(self, t: float) -> None:
        self._queue.clear()

    @abstractmethod
    def _act(self, button: int, t: float) -> None:
        """A single press while running."""

    def _pointer(self) -> tuple[float, float] | None:
        return REVERSE_POINTER if self.state == SwitchState.REVERSING else self._forward()

    @abstractmethod
    def _forward(self) -> tuple[float, float]:
        """Where the zoom heads while running."""

    def _hint(self) -> str:
        if self.state == SwitchState.STOPPED:
            return "Press to start"
        if self.state == SwitchState.REVERSING:
            return "Backing out: press to stop"
        return ""


class OneButtonDynamic(DynamicMode):
    """Dasher's ``OneButtonDynamicFilter`` (see the module docstring)."""

    name = "one-button"
    label = "One switch: steer up and down"
    switches = 1

    def __init__(self, config: SwitchConfig | None = None) -> None:
        super().__init__(config)
        self.target = 0  # 0: the point near the top, 1: near the bottom (Dasher starts at the top)

    def _targets(self) -> tuple[tuple[float, float], tuple[float, float]]:
        c = self.config
        return (c.target_x, c.target_y), (c.target_x, MAX_Y - c.target_y)

    def _act(self, button: int, t: float) -> None:
        self.target = 1 - self.target

    def _forward(self) -> tuple[float, float]:
        return self._targets()[self.target]

    def view(self) -> SwitchView:
        markers = tuple(Marker(x, y, "target", active=i == self.target) for i, (x, y) in enumerate(self._targets()))
        return SwitchView(self.name, self.state, markers, hint=self._hint())


class TwoButtonDynamic(DynamicMode):
    """Dasher's ``TwoButtonDynamicFilter`` (see the module docstring)."""

    name = "two-button"
    label = "Two switches: up and down"
    switches = 2

    def _act(self, button: int, t: float) -> None:
        up = (button == 0) != self.config.swap_buttons
        self._pending.append(Steering(offset=self.config.two_button_offset * (1.0 if up else -1.0)))

    def lag_factor(self, speed_bps: float) -> float:
        # what the zoom grew while the user was reacting (Dasher: exp(LP_MAX_BITRATE * LP_DYNAMIC_BUTTON_LAG))
        return 2.0 ** (max(speed_bps, 0.0) * self.config.lag_s)

    def _forward(self) -> tuple[float, float]:
        return self.config.target_x, ORIGIN_Y

    def view(self) -> SwitchView:
        offset, x = self.config.two_button_offset, self.config.target_x  # as far in from the edge as one-button's:
        up = 1 if self.config.swap_buttons else 0  # a mark centred on the edge would be half off the view
        markers = (Marker(x, ORIGIN_Y - offset, "shift", button=up),
                   Marker(x, ORIGIN_Y + offset, "shift", button=1 - up))
        return SwitchView(self.name, self.state, markers, hint=self._hint())


class MenuMode(SwitchMode):
    """Dasher's menu mode (``ButtonMode`` with ``bMenu``, ``DasherButtons``): forward boxes and a back box,
    highlighted in turn; a selection is a scheduled zoom."""

    def __init__(self, config: SwitchConfig | None = None) -> None:
        super().__init__(config)
        self.highlighted = 0
        self.selections = 0
        self.backs = 0  # selections of the back box
        n = self.config.scan_boxes
        self._display = [(i * MAX_Y / n, (i + 1) * MAX_Y / n) for i in range(n)] + [(0.0, MAX_Y)]
        s = self.config.safety
        self._zoom = [(a - s, b + s) for a, b in self._display[:-1]] + [(-MAX_Y / 2, 1.5 * MAX_Y)]

    @property
    def back_box(self) -> int:
        """The index of the back box (after the forward boxes)."""
        return self.config.scan_boxes

    @property
    def box_count(self) -> int:
        return self.config.scan_boxes + 1

    def box_range(self, index: int) -> tuple[float, float]:
        """The heights box ``index`` is drawn between (the back box: the whole view)."""
        return self._display[index]

    def zoom_range(self, index: int) -> tuple[float, float]:
        """The range that selecting box ``index`` makes fill the view (the box with its safety margin; the back
        box: twice the view, so the view zooms out by a factor of two about the crosshair)."""
        return self._zoom[index]

    def _advance(self) -> None:
        self.highlighted = (self.highlighted + 1) % self.box_count

    def _select(self) -> None:
        box = self.highlighted
        self.selections += 1
        self._pending.append(Steering(zoom_to=self.zoom_range(box)))
        if box == self.back_box:
            self.backs += 1
        else:
            self.highlighted = 0

    def _started(self, t: float) -> None:
        self.highlighted = 0

    def view(self) -> SwitchView:
        boxes = tuple(ScanBox(i, a, b, back=i == self.back_box, highlighted=self.running and i == self.highlighted)
                      for i, (a, b) in enumerate(self._display))
        return SwitchView(self.name, self.state, boxes=boxes, hint="Press to start" if not self.running else "")


class Scanning(MenuMode):
    """Dasher's menu mode with a scan time (see the module docstring)."""

    name = "scanning"
    label = "One switch: scanning"
    switches = 1

    def __init__(self, config: SwitchConfig | None = None) -> None:
        super().__init__(config)
        self._next = 0.0  # when the highlight moves on
        self._idle_steps = 0  # highlight moves since the last press

    def _started(self, t: float) -> None:
        super()._started(t)
        self._next = t + self.config.scan_s
        self._idle_steps = 0

    def _pressed(self, button: int, t: float) -> None:
        if self.state == SwitchState.STOPPED:
            self.start(t)
            return
        self._select()
        self._next = t + self.config.scan_s  # the box highlighted next gets its whole time
        self._idle_steps = 0

    def _tick(self, t: float) -> None:
        if self.state == SwitchState.STOPPED:
            return
        if t < self._next:
            return
        steps = int((t - self._next) // self.config.scan_s) + 1  # one a frame, or many after a long frame
        self._next += steps * self.config.scan_s
        self._idle_steps += steps
        cycles = self.config.scan_cycles
        if cycles and self._idle_steps >= cycles * self.box_count:
            self.stop()
            return
        self.highlighted = (self.highlighted + steps) % self.box_count

    def time_left(self, t: float) -> float:
        """Seconds until the highlight moves on."""
        return max(self._next - t, 0.0)


class StepScan(MenuMode):
    """Menu mode with two switches and no scan time (see the module docstring)."""

    name = "step-scan"
    label = "Two switches: step and select"
    switches = 2

    def _pressed(self, button: int, t: float) -> None:
        if self.state == SwitchState.STOPPED:
            self.start(t)
        elif button == 0:
            self._advance()
        else:
            self._select()


SWITCH_MODES: dict[str, type[SwitchMode]] = {cls.name: cls for cls in (OneButtonDynamic, TwoButtonDynamic, Scanning,
                                                                         StepScan)}


def switch_mode(name: str, config: SwitchConfig | None = None) -> SwitchMode:
    """A new mode by name (``SWITCH_MODES``); ValueError naming the known ones otherwise."""
    try:
        cls = SWITCH_MODES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown switch mode {name!r}; known modes: {', '.join(SWITCH_MODES)}") from None
    return cls(config)


__all__ = ["REVERSE_POINTER", "SWITCH_MODES", "DynamicMode", "Marker", "MenuMode", "OneButtonDynamic", "ScanBox",
           "Scanning", "StepScan", "Steering", "SwitchConfig", "SwitchMode", "SwitchState", "SwitchView",
           "TwoButtonDynamic", "switch_mode"]
