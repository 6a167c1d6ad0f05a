"""The 1-euro filter (Casiez, Roussel & Vogel, CHI 2012) for a 2-D point stream.

Why: gaze and head-mouse positions jitter when still and must not lag when moving. The filter is an
exponential low-pass whose cutoff rises with speed: heavy smoothing at rest, little during fast moves.
Both axes share one cutoff computed from the speed of the point (the norm of the filtered velocity), so
a diagonal move is not bent by one axis lagging behind the other.
"""

from __future__ import annotations

import math

MIN_DT = 1e-6  # seconds: no tracker samples at a megahertz; closer samples cannot give a speed (0.8 / 5e-324 is inf)


def _alpha(cutoff: float, dt: float) -> float:
    tau = 1.0 / (2.0 * math.pi * cutoff)
    return 1.0 / (1.0 + tau / dt)


class OneEuroFilter:
    """min_cutoff (Hz) sets the smoothing at rest, beta how fast the cutoff rises with speed (units/s)."""

    def __init__(self, min_cutoff: float = 1.0, beta: float = 0.007, d_cutoff: float = 1.0) -> None:
        if not (min_cutoff > 0 and d_cutoff > 0 and beta >= 0):
            raise ValueError(f"1-euro filter needs min_cutoff > 0, d_cutoff > 0, beta >= 0 "
                             f"(got {min_cutoff}, {d_cutoff}, {beta})")
        self.min_cutoff, self.beta, self.d_cutoff = min_cutoff, beta, d_cutoff
        self.reset()

    def reset(self) -> None:
        """Forget the history: the next point is returned as is."""
        self._t: float | None = None
        self._x = self._y = 0.0
        self._dx = self._dy = 0.0

    def filter(self, x: float, y: float, t: float) -> tuple[float, float]:
        """Smoothed position for the point (x, y) sampled at t seconds; always finite.

        Non-finite input raises ValueError. A timestamp less than ``MIN_DT`` after the previous one (a
        duplicate, a reordered sample, or two samples too close to tell a speed from) returns the previous
        output and leaves the state alone. If a step would leave the state non-finite (timestamps or
        coordinates so far apart that their difference overflows), the filter restarts from this point.
        """
        if not all(math.isfinite(v) for v in (x, y, t)):
            raise ValueError(f"1-euro filter: non-finite input ({x}, {y}, {t})")
        if self._t is None:
            return self._restart(x, y, t)
        dt = t - self._t
        if not dt >= MIN_DT:
            return self._x, self._y
        if not math.isfinite(dt):
            return self._restart(x, y, t)
        a_d = _alpha(self.d_cutoff, dt)
        dx = self._dx + a_d * ((x - self._x) / dt - self._dx)
        dy = self._dy + a_d * ((y - self._y) / dt - self._dy)
        a = _alpha(self.min_cutoff + self.beta * math.hypot(dx, dy), dt)
        new_x = self._x + a * (x - self._x)
        new_y = self._y + a * (y - self._y)
        if not all(math.isfinite(v) for v in (dx, dy, new_x, new_y)):
            return self._restart(x, y, t)
        self._t, self._x, self._y, self._dx, self._dy = t, new_x, new_y, dx, dy
        return new_x, new_y

    def _restart(self, x: float, y: float, t: float) -> tuple[float, float]:
        self.reset()
        self._t, self._x, self._y = t, x, y
        return x, y
