"""Telling a resting pointer from a steering one.

A hand off the mouse, or a head mouse left pointing somewhere, leaves the pointer still; steering moves it, because
the box aimed at moves and grows as the view zooms. The detector keeps an anchor: while the pointer stays within
``radius`` of it, the time resting grows; a move beyond the radius sets a new anchor and starts again. The radius
allows for a tracker's jitter.
"""

from __future__ import annotations

import math

REST_RADIUS = 64.0  # zoom units (the view is 4096 high): about 1.5% of the view's height


class RestDetector:
    """How long the pointer has stayed within ``radius`` of one spot (positions and radius in the same units)."""

    def __init__(self, radius: float = REST_RADIUS) -> None:
        if not radius >= 0:
            raise ValueError(f"the rest radius must be >= 0 (got {radius})")
        self.radius = radius
        self.reset()

    def reset(self) -> None:
        self._anchor: tuple[float, float] | None = None
        self.seconds = 0.0

    def update(self, x: float, y: float, dt: float) -> float:
        """Feed the pointer at (x, y) after ``dt`` seconds; the seconds it has been resting (0 just after a move).

        Non-finite values are ignored."""
        if not all(math.isfinite(v) for v in (x, y, dt)):
            return self.seconds
        if self._anchor is None or math.hypot(x - self._anchor[0], y - self._anchor[1]) > self.radius:
            self._anchor, self.seconds = (x, y), 0.0
        else:
            self.seconds += max(dt, 0.0)
        return self.seconds
