"""The Pupil Capture client against a fake Pupil Capture in the test (Pupil Remote on a ZeroMQ REP socket, its
publisher on a PUB socket, on 127.0.0.1): surface gaze in order with y flipped, low confidence as lost samples,
other surfaces ignored, hostile messages counted while the input goes on, and a Capture that restarts."""

from __future__ import annotations

import math
import threading

import pytest

from dasher_rnn.input.gaze import GazeSourceError
from dasher_rnn.input.pupil_core import PupilCoreSource, read_surface_event
from tests.helpers import wait_for

zmq = pytest.importorskip("zmq")
msgpack = pytest.importorskip("msgpack")

FAST = dict(backoff=(0.02, 0.2), connect_timeout=2.0, idle_timeout=0.5)


class FakeCapture:
    """Pupil Remote (answers SUB_PORT with its publisher's port) and the publisher, as Pupil Capture runs them."""

    def __init__(self, remote_port: int = 0) -> None:
        self.context = zmq.Context()
        self.remote = self.context.socket(zmq.REP)
        self.remote.setsockopt(zmq.LINGER, 0)
        if remote_port:
            self.remote.bind(f"tcp://127.0.0.1:{remote_port}")
            self.port = remote_port
        else:
            self.port = self.remote.bind_to_random_port("tcp://127.0.0.1")
        self.pub = self.context.socket(zmq.PUB)
        self.pub.setsockopt(zmq.LINGER, 0)
        self.pub_port = self.pub.bind_to_random_port("tcp://127.0.0.1")
        self.requests: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            if self.remote.poll(20, zmq.POLLIN):
                request = self.remote.recv()
                self.requests.append(request)
                self.remote.send(str(self.pub_port).encode() if request == b"SUB_PORT" else b"Unknown command.")

    def publish(self, topic: bytes, payload: bytes) -> None:
        self.pub.send_multipart([topic, payload])

    def surface(self, *data: tuple[float, float, float, float], name: str = "screen") -> None:
        """A surface event with gaze data (x, y from the bottom, confidence, timestamp)."""
        gaze = [{"topic": "gaze.3d.0._on_surface", "norm_pos": [x, y], "confidence": c, "on_surf": 0 <= x <= 1,
                 "timestamp": t, "base_data": ["gaze.3d.0.", t]} for x, y, c, t in data]
        event = {"topic": f"surfaces.{name}", "name": name, "surf_to_img_trans": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
                 "gaze_on_surfaces": gaze, "fixations_on_surfaces": [], "timestamp": data[-1][3] if data else 0.0}
        self.publish(f"surfaces.{name}".encode(), msgpack.packb(event))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2.0)
        self.context.destroy(linger=0)


@pytest.fixture
def capture():
    fake = FakeCapture()
    yield fake
    fake.close()


@pytest.fixture
def source(capture):
    src = PupilCoreSource(port=capture.port, **FAST)
    yield src
    src.close()


def at_x(source: PupilCoreSource, x: float) -> bool:
    """The newest sample is at ``x`` (each test's points are told apart by x; the raw, unsmoothed point)."""
    latest = source.latest()
    return latest is not None and math.isclose(latest.x, x)


def until_subscribed(capture: FakeCapture, source: PupilCoreSource) -> None:
    """ZeroMQ's subscription reaches the publisher a moment after connecting: publish until a point arrives."""
    def arrived() -> bool:
        capture.surface((0.5, 0.5, 1.0, 0.0))
        return source.received >= 1

    wait_for(lambda: source.sub_port == capture.pub_port)
    wait_for(arrived)


def test_it_asks_pupil_remote_and_follows_gaze_on_the_screen_surface(capture, source):
    until_subscribed(capture, source)
    assert capture.requests[0] == b"SUB_PORT"
    before = source.received
    capture.surface((0.25, 0.8, 0.95, 10.0), (0.75, 0.1, 0.9, 10.02))
    wait_for(lambda: at_x(source, 0.75))
    assert source.received >= before + 2 and math.isclose(source.latest().y, 0.9)  # y from the top
    assert source.lost_reason() == "" and source.rejected == 0


