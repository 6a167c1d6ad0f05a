"""Telling a resting pointer from a steering one.

A hand off the mouse, or a head mouse left pointing somewhere, leaves the pointer still; steering moves it, because
the box aimed at moves and grows as the view zooms. The detector keeps an anchor: while the pointer stays within
``radius`` of it, the time resting grows; a move beyond the radius sets a new anchor and starts again. The radius
allows for a tracker's jitter.

It also follows the picture under the pointer (``moved``, with each frame's flow): ``slid`` is how far the picture has
streamed past the pointer since it came to rest, the sum over frames of where what was under the pointer moved to less
where the pointer went. A gaze that wants a box pursues it as the zoom brings it, so the picture under it moves with
it (and where the zoom only grows a box in place, nothing moves); a resting gaze stays put while the picture streams
past.
"""

from __future__ import annotations

import math

REST_RADIUS = 64.0  # zoom units (the view is 4096 high): about 1.5% of the view's height


class RestDetector:
    """How long the pointer has stayed within ``radius`` of one spot (positions and radius in the same units), and how
    far the picture has slid from under it meanwhile."""

    def __init__(self, radius: float = REST_RADIUS) -> None:
        if not radius >= 0:
            raise ValueError(f"the rest radius must be >= 0 (got {radius})")
        self.radius = radius
        self.reset()

    def reset(self) -> None:
        self._anchor: tuple[float, float] | None = None
        self._carried: tuple[float, float] | None = None  # where the picture under the pointer's last sample is now
        self._drift = (0.0, 0.0)
        self.seconds = 0.0
        self.slid = 0.0

    def update(self, x: float, y: float, dt: float) -> float:
        """Feed the pointer at (x, y) after ``dt`` seconds; the seconds it has been resting (0 just after a move).

        Non-finite values are ignored."""
        if not all(math.isfinite(v) for v in (x, y, dt)):
            return self.seconds
        if self._anchor is None or math.hypot(x - self._anchor[0], y - self._anchor[1]) > self.radius:
            self._anchor = (x, y)
            self._drift = (0.0, 0.0)
            self.seconds = self.slid = 0.0
        else:
            self.seconds += max(dt, 0.0)
            if self._carried is not None:
                self._drift = (self._drift[0] + self._carried[0] - x, self._drift[1] + self._carried[1] - y)
                self.slid = math.hypot(*self._drift)
        self._carried = (x, y)
        return self.seconds

    def moved(self, flow: tuple[float, float] | None) -> None:
        """The picture moved by ``flow`` (``Frame.flow``: what was at (x, y) is now at (a * x, a * y + b)); None: it
        started again, and what was under the pointer is no longer on it (the next sample anchors afresh)."""
        if flow is None:
            self.reset()
        elif self._carried is not None:
            a, b = flow
            self._carried = (a * self._carried[0], a * self._carried[1] + b)
