"""A simulated switch user: a person pressing one or two switches to write target phrases through the writing
controller's switch modes (``switch_modes.py``), the switch counterpart of ``simulate.py``'s pointer user.

Each frame the user looks at the view (the box of the next character of the target, found as the pointer user
finds it: ``simulate.target_range``) and may decide to press; the press lands a reaction time later, drawn from a
normal distribution (``reaction_s``, ``reaction_sd``, never under ``min_reaction_s``) and is held for a drawn
``hold_s``; the user decides nothing more until it has come up. What the user decides, by mode:

- one-button: the zoom heads for the point near the top or the one near the bottom; the user predicts where the
  target's centre will be when the press lands (the zoom's speed is known: in a reaction time the view grows by
  ``2 ** (speed * reaction_s)`` about the point it heads for). A second press within the multi-press gap would
  reverse, so the next swap can come that long after this one at the soonest; the user swaps when the target's
  centre has gone past the crosshair so far that, heading the other way for that long, it swings back as far past
  the other side;
- two-button: the zoom heads straight in, so a target off the crosshair drifts away in proportion to its size;
  the user presses up or down when the crosshair would be outside the middle 70% of the target and the target
  would be nearly a shift away (85% of it), so that the shift brings it close to the crosshair (and never the same
  switch again within the multi-press gap, which would reverse);
- scanning: when the box that holds the target's centre (or the back box, see below) is highlighted, the user
  presses; a reaction time longer than what is left of the highlight selects the next box (counted as mistimed).
  A user whose reaction time does not fit in a scan time has learnt the rhythm instead, and starts the press a
  reaction time before the middle of the box's turn;
- step-scan: the user steps the highlight to that box with the first switch and selects with the second, one press
  per reaction time.

Mistakes are noticed as the pointer user notices them: when the text above the root is no longer the target's (a
wrong box filled the view), or the target has gone out of reach (off the view for one-button and scanning; more
than two and a half shifts away for two-button). The dynamic users then reverse with a double press, watch the view
back out until the target box is whole on the view again, press to stop and press to go on; the scanning users
select the back box. Each such correction is counted (``corrections``), with the characters written and backed out
of (``reversals``, as for the pointer user) and every press (``presses``, the start presses included).

The defaults are a fast, practised user: reaction time 250 ms with a standard deviation of 50 ms (simple visual
reaction times of healthy adults are about 200-250 ms, with spreads of tens of ms; many switch users are slower,
which the options model), presses held 120 ms (sd 30 ms), well under the 1 s that makes a long press.
Simulated time advances ``1/fps`` a frame and, with ``lockstep``, the run waits for the model's answers between
frames, so figures do not depend on the machine. The random draws are seeded (``seed``): a run repeats exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from dasher_rnn.zoom.boxes import Frame
from dasher_rnn.zoom.control import Action
from dasher_rnn.zoom.controller import WritingController
from dasher_rnn.zoom.geometry import MAX_Y, ORIGIN_Y
from dasher_rnn.zoom.simulate import SimulationResult, difference, target_range, wait_for_answers, write_phrases
from dasher_rnn.zoom.switch_modes import DynamicMode, MenuMode, OneButtonDynamic, Scanning, StepScan
from dasher_rnn.zoom.switching import SwitchState

INSIDE = 0.35  # two-button: no press while the crosshair would be within this much of the target's height of its centre
SHIFT_AT = 0.85  # two-button: press when the target would be this share of a shift away
FAR_SHIFTS = 2.5  # two-button: a target further than this many shifts away is backed out to


@dataclass(frozen=True)
class SwitchUserConfig:
    """The simulated person's timing (seconds), validated."""

    reaction_s: float = 0.25  # from seeing what to do to the press landing, on average
    reaction_sd: float = 0.05  # its spread (normal)
    min_reaction_s: float = 0.1  # no press lands sooner than this after the decision
    hold_s: float = 0.12  # how long a press is held, on average
    hold_sd: float = 0.03
    double_gap_s: float = 0.25  # between the two presses of a double press, on average (with reaction_sd)
    pause_s: float = 0.0  # after each phrase the person stops pressing this long (interrupted, thinking), writing on
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("reaction_s", "reaction_sd", "min_reaction_s", "hold_s", "hold_sd", "double_gap_s"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0.0 <= value <= 10.0:
                raise ValueError(f"{name} must be from 0 to 10 seconds, not {value!r}")
        if not isinstance(self.pause_s, int | float) or not 0.0 <= self.pause_s <= 3600.0:
            raise ValueError(f"pause_s must be from 0 to 3600 seconds, not {self.pause_s!r}")


@dataclass(order=True)
class _Event:
    t: float
    down: bool = field(compare=False)
    button: int = field(compare=False)
    aim: int | None = field(compare=False, default=None)  # scanning: the box the press is meant for


class SwitchUser:
    """The person: decides each frame (``decide``) and keeps the presses and releases still to land."""

    def __init__(self, controller: WritingController, config: SwitchUserConfig | None = None) -> None:
        if controller.switch is None:
            raise ValueError("the controller has no switch mode: set one with set_switch_mode")
        self.controller = controller
        self.mode = controller.switch
        self.config = config or SwitchUserConfig()
        self.rng = np.random.default_rng(self.config.seed)
        self.events: list[_Event] = []
        self.busy_until = -1.0
        self.presses = 0
        self.corrections = 0
        self.mistimed = 0
        self._backing_out = False  # a dynamic user set out to reverse and has not gone on yet
        self._last_single: dict[int, float] = {}  # when each switch last landed a press that acted (while running)
        self.paused_changed = 0  # characters of the message that pauses changed (they should change none)
        self.paused_actions: list[Action] = []  # control actions that happened during pauses

    # -- timing ---------------------------------------------------------------------------------------------------
    def _draw(self, mean: float, sd: float, least: float) -> float:
        return max(least, float(self.rng.normal(mean, sd)) if sd > 0 else mean)

    def _press(self, at: float, button: int, aim: int | None = None) -> float:
        """A press decided now to land at ``at`` (plus nothing: ``at`` already includes the reaction); its release."""
        hold = self._draw(self.config.hold_s, self.config.hold_sd, 0.02)
        self.events += [_Event(at, True, button, aim), _Event(at + hold, False, button)]
        self.events.sort()
        self.presses += 1
        self.busy_until = max(self.busy_until, at + hold)
        return at + hold

    def _react(self, t: float) -> float:
        c = self.config
        return t + self._draw(c.reaction_s, c.reaction_sd, c.min_reaction_s)

    def _double(self, t: float, button: int = 0) -> None:
        first = self._react(t)
        released = self._press(first, button)
        gap = self._draw(self.config.double_gap_s, self.config.reaction_sd, 0.05)
        second = max(first + gap, released + 0.02)
        self._press(second, button)

    def land(self, until: float) -> None:
        """Make the presses and releases due before ``until`` (the next frame's time) happen, in order."""
        while self.events and self.events[0].t < until:
            event = self.events.pop(0)
            if event.down:
                if (event.aim is not None and isinstance(self.mode, MenuMode) and self.mode.running
                        and self.mode.highlighted != event.aim):
                    self.mistimed += 1
                acted = self.mode.state == SwitchState.RUNNING
                self.controller.press(event.button, event.t)
                if acted:
                    self._last_single[event.button] = event.t
            else:
                self.controller.release(event.button, event.t)

    def finish(self) -> None:
        """The phrase is written: presses still to come are dropped, a switch held down comes up."""
        dropped: set[int] = set()
        for event in self.events:
            if event.down:
                dropped.add(event.button)
            elif event.button in dropped:
                dropped.discard(event.button)
            else:
                self.controller.release(event.button, event.t)
        self.events.clear()
        self.busy_until = -1.0

    # -- deciding -----------------------------------------------------------------------------------------------
    def decide(self, t: float, target: str, action: Action | None) -> None:
        """Look at the view at time ``t`` and perhaps decide on presses (nothing while a press is still to come)."""
        if t < self.busy_until or self.events:
            return
        mode = self.mode
        span = target_range(self.controller.zoom, target, action)
        if mode.state == SwitchState.STOPPED:
            self._backing_out = False
            self._press(self._react(t), 0)
        elif isinstance(mode, DynamicMode):
            self._dynamic(t, span)
        elif isinstance(mode, MenuMode):
            self._menu(t, span)

    def _lost(self, span: tuple[float, float] | None) -> bool:
        """The target cannot be reached going forwards."""
        if span is None:
            return True
        y1, y2 = span
        if isinstance(self.mode, OneButtonDynamic | MenuMode):
            return y2 <= 0.0 or y1 >= MAX_Y
        offset = self.mode.config.two_button_offset
        return abs((y1 + y2) / 2 - ORIGIN_Y) - (y2 - y1) / 2 > FAR_SHIFTS * offset

    def _dynamic(self, t: float, span: tuple[float, float] | None) -> None:
        mode = self.mode
        if mode.state == SwitchState.REVERSING:
            if span is not None and span[0] >= 0.0 and span[1] <= MAX_Y:  # the target is whole on the view: stop
                self._press(self._react(t), 0)
            return
        if self._lost(span):
            self.corrections += 1
            self._backing_out = True
            self._double(t)
            return
        assert span is not None
        y1, y2 = span
        centre, height = (y1 + y2) / 2, y2 - y1
        speed = self.controller.effective_speed
        grow = 2.0 ** (speed * self.config.reaction_s)  # the view's growth in a reaction time
        if isinstance(mode, OneButtonDynamic):
            if not self._may_press(t, 0):
                return
            # the next swap can come a multi-press gap later at the soonest: swap where the target's centre, from
            # there on the other point's way for that long, swings about the crosshair (k / (1 + k) of the view)
            k = 2.0 ** (speed * self._gap())
            top = mode.target == 0
            ahead = centre * grow if top else MAX_Y - (MAX_Y - centre) * grow
            if (top and ahead >= MAX_Y * k / (1 + k)) or (not top and ahead <= MAX_Y / (1 + k)):
                self._press(self._react(t), 0)
            return
        off = (centre - ORIGIN_Y) * grow
        shift = mode.config.two_button_offset * mode.lag_factor(speed)
        if abs(off) > INSIDE * height * grow and abs(off) >= SHIFT_AT * shift:
            up = off < 0
            button = 0 if up != mode.config.swap_buttons else 1
            if self._may_press(t, button):
                self._press(self._react(t), button)

    def _gap(self) -> float:
        """How long after a press the same switch's next is safely not a double press (the multi-press gap and a
        margin of three spreads of the reaction time)."""
        return self.mode.config.multi_press_s + 3 * self.config.reaction_sd + 0.05

    def _may_press(self, t: float, button: int) -> bool:
        """A press of ``button`` decided now would land clear of the multi-press gap after its last one (it would
        otherwise reverse)."""
        last = self._last_single.get(button)
        return last is None or t + self.config.reaction_s >= last + self._gap()

    def _menu(self, t: float, span: tuple[float, float] | None) -> None:
        mode = self.mode
        assert isinstance(mode, MenuMode)
        if self.controller.zoom.zooming:
            return  # watch the zoom end first
        if self._lost(span):
            aim = mode.back_box
        else:
            assert span is not None
            centre = min(max((span[0] + span[1]) / 2, 0.0), MAX_Y - 1e-6)
            aim = next(i for i in range(mode.back_box) if mode.box_range(i)[0] <= centre < mode.box_range(i)[1])
        if isinstance(mode, Scanning):
            if self._scan_press_due(mode, t, aim):
                if aim == mode.back_box:
                    self.corrections += 1
                self._press(self._react(t), 0, aim)
        elif isinstance(mode, StepScan):
            if mode.highlighted != aim:
                self._press(self._react(t), 0)
            else:
                if aim == mode.back_box:
                    self.corrections += 1
                self._press(self._react(t), 1, aim)

    def _scan_press_due(self, mode: Scanning, t: float, aim: int) -> bool:
        """Whether to press now for box ``aim``: when it is highlighted, for a user whose reaction fits in a scan
        time (with two spreads to spare); a slower user has learnt the rhythm and starts the press a reaction time
        before the middle of the box's turn, as soon as that moment has come (and not half a scan time after)."""
        scan, c = mode.config.scan_s, self.config
        if c.reaction_s + 2 * c.reaction_sd < scan:
            return mode.highlighted == aim
        steps = (aim - mode.highlighted) % mode.box_count
        turn = t + mode.time_left(t) + (steps - 1) * scan  # when the box's turn starts (past, when it is on now)
        late = t - (turn + scan / 2 - c.reaction_s)
        return 0.0 <= late < scan / 2

    def pause(self, seconds: float, fps: float, lockstep: bool) -> None:
        """The person presses nothing for ``seconds`` (the writing not stopped first): what changes is counted."""
        before = self.controller.text
        dt = 1.0 / fps
        for _ in range(round(seconds * fps)):
            if lockstep:
                wait_for_answers(self.controller.zoom)
            frame = self.controller.frame(None, dt)
            if frame.action is not None:
                self.paused_actions.append(frame.action)
        self.paused_changed += difference(before, self.controller.text)[0]

    def figures(self) -> dict:
        return {"mode": self.mode.name, "presses": self.presses, "corrections": self.corrections,
                "mistimed": self.mistimed, "paused_changed": self.paused_changed,
                "paused_actions": [a.value for a in self.paused_actions]}


def simulate_switch(controller: WritingController, phrases: list[str], fps: float = 30.0, max_seconds: float = 600.0,
                    user: SwitchUserConfig | None = None, lockstep: bool = True,
                    render: Callable[[Frame], None] | None = None,
                    progress: Callable[[int], None] | None = None) -> SimulationResult:
    """Write each phrase as a new message with the controller's switch mode; a phrase not finished within
    ``max_seconds`` counts as failed. A phrase may name control actions in braces (``simulate.parse_script``),
    which needs the controller's control mode."""
    person = SwitchUser(controller, user)

    def move(target: str, action: Action | None, dt: float) -> Callable[[], Frame]:
        now = controller.clock
        person.decide(now, target, action)
        person.land(now + dt)
        return lambda: controller.frame(None, dt)

    def finish() -> None:
        person.finish()
        if person.config.pause_s:
            person.pause(person.config.pause_s, fps, lockstep)
        controller.new_message()

    result = write_phrases(lambda: controller.zoom, phrases, move, finish, fps, max_seconds, lockstep, render,
                           progress)
    result.switch = person.figures()
    return result
