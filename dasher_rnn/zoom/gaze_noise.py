"""What a real eye tracker reports of a real eye: the gaze model under every simulated gaze user, gaze test and gaze
benchmark, and under the separate process that sends gaze datagrams to the real window (``tools/gaze_sender.py``).

A person's eyes are never still and a tracker never measures them exactly. The model has two parts.

**The eye** (``SimulatedEye``) goes where its owner wants to look (``look``): to a new point by a saccade, to a point
that moves smoothly by pursuit. A saccade starts where the eye is, takes the main sequence's time (21 ms + 2.2 ms
per degree), follows a minimum-jerk path, overshoots by up to 10% and glides back (a glissade, 40 ms). Pursuit
follows a moving point with a 0.1 s lag and a catch-up saccade where it falls more than 1.5 degrees behind. At a
fixation the eye drifts slowly about the point it wants (a mean-reverting walk with ``drift_deg`` of spread) and
makes microsaccades (``microsaccades_per_s``, each under a degree, mostly back towards the point). It blinks
(``blinks_per_min``, each 100-400 ms, at least a second apart).

**The tracker** (``TrackerGrade``) samples the eye ``rate_hz`` times a second. Each sample carries a constant
calibration error (``accuracy_deg``, in one direction for the whole session), noise whose sample-to-sample RMS is
``precision_deg``, and is lost (``valid`` false) during a blink and in short tracking losses (``loss`` of the
samples, in bursts of about 170 ms).

Degrees become pixels through the screen's size and the viewing distance (``Screen``). Three grades, as in the
literature on trackers' data quality and as the gaze-trust issue asked:

| grade | accuracy | precision (RMS s2s) | rate | lost |
|---|---:|---:|---:|---:|
| ``research`` (a research tracker) | 0.5 deg | 0.05 deg | 120 Hz | 0 |
| ``consumer`` (a consumer AAC tracker) | 1 deg | 0.2 deg | 60 Hz | 1% |
| ``poor`` (a webcam tracker, or a tired user) | 2 deg | 0.5 deg | 30 Hz | 5% |

Every grade has drift of 0.15 degrees, 1.5 microsaccades a second and 15 blinks a minute (the poor grade 20: a tired
user blinks more). Draws are seeded: a run repeats exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SACCADE_MIN_DEG = 1.0  # a wanted point this far from the last one is reached by a saccade, nearer by pursuit
GLISSADE_S = 0.04  # the overshoot glides back with this time constant
PURSUIT_LAG_S = 0.1  # pursuit follows its point with this time constant
CATCH_UP_DEG = 1.5  # pursuit this far behind catches up with a saccade
DRIFT_TAU_S = 1.0  # drift returns towards the wanted point with this time constant
LOSS_BURST = 0.17  # seconds: a tracking loss lasts this long on average


@dataclass(frozen=True)
class TrackerGrade:
    """A tracker and its user's eyes, in degrees of visual angle (see the module docstring)."""

    name: str
    label: str
    accuracy_deg: float  # the constant calibration error
    precision_deg: float  # RMS of the differences between successive samples of a still eye
    rate_hz: float
    loss: float = 0.0  # share of samples lost outside blinks
    drift_deg: float = 0.15  # spread of the slow drift about the point looked at
    microsaccades_per_s: float = 1.5
    blinks_per_min: float = 15.0

    def __post_init__(self) -> None:
        limits = {"accuracy_deg": (0.0, 10.0), "precision_deg": (0.0, 5.0), "rate_hz": (10.0, 2000.0),
                  "loss": (0.0, 0.5), "drift_deg": (0.0, 5.0), "microsaccades_per_s": (0.0, 10.0),
                  "blinks_per_min": (0.0, 60.0)}
        for name, (low, high) in limits.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
                raise ValueError(f"{name} must be from {low:g} to {high:g}, not {value!r}")


