"""Dwell to start: resting the pointer on a spot for a while acts as a click, for users who cannot click.

The detector fires once per visit: after firing it waits for the pointer to leave the circle before it
can fire again, so a user who keeps looking at the start spot does not toggle start/stop repeatedly (a gaze kept on
the crosshair toggled every 1.1 s while dwells re-armed at once). With ``rearm`` it is ready again at once instead
(a new dwell starts after firing). ``disarm`` makes it wait for the pointer to leave first: a confirmation target
that appears where a resting gaze happens to be is not confirmed by it.
"""

from __future__ import annotations

import math


class DwellDetector:
    """Fires when the pointer stays within ``radius`` of ``centre`` for ``seconds`` (view units, seconds)."""

    def __init__(self, radius: float, seconds: float, centre: tuple[float, float] = (0.0, 0.0),
                 rearm: bool = False) -> None:
        if not (radius > 0 and seconds >= 0):
            raise ValueError(f"dwell needs radius > 0 and seconds >= 0 (got {radius}, {seconds})")
        self.radius, self.seconds, self.centre, self.rearm = radius, seconds, centre, rearm
        self.reset()

    def reset(self) -> None:
        """Re-arm and forget the current visit."""
        self._armed = True
        self._entered_at: float | None = None
        self._now = 0.0

    def disarm(self) -> None:
        """Wait for the pointer to be seen outside the circle before a dwell can start (a target that just appeared
        under a resting gaze is not chosen by it)."""
        self._armed, self._entered_at = False, None

    @property
    def progress(self) -> float:
        """Fraction of the dwell done (0..1), to draw a filling ring; 0 when not dwelling."""
        if not self._armed or self._entered_at is None:
            return 0.0
        return 1.0 if self.seconds == 0 else min(1.0, (self._now - self._entered_at) / self.seconds)

    def update(self, x: float, y: float, t: float) -> bool:
        """Feed a pointer position at t seconds; True exactly once per completed dwell.

        Non-finite positions or times are ignored (False, state unchanged).
        """
        if not all(math.isfinite(v) for v in (x, y, t)):
            return False
        if math.hypot(x - self.centre[0], y - self.centre[1]) > self.radius:
            self._armed, self._entered_at = True, None
            return False
        if not self._armed:
            return False
        if self._entered_at is None or t < self._entered_at:  # entering, or the clock went back: start over
            self._entered_at = t
        self._now = t
        if t - self._entered_at >= self.seconds:
            if self.rearm and self.seconds > 0:
                self._entered_at = t  # the next dwell starts now
            else:
                self._armed, self._entered_at = False, None
            return True
        return False
