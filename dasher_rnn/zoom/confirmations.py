"""The writing controller's confirmations: a control action that reaches others or loses text (``CONFIRMED``, in the
presets with ``confirm_actions``) stops writing and waits (``pending``) until a dwell on the target, a click
(``confirm``) or a switch press confirms it; ``CONFIRM_S`` without drops it. ``WritingController`` (``controller.py``)
asks through ``_ask`` and hands its frames to ``_confirm_frame`` while one waits.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dasher_rnn.input.dwell import DwellDetector
from dasher_rnn.zoom.boxes import Frame
from dasher_rnn.zoom.control import ControlItem
from dasher_rnn.zoom.model import ZoomModel

CONFIRM_S = 10.0  # an action that asked for a confirmation and did not get one in this long is dropped
# where the confirmation target is (Dasher x from the right edge, y) and how big: right of the crosshair and above it,
# away from the boxes of the letters most often aimed at and from the control box at the bottom
CONFIRM_CENTRE = (900.0, 1100.0)
CONFIRM_RADIUS = 560.0  # about 3.5 degrees across on a 24-inch screen at 60 cm


class Confirmations:
    """An action waiting for its confirmation (``WritingController``'s own state, kept there)."""

    zoom: ZoomModel
    confirm_dwell: DwellDetector
    pending: ControlItem | None
    _pending_since: float
    _confirmed: bool
    _clock: float

    if TYPE_CHECKING:
        def stop(self, reason: str = "") -> None: ...
        def _account(self, frame: Frame, dt: float) -> Frame: ...

    def _ask(self, item: ControlItem) -> None:
        """``item``'s action asks for a confirmation: writing stops, and a dwell on the confirmation target (entered
        after it appeared), a click on it (``confirm``) or a switch press confirms it; ``CONFIRM_S`` without drops
        it."""
        self.stop("confirm")
        self.pending = item
        self._pending_since = self._clock
        self.confirm_dwell.disarm()

    def _confirm_frame(self, pointer: tuple[float, float] | None) -> Frame:
        """A frame while an action waits: it is done in this frame once confirmed (writing stays stopped)."""
        item = self.pending
        assert item is not None
        if pointer is not None and self.confirm_dwell.update(pointer[0], pointer[1], self._clock):
            self._confirmed = True
        if self._confirmed:
            self.pending, self._confirmed = None, False
            return self._account(self.zoom.perform(item), 0.0)
        if self._clock - self._pending_since >= CONFIRM_S:
            self.cancel()
        return self.zoom.idle()

    def confirm(self) -> None:
        """Confirm the action that waits (a click on the target, a switch press): the next frame does it."""
        self._confirmed = self.pending is not None

    def cancel(self) -> None:
        """Drop the action waiting for its confirmation."""
        self.pending, self._confirmed = None, False

    def on_confirm_target(self, pointer: tuple[float, float] | None) -> bool:
        """``pointer`` (Dasher coordinates) is on the confirmation target."""
        return pointer is not None and math.dist(pointer, CONFIRM_CENTRE) <= CONFIRM_RADIUS


__all__ = ["CONFIRM_CENTRE", "CONFIRM_RADIUS", "CONFIRM_S", "Confirmations"]
