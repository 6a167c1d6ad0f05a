"""Telling a resting pointer from a steering one.

A hand off the mouse, or a head mouse left pointing somewhere, leaves the pointer still; steering moves it, because
the box aimed at moves and grows as the view zooms. The detector keeps the spot the pointer stays at: while the
pointer stays within ``radius`` of it, the time resting grows; a move beyond the radius starts a new stay. The radius
allows for a hand's tremor, and for a gaze's drift and microsaccades about the point it rests on and a tracker's
noise (they wander about one point and come back: the spot does not follow them, or a slow pursuit would seem still).
Distances are compared where the positions are seen (``seen``: on the screen, where Dasher's squashed edges would
otherwise turn a tracker's noise there into large moves).

It also follows the picture under the pointer (``moved``, with each frame's flow): ``slid`` is how far the picture has
streamed under the pointer during the stay, the length of the path that what was under it travelled, frame by frame.
A gaze that wants a box pursues it as the zoom brings it, so it moves with the picture and soon leaves the spot (a new
stay, and ``slid`` starts again); where the zoom only grows a box in place, nothing streams. A resting gaze stays on
its spot while the picture streams past: once it has streamed further than twice the radius, no pursuit can have
kept the gaze on the spot. Near the right edge, where the boxes grow out of a point, little streams while the view
zooms in: ``zoomed`` counts the bits zoomed in during the stay.

A resting eye is not still: it drifts, makes microsaccades, and its tracker adds noise, so a stay's gaze wanders
about its spot while a pursuit's goes the picture's way. ``pursuit`` says which: the share of the way the picture
carried the stay's first point that the gaze went along with it (about 1 for a pursuit, about 0 at rest).
"""

from __future__ import annotations

import math
from collections.abc import Callable

REST_RADIUS = 64.0  # zoom units (the view is 4096 high): about 1.5% of the view's height


class RestDetector:
    """How long the pointer has stayed within ``radius`` of one spot (positions and radius in the same units), and how
    far the picture has streamed under it meanwhile."""

    def __init__(self, radius: float = REST_RADIUS,
                 seen: Callable[[float, float], tuple[float, float]] | None = None) -> None:
        if not radius >= 0:
            raise ValueError(f"the rest radius must be >= 0 (got {radius})")
        self.radius = radius
        self.seen = seen or (lambda x, y: (x, y))  # where a position is seen (Dasher's squashed edges on the screen)
        self.reset()

    def reset(self) -> None:
        self.spot: tuple[float, float] | None = None  # where the stay is, as seen
        self._last: tuple[float, float] | None = None  # the pointer's last sample
        self.speed = 0.0  # how fast the pointer moved at its last sample, in seen units a second
        self.seconds = 0.0
        self.picture_restarted()

    def picture_restarted(self) -> None:
        """The picture under the pointer was put back (a hold): what streamed during the stay so far no longer
        counts; the stay goes on."""
        self.slid = 0.0
        self.zoomed = 0.0  # bits the view zoomed in during the stay
        self._origin = self._carried = self._last  # the point the gaze was on, and where the picture has taken it since

    def update(self, x: float, y: float, dt: float) -> float:
        """Feed the pointer at (x, y) after ``dt`` seconds; the seconds it has been resting (0 just after a move).

        Non-finite values are ignored."""
        if not all(math.isfinite(v) for v in (x, y, dt)):
            return self.seconds
        here = self.seen(x, y)
        if self._last is not None and dt > 0:
            before = self.seen(*self._last)
            self.speed = math.hypot(here[0] - before[0], here[1] - before[1]) / dt
        self._last = (x, y)
        if self.spot is None or math.hypot(here[0] - self.spot[0], here[1] - self.spot[1]) > self.radius:
            self.spot = here
            self.seconds = 0.0
            self.picture_restarted()
            return 0.0
        self.seconds += max(dt, 0.0)
        return self.seconds

    @property
    def pursuit(self) -> float:
        """How far the gaze went the way the picture carried the point it was on when the stay began (or when the
        picture was put back), as a share of that way: about 1 for a pursuit, about 0 for a gaze at rest (0 while
        the picture has not moved)."""
        if self._origin is None or self._carried is None or self._last is None:
            return 0.0
        origin, carried, here = self.seen(*self._origin), self.seen(*self._carried), self.seen(*self._last)
        way = (carried[0] - origin[0], carried[1] - origin[1])
        went = (here[0] - origin[0], here[1] - origin[1])
        length = way[0] ** 2 + way[1] ** 2
        return (way[0] * went[0] + way[1] * went[1]) / length if length > 0 else 0.0

    def moved(self, flow: tuple[float, float] | None) -> None:
        """The picture moved by ``flow`` (``Frame.flow``: what was at (x, y) is now at (a * x, a * y + b)); None: it
        started again, and what was under the pointer is no longer on it (the next sample starts a new stay)."""
        if flow is None:
            self.reset()
        elif self._last is not None:
            a, b = flow
            x, y = self._last
            self.slid += math.hypot((a - 1.0) * x, (a - 1.0) * y + b)
            if a > 1.0:
                self.zoomed += math.log2(a)
            if self._carried is not None:
                self._carried = (a * self._carried[0], a * self._carried[1] + b)
