"""Switch access (``zoom/switching.py``, ``zoom/switch_modes.py``), its place in the zoom and the controller, and the
simulated switch user (``zoom/switch_user.py``): each mode against the Dasher filter it follows, hostile input, and
writing."""

from __future__ import annotations

import json
import math

import pytest

from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.zoom.boxes import ZoomSettings
from dasher_rnn.zoom.control import ACTION_PATH, Action
from dasher_rnn.zoom.controller import ControllerConfig, WritingController
from dasher_rnn.zoom.geometry import MAX_Y, ORIGIN_X, ORIGIN_Y
from dasher_rnn.zoom.model import ZoomModel
from dasher_rnn.zoom.switch_modes import SWITCH_MODES, OneButtonDynamic, Scanning, StepScan, TwoButtonDynamic, switch_mode
from dasher_rnn.zoom.switch_user import SwitchUser, SwitchUserConfig, simulate_switch
from dasher_rnn.zoom.switching import REVERSE_POINTER, SwitchConfig, SwitchState
from tests.conftest import make_sentences, writer_source
from tests.test_zoom import RecordingSource

TOP, BOTTOM = (100.0, 100.0), (100.0, 3996.0)  # Dasher's one-button points


def tap(mode, t, button=0, hold=0.1):
    mode.press(button, t)
    mode.release(button, t + hold)


# -- one-button dynamic (OneButtonDynamicFilter) -----------------------------------------------------------------
def test_one_button_a_press_starts_then_each_press_swaps_the_point_it_heads_for():
    mode = OneButtonDynamic()
    assert mode.state == SwitchState.STOPPED and mode.update(0.0).pointer is None
    tap(mode, 0.0)  # starts, nothing else
    assert mode.state == SwitchState.RUNNING and mode.update(0.2).pointer == TOP
    tap(mode, 0.5)  # a start press is no half of a double press
    assert mode.update(0.7).pointer == BOTTOM
    tap(mode, 2.0)  # more than the multi-press gap later: another swap
    assert mode.update(2.2).pointer == TOP and mode.state == SwitchState.RUNNING
    markers = mode.view().markers
    assert [(m.y, m.active) for m in markers] == [(100.0, True), (3996.0, False)]


def test_one_button_a_double_press_reverses_and_the_next_press_stops():
    mode = OneButtonDynamic()
    tap(mode, 0.0)
    tap(mode, 2.0)
    tap(mode, 2.6)  # within 1 s (Dasher's LP_MULTIPRESS_TIME) of the last
    assert mode.state == SwitchState.REVERSING and mode.update(2.8).pointer == REVERSE_POINTER
    assert mode.reversals == 1
    tap(mode, 3.0)  # reversing: any press stops
    assert mode.state == SwitchState.STOPPED and mode.update(3.2).pointer is None
    tap(mode, 3.3)  # stopped: any press starts (and is no double press with the stop)
    assert mode.state == SwitchState.RUNNING


def test_one_button_a_long_press_reverses_once_however_long_it_is_held():
    mode = OneButtonDynamic()
    tap(mode, 0.0)
    mode.press(0, 2.0)
    assert mode.update(2.5).pointer == BOTTOM  # the press swapped at once
    assert mode.update(3.01).pointer == REVERSE_POINTER  # held 1 s (LP_HOLD_TIME): reverse
    mode.update(5.0)
    assert mode.state == SwitchState.REVERSING and mode.reversals == 1
    mode.release(0, 6.0)
    assert mode.state == SwitchState.REVERSING


def test_a_long_press_released_between_frames_still_counts():
    mode = OneButtonDynamic()
    tap(mode, 0.0)
    mode.update(1.9)
    tap(mode, 2.0, hold=1.2)  # no frame saw it held past 1 s
    assert mode.state == SwitchState.REVERSING