GRADES: dict[str, TrackerGrade] = {g.name: g for g in (
    TrackerGrade("research", "a research tracker", accuracy_deg=0.5, precision_deg=0.05, rate_hz=120.0),
    TrackerGrade("consumer", "a consumer AAC tracker", accuracy_deg=1.0, precision_deg=0.2, rate_hz=60.0, loss=0.01),
    TrackerGrade("poor", "a webcam tracker or a tired user", accuracy_deg=2.0, precision_deg=0.5, rate_hz=30.0,
                 loss=0.05, blinks_per_min=20.0),
)}
PERFECT = TrackerGrade("perfect", "a perfect tracker and a still eye (tests nothing of real gaze)", accuracy_deg=0.0,
                       precision_deg=0.0, rate_hz=60.0, drift_deg=0.0, microsaccades_per_s=0.0, blinks_per_min=0.0)


def grade(name: str) -> TrackerGrade:
    """The grade called ``name``; ValueError naming the known ones otherwise."""
    known = {**GRADES, PERFECT.name: PERFECT}
    if name not in known:
        raise ValueError(f"unknown tracker grade {name!r}; known: {', '.join(known)}")
    return known[name]


@dataclass(frozen=True)
class Screen:
    """The screen the eyes look at: its pixels, its size and how far the eyes are from it. The default is a 24-inch
    16:9 monitor at 60 cm, where a degree is about 38 pixels."""

    width_px: int = 1920
    height_px: int = 1080
    width_cm: float = 53.1
    height_cm: float = 29.9
    distance_cm: float = 60.0

    @property
    def px_per_degree(self) -> float:
        """Pixels per degree of visual angle at the screen's centre (the same both ways on square pixels)."""
        return self.height_px / self.height_cm * self.distance_cm * math.tan(math.radians(1.0))


@dataclass(frozen=True)
class Sample:
    """One tracker sample: where it says the eye looks (pixels of the screen), or ``valid`` false (a blink, a loss)."""

    t: float
    x: float
    y: float
    valid: bool = True


