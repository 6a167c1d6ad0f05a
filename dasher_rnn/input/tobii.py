"""Gaze points from a Tobii eye tracker through the optional ``tobii-research`` SDK.

The SDK is published for Python 3.10 only (every ``tobii-research`` release so far) while dasher-rnn needs 3.11 or
newer, so there is no extra that installs it: ``pip install tobii-research`` works once Tobii publishes it for the
Python in use, and until then a bridge running under Python 3.10 can send the gaze over UDP (README: "Eye trackers").
The SDK is imported only when a TobiiSource is made, so the app runs without it. The first tracker found is used;
samples are the average of the eyes the tracker marks valid, on the display area (0..1, the same frame as the UDP
bridge), timed by the tracker's ``system_time_stamp`` (microseconds).
"""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Callable, Mapping
from typing import Any

from dasher_rnn.input.gaze import GazeSample, GazeSource, GazeSourceError
from dasher_rnn.input.one_euro import OneEuroFilter

log = logging.getLogger(__name__)


def _import_sdk() -> Any:
    try:
        import tobii_research
    except ImportError as exc:
        raise GazeSourceError(
            f"the Tobii Pro SDK (tobii-research) is not installed for Python {sys.version_info[0]}.{sys.version_info[1]}"
            " (Tobii publishes it for Python 3.10 only): use Input > Gaze over UDP with a bridge") from exc
    return tobii_research


class TobiiSource(GazeSource):
    """Subscribes to the first Tobii eye tracker's gaze data; same interface as GazeUDPSource."""

    def __init__(self, smoothing: OneEuroFilter | None = None, stale_after: float = 0.5,
                 on_sample: Callable[[GazeSample], None] | None = None) -> None:
        super().__init__(smoothing, stale_after, on_sample)
        self._subscribed = False
        self._callback = self._on_gaze  # one bound method, so that unsubscribing finds it
        self._sdk = _import_sdk()
        try:
            trackers = self._sdk.find_all_eyetrackers()
        except Exception as exc:  # the SDK raises its own error types
            raise GazeSourceError(f"cannot search for Tobii eye trackers: {exc}") from exc
        if not trackers:
            raise GazeSourceError("no Tobii eye tracker found")
        self.tracker = trackers[0]
        try:
            self.tracker.subscribe_to(self._sdk.EYETRACKER_GAZE_DATA, self._callback, as_dictionary=True)
        except Exception as exc:
            raise GazeSourceError(f"cannot read gaze data from the Tobii eye tracker: {exc}") from exc
        self._subscribed = True

    def _on_gaze(self, data: dict) -> None:
        """SDK callback (its own thread): average the valid eyes; never raise into the SDK."""
        try:
            points = [data[f"{eye}_gaze_point_on_display_area"] for eye in ("left", "right")
                      if data[f"{eye}_gaze_point_validity"]]
            if not points:
                self._lost()
                return
            x = sum(float(p[0]) for p in points) / len(points)
            y = sum(float(p[1]) for p in points) / len(points)
            t = float(data["system_time_stamp"]) / 1e6
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            self._reject("bad gaze data", f"{type(exc).__name__}: {exc}")
            return
        if not (math.isfinite(x) and math.isfinite(y)):  # the SDK reports NaN for eyes it did not find
            self._lost()
            return
        self._push(x, y, t)

    def close(self) -> None:
        """Unsubscribe from the tracker (idempotent)."""
        if self._subscribed:
            self._subscribed = False
            try:
                self.tracker.unsubscribe_from(self._sdk.EYETRACKER_GAZE_DATA, self._callback)
            except Exception as exc:  # closing must not fail; the tracker may be gone already
                log.debug("unsubscribing from the Tobii tracker failed: %s", exc)


def open_source(options: Mapping[str, Any], smoothing: OneEuroFilter) -> TobiiSource:
    """The registry's opener (input/registry.py): the first Tobii tracker found."""
    return TobiiSource(smoothing=smoothing)