# -- two-button dynamic (TwoButtonDynamicFilter) -----------------------------------------------------------------
def test_two_button_presses_shift_by_four_tenths_of_the_axis_up_and_down():
    mode = TwoButtonDynamic(SwitchConfig(lag_s=0.0))
    tap(mode, 0.0, 1)  # either switch starts
    steer = mode.update(0.1)
    assert steer.pointer == (100.0, ORIGIN_Y) and steer.offset == 0.0  # straight in
    tap(mode, 0.5, 0)
    assert mode.update(0.6).offset == pytest.approx(0.4 * MAX_Y)  # what was above comes down to the crosshair
    tap(mode, 0.7, 1)  # the other switch: no double press
    assert mode.update(0.8).offset == pytest.approx(-0.4 * MAX_Y) and mode.state == SwitchState.RUNNING
    assert mode.update(0.9).offset == 0.0  # once
    assert [(m.y, m.button) for m in mode.view().markers] == [(ORIGIN_Y - 1638.4, 0), (ORIGIN_Y + 1638.4, 1)]


def test_two_button_shift_makes_up_for_the_users_lag_and_can_swap_buttons():
    mode = TwoButtonDynamic(SwitchConfig(swap_buttons=True))  # lag 50 ms
    tap(mode, 0.0)
    tap(mode, 0.5, 0)
    assert mode.update(0.6, speed_bps=2.0).offset == pytest.approx(-0.4 * MAX_Y * 2 ** 0.1)


def test_two_button_double_and_long_presses_of_one_switch_reverse():
    mode = TwoButtonDynamic()
    tap(mode, 0.0)
    tap(mode, 1.0, 1)
    tap(mode, 1.4, 1)
    assert mode.state == SwitchState.REVERSING
    tap(mode, 2.0)
    tap(mode, 2.1)
    mode.press(0, 4.0)
    mode.update(5.1)
    assert mode.state == SwitchState.REVERSING and mode.reversals == 2


# -- scanning (menu mode) and step-scan ------------------------------------------------------------------------
def test_scanning_highlights_each_box_in_turn_then_the_back_box():
    mode = Scanning(SwitchConfig(scan_s=0.5, scan_cycles=3))
    assert mode.view().hint and not any(b.highlighted for b in mode.view().boxes)
    tap(mode, 0.0)  # starts from the first box, selects nothing
    seen = []
    for i in range(12):
        steer = mode.update(0.25 + 0.5 * i)
        assert steer.zoom_to is None and steer.pointer is None
        seen.append(mode.highlighted)
    assert seen == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1]
    boxes = mode.view().boxes
    assert [(b.y1, b.y2) for b in boxes] == [(0, 1024), (1024, 2048), (2048, 3072), (3072, 4096), (0, MAX_Y)]
    assert boxes[-1].back and [b.index for b in boxes if b.highlighted] == [1]


def test_a_scanning_press_zooms_into_the_highlighted_box_and_the_back_box_zooms_out():
    mode = Scanning(SwitchConfig(scan_s=1.0))
    tap(mode, 0.0)
    mode.update(2.5)
    assert mode.highlighted == 2
    tap(mode, 2.6)
    assert mode.update(2.7).zoom_to == (2048 - 25, 3072 + 25)  # the box and Dasher's safety margin
    assert mode.highlighted == 0  # starts again from the first box, for a whole scan time
    mode.update(3.5)
    assert mode.highlighted == 0
    mode.update(6.7)
    assert mode.highlighted == 4
    tap(mode, 6.8)
    assert mode.update(6.9).zoom_to == (-MAX_Y / 2, 1.5 * MAX_Y)  # zoom out by two about the crosshair
    assert mode.highlighted == 4 and mode.backs == 1  # the back box stays highlighted


def test_scanning_stops_after_idle_cycles_and_a_press_starts_it_again():
    mode = Scanning(SwitchConfig(scan_s=0.5, scan_cycles=2))
    tap(mode, 0.0)
    mode.update(4.9)
    assert mode.running
    mode.update(5.01)  # two cycles of five boxes without a press
    assert mode.state == SwitchState.STOPPED
    tap(mode, 6.0)
    assert mode.running and mode.highlighted == 0 and mode.update(6.1).zoom_to is None


