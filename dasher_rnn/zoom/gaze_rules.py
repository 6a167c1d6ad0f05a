"""The gaze and rest rules of the writing controller: a pointer resting right of the crosshair stops writing
(``_rest_rule``); a gaze (presets with ``rest_holds``) that stays at one spot while the picture streams past it rests,
and the zoom holds and takes back what it wrote since the gaze last steered (``_gaze_rule``, ``_hold``;
docs/ARCHITECTURE.md "A still eye never writes"). ``WritingController`` (``controller.py``) applies them each frame.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dasher_rnn.input.rest import REST_RADIUS, RestDetector
from dasher_rnn.zoom.boxes import Frame, Mark
from dasher_rnn.zoom.figures import Tally
from dasher_rnn.zoom.geometry import EDGE, MAX_Y, ORIGIN_X
from dasher_rnn.zoom.model import ZoomModel

# A gaze (``rest_holds``) that stays at one spot (the preset's rest radius) for ``REST_MIN_S`` while the picture streams
# past it for ``SLID_HOLD`` (or the view zooms in ``ZOOM_HOLD`` bits there, at the right edge where little streams) is
# resting, not steering: the zoom holds and takes back what it wrote during the stay. A saccade away (to read, to the
# crosshair to stop) is seen within the smoothing's lag, and a stay of writing rarely lasts that long (simulated
# gaze users at every tracker grade: 95% of stays under 3.2 s and 2.7 bits, bench/gaze_day.py)
SLID_HOLD = 12 * REST_RADIUS
ZOOM_HOLD = 3.0
SLID_ZOOM = 0.25  # bits: a picture that slid under the gaze without zooming in this far moved across, not into,
# the boxes (a gaze at the edge waiting for its box to come into view)
REST_MIN_S = 1.5
PURSUIT_MIN = 0.15  # a gaze that went this share of the picture's way with it pursues (``RestDetector.pursuit``):
# no rest (a resting gaze at every grade stays under 0.1; pursuits of writing reach 0.4-1)
TRANSIT_SPEED = 1500.0  # screen units a second (the view is 4096 high: about 9 degrees a second): a gaze moving faster
# is on its way somewhere (a saccade, smoothed): the zoom waits for it to land rather than steer towards where it passes
HOLD_RADIUS = 2.0  # rest radii: a held gaze lets go when a saccade sets off or it moves this far from where it held
BACK_S = 2.5  # a still gaze left of the crosshair backs out this long at most; then the zoom holds and puts back what
# it backed out of (a person reading what they wrote, not deleting it)


class GazeRules:
    """When a resting pointer stops and a resting gaze holds (``WritingController``'s own state, kept there)."""

    zoom: ZoomModel
    rest: RestDetector
    rest_stop_seconds: float
    held: bool
    _rested: bool
    _rest_mark: tuple[Mark, float] | None
    _back_seconds: float
    _in_transit: bool
    _steered_before: bool
    _held_at: tuple[float, float]
    _bps: float
    _message: Tally

    if TYPE_CHECKING:
        def stop(self, reason: str = "") -> None: ...
        def _go_back(self, mark: Mark, bits: float) -> Frame | None: ...

    def _rest_rule(self, pointer: tuple[float, float], dt: float) -> None:
        """A pointer resting at one spot right of the crosshair for ``rest_stop_seconds`` stops: nobody steers. Not
        while backing out (which writes nothing), nor in the squashed bands at the top and bottom, where a user
        holds the pointer to reach a box still off the screen."""
        if pointer[0] >= ORIGIN_X or not EDGE <= pointer[1] <= MAX_Y - EDGE:
            self._reset_rest()
        elif self.rest.update(pointer[0], pointer[1], dt) >= self.rest_stop_seconds > 0:
            self.stop("rest")

    def _gaze_rule(self, pointer: tuple[float, float], dt: float) -> Frame | None:
        """A gaze's intent (presets with ``rest_holds``; ``controller.py``'s docstring): the frame of a hold, or None.

        A move beyond the preset's rest radius starts a stay at a new spot. The mark, the writing a hold goes back
        to, is taken where a stay that was no rest in the making ends (a gaze that pursued its box), and where a fast
        move (``TRANSIT_SPEED``: a saccade; the zoom waits while it lasts) lands after such a stay: not where the
        noise of a resting gaze breaks its stay, nor where a look from one spot of a rest to another lands. A stay
        that turns out to be a rest (``_resting``) holds the zoom and takes back what it wrote since the mark; the
        hold lasts until a saccade sets off or the gaze moves ``HOLD_RADIUS`` rest radii away. Left of the crosshair
        a still gaze backs out for ``BACK_S`` at most."""
        x, y = pointer
        steered = not self._rested and not self._resting(0.5)  # the stay so far was no rest in the making
        moved = self.rest.update(x, y, dt) == 0.0
        if moved:
            self._back_seconds = 0.0
        if self.rest.speed > TRANSIT_SPEED:
            if not self._in_transit:  # where it lands, the stay it left decides whether to take a mark
                self._in_transit, self._steered_before = True, steered or self.held
                self.held = self._rested = False
            return self.zoom.idle()
        if self.held and math.dist(self.rest.seen(x, y), self._held_at) > HOLD_RADIUS * self.rest.radius:
            self.held = False  # a slow move away; a resting eye's noise stays within reach and keeps the hold
        landed, self._in_transit = self._in_transit, False
        if self._rest_mark is None or (self._steered_before if landed else moved and steered):
            self._rest_mark = (self.zoom.mark(), self._message.bits)  # what it writes from here is its own
        if self.held:
            return None
        if x >= ORIGIN_X:
            self._back_seconds += dt
            return self._hold() if self._back_seconds > BACK_S else None
        if self._resting(1.0):
            return self._hold()
        return None

    def _resting(self, share: float) -> bool:
        """The gaze's stay has gone ``share`` of the way to a rest that holds (see ``SLID_HOLD``), without going the
        picture's way."""
        rest = self.rest
        return (rest.seconds >= share * REST_MIN_S and rest.pursuit < PURSUIT_MIN
                and (rest.slid > share * SLID_HOLD and rest.zoomed > share * SLID_ZOOM or rest.zoomed > share * ZOOM_HOLD))

    def _rested_away(self) -> Frame | None:
        """The gaze left the view for good (writing stops) after a rest in the making, or on a saccade from one: what
        the zoom wrote since the mark is nobody's and is taken back (the frame that does it; None: nothing to take)."""
        rested = not self._steered_before if self._in_transit else self._rested or self._resting(0.5)
        if rested and self._rest_mark is not None and self._rest_mark[0].text != self.zoom.text:
            return self._go_back(*self._rest_mark)
        return None

    def _reset_rest(self) -> None:
        self.rest.reset()
        self.held = self._rested = False
        self._rest_mark = None
        self._back_seconds = 0.0

    def _hold(self) -> Frame:
        """The gaze has rested: take back what the zoom wrote since it last steered (with what that taught the
        model), put the view back where it was then, and hold it there until the gaze moves."""
        self.held = self._rested = True
        self._held_at = self.rest.spot or (0.0, 0.0)
        self._bps = 0.0
        self.rest.picture_restarted()
        frame = None
        if self._rest_mark is not None and self._rest_mark[0].text != self.zoom.text:
            frame = self._go_back(*self._rest_mark)
        return self.zoom.idle() if frame is None else frame


__all__ = ["BACK_S", "HOLD_RADIUS", "PURSUIT_MIN", "REST_MIN_S", "SLID_HOLD", "SLID_ZOOM", "TRANSIT_SPEED", "ZOOM_HOLD",
           "GazeRules"]