def test_low_confidence_is_a_lost_sample_and_other_surfaces_are_ignored(capture, source):
    until_subscribed(capture, source)
    lost = source.lost
    capture.surface((0.1, 0.1, 0.2, 11.0))  # a blink: below Pupil Labs' 0.6
    wait_for(lambda: source.lost == lost + 1)
    capture.surface((0.9, 0.9, 1.0, 12.0), name="screen2")  # "surfaces.screen" is a prefix of its topic
    capture.surface((0.3, 0.3, 1.0, 13.0))
    wait_for(lambda: at_x(source, 0.3))
    assert source.other_messages == 1


@pytest.mark.parametrize("frames", [
    [b"surfaces.screen", b"\xc1 not msgpack"],
    [b"surfaces.screen", msgpack.packb([1, 2, 3])],
    [b"surfaces.screen", msgpack.packb({"gaze_on_surfaces": "many"})],
    [b"surfaces.screen", msgpack.packb({"gaze_on_surfaces": [{"norm_pos": [float("nan"), 0.5], "confidence": 1.0,
                                                              "timestamp": 1.0}]})],
    [b"surfaces.screen", msgpack.packb({"gaze_on_surfaces": [{"norm_pos": [0.5], "confidence": 1.0,
                                                              "timestamp": 1.0}]})],
    [b"surfaces.screen", msgpack.packb({"gaze_on_surfaces": [{"norm_pos": [0.5, 0.5], "confidence": "high",
                                                              "timestamp": 1.0}]})],
    [b"surfaces.screen"],
    [b"surfaces.screen", msgpack.packb({"gaze_on_surfaces": []}) + b"trailing"],
])
def test_a_hostile_message_is_counted_and_the_input_goes_on(capture, source, frames):
    until_subscribed(capture, source)
    rejected = source.rejected
    capture.pub.send_multipart(frames)
    capture.surface((0.6, 0.4, 1.0, 20.0))
    wait_for(lambda: at_x(source, 0.6))
    assert source.rejected == rejected + 1 and source.problems()


def test_a_flood_is_bounded_and_the_input_goes_on(capture, source):
    until_subscribed(capture, source)
    for i in range(5000):
        capture.surface((0.5, 0.5, 1.0, 30.0 + i / 1000))

    def goes_on() -> bool:
        # ZeroMQ's PUB socket drops what a full queue cannot take, the flood's last message too (CI saw it lost),
        # so the gaze goes on streaming as Pupil Capture's does, and a later sample of it must come through
        capture.surface((0.125, 0.5, 1.0, 40.0))
        return at_x(source, 0.125)

    wait_for(goes_on, seconds=30.0)


def test_it_follows_capture_when_it_restarts_on_another_publisher_port(capture, source):
    until_subscribed(capture, source)
    remote_port, old_pub = capture.port, capture.pub_port
    capture.close()
    wait_for(lambda: "Pupil" in source.description and source.state != "receiving", seconds=15.0)
    restarted = FakeCapture(remote_port)
    try:
        assert restarted.pub_port != old_pub
        wait_for(lambda: source.sub_port == restarted.pub_port, seconds=15.0)
        received = source.received

        def arrived() -> bool:
            restarted.surface((0.2, 0.3, 1.0, 50.0))
            return source.received > received

        wait_for(arrived, seconds=15.0)
    finally:
        restarted.close()


def test_no_capture_yet_is_waited_for_and_said():
    with PupilCoreSource(port=1, **FAST) as src:  # nothing listens on port 1
        wait_for(lambda: "Pupil Capture" in src.lost_reason())
        assert src.latest() is None


@pytest.mark.parametrize("kwargs", [{"surface": ""}, {"surface": "a\nb"}, {"min_confidence": 1.5},
                                    {"host": "bad host"}, {"port": 70000}])
def test_unusable_settings_are_a_clear_error(kwargs):
    with pytest.raises(GazeSourceError):
        PupilCoreSource(**kwargs)