def test_step_scan_one_switch_moves_the_highlight_the_other_selects():
    mode = StepScan()
    tap(mode, 0.0, 1)  # starts
    for t in (1.0, 2.0, 3.0):
        tap(mode, t, 0)
    mode.update(100.0)  # no scanning by itself, no stopping by itself
    assert mode.highlighted == 3 and mode.running
    tap(mode, 101.0, 1)
    assert mode.update(101.5).zoom_to == (3072 - 25, 4096 + 25)
    assert mode.highlighted == 0
    for t in range(4):
        tap(mode, 102.0 + t, 0)
    tap(mode, 107.0, 1)
    assert mode.update(107.5).zoom_to == (-MAX_Y / 2, 1.5 * MAX_Y)


# -- registry, config, hostile input ---------------------------------------------------------------------------
def test_modes_are_registered_by_name_and_the_command_knows_them():
    from dasher_rnn.cli.simulate import SWITCH_MODE_NAMES

    assert tuple(SWITCH_MODES) == SWITCH_MODE_NAMES == ("one-button", "two-button", "scanning", "step-scan")
    assert isinstance(switch_mode("scanning"), Scanning)
    with pytest.raises(ValueError, match="known modes: one-button"):
        switch_mode("sip-and-puff")


@pytest.mark.parametrize("values", [{"long_press_s": 0.0}, {"scan_s": math.nan}, {"scan_boxes": 1},
                                    {"scan_boxes": 4.5}, {"two_button_offset": 5000}, {"swap_buttons": "yes"},
                                    {"multi_press_s": True}])
def test_a_bad_config_is_refused_naming_the_field(values):
    with pytest.raises(ValueError, match=next(iter(values))):
        SwitchConfig(**values)


@pytest.mark.parametrize("name", list(SWITCH_MODES))
def test_hostile_input_never_raises(name):
    mode = switch_mode(name)
    mode.release(0, 0.0)  # a release without a press
    for t in (math.nan, math.inf, -math.inf, "soon", None):
        mode.press(0, t)  # type: ignore[arg-type]
        mode.update(t)  # type: ignore[arg-type]
    for button in (-1, 7, True, "a", None, 1.5):
        tap(mode, 1.0, button)  # type: ignore[arg-type]
    for i in range(200):  # a burst: bounces, repeats, two switches at once, time going backwards
        mode.press(i % 3, 2.0 + (i % 7) * 0.001 - (i % 5) * 0.01)
        if i % 4:
            mode.release(i % 2, 2.0 + i * 0.0005)
        mode.update(2.0 + i * 0.001, speed_bps=i)
    mode.press(0, 1e12)  # a leap in time
    mode.update(2e12)
    mode.release_all(2e12)
    mode.stop()
    mode.stop()
    tap(mode, 3e12)  # stopped: a press starts
    assert mode.running
    assert isinstance(mode.view().state, SwitchState)


def test_a_switch_held_down_ignores_its_repeats_until_released_or_forgotten():
    mode = OneButtonDynamic()
    tap(mode, 0.0)
    mode.press(0, 2.0)
    for t in (2.05, 2.1, 2.15):
        mode.press(0, t)  # key repeat
    mode.press(1, 2.2)  # a second switch while the first is down
    assert mode.target == 1 and mode.state == SwitchState.RUNNING
    mode.release_all(2.3)  # the front end lost the release
    tap(mode, 4.0)
    assert mode.target == 0