class SimulatedEye:
    """An eye and the tracker watching it (see the module docstring), on ``screen``, in pixels and seconds.

    ``look(point, t)`` says where the eye's owner wants to look from ``t`` on; ``samples(until)`` gives the tracker's
    samples up to ``until``. Call them in time order."""

    def __init__(self, grade: TrackerGrade, screen: Screen | None = None, seed: int = 0,
                 start: tuple[float, float] | None = None) -> None:
        self.grade = grade
        self.screen = screen or Screen()
        self.rng = np.random.default_rng(seed)
        ppd = self.screen.px_per_degree
        self._ppd = ppd
        angle = self.rng.uniform(0.0, 2 * math.pi)
        self.offset = (grade.accuracy_deg * ppd * math.cos(angle), grade.accuracy_deg * ppd * math.sin(angle))
        centre = start or (self.screen.width_px / 2, self.screen.height_px / 2)
        self.want = centre  # where the owner wants to look
        self.eye = centre  # where the eye is (without drift)
        self.drift = (0.0, 0.0)  # the eye's drift about ``eye``
        self._saccade: tuple[float, tuple[float, float], tuple[float, float], float] | None = None  # start, from, to, s
        self._t = 0.0  # the eye's state is for this time
        self._next_sample = 0.0
        self._blink_until = -1.0
        self._lost_until = -1.0

    # -- the owner ----------------------------------------------------------------------------------------------
    def look(self, point: tuple[float, float], t: float) -> None:
        """From ``t`` the owner wants to look at ``point`` (pixels): far from the last wanted point, a saccade goes
        there; near, pursuit follows it."""
        self._advance(t)
        jump = math.dist(point, self.want) / self._ppd
        self.want = point
        if jump >= SACCADE_MIN_DEG:
            self._start_saccade(t)

    @property
    def moving(self) -> bool:
        """A saccade is under way."""
        return self._saccade is not None

    # -- the tracker --------------------------------------------------------------------------------------------
    def samples(self, until: float) -> list[Sample]:
        """The tracker's samples from the last call up to ``until`` (seconds)."""
        out = []
        period = 1.0 / self.grade.rate_hz
        while self._next_sample <= until:
            t = self._next_sample
            self._next_sample += period
            self._advance(t)
            out.append(self._measure(t))
        self._advance(until)
        return out

    def _measure(self, t: float) -> Sample:
        g = self.grade
        if t < self._blink_until or t < self._lost_until:
            return Sample(t, math.nan, math.nan, valid=False)
        period = 1.0 / g.rate_hz
        if g.loss and self.rng.random() < g.loss / (LOSS_BURST / period * (1 - g.loss)):
            self._lost_until = t + self.rng.exponential(LOSS_BURST)
            return Sample(t, math.nan, math.nan, valid=False)
        sd = g.precision_deg * self._ppd / 2  # white noise of sd s per axis: successive differences' RMS is 2 s
        noise = (self.rng.normal(0.0, sd), self.rng.normal(0.0, sd)) if sd else (0.0, 0.0)
        x = self.eye[0] + self.drift[0] + self.offset[0] + noise[0]
        y = self.eye[1] + self.drift[1] + self.offset[1] + noise[1]
        return Sample(t, x, y)

    # -- the eye ------------------------------------------------------------------------------------------------
    def _start_saccade(self, t: float) -> None:
        here = (self.eye[0] + self.drift[0], self.eye[1] + self.drift[1])
        amplitude = math.dist(here, self.want) / self._ppd
        overshoot = 1.0 + self.rng.uniform(0.0, 0.1)
        target = (here[0] + overshoot * (self.want[0] - here[0]), here[1] + overshoot * (self.want[1] - here[1]))
        self._saccade = (t, here, target, (21.0 + 2.2 * amplitude) / 1000.0)
        self.eye, self.drift = here, (0.0, 0.0)

    def _advance(self, t: float) -> None:
        """Move the eye on to ``t`` in steps of at most 5 ms."""
        while self._t < t:
            dt = min(0.005, t - self._t)
            self._t += dt
            self._step(self._t, dt)

    def _step(self, t: float, dt: float) -> None:
        g, rng, ppd = self.grade, self.rng, self._ppd
        if g.blinks_per_min and t >= self._blink_until + 1.0 and rng.random() < g.blinks_per_min / 60.0 * dt:
            self._blink_until = t + rng.uniform(0.1, 0.4)
        if self._saccade is not None:
            start, here, target, duration = self._saccade
            u = min((t - start) / duration, 1.0)
            s = u**3 * (10 - 15 * u + 6 * u**2)  # minimum jerk
            self.eye = (here[0] + s * (target[0] - here[0]), here[1] + s * (target[1] - here[1]))
            if u >= 1.0:
                self._saccade = None
            return
        # a glissade back from an overshoot, and pursuit of a moving point: the same first-order approach
        lag = GLISSADE_S if math.dist(self.eye, self.want) / ppd < 0.3 else PURSUIT_LAG_S
        k = 1.0 - math.exp(-dt / lag)
        self.eye = (self.eye[0] + k * (self.want[0] - self.eye[0]), self.eye[1] + k * (self.want[1] - self.eye[1]))
        if math.dist(self.eye, self.want) / ppd > CATCH_UP_DEG:
            self._start_saccade(t)
            return
        if g.drift_deg:  # Ornstein-Uhlenbeck about the point: stationary spread drift_deg per axis
            sigma = g.drift_deg * ppd * math.sqrt(2.0 / DRIFT_TAU_S)
            decay = dt / DRIFT_TAU_S
            kick = rng.normal(0.0, sigma * math.sqrt(dt), 2)
            self.drift = (self.drift[0] * (1 - decay) + kick[0], self.drift[1] * (1 - decay) + kick[1])
        if g.microsaccades_per_s and rng.random() < g.microsaccades_per_s * dt:
            back = rng.uniform(0.5, 1.0)  # mostly back towards the point, under a degree in all
            jitter = rng.normal(0.0, 0.15 * ppd, 2)
            step = (-back * self.drift[0] + jitter[0], -back * self.drift[1] + jitter[1])
            size = math.hypot(*step)
            if size > 0.9 * ppd:
                step = (step[0] * 0.9 * ppd / size, step[1] * 0.9 * ppd / size)
            self.drift = (self.drift[0] + step[0], self.drift[1] + step[1])
