"""The writing controller: what the window does each frame, without the window.

Owns the zoom model and the text the user has written, and turns pointer positions into frames:
start and stop (click, key or dwell at the crosshair), speed with turbo and automatic speed control,
and the figures the status bar shows. The Qt window only feeds it pointer positions and draws what
it returns; the API and tests drive it the same way.

Nothing is written without intent: the pointer leaving the canvas pauses (Dasher's "pause outside canvas"; a
blink or a glance at the text is a pause) and stops after ``AWAY_STOP_S`` (on by default for every preset; the gaze
presets always); a pointer resting at one spot right of the crosshair for ``rest_stop_seconds`` stops (not while
backing out, which writes nothing, nor in the squashed bands at the top and bottom, where a user holds the pointer to
reach a box still off the screen). A gaze (presets with ``rest_holds``) is different: it is still while its user waits
for a box to grow, and pursues the box as the zoom brings it, so a gaze rests when it stays at one spot while the
picture streams past it (``gaze_rules.py``, docs/ARCHITECTURE.md "A still eye never writes"). Then the zoom holds: what
it wrote since the gaze landed there is taken back (with what it taught the model) and it waits until the gaze moves
on; stopping is by intent (the dwell at the crosshair, which takes back what the zoom did while the gaze dwelt, the
control box's Stop). In the presets with ``confirm_actions`` the control box's actions ask first (``pending``,
``confirm``). Automatic speed rises only while the pointer is steering (see ``input/auto_speed.py``); and
``undo_run`` takes back the last run of writing, since the last start, with what it taught the model.

Control mode (``control_mode``; on by default for the eye-tracker and head-mouse presets) puts Dasher's
control box after the letters (``zoom/control.py``). The zoom makes an action's text edits itself; the
controller stops on Stop and keeps a finished message (New message); the front end carries out the rest
(speak, copy), reading ``Frame.action``.

Switch access (``set_switch_mode``, ``switch_modes.py``): with a switch mode set, ``press`` and ``release`` feed it
the user's switches and ``frame`` steers from it instead of the pointer (which it ignores: no dwell, no pausing
outside, no rest stop, no pointer auto speed). The mode's own state (stopped, running, reversing) and the
controller's ``running`` follow each other: a press that starts or stops the mode starts or stops the controller
(marking a run for ``undo_run``), and ``start``, ``stop`` and the control box's Stop start and stop the mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dasher_rnn.input.auto_speed import AutoSpeedControl
from dasher_rnn.input.dwell import DwellDetector
from dasher_rnn.input.presets import PRESETS, Preset, preset
from dasher_rnn.input.rest import RestDetector
from dasher_rnn.zoom.boxes import Frame, Mark, ZoomSettings
from dasher_rnn.zoom.confirmations import CONFIRM_CENTRE, CONFIRM_RADIUS, Confirmations
from dasher_rnn.zoom.control import Action, ControlItem
from dasher_rnn.zoom.figures import MessageStats, Stats, Tally
from dasher_rnn.zoom.gaze_rules import GazeRules
from dasher_rnn.zoom.geometry import MAX_Y, ORIGIN_X, ORIGIN_Y, x_to_screen, y_to_screen
from dasher_rnn.zoom.model import ZoomModel
from dasher_rnn.zoom.sources import PredictionSource
from dasher_rnn.zoom.switch_control import SwitchControl
from dasher_rnn.zoom.switching import SwitchMode

SPEED_RANGE = (0.1, 8.0)  # bits per second
REVERSE_SPEED_RANGE = (0.1, 4.0)  # zooming out is capped at the speed times this
TURBO_RANGE = (1.0, 8.0)  # turbo multiplies the speed by this
REST_STOP_RANGE = (0.0, 60.0)  # seconds a resting pointer may stay before writing stops (0: never)
AWAY_STOP_S = 2.0  # a pointer away this long (off the view, or a gaze the tracker lost) stops writing; shorter pauses


def _clamp(value: float, bounds: tuple[float, float]) -> float:
    return min(max(float(value), bounds[0]), bounds[1])


@dataclass(frozen=True)
class ControllerConfig:
    """The controller's starting values, plain and already chosen (the app keeps them among the user's preferences).

    The defaults are the mouse preset's.
    """

    speed_bps: float = PRESETS["mouse"].speed_bps  # the maximum zoom speed
    reverse_speed: float = PRESETS["mouse"].reverse_speed
    auto_speed: bool = PRESETS["mouse"].auto_speed  # let the auto speed control move the speed (if the preset allows)
    preset: str = "mouse"  # input preset: dwell, pausing and whether auto speed applies
    turbo_factor: float = 2.0
    pause_outside: bool = True  # the pointer leaving the canvas pauses (the gaze presets pause regardless)
    rest_stop_seconds: float = 4.0  # a pointer resting this long while writing stops it (0: never)
    control_mode: bool = PRESETS["mouse"].control_mode  # a control box after the letters


class WritingController(GazeRules, Confirmations, SwitchControl):
    """Writing, frame by frame: the rules of a resting gaze (``gaze_rules.py``), confirmations (``confirmations.py``) and
    switch access (``switch_control.py``) over the zoom model."""

    def __init__(self, source: PredictionSource, config: ControllerConfig | None = None):
        config = config or ControllerConfig()
        self.source = source
        self.zoom = ZoomModel(source, ZoomSettings(speed_bps=_clamp(config.speed_bps, SPEED_RANGE),
                                                   reverse_speed=_clamp(config.reverse_speed, REVERSE_SPEED_RANGE)))
        self.history = ""  # finished messages shown above the current one
        self.running = False
        self.turbo = False
        self.speed_bps = _clamp(config.speed_bps, SPEED_RANGE)  # auto speed moves it while writing
        self.auto_speed_enabled = config.auto_speed
        self.turbo_factor = _clamp(config.turbo_factor, TURBO_RANGE)
        self.pause_outside = bool(config.pause_outside)
        self.rest_stop_seconds = _clamp(config.rest_stop_seconds, REST_STOP_RANGE)
        self._runs: list[Mark] = []  # where each run of writing in this message started (for undo_run)
        self._seen_pointer = False  # the pointer was on the canvas since the last start
        self.stopped_because = ""  # why writing stopped by itself: "outside" or "rest" ("" otherwise)
        self.held = False  # a resting gaze holds the zoom (``rest_holds``) until it moves
        self._rest_mark: tuple[Mark, float] | None = None  # where the writing stood when the gaze last steered
        self._back_seconds = 0.0  # a still gaze has backed out this long
        self._in_transit = False  # the gaze is moving fast (a saccade, smoothed)
        self._steered_before = True  # the stay a saccade left was no rest in the making
        self._rested = False  # the zoom held since the gaze last set off on purpose (a saccade)
        self._held_at = (0.0, 0.0)  # where the gaze was when the zoom held (seen)
        self._away = 0.0  # seconds without a pointer
        self._pressed_at = 0.0  # the last switch press (controller clock)
        self._press_text: str | None = None  # the text at the last press, until the writing it steered changed it
        self._press_mark: tuple[Mark, float] | None = None  # where the writing the last press steered ended
        self._undone: Frame | None = None  # what a switch mode's time-out took back, for the next frame to report
        self.pending: ControlItem | None = None  # an action waiting for its confirmation (``confirm``, ``cancel``)
        self._pending_since = 0.0
        self._confirmed = False
        self.apply_preset(config.preset)
        self.set_control_mode(config.control_mode)
        self._bps = 0.0
        self._typed = 0
        self._running_seconds = 0.0
        self._clock = 0.0
        self._message = Tally()  # how this message is being written
        self.finished_stats: MessageStats | None = None  # how the last finished message was written
        self._run_bits: list[float] = []  # the message's bits at each run's start (beside ``_runs``, for undo_run)
        self.switch: SwitchMode | None = None  # switch access: the mode that steers instead of the pointer

    # -- speeds and preset ------------------------------------------------------------
    @property
    def config(self) -> ControllerConfig:
        """The values in effect now (the speed where auto speed has taken it)."""
        return ControllerConfig(self.speed_bps, self.reverse_speed, self.auto_speed_enabled, self.preset.name,
                                self.turbo_factor, pause_outside=self.pause_outside,
                                rest_stop_seconds=self.rest_stop_seconds, control_mode=self.control_mode)

    def apply_preset(self, name: str, adopt_speeds: bool = False) -> Preset:
        """Dwell, pausing and the auto speed's behaviour follow the input preset; ``adopt_speeds`` also takes
        its speed, reverse speed, auto speed and control mode (when the user picks a preset, not at start-up)."""
        self.preset = preset(name)
        if adopt_speeds:
            self.set_speed(self.preset.speed_bps)
            self.set_reverse_speed(self.preset.reverse_speed)
            self.auto_speed_enabled = self.preset.auto_speed
            self.set_control_mode(self.preset.control_mode)
        # fires once per visit: a gaze kept on the crosshair after starting does not stop again
        self.dwell = DwellDetector(self.preset.dwell_radius * MAX_Y, self.preset.dwell_seconds, (ORIGIN_X, ORIGIN_Y))
        self.rest = RestDetector(self.preset.rest_radius * MAX_Y, lambda x, y: (x_to_screen(x), y_to_screen(y)))
        self.zoom.config.confirm = self.preset.confirm_actions
        self.confirm_dwell = DwellDetector(CONFIRM_RADIUS, max(self.preset.dwell_seconds, 1.0), CONFIRM_CENTRE)
        self.auto_speed = AutoSpeedControl(max_bps=SPEED_RANGE[1])
        return self.preset

    def set_speed(self, bps: float) -> None:
        self.speed_bps = _clamp(bps, SPEED_RANGE)

    def set_reverse_speed(self, factor: float) -> None:
        self.zoom.config.reverse_speed = _clamp(factor, REVERSE_SPEED_RANGE)

    @property
    def reverse_speed(self) -> float:
        return self.zoom.config.reverse_speed

    def set_auto_speed(self, on: bool) -> None:
        """Let the auto speed control move the speed (only where the preset allows it)."""
        self.auto_speed_enabled = bool(on)

    def set_turbo_factor(self, factor: float) -> None:
        self.turbo_factor = _clamp(factor, TURBO_RANGE)

    @property
    def control_mode(self) -> bool:
        """The control box after the letters is shown."""
        return self.zoom.config.control

    def set_control_mode(self, on: bool) -> Frame:
        """Show the control box after the letters, or not; the view starts again from the text. The frame says
        what that committed or uncommitted (for direct output)."""
        return self.zoom.set_control(on)

    def set_pause_outside(self, on: bool) -> None:
        self.pause_outside = bool(on)

    def set_rest_stop(self, seconds: float) -> None:
        """Stop writing after the pointer rests this long at one spot (0: never)."""
        self.rest_stop_seconds = _clamp(seconds, REST_STOP_RANGE)

    @property
    def pauses_outside(self) -> bool:
        return self.pause_outside or self.preset.pause_when_outside

    @property
    def effective_speed(self) -> float:
        return self.speed_bps * (self.turbo_factor if self.turbo else 1.0)

    # -- text ---------------------------------------------------------------------------
    @property
    def text(self) -> str:
        return self.history + self.zoom.output

    def new_message(self) -> None:
        """Finish this message (commit it) and start the next with a fresh context."""
        output = self.zoom.output
        self.zoom.finish_message()
        self._message_finished(output)
        self._reset_rest()  # the view starts again: what was under the pointer is gone

    def _message_finished(self, output: str) -> None:
        self.finished_stats = self._message.stats(len(output))
        self._runs.clear()
        self._run_bits.clear()
        self._message = Tally()
        if output:
            self.history += output + "\n"

    def set_source(self, source: PredictionSource) -> PredictionSource:
        """Write with ``source`` from now on (another language's Writer): writing stops, the current message is
        finished, and the view starts from a message start with the same settings. Returns the source it replaces
        (the caller closes it)."""
        self.stop()
        self.new_message()
        old, self.source = self.source, source
        self.zoom = ZoomModel(source, self.zoom.config)
        return old

    def reopen_message(self) -> bool:
        """Take back New message while nothing has been written since: the last finished message is the
        current one again, and writing goes on from its end (its text is the model's context; what it
        committed stays learned, so backing out stops at its end). False when there is nothing to reopen."""
        if self.zoom.output or not self.history.endswith("\n"):
            return False
        self.history = self.history[:-1]
        self.zoom.reset(self.history.rsplit("\n", 1)[-1])
        self._runs.clear()
        return True

    def clear(self) -> None:
        """Throw away all text; what was committed stays learned."""
        self.zoom.finish_message()
        self._runs.clear()
        self._run_bits.clear()
        self._message = Tally()
        self.history = ""

    @property
    def can_undo(self) -> bool:
        """A run of writing in this message can be taken back."""
        return any(mark.text != self.zoom.text for mark in self._runs)

    def undo_run(self) -> Frame | None:
        """Take back the last run of writing (from the last start that was followed by writing): stop, put the
        text back as it was at that start, and roll back what the run taught the model. Runs that wrote nothing
        are skipped; each call goes one run further back within the message. The frame says what was uncommitted
        and committed (for direct output); None when there is nothing to undo."""
        self.stop()
        while self._runs and self._runs[-1].text == self.zoom.text:
            self._runs.pop()
            self._run_bits.pop()
        if not self._runs:
            return None
        frame = self._go_back(self._runs.pop(), self._run_bits.pop())
        assert frame is not None  # the runs are cleared with every message: a mark is always from this one
        return frame

    def _go_back(self, mark: Mark, bits: float) -> Frame | None:
        """Put the writing back at ``mark``, where the message had zoomed ``bits``: the text, the view and what the
        model learned since (``ZoomModel.rewind``), with the view rebuilt. None for a mark from another message."""
        corrections = max(0, len(self.zoom.text) - len(mark.text))
        frame = self.zoom.rewind(mark)
        if frame is None:
            return None
        self._message.bits = bits  # the writing goes back to where it was at the mark
        self._message.corrections += corrections
        frame.add_commits(self.zoom.idle())  # the view started again, drawn
        return frame

    # -- start and stop -----------------------------------------------------------------
    def start(self) -> None:
        self.cancel()  # writing on instead of confirming
        if self.switch is not None and not self.switch.running:
            self.switch.start(self._clock)
        self.running = True
        self.stopped_because = ""
        self.auto_speed.reset()
        self._reset_rest()
        self._seen_pointer = False
        if not self._runs or self._runs[-1].text != self.zoom.text:  # a run that wrote nothing is no run to undo
            self._runs.append(self.zoom.mark())
            self._run_bits.append(self._message.bits)

    def stop(self, reason: str = "") -> None:
        """Stop writing; ``reason`` says why when the controller stopped by itself ("outside", "rest",
        "control": the control box's Stop, "switch": the switch mode, e.g. scanning ran idle)."""
        self.running = False
        self.stopped_because = reason
        self.held = False
        self.zoom.cancel_zoom()
        if self.switch is not None:
            self.switch.stop()

    def toggle(self) -> None:
        self.stop() if self.running else self.start()

    # -- frames ----------------------------------------------------------------------------
    def frame(self, pointer: tuple[float, float] | None, dt: float) -> Frame:
        """One frame: ``pointer`` in Dasher coordinates, None when it left the view (or the gaze was lost). With a
        switch mode set, the mode steers and ``pointer`` is ignored."""
        self._clock += dt
        if self.pending is not None:
            return self._confirm_frame(pointer)
        if self.switch is not None:
            return self._switch_frame(dt)
        if pointer is not None and self.preset.dwell_start and self.dwell.update(pointer[0], pointer[1], self._clock):
            if self.running and self.preset.rest_holds and self._rest_mark is not None:
                frame = self._hold()  # what the zoom did while the gaze dwelt to stop is not the user's writing
                self.stop()
                return frame
            self.toggle()
        self._away = 0.0 if pointer is not None else self._away + dt
        if self.running and self._seen_pointer and self.pauses_outside and self._away >= AWAY_STOP_S:
            taken_back = self._rested_away() if self.preset.rest_holds else None
            self.stop("outside")  # it left the canvas for a while (started with it elsewhere, e.g. from a button: wait)
            if taken_back is not None:
                return taken_back
        if self.running and pointer is not None:
            self._seen_pointer = True
            if not self.preset.rest_holds:
                self._rest_rule(pointer, dt)
            elif (held := self._gaze_rule(pointer, dt)) is not None:
                return held
        if not self.running or pointer is None or self.held:
            frame = self.zoom.idle()  # stopped, paused (a blink, a glance off the view) or held
            self._bps *= 0.9
            return frame
        x, y = pointer
        if self.auto_speed_enabled and self.preset.auto_speed:
            self.speed_bps = self.auto_speed.update(self.speed_bps, ORIGIN_X - x, y - ORIGIN_Y, dt)
        self.zoom.acting = not self.preset.rest_holds or not self._resting(0.5)  # never from a gaze half at rest
        frame = self.zoom.step(x, y, dt, self.effective_speed)
        self.rest.moved(frame.flow)
        return self._account(frame, dt)

    def _account(self, frame: Frame, dt: float) -> Frame:
        """A writing frame's consequences: a confirmation asked for, a finished message, the control box's Stop, the
        figures."""
        if frame.confirm is not None:
            self._ask(frame.confirm)
        if frame.finished is not None:  # New message in the control box (the zoom has started the next one)
            self._message_finished(frame.finished)
        if frame.action == Action.STOP:
            self.stop("control")
        self._running_seconds += dt
        self._typed += len(frame.typed) - frame.deleted
        self._message.seconds += dt
        self._message.bits += frame.bits
        self._message.corrections += frame.deleted
        if dt > 0:
            rate = frame.bits / dt
            self._bps += (1 - math.exp(-dt)) * (rate - self._bps)  # about a one-second average
        return frame

    def stats(self) -> Stats:
        minutes = self._running_seconds / 60
        return Stats(self.effective_speed, self._bps, self._typed / minutes if minutes > 0 else 0.0,
                     len(self.text), self.running)

    def message_stats(self) -> MessageStats:
        """How the current message has been written so far (read before ``new_message`` or ``clear``)."""
        return self._message.stats(len(self.zoom.output))

    @property
    def writer(self):
        """The Writer behind the boxes (None for a source without one, e.g. in tests)."""
        return getattr(self.source, "writer", None)

    def close(self) -> None:
        self.source.close()