# -- the zoom's scheduled zoom and shift -----------------------------------------------------------------------
def test_a_scheduled_zoom_brings_the_range_to_fill_the_view_over_its_time():
    zoom = ZoomModel(writer_source("uniform"))
    zoom.schedule_zoom(1024.0, 2048.0, 0.5)
    assert zoom.zooming
    zoom.idle()  # no time passes: nothing moves
    assert zoom.bits_total == 0.0 and zoom.zooming
    bits = [zoom.step(ORIGIN_X, 100.0, 1 / 30).bits for _ in range(20)]  # the pointer is not followed meanwhile
    assert not zoom.zooming
    assert sum(bits) == pytest.approx(2.0)  # a quarter of the view fills it: two bits
    assert bits[0] > bits[10] > 0  # fast, then slowing (Dasher's steps of n, n-1, ...)
    before = zoom.bits_total
    zoom.schedule_zoom(-MAX_Y / 2, 1.5 * MAX_Y, 0.0)  # out by two, at once
    zoom.step(ORIGIN_X, ORIGIN_Y, 1 / 30)
    assert zoom.bits_total - before == pytest.approx(-1.0)
    zoom.schedule_zoom(5.0, 5.5, 1.0)  # under a unit: ignored
    zoom.schedule_zoom(math.nan, 10.0, 1.0)
    assert not zoom.zooming


def test_a_shift_moves_the_view_but_the_start_of_the_text_stays_filled():
    zoom = ZoomModel(writer_source("uniform"))
    zoom.offset(1000.0)
    assert (zoom.root_lo, zoom.root_hi) == (0.0, MAX_Y)
    for _ in range(60):
        zoom.step(ORIGIN_X - 1000, ORIGIN_Y, 1 / 30)  # straight in
    lo, hi = zoom.root_lo, zoom.root_hi
    zoom.offset(-500.0)
    assert (zoom.root_lo, zoom.root_hi) == pytest.approx((lo - 500, hi - 500))


def large_control_box() -> ZoomModel:
    """A zoom whose control box is the root, about 11,000 units high after a scanning selection, the crosshair in
    Delete char (1,135 units high: not yet wide enough to act), Stop and then Letters above it."""
    zoom = ZoomModel(RecordingSource(), ZoomSettings(control=True))
    zoom.idle()
    assert sweep(zoom, 3914.5, 3988.4) == ([], set())
    assert zoom.root.item is not None and zoom.root.action is None
    delete = action_range(zoom, Action.DELETE_CHAR)
    assert delete[0] < ORIGIN_Y < delete[1] and delete[1] - delete[0] < ORIGIN_X
    return zoom


def action_range(zoom: ZoomModel, action: Action) -> tuple[float, float]:
    """Where ``action``'s box is (the root being the control box)."""
    (index,) = ACTION_PATH[action]  # in the control box itself
    return zoom.child_range(zoom.root, zoom.root_lo, zoom.root_hi, index)


def sweep(zoom: ZoomModel, y1: float, y2: float) -> tuple[list[Action], set[Action]]:
    """Follow a scheduled zoom that brings ``y1``..``y2`` to fill the view: the actions that acted, and those whose
    boxes held the crosshair and reached past it (as wide as an action needs to act) on the way."""
    zoom.schedule_zoom(y1, y2, 0.5)
    acted, wide = [], set()
    while zoom.zooming:
        frame = zoom.step(0.0, 100.0, 1 / 60)  # the pointer is not followed meanwhile
        acted += [frame.action] if frame.action is not None else []
        if zoom.root.item is not None and zoom.zooming:
            for action in (Action.LETTERS, Action.STOP, Action.DELETE_CHAR):
                a, b = action_range(zoom, action)
                if a < ORIGIN_Y < b and b - a > ORIGIN_X:
                    wide.add(action)
    return acted, wide


def test_a_scheduled_zoom_acts_only_where_it_ends_not_in_the_action_boxes_it_passes():
    """A switch user's selection sweeps the crosshair through the boxes between it and the box selected, growing
    them: on the way up from Delete char, Stop and Letters grow past the crosshair while it is in them."""
    zoom = large_control_box()
    letters = action_range(zoom, Action.LETTERS)
    acted, wide = sweep(zoom, letters[0] - 700.0, letters[0] - 200.0)  # to a letter above the control box
    assert acted == [] and wide == {Action.STOP, Action.LETTERS}
    assert zoom.root.is_letter and len(zoom.output) == 1  # the letter written
    zoom = large_control_box()
    acted, wide = sweep(zoom, letters[0] - 25.0, letters[1] + 25.0)  # to Letters (scanning's box and margin)
    assert acted == [Action.LETTERS] and Action.STOP in wide  # where the zoom ends, once


