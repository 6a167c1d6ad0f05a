"""Automatic speed control, after Dasher's: speed up while the user steers steadily, slow down while hunting.

Dasher watches the angle that the pointer makes with the crosshair, in the zoom's coordinate frame. A user
who knows where they are going holds that angle nearly constant; a user searching for a target swings it
about. Over a sliding window of recent angles (while zooming in only), this computes the circular variance
``-ln(R^2)``, where R is the length of the mean of the unit vectors (cos a, sin a). For angles spread like a
normal distribution with standard deviation s (radians), this is about s^2.

Thresholds (Dasher's middle tiers):
- below ``LOW_VARIANCE`` = 0.01 (angles within about +-6 degrees): steady, the speed rises;
- above ``HIGH_VARIANCE`` = 0.2 (about +-26 degrees): hunting, the speed falls;
- in between: unchanged.
The speed changes by ``adapt_rate`` (relative, per second), so the user sees a gradual drift, never a jump.

Only purposeful steering raises the speed: a pointer resting at one spot (within ``rest_radius`` for
``still_seconds``, see ``input/rest.py``) holds a perfectly constant angle, which would otherwise read as the
steadiest steering of all. While it rests, the speed is left alone and the collected angles are forgotten, so
steering again starts from fresh history.
"""

from __future__ import annotations

import math
from collections import deque

from dasher_rnn.input.rest import REST_RADIUS, RestDetector

LOW_VARIANCE = 0.01
HIGH_VARIANCE = 0.2
MAX_ANGLE = 1.25  # radians; steeper pointers mostly steer up or down, not forward, and are left out (as Dasher does)


class AutoSpeedControl:
    """Adjusts the speed (bits/s) from the steadiness of the pointer's angle; see the module docstring."""

    def __init__(self, min_bps: float = 0.1, max_bps: float = 8.0, adapt_rate: float = 0.03, window: float = 2.5,
                 min_radius: float = 0.0, rest_radius: float = REST_RADIUS, still_seconds: float = 1.0) -> None:
        if not (0 < min_bps <= max_bps and adapt_rate >= 0 and window > 0 and min_radius >= 0 and rest_radius >= 0
                and still_seconds > 0):
            raise ValueError("auto speed needs 0 < min_bps <= max_bps, adapt_rate >= 0, window > 0, min_radius >= 0, "
                             "rest_radius >= 0, still_seconds > 0")
        self.min_bps, self.max_bps, self.adapt_rate = min_bps, max_bps, adapt_rate
        self.window = window  # seconds of angles considered
        self.min_radius = min_radius  # pointers closer to the crosshair than this (zoom units) are jitter, not steering
        self.rest = RestDetector(rest_radius)  # a pointer within rest_radius of one spot ...
        self.still_seconds = still_seconds  # ... for this long is resting, not steering
        self.variance: float | None = None  # of the last full window, for display and tests
        self._angles: deque[tuple[float, float]] = deque()  # (time, angle)
        self._now = 0.0

    def reset(self) -> None:
        """Forget the collected angles (e.g. after a pause)."""
        self._angles.clear()
        self.variance = None
        self.rest.reset()

    @property
    def steering(self) -> bool:
        """The pointer has moved recently (it is not resting at one spot)."""
        return self.rest.seconds < self.still_seconds

    def update(self, speed_bps: float, pointer_dx: float, pointer_dy: float, dt: float) -> float:
        """The new speed after dt seconds with the pointer at (dx, dy) from the crosshair (dx > 0: zooming in)."""
        speed = min(max(speed_bps, self.min_bps), self.max_bps)
        if not (dt > 0 and math.isfinite(dt) and math.isfinite(pointer_dx) and math.isfinite(pointer_dy)):
            return speed
        self._now += dt
        self.rest.update(pointer_dx, pointer_dy, dt)
        if not self.steering:
            self._angles.clear()  # resting: no judgement, and no stale history when steering resumes
            return speed
        while self._angles and self._angles[0][0] < self._now - self.window:
            self._angles.popleft()
        if pointer_dx <= 0 or math.hypot(pointer_dx, pointer_dy) <= self.min_radius:
            return speed  # reversing, stopped, or too close to the crosshair to mean a direction
        angle = math.atan2(pointer_dy, pointer_dx)
        if abs(angle) >= MAX_ANGLE:
            return speed
        self._angles.append((self._now, angle))
        if self._angles[0][0] > self._now - self.window / 2:
            return speed  # not enough history yet to judge
        n = len(self._angles)
        c = sum(math.cos(a) for _, a in self._angles) / n
        s = sum(math.sin(a) for _, a in self._angles) / n
        self.variance = -math.log(max(c * c + s * s, 1e-12))
        if self.variance < LOW_VARIANCE:
            speed *= math.exp(self.adapt_rate * dt)
        elif self.variance > HIGH_VARIANCE:
            speed *= math.exp(-self.adapt_rate * dt)
        return min(max(speed, self.min_bps), self.max_bps)
