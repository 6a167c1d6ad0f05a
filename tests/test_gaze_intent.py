"""Intent for a gaze (issue: a gaze user's whole day, part 3): a still gaze never writes, a gaze that pursues the
box it wants writes, stopping is by intent, and the simulated gaze user that measures it."""

from __future__ import annotations

import math

from dasher_rnn.input.rest import REST_RADIUS, RestDetector
from dasher_rnn.zoom.controller import ControllerConfig, WritingController
from dasher_rnn.zoom.gaze_user import GazeUserConfig, rest, simulate_gaze
from dasher_rnn.zoom.geometry import ORIGIN_X, ORIGIN_Y
from dasher_rnn.zoom.model import ZoomModel
from tests.conftest import writer_source

DT = 1 / 30
STILL = (ORIGIN_X - 1200.0, ORIGIN_Y - 50.0)  # right of the crosshair: a still pointer writes here
NEAR_EDGE = (ORIGIN_X - 1950.0, ORIGIN_Y)  # near the right edge: it writes a character before the rest is seen


def gaze_controller(**values) -> WritingController:
    """The eye-tracker preset, which holds a resting gaze (``rest_holds``)."""
    config = {"preset": "eye-tracker", "speed_bps": 0.8, "auto_speed": False, "control_mode": False, **values}
    c = WritingController(writer_source("uniform"), ControllerConfig(**config))
    assert c.preset.rest_holds
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


def test_pursuit_is_the_share_of_the_pictures_way_the_gaze_went_with_it():
    """A resting eye's noise goes no way in particular; a pursuit goes the picture's way (``RestDetector.pursuit``)."""
    flow = (1.01, -4.0)
    detectors = {share: RestDetector(radius=10 * REST_RADIUS) for share in (0.0, 0.5, 1.0)}
    start = (800.0, 1500.0)
    for share, d in detectors.items():
        d.update(*start, DT)
        carried, x, y = start, *start
        for _ in range(30):
            d.moved(flow)
            carried = (flow[0] * carried[0], flow[0] * carried[1] + flow[1])
            x, y = start[0] + share * (carried[0] - start[0]), start[1] + share * (carried[1] - start[1])
            d.update(x, y, DT)
        assert abs(d.pursuit - share) < 0.01
    assert RestDetector().pursuit == 0.0  # nothing seen yet


def glide(c: WritingController, start: tuple[float, float], end: tuple[float, float], frames: int) -> None:
    """The gaze moves from ``start`` to ``end`` in ``frames`` frames."""
    for i in range(1, frames + 1):
        c.frame((start[0] + (end[0] - start[0]) * i / frames, start[1] + (end[1] - start[1]) * i / frames), DT)


def test_a_look_elsewhere_during_a_rest_keeps_what_the_rest_wrote_to_be_taken_back():
    """Resting near the right edge writes before the rest is seen; a saccade from there to another spot of the rest
    does not make that writing the person's: the hold there takes it back. Before: the landing took a new mark, and
    the characters stayed."""
    from tests.test_gaze_trust import ppm_gaze_controller

    c = ppm_gaze_controller(speed_bps=3.0, control_mode=False)
    c.start()
    for _ in range(int(1.2 / DT)):  # long enough to write and to be a rest in the making, too short for a hold
        c.frame(NEAR_EDGE, DT)
    assert c.zoom.output and not c.held
    glide(c, NEAR_EDGE, STILL, 4)  # a saccade
    for _ in range(10 * 30):
        c.frame(STILL, DT)
    assert c.held and c.zoom.output == ""


def test_a_held_zoom_keeps_holding_through_a_resting_eyes_noise():
    c = gaze_controller()
    for _ in range(10 * 30):
        c.frame(STILL, DT)
    assert c.held
    for i in range(30 * 30):  # drift and noise beyond the rest radius but within the hold's reach, slower than a saccade
        t = i * DT
        wobble = (1.2 * c.rest.radius * math.sin(0.7 * t), 1.2 * c.rest.radius * math.sin(1.3 * t))
        c.frame((STILL[0] + wobble[0], STILL[1] + wobble[1]), DT)
        assert c.held  # before: each move beyond the rest radius let go, and the zoom wrote until it held again
    assert c.zoom.output == ""


