import sys
import types

import pytest

from dasher_rnn.input.gaze import GazeSourceError
from dasher_rnn.input.tobii import TobiiSource

NAN = float("nan")


class FakeTracker:
    def __init__(self):
        self.subscriptions = []

    def subscribe_to(self, stream, callback, as_dictionary=False):
        self.subscriptions.append((stream, callback, as_dictionary))

    def unsubscribe_from(self, stream, callback):
        self.subscriptions.remove((stream, callback, True))

    def emit(self, left, right, left_valid=1, right_valid=1, stamp=5_000_000):
        for _, callback, _ in list(self.subscriptions):
            callback({"left_gaze_point_on_display_area": left, "right_gaze_point_on_display_area": right,
                      "left_gaze_point_validity": left_valid, "right_gaze_point_validity": right_valid,
                      "system_time_stamp": stamp})


@pytest.fixture
def tracker(monkeypatch):
    tracker = FakeTracker()
    sdk = types.SimpleNamespace(EYETRACKER_GAZE_DATA="gaze", find_all_eyetrackers=lambda: [tracker, FakeTracker()])
    monkeypatch.setitem(sys.modules, "tobii_research", sdk)
    return tracker


def test_averages_valid_eyes(tracker):
    with TobiiSource(stale_after=60.0) as src:
        assert tracker.subscriptions == [("gaze", src._callback, True)]
        tracker.emit((0.2, 0.4), (0.4, 0.6), stamp=2_500_000)
        s = src.latest()
        assert (s.x, s.y, s.t) == pytest.approx((0.3, 0.5, 2.5))
        tracker.emit((0.9, 0.9), (NAN, NAN), right_valid=0, stamp=2_600_000)
        assert (src.latest().x, src.latest().y) == pytest.approx((0.9, 0.9))
    assert tracker.subscriptions == []


def test_lost_and_bad_samples(tracker):
    src = TobiiSource(stale_after=60.0)
    tracker.emit((NAN, NAN), (NAN, NAN), left_valid=0, right_valid=0)
    assert src.lost == 1 and src.latest() is None
    tracker.emit((NAN, NAN), (NAN, NAN))  # marked valid but NaN
    assert src.lost == 2
    src._callback({"system_time_stamp": 1})
    assert src.rejected == 1 and src.latest() is None
    src.close()
    src.close()


def test_missing_sdk_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "tobii_research", None)  # makes the import fail
    with pytest.raises(GazeSourceError, match=r"Tobii Pro SDK \(tobii-research\) is not installed.*Gaze over UDP"):
        TobiiSource()


def test_no_tracker_is_a_clear_error(monkeypatch):
    sdk = types.SimpleNamespace(EYETRACKER_GAZE_DATA="gaze", find_all_eyetrackers=lambda: ())
    monkeypatch.setitem(sys.modules, "tobii_research", sdk)
    with pytest.raises(GazeSourceError, match="no Tobii eye tracker found"):
        TobiiSource()
