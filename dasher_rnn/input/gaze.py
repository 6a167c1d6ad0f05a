"""What every gaze source shares: clamping, smoothing, the newest sample, staleness and bad-data counting.

Subclasses (the UDP bridge, the Tobii adapter) receive samples on their own thread and call ``_push``
(a point), ``_lost`` (the tracker lost the eyes), ``_reject`` (bad data) or ``_fail`` (an unexpected
exception while handling data, which must not end the input). The UI thread polls ``latest()``, which
returns None when the newest sample is older than ``stale_after``: the app pauses when the gaze leaves
the screen or the tracker stops. ``problems()`` says what went wrong, for the status bar.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Self

from dasher_rnn.input.one_euro import OneEuroFilter

log = logging.getLogger(__name__)

CLAMP_LOW, CLAMP_HIGH = -0.5, 1.5  # normalised coordinates: a little outside the screen is allowed
STALE_S = 0.5  # a gaze source with no valid sample for this long has none (a blink is shorter)


class GazeSourceError(RuntimeError):
    """A gaze source cannot start (port in use, driver missing, no tracker)."""


@dataclass(frozen=True)
class GazeSample:
    """A smoothed gaze point normalised to the screen (0..1, left to right, top to bottom).

    t is the sample time from the tracker (seconds, its own clock); received_at is the source's ``clock()``
    (``time.monotonic`` unless a simulation gives its own) when it arrived, which is what staleness is measured
    against. Sources that address the writing
    area rather than the screen (Dasher's socket input) set ``space`` to "view".
    """

    x: float
    y: float
    t: float
    received_at: float
    space: str = "screen"  # what x and y are normalised to: "screen" (gaze) or "view" (Dasher's socket input)


class GazeSource:
    """Base class of gaze sources; see the module docstring."""

    label = "Gaze"  # names the source in messages for the user
    tracked = "the eyes"  # what the tracker loses ("your face" for a head pointer), for lost_reason()
    bad_unit = "datagram"  # what one rejected piece of data is called in problems()
    space = "screen"  # see GazeSample.space

    def __init__(self, smoothing: OneEuroFilter | None = None, stale_after: float = STALE_S,
                 on_sample: Callable[[GazeSample], None] | None = None) -> None:
        if not stale_after > 0:
            raise ValueError(f"stale_after must be positive, got {stale_after}")
        self.smoothing = smoothing
        self.stale_after = stale_after
        self.on_sample = on_sample  # called on the source's thread: GUI code must hand it over to its own thread
        self.received = 0  # samples accepted
        self.lost = 0  # samples flagged invalid by the tracker (blinks, eyes lost)
        self.rejected = 0  # malformed data (or data whose handling failed), ignored
        self.last_problem: str | None = None  # the newest reason for a rejection, for the status bar
        self._latest: GazeSample | None = None
        self._lost_at: float | None = None  # clock() of the newest invalid sample
        # what staleness is measured with: a simulation that sends samples on a clock of its own sets it, so that a
        # busy machine's pauses between a sample and the frame that reads it do not make the gaze seem lost
        self.clock: Callable[[], float] = time.monotonic
        self._warned: set[str] = set()

    def latest(self) -> GazeSample | None:
        """The newest smoothed sample, or None when there is none or it is older than ``stale_after``."""
        sample = self._latest
        if sample is None or self.clock() - sample.received_at > self.stale_after:
            return None
        return sample

    def lost_reason(self) -> str:
        """Why there is no pointer now, in one line for the status bar; empty while samples arrive."""
        now = self.clock()
        sample = self._latest
        if sample is not None and now - sample.received_at <= self.stale_after:
            return ""
        if self._lost_at is not None and now - self._lost_at <= self.stale_after:
            return f"{self.label} lost: the tracker cannot see {self.tracked}"
        if sample is None:
            return f"{self.label}: no data yet ({self.description})"
        return f"{self.label} lost: no data for {now - sample.received_at:.0f} s"

    @property
    def description(self) -> str:
        """What the source is doing, for the status bar."""
        return "Listening for gaze"

    def problems(self) -> str:
        """Bad data so far, in one line for the status bar; empty when there was none."""
        if not self.rejected:
            return ""
        unit = self.bad_unit if self.rejected == 1 else self.bad_unit + "s"
        return f"{self.label}: {self.rejected} bad {unit} ignored (last: {self.last_problem})"

    def close(self) -> None:
        """Stop receiving; subclasses release their resources."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _push(self, x: float, y: float, t: float) -> None:
        """Record a point (normalised coordinates, t in seconds on the tracker's clock)."""
        if not all(math.isfinite(v) for v in (x, y, t)):
            self._reject("non-finite", f"({x}, {y}, {t})")
            return
        x, y = (min(max(v, CLAMP_LOW), CLAMP_HIGH) for v in (x, y))
        now = self.clock()
        previous = self._latest
        if self.smoothing is not None:
            # After a gap, or if the tracker's clock went back (bridge restarted), start the filter afresh
            # rather than dragging the old position along or ignoring the new timestamps.
            if previous is None or now - previous.received_at > self.stale_after or t < previous.t - self.stale_after:
                self.smoothing.reset()
            x, y = self.smoothing.filter(x, y, t)
        sample = GazeSample(x, y, t, now, self.space)
        self._latest = sample  # one reference assignment: the UI thread reads it without a lock
        self.received += 1
        if self.on_sample is not None:
            try:
                self.on_sample(sample)
            except Exception:
                log.exception("gaze on_sample callback failed")

    def _lost(self) -> None:
        self.lost += 1
        self._lost_at = self.clock()

    def _reject(self, kind: str, detail: str) -> None:
        """Count bad data; warn once per kind so a broken bridge cannot flood the log."""
        self.rejected += 1
        self.last_problem = f"{kind}: {_shorten(detail)}"
        if kind not in self._warned:
            self._warned.add(kind)
            log.warning("%s: ignoring bad gaze data (%s): %s (further %s errors are counted, not logged)",
                        type(self).__name__, kind, detail[:200], kind)

    def _fail(self, exc: Exception) -> None:
        """Count data whose handling raised (a bug, or memory running out): the source keeps going; the
        first failure of each type is logged with its traceback."""
        self.rejected += 1
        kind = type(exc).__name__
        self.last_problem = f"internal error: {kind}: {_shorten(str(exc))}"
        if kind not in self._warned:
            self._warned.add(kind)
            log.error("%s: handling gaze data failed (further %s errors are counted, not logged)",
                      type(self).__name__, kind, exc_info=exc)


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