def test_a_still_gaze_at_rest_for_a_minute_writes_nothing_and_the_zoom_holds():
    """Before: the eye-tracker preset wrote on for 4 s (a character or more) and then stopped."""
    c = gaze_controller()
    for _ in range(60 * 30):
        c.frame(STILL, DT)
    assert c.zoom.output == ""  # a still gaze never writes
    assert c.running and c.held  # held, not stopped: stopping is by intent (a dwell, the control box)


def test_what_a_still_gaze_wrote_before_the_rest_was_seen_is_taken_back():
    c = gaze_controller(speed_bps=4.0)
    written = []
    for _ in range(60 * 30):
        c.frame(NEAR_EDGE, DT)
        written.append(len(c.zoom.output))
    assert max(written) > 0 and c.zoom.output == "" and c.held


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


def test_a_gaze_that_follows_the_box_it_wants_is_seldom_held():
    """The simulated gaze user, with a consumer tracker's noise, pursues its boxes: the hold costs it little
    (bench/gaze_day.py measures it)."""
    from tests.test_gaze_trust import ppm_gaze_controller

    c = ppm_gaze_controller(control_mode=False)
    holds = []
    hold = c._hold
    c._hold = lambda: holds.append(c.zoom.output) or hold()
    result, _ = simulate_gaze(c, ["the cat sat on the mat"], fps=30.0, max_seconds=300.0,
                              user=GazeUserConfig(seed=2))
    assert not result.failed and len(holds) <= len("the cat sat on the mat") // 4


def test_the_mouse_keeps_the_rest_stop():
    for name in ("mouse", "head-mouse"):
        c = WritingController(writer_source("uniform"), ControllerConfig(preset=name, speed_bps=2.0, auto_speed=False,
                                                                         rest_stop_seconds=2.0))
        assert not c.preset.rest_holds
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
    from tests.test_gaze_trust import ppm_gaze_controller

    c = ppm_gaze_controller(control_mode=False)
    result, person = simulate_gaze(c, ["the cat sat"], fps=30.0, max_seconds=200.0, user=GazeUserConfig(seed=1))
    assert not result.failed and result.phrases[0].phrase == "the cat sat"
    assert c.running  # the gaze dwelt on the crosshair to start
    c.new_message()
    assert rest(c, person, 60.0).changed == 0


def test_gaze_user_settings_are_checked():
    import pytest

    with pytest.raises(ValueError, match="lead"):
        GazeUserConfig(lead=0.0)
    with pytest.raises(ValueError, match="saccade_s"):
        GazeUserConfig(saccade_s=float("nan"))


def test_the_window_says_the_zoom_is_held_and_why(qtbot, tmp_path, monkeypatch):
    from tests.test_control_ui import open_window

    monkeypatch.setenv("DASHER_RNN_CONFIG", str(tmp_path / "settings.json"))
    window = open_window(qtbot, preset="eye-tracker")
    c = window.controller
    c.start()
    window.view.set_pointer_override(window.view.viewport().to_screen(*STILL))
    for _ in range(60 * 30):
        window.writing.tick(DT)
        if c.held:
            break
    assert c.held and "look at the box you want" in window.view.hint and c.zoom.output == ""
    moved = (STILL[0] + 3 * REST_RADIUS, STILL[1] + 300.0)
    window.view.set_pointer_override(window.view.viewport().to_screen(*moved))
    window.writing.tick(DT)
    assert not c.held and window.view.hint == ""


def test_simulate_writes_by_gaze_from_the_command_line(capsys):
    import json

    from dasher_rnn.cli import main

    assert main(["simulate", "--input", "gaze", "--model", "uniform", "--text", "hi there", "--speed", "0.8",
                 "--fps", "30", "--json", "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["input"] == "gaze" and summary["phrases"] == 1 and summary["failed"] == 0


def test_a_rest_that_ends_off_the_view_is_taken_back_when_writing_stops():
    """A gaze resting near the right edge writes before the rest is seen; then it goes to the text panel, off the
    view, and writing stops: what the rest wrote is taken back. Before: it stayed (the real window, poor tracker:
    "I am thirsty for th")."""
    from tests.test_gaze_trust import ppm_gaze_controller

    c = ppm_gaze_controller(speed_bps=3.0, control_mode=False)
    c.start()
    for _ in range(int(1.2 / DT)):
        c.frame(NEAR_EDGE, DT)
    assert c.zoom.output and not c.held
    for _ in range(3 * 30):
        c.frame(None, DT)
    assert not c.running and c.zoom.output == ""
