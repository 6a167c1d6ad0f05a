"""The writing controller's switch access: with a switch mode set (``set_switch_mode``, ``switch_modes.py``),
``press`` and ``release`` feed it the user's switches and the frame steers from it instead of the pointer
(``_switch_frame``); the mode's state and the controller's ``running`` follow each other (``_follow_switch``), and what a
mode that timed out wrote since the last press is taken back. ``WritingController`` (``controller.py``) holds the state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dasher_rnn.zoom.boxes import Frame, Mark
from dasher_rnn.zoom.control import ControlItem
from dasher_rnn.zoom.figures import Tally
from dasher_rnn.zoom.geometry import ORIGIN_X, ORIGIN_Y
from dasher_rnn.zoom.model import ZoomModel
from dasher_rnn.zoom.switching import SwitchMode


class SwitchControl:
    """Writing with switches (``WritingController``'s own state, kept there)."""

    zoom: ZoomModel
    switch: SwitchMode | None
    running: bool
    pending: ControlItem | None
    _clock: float
    _pressed_at: float
    _press_text: str | None
    _press_mark: tuple[Mark, float] | None
    _undone: Frame | None
    _bps: float
    _message: Tally

    if TYPE_CHECKING:
        @property
        def effective_speed(self) -> float: ...
        def start(self) -> None: ...
        def stop(self, reason: str = "") -> None: ...
        def confirm(self) -> None: ...
        def cancel(self) -> None: ...
        def _go_back(self, mark: Mark, bits: float) -> Frame | None: ...
        def _account(self, frame: Frame, dt: float) -> Frame: ...

    def set_switch_mode(self, mode: SwitchMode | None) -> None:
        """Write with switches through ``mode`` from now on (None: with the pointer again). Writing stops; the
        user's next press starts it (or ``start``)."""
        self.stop()
        self.switch = mode
        if mode is not None:
            mode.stop()

    @property
    def clock(self) -> float:
        """Seconds of frames so far (the sum of their ``dt``): the time a switch mode is given."""
        return self._clock

    def press(self, button: int, t: float | None = None) -> None:
        """Switch ``button`` (0: the first, 1: the second) went down, at ``t`` on the controller's clock (default:
        now, ``clock``). Ignored without a switch mode. While an action waits for its confirmation, the first switch
        (either, in a one-switch mode) confirms it and the second drops it."""
        if self.switch is not None and self.pending is not None:
            self.confirm() if button == 0 or self.switch.switches == 1 else self.cancel()
        elif self.switch is not None:
            self._pressed_at, self._press_text = self._clock, self.zoom.text
            self.switch.press(button, self._clock if t is None else t)
            self._follow_switch()

    def release(self, button: int, t: float | None = None) -> None:
        """Switch ``button`` came up (see ``press``)."""
        if self.switch is not None:
            self.switch.release(button, self._clock if t is None else t)
            self._follow_switch()

    def _follow_switch(self, reason: str = "") -> None:
        """Start or stop with the switch mode (a press started it or stopped reversing; ``reason`` "switch": the
        mode stopped by itself, e.g. scanning ran idle)."""
        assert self.switch is not None
        if self.switch.running and not self.running:
            self.start()
        elif not self.switch.running and self.running:
            if self.switch.timed_out and self._press_mark is not None:  # nobody pressed for a while (or a switch
                frame = self._go_back(*self._press_mark)  # stuck): what the mode wrote after the writing the last
                if frame is not None:  # press steered is nobody's; it is taken back
                    self._undone = frame
            self.stop(reason)

    def _switch_frame(self, dt: float) -> Frame:
        """A frame steered by the switch mode: its shift and scheduled zoom, then its pointer."""
        assert self.switch is not None
        if self._press_text is not None and self._clock - self._pressed_at <= self.switch.config.idle_stop_s / 2:
            self._press_mark = (self.zoom.mark(), self._message.bits)  # writing a press steered: up to the first
            if self.zoom.text != self._press_text:  # character it brought, within half the time-out
                self._press_text = None
        steer = self.switch.update(self._clock, self.effective_speed)
        self._follow_switch("switch")
        if not self.running:
            self._bps *= 0.9
            undone, self._undone = self._undone, None
            return self.zoom.idle() if undone is None else undone
        if steer.offset:
            self.zoom.offset(steer.offset)
        if steer.zoom_to is not None:
            self.zoom.schedule_zoom(*steer.zoom_to, self.switch.config.zoom_s)
        if steer.pointer is None and not self.zoom.zooming:
            x, y, speed = ORIGIN_X, ORIGIN_Y, 0.0  # nothing to do: held still, but the time counts as writing
        else:
            x, y = steer.pointer or (ORIGIN_X, ORIGIN_Y)
            speed = self.effective_speed
        return self._account(self.zoom.step(x, y, dt, speed), dt)


__all__ = ["SwitchControl"]