def test_without_pyzmq_the_error_names_the_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_zmq(name, *args, **kwargs):
        if name == "zmq":
            raise ImportError("No module named 'zmq'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_zmq)
    monkeypatch.delitem(__import__("sys").modules, "zmq")
    with pytest.raises(GazeSourceError, match=r"dasher-rnn\[pupil\]"):
        PupilCoreSource()


def test_read_surface_event_flips_y_and_marks_low_confidence():
    event = {"gaze_on_surfaces": [{"norm_pos": [0.1, 0.2], "confidence": 0.9, "timestamp": 1.5},
                                  {"norm_pos": [1.5, -0.5], "confidence": 0.95, "timestamp": 1.6},
                                  {"norm_pos": [0.5, 0.5], "confidence": 0.3, "timestamp": 1.7}]}
    samples = read_surface_event(event)
    assert samples[0] == pytest.approx((0.1, 0.8, 1.5)) and samples[1] == pytest.approx((1.5, 1.5, 1.6))
    assert samples[2] is None  # off the surface is still a point (the app pauses outside); low confidence is not


# -- issue 48: what the input holds is bounded, the newest sample wins, what is dropped is said -------------------------
def _event(*data: tuple[float, float, float, float]) -> list[bytes]:
    gaze = [{"norm_pos": [x, y], "confidence": c, "timestamp": t} for x, y, c, t in data]
    return [b"surfaces.screen", msgpack.packb({"gaze_on_surfaces": gaze})]


@pytest.fixture
def unconnected():
    """A source whose Pupil Remote is not there (it keeps retrying): its handling of messages, driven by the test."""
    from tests.test_input_gazepoint import free_port

    src = PupilCoreSource(port=free_port(), **FAST)
    yield src
    src.close()


def test_what_zeromq_may_hold_for_the_input_is_a_few_mib():
    """Issue 48: RCVHWM 1,000 x 1 MiB let the input hold about 1 GB (730 MB in 60 s at 0.8 MB messages)."""
    from dasher_rnn.input.pupil_core import MAX_MESSAGE, QUEUE, RECEIVE_BUFFER

    assert QUEUE * MAX_MESSAGE + RECEIVE_BUFFER <= 4 << 20


def test_of_the_queued_messages_the_newest_wins_and_the_others_are_said(unconnected):
    queued = [_event((0.1, 0.5, 1.0, 1.00)), [b"surfaces.screen", b"\xc1"], _event((0.2, 0.5, 1.0, 1.01)),
              _event((0.3, 0.5, 1.0, 1.02), (0.4, 0.5, 1.0, 1.03))]
    unconnected._handle_newest(queued)
    assert at_x(unconnected, 0.4) and unconnected.received == 2  # the newest event's samples alone
    assert unconnected.superseded == 2 and unconnected.rejected == 1
    assert "2 older queued messages passed over" in unconnected.problems()


def test_a_stale_sample_is_dropped_and_said(unconnected):
    """Issue 48: samples more than 12 s old were treated as fresh."""
    unconnected._handle(_event((0.5, 0.5, 1.0, 100.0)))  # the freshest delay so far
    unconnected._handle(_event((0.7, 0.5, 1.0, 88.0)))  # 12 s older than its arrival says it should be
    assert at_x(unconnected, 0.5) and unconnected.stale == 1
    assert "1 stale samples dropped" in unconnected.problems()
    unconnected._handle(_event((0.9, 0.5, 1.0, 100.5)))
    assert at_x(unconnected, 0.9)


def test_a_message_over_the_limit_is_dropped_and_said_and_the_input_goes_on(capture, source):
    """Issue 48: frames over the limit were dropped silently."""
    from dasher_rnn.input.pupil_core import MAX_MESSAGE

    until_subscribed(capture, source)
    capture.publish(b"surfaces.screen", b"\x00" * (2 * MAX_MESSAGE))
    wait_for(lambda: source.disconnections >= 1)
    assert "dropped connections to the publisher" in source.problems()

    def goes_on() -> bool:
        capture.surface((0.375, 0.5, 1.0, 1e9))  # Pupil's clock far ahead: fresh
        return at_x(source, 0.375)

    wait_for(goes_on, seconds=30.0)
