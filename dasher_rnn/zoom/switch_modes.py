"""Dasher's button modes by name: the dynamic modes (one-button, two-button) and the menu modes (scanning,
step-scan), over the frame they share (``switching.py``: settings, steering, the view, presses).

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

The scanning modes are stopped or running. Stopped, a press starts scanning from the first box (and selects
nothing). Scanning stops by itself after ``scan_cycles`` whole cycles without a press (as Dasher's static
one-button filter stops after a sweep without one), so that a user who has walked away is not left with a moving
highlight; the next press starts it again. Step-scan never stops by itself. Every mode also stops through the
control box (``zoom/control.py``'s Stop), which all of them can reach: it is the bottom ``CONTROL_SHARE`` of every
letter box, steered to like any other box. The controller stops a mode through ``stop`` (its Stop button, the
control box) and starts it through ``start``.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

from dasher_rnn.zoom.geometry import MAX_Y, ORIGIN_Y
from dasher_rnn.zoom.switching import (
    REVERSE_POINTER,
    Marker,
    ScanBox,
    Steering,
    SwitchConfig,
    SwitchMode,
    SwitchState,
    SwitchView,
)


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


__all__ = ["SWITCH_MODES", "DynamicMode", "MenuMode", "OneButtonDynamic", "Scanning", "StepScan", "TwoButtonDynamic",
           "switch_mode"]