def test_a_zoom_dropped_in_an_action_box_leaves_it_unacted_until_the_crosshair_enters_it_again():
    """A stop during a selection (``cancel_zoom``) can leave the crosshair in an action box that is wide enough to
    act: it must not act in the frames that follow (the user stopped), only once the crosshair has left it and
    entered it again by steering."""
    zoom = large_control_box()
    letters = action_range(zoom, Action.LETTERS)
    zoom.schedule_zoom(letters[0] - 700.0, letters[0] - 200.0, 0.5)  # up to the letters, through Stop
    for _ in range(100):
        assert zoom.step(0.0, 100.0, 1 / 60).action is None
        stop = action_range(zoom, Action.STOP)
        if stop[0] < ORIGIN_Y < stop[1] and stop[1] - stop[0] > ORIGIN_X:
            break
    assert zoom.zooming
    zoom.cancel_zoom()
    for _ in range(30):
        assert zoom.idle().action is None
        assert zoom.step(ORIGIN_X, ORIGIN_Y, 1 / 60).action is None  # a pointer resting at the crosshair
    for _ in range(200):  # back out until Stop no longer reaches past the crosshair
        assert zoom.step(1.8 * ORIGIN_X, ORIGIN_Y, 1 / 60).action is None
        stop = action_range(zoom, Action.STOP)
        if stop[1] - stop[0] < ORIGIN_X:
            break
    actions = [zoom.step(ORIGIN_X / 2, ORIGIN_Y, 1 / 60).action for _ in range(60)]  # and straight in again
    assert [a for a in actions if a is not None] == [Action.STOP]


# -- the controller ------------------------------------------------------------------------------------------------
def controller(**values) -> WritingController:
    return WritingController(writer_source("uniform"), ControllerConfig(**{"auto_speed": False, **values}))


def test_the_controller_starts_and_stops_with_the_switch_mode_and_keeps_the_pointer_path_without_one():
    c = controller(speed_bps=2.0)
    c.press(0)  # no mode: ignored
    assert not c.running
    c.set_switch_mode(OneButtonDynamic())
    c.frame((100.0, 100.0), 1 / 30)  # the pointer is ignored
    assert c.zoom.bits_total == 0.0
    c.press(0)
    c.release(0)
    assert c.running and c.switch is not None and c.switch.running
    for _ in range(30):
        c.frame(None, 1 / 30)
    assert c.zoom.bits_total > 0.5  # heading for the top point
    c.stop()
    assert c.switch.state == SwitchState.STOPPED
    c.start()
    assert c.switch.running
    c.set_switch_mode(None)
    assert not c.running
    c.start()
    bits = c.zoom.bits_total
    c.frame((100.0, 1000.0), 1 / 30)
    assert c.zoom.bits_total > bits  # the pointer steers again


def test_scanning_in_the_controller_zooms_into_the_selected_box_and_stops_when_idle():
    c = controller()
    c.set_switch_mode(Scanning(SwitchConfig(scan_s=0.5, scan_cycles=1, zoom_s=0.3)))
    c.press(0)
    c.release(0)
    for _ in range(20):  # to the third box
        c.frame(None, 1 / 20)
    assert c.switch.highlighted == 2
    c.press(0)
    c.release(0)
    for _ in range(10):
        c.frame(None, 1 / 20)
    assert c.zoom.bits_total == pytest.approx(math.log2(MAX_Y / (1024 + 50)))
    for _ in range(60):
        c.frame(None, 1 / 20)
    assert not c.running and c.stopped_because == "switch"


