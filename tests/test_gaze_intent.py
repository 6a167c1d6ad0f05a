"""Intent for a gaze (issue: a gaze user's whole day, part 3): a still gaze never writes, a gaze that pursues the
box it wants writes, stopping is by intent, and the simulated gaze user that measures it."""

from __future__ import annotations

from dataclasses import replace

from dasher_rnn.input.rest import REST_RADIUS, RestDetector
from dasher_rnn.zoom.controller import ControllerConfig, WritingController
from dasher_rnn.zoom.gaze_user import GazeUserConfig, rest, simulate_gaze
from dasher_rnn.zoom.geometry import ORIGIN_X, ORIGIN_Y
from dasher_rnn.zoom.model import ZoomModel
from tests.conftest import writer_source

DT = 1 / 30
STILL = (ORIGIN_X - 1200.0, ORIGIN_Y - 50.0)  # right of the crosshair: a still pointer writes here


def gaze_controller(**values) -> WritingController:
    """The eye-tracker preset with the hold (``rest_holds``; not yet its default: docs/history/writing-and-app.md)."""
    config = {"preset": "eye-tracker", "speed_bps": 0.8, "auto_speed": False, "control_mode": False, **values}
    c = WritingController(writer_source("uniform"), ControllerConfig(**config))
    c.preset = replace(c.preset, rest_holds=True)
    c.start()
    return c


def test_a_frame_says_how_the_picture_moved():
    zoom = ZoomModel(writer_source("uniform"))
    before = zoom.child_range(zoom.root, zoom.root_lo, zoom.root_hi, 3)
    frame = zoom.step(600.0, 1200.0, 0.2, 2.0)
    a, b = frame.flow
    assert a > 1.0  # zoomed in
    box = zoom.root.children[3] if zoom.root.symbol < 0 else zoom.root
    after = zoom.child_range(zoom.root, zoom.root_lo, zoom.root_hi, 3) if box is not zoom.root else (zoom.root_lo,
                                                                                                      zoom.root_hi)
    assert abs(a * before[0] + b - after[0]) < 1e-6 and abs(a * before[1] + b - after[1]) < 1e-6
    assert zoom.idle().flow == (1.0, 0.0)


def test_the_picture_slides_from_under_a_still_pointer_not_from_under_one_that_follows_it():
    still, following = RestDetector(), RestDetector()
    x, y = 800.0, 1500.0
    still.update(x, y, DT)
    following.update(x, y, DT)
    flow = (1.02, -10.0)  # each frame: what was at (x, y) is now at (1.02 x, 1.02 y - 10)
    for _ in range(20):
        still.moved(flow)
        following.moved(flow)
        x, y = flow[0] * x, flow[0] * y + flow[1]
        still.update(800.0, 1500.0, DT)
        following.update(x, y, DT)
    assert still.seconds > 0.5 and still.slid > 8 * REST_RADIUS
    assert following.slid < REST_RADIUS  # it moved on with the picture (and set new anchors as it went)
    still.moved(None)  # the picture started again (an action): nothing to follow
    assert still.slid == 0.0 and still.update(800.0, 1500.0, DT) == 0.0


def test_a_still_gaze_at_rest_for_a_minute_writes_nothing_and_the_zoom_holds():
    """Before: the eye-tracker preset wrote on for 4 s (two or three characters here) and then stopped."""
    c = gaze_controller()
    written = []
    for _ in range(60 * 30):
        c.frame(STILL, DT)
        written.append(len(c.zoom.output))
    assert max(written) > 0  # it zoomed and wrote before the rest was seen...
    assert c.zoom.output == ""  # ...and took it back: a still gaze never writes
    assert c.running and c.held  # held, not stopped: stopping is by intent (a dwell, the control box)


def test_a_held_zoom_goes_on_when_the_gaze_moves():
    c = gaze_controller(rest_stop_seconds=4.0)
    for _ in range(10 * 30):
        c.frame(STILL, DT)
        if c.held:
            break
    assert c.held and c.zoom.output == ""
    moved = (STILL[0] + 3 * REST_RADIUS, STILL[1] + 300.0)
    for _ in range(3):
        c.frame(moved, DT)
    assert not c.held and c.running
    bits = c.zoom.bits_total
    c.frame(moved, DT)
    assert c.zoom.bits_total > bits  # zooming again


def test_a_hold_ends_after_a_while_for_a_gaze_that_waits_on_its_box():
    """A gaze may be still and on the box it wants (a box too small to pursue): the hold does not last for ever."""
    c = gaze_controller()
    held_frames = 0
    for _ in range(60 * 30):
        c.frame(STILL, DT)
        held_frames += c.held
    assert 0 < held_frames < 60 * 30
    assert c.zoom.output == "" or c.held is False  # what a still gaze wrote is taken back at every hold


def test_the_mouse_keeps_the_rest_stop():
    c = WritingController(writer_source("uniform"), ControllerConfig(preset="mouse", speed_bps=2.0, auto_speed=False,
                                                                     rest_stop_seconds=2.0))
    c.start()
    for _ in range(3 * 30):
        c.frame(STILL, DT)
    assert not c.running and c.stopped_because == "rest" and not c.held


def test_without_the_hold_the_same_still_pointer_writes_on():
    c = WritingController(writer_source("uniform"), ControllerConfig(preset="mouse", speed_bps=0.8, auto_speed=False,
                                                                     rest_stop_seconds=0.0))
    c.start()
    for _ in range(60 * 30):
        c.frame(STILL, DT)
    assert len(c.zoom.output) >= 3


def test_the_simulated_gaze_user_writes_then_rests_without_writing():
    c = gaze_controller()
    c.stop()
    result, person = simulate_gaze(c, ["hello world"], fps=30.0, max_seconds=200.0, user=GazeUserConfig(seed=1))
    assert not result.failed and result.phrases[0].phrase == "hello world"
    assert c.running  # the gaze dwelt on the crosshair to start
    c.new_message()
    assert rest(c, person, 60.0) == 0


def test_gaze_user_settings_are_checked():
    import pytest

    with pytest.raises(ValueError, match="lead"):
        GazeUserConfig(lead=0.0)
    with pytest.raises(ValueError, match="jitter"):
        GazeUserConfig(jitter=float("nan"))