def test_a_press_while_a_scheduled_zoom_runs_and_a_stop_drops_it():
    c = controller()
    c.set_switch_mode(StepScan(SwitchConfig(zoom_s=1.0)))
    c.press(1)
    c.release(1)
    c.press(1)
    c.release(1)
    c.frame(None, 1 / 30)
    assert c.zoom.zooming
    c.stop()
    assert not c.zoom.zooming


# -- the simulated switch user ---------------------------------------------------------------------------------
def trained_ppm() -> PPMModel:
    ppm = PPMModel(load_alphabet("english"))
    ppm.train_text("\n".join(make_sentences(300)) + "\n")
    return ppm


@pytest.mark.parametrize("name", list(SWITCH_MODES))
@pytest.mark.parametrize("model", ["uniform", "ppm"])
def test_the_simulated_user_writes_hello_with_each_mode(name, model):
    source = writer_source("ppm", trained_ppm=trained_ppm()) if model == "ppm" else writer_source("uniform")
    c = WritingController(source, ControllerConfig(speed_bps=1.5, auto_speed=False))
    c.set_switch_mode(switch_mode(name))
    result = simulate_switch(c, ["hello"], fps=30, max_seconds=300)
    summary = result.summary()
    assert summary["failed"] == 0 and summary["characters"] == 5 and c.text == "hello\n"
    switch = summary["switch"]
    assert switch["mode"] == name and switch["presses"] >= 5 and switch["presses_per_char"] == switch["presses"] / 5
    assert summary["chars_per_minute"] > 0


def test_the_simulated_user_repeats_exactly_with_a_seed_and_slower_users_are_slower():
    def run(config):
        c = WritingController(writer_source("uniform"), ControllerConfig(speed_bps=1.0, auto_speed=False))
        c.set_switch_mode(switch_mode("scanning", SwitchConfig(scan_s=0.4)))
        summary = simulate_switch(c, ["hi"], user=config).summary()
        return {k: v for k, v in summary.items() if not k.startswith("frame_ms")}  # the machine's own time

    assert run(SwitchUserConfig(seed=3)) == run(SwitchUserConfig(seed=3))
    slow = run(SwitchUserConfig(reaction_s=0.6, reaction_sd=0.15, seed=3))
    assert slow["switch"]["mistimed"] > 0  # presses that land after the highlight moved on, then corrected
    assert slow["failed"] == 0


@pytest.mark.parametrize("name", list(SWITCH_MODES))
def test_the_control_box_is_reachable_in_every_mode(name):
    c = WritingController(writer_source("ppm", trained_ppm=trained_ppm()),
                          ControllerConfig(speed_bps=1.5, auto_speed=False, control_mode=True))
    c.set_switch_mode(switch_mode(name))
    result = simulate_switch(c, ["the{delete-char}n{stop}"], fps=30, max_seconds=300)
    assert not result.failed, result.summary()
    assert [p.phrase for p in result.phrases] == ["thn"]
    assert [a.action for a in result.phrases[0].actions] == [Action.DELETE_CHAR, Action.STOP]
    assert not c.running and c.stopped_because == "control" and c.switch.state == SwitchState.STOPPED


def test_a_switch_user_needs_a_switch_mode():
    with pytest.raises(ValueError, match="switch mode"):
        SwitchUser(controller())
    with pytest.raises(ValueError, match="reaction_s"):
        SwitchUserConfig(reaction_s=-1)


def test_simulate_command_takes_a_switch_input(tmp_path, capsys):
    from dasher_rnn.cli import main

    assert main(["simulate", "--input", "step-scan", "--model", "uniform", "--text", "hi", "--fps", "30", "--json",
                 "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["input"] == "step-scan" and summary["failed"] == 0 and summary["characters"] == 2
    assert summary["switch"]["mode"] == "step-scan" and summary["switch"]["presses_per_char"] > 0
    assert main(["simulate", "--input", "scanning", "--model", "uniform", "--text", "a", "--scan-time", "0.5",
                 "--reaction-ms", "200"]) == 0
    out = capsys.readouterr().out
    assert "switch" in out and "chars_per_minute" in out
