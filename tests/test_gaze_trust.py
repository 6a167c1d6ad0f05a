"""A still eye never writes (the gaze-trust issue): the gaze model with real trackers' noise, the intent rules that
hold under it, confirmations for what reaches another person, and switches that stop."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from dasher_rnn.input.switches import KeyRepeat
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.zoom.confirmations import CONFIRM_CENTRE, CONFIRM_RADIUS, CONFIRM_S
from dasher_rnn.zoom.control import CONFIRMED, Action
from dasher_rnn.zoom.controller import ControllerConfig, WritingController
from dasher_rnn.zoom.gaze_noise import GRADES, PERFECT, Screen, SimulatedEye, TrackerGrade, grade
from dasher_rnn.zoom.gaze_user import REST_SPOTS, GazeUserConfig, rest, simulate_gaze
from dasher_rnn.zoom.geometry import MAX_Y, ORIGIN_X, ORIGIN_Y, Viewport
from dasher_rnn.zoom.simulate import target_pointer
from dasher_rnn.zoom.switch_modes import OneButtonDynamic, Scanning, TwoButtonDynamic
from dasher_rnn.zoom.switching import SwitchConfig
from tests.conftest import make_sentences, writer_source
from tests.test_ui import ALPHABET

DT = 1 / 30


# -- the gaze model ------------------------------------------------------------------------------------------------
def still_samples(g: TrackerGrade, seconds: float, seed: int = 0) -> tuple[SimulatedEye, list]:
    eye = SimulatedEye(g, seed=seed)
    eye.look((960.0, 540.0), 0.0)
    return eye, eye.samples(seconds)


@pytest.mark.parametrize("name", list(GRADES))
def test_each_grade_has_the_figures_it_states(name):
    """Precision (RMS sample to sample) and accuracy (the mean error) as the grade states them, at its rate, with the
    samples it loses; measured on an eye held still (no drift, no microsaccades, no blinks)."""
    g = GRADES[name]
    quiet = TrackerGrade(g.name, g.label, g.accuracy_deg, g.precision_deg, g.rate_hz, g.loss, drift_deg=0.0,
                         microsaccades_per_s=0.0, blinks_per_min=0.0)
    eye, samples = still_samples(quiet, 120.0)
    ppd = Screen().px_per_degree
    assert len(samples) == pytest.approx(120.0 * g.rate_hz, abs=2)
    valid = [s for s in samples if s.valid]
    assert 1 - len(valid) / len(samples) == pytest.approx(g.loss, abs=0.02)
    xy = np.array([(s.x, s.y) for s in valid])
    steps = np.hypot(*np.diff(xy, axis=0).T)
    assert math.sqrt(np.mean(steps**2)) / ppd == pytest.approx(g.precision_deg, rel=0.1)
    error = np.hypot(*(xy.mean(axis=0) - (960.0, 540.0))) / ppd
    assert error == pytest.approx(g.accuracy_deg, abs=0.05)


def test_a_real_eye_is_never_still_and_blinks():
    """Drift and microsaccades move a fixating eye about its point, under a degree; blinks lose samples for 100-400
    ms, about 15 times a minute."""
    g = replace(grade("consumer"), loss=0.0)  # blinks alone
    eye, samples = still_samples(g, 300.0, seed=3)
    ppd = Screen().px_per_degree
    valid = np.array([(s.x, s.y) for s in samples if s.valid])
    spread = np.hypot(*(valid - valid.mean(axis=0)).T) / ppd
    assert 0.1 < np.percentile(spread, 90) < 1.0
    runs, run = [], 0
    for s in samples:
        if not s.valid:
            run += 1
        elif run:
            runs.append(run / g.rate_hz)
            run = 0
    blinks = [r for r in runs if r >= 0.1]
    assert 8 * 5 <= len(blinks) <= 22 * 5 and max(blinks) <= 0.45


def test_a_saccade_takes_the_main_sequence_time():
    eye = SimulatedEye(PERFECT, seed=0)
    eye.look((500.0, 540.0), 0.0)
    eye.samples(1.0)
    ppd = Screen().px_per_degree
    eye.look((500.0 + 10 * ppd, 540.0), 1.0)  # 10 degrees: 21 + 22 ms
    eye.samples(1.030)
    assert eye.moving
    eye.samples(1.050)
    assert not eye.moving


def test_grades_and_gaze_users_refuse_what_is_not_one():
    with pytest.raises(ValueError, match="unknown tracker grade"):
        grade("superb")
    with pytest.raises(ValueError, match="precision_deg"):
        TrackerGrade("x", "x", 1.0, float("nan"), 60.0)
    with pytest.raises(ValueError, match="grade"):
        GazeUserConfig(grade="superb")
    with pytest.raises(ValueError, match="view"):
        GazeUserConfig(view=(0, 0, 4000, 800))


def test_a_gaze_near_the_view_is_taken_onto_its_edge_and_further_out_is_away():
    view = Viewport(1000, 800)
    assert view.catch(500.0, -30.0) == view.to_dasher(500.0, 0.0)  # a tracker's error above the top edge
    assert view.catch(1040.0, 400.0) == view.to_dasher(1000.0, 400.0)
    assert view.catch(500.0, -100.0) is None  # the text panel above the view


# -- the intent rules under the noisy gaze -------------------------------------------------------------------------
def ppm_gaze_controller(**values) -> WritingController:
    model = PPMModel(ALPHABET)
    model.train_text("\n".join(make_sentences(300)) + "\n")
    config = {"preset": "eye-tracker", "speed_bps": 0.8, "auto_speed": False, "control_mode": True, **values}
    return WritingController(writer_source("ppm", trained_ppm=model), ControllerConfig(**config))


@pytest.mark.parametrize("name", ["consumer", "poor"])
def test_a_resting_eye_at_every_spot_changes_nothing_and_does_nothing(name):
    """The short version of ``bench/gaze_day.py --resting-hour``: after a phrase, two minutes of rest at every spot
    of REST_SPOTS (the writing area, the control box, the edges, the crosshair, the text panel), blinks, drift and
    the tracker's noise included: the message is what was written, and no action happened."""
    c = ppm_gaze_controller()
    rests = []
    result, _ = simulate_gaze(c, ["the cat sat"], fps=30.0, max_seconds=300.0,
                              user=GazeUserConfig(grade=name, seed=1),
                              after=lambda person: rests.append(rest(c, person, 120.0, 30.0, list(REST_SPOTS.values()))))
    assert not result.failed
    assert rests[0].changed == 0 and rests[0].actions == []
    assert c.history.endswith("the cat sat\n")


def test_a_dwell_that_stops_takes_back_what_the_zoom_did_while_the_gaze_dwelt():
    c = ppm_gaze_controller()
    c.start()
    while c.zoom.output != "the":
        c.frame(target_pointer(c.zoom, "the"), DT)  # writing ...
    written = c.text
    assert len(written) > 0
    for _ in range(60):  # ... then a dwell on the crosshair, a little left of it (backing out meanwhile) ...
        c.frame((ORIGIN_X + 150.0, ORIGIN_Y), DT)
        if not c.running:
            break
    assert not c.running and c.text == written  # ... which is taken back when the dwell stops writing


# -- what reaches another person asks first ------------------------------------------------------------------------
def phrase_controller() -> WritingController:
    """The head mouse's preset (it confirms, and its dwell works as the eye tracker's), steered by a pointer that
    aims as a mouse does (the gaze rules are not what these tests are about)."""
    c = ppm_gaze_controller(preset="head-mouse", rest_stop_seconds=0.0)
    c.zoom.set_phrases([("I need help", 0)])
    c.start()
    return c


def steer_to_phrase(c: WritingController) -> None:
    """A pass through the control box into the quick phrase (as a steering pointer would make it)."""
    for _ in range(3000):
        frame = c.frame(target_pointer(c.zoom, c.zoom.text, Action.PHRASE, "I need help"), DT)
        if frame.confirm is not None or c.pending is not None:
            return
        assert frame.phrase is None, "the phrase was written without a confirmation"
    raise AssertionError("never reached the phrase")


def test_a_quick_phrase_is_written_only_once_confirmed_by_a_dwell_on_the_target():
    c = phrase_controller()
    steer_to_phrase(c)
    assert c.pending is not None and c.pending.text == "I need help" and not c.running
    assert "I need help" not in c.text
    away = (ORIGIN_X - 1500.0, ORIGIN_Y + 1200.0)
    for _ in range(10):
        c.frame(away, DT)
    frames = [c.frame(CONFIRM_CENTRE, DT) for _ in range(60)]
    assert [f.phrase for f in frames if f.phrase] == ["I need help"] and c.pending is None
    assert c.text.endswith("I need help") and not c.running  # writing goes on by intent: a dwell to start


def test_a_gaze_resting_where_the_target_appears_does_not_confirm_and_it_is_let_go():
    c = phrase_controller()
    steer_to_phrase(c)
    text = c.text
    for _ in range(int(CONFIRM_S / DT) + 5):  # the gaze stays on the target: it never entered it
        frame = c.frame(CONFIRM_CENTRE, DT)
        assert frame.phrase is None and frame.action is None
    assert c.pending is None and c.text == text


def test_a_click_or_a_switch_confirms_and_starting_again_lets_it_go():
    c = phrase_controller()
    steer_to_phrase(c)
    c.confirm()
    assert c.frame(None, DT).phrase == "I need help"
    c.start()
    steer_to_phrase(c)
    c.start()  # writing on instead
    assert c.pending is None and c.running
    assert c.on_confirm_target(CONFIRM_CENTRE) and not c.on_confirm_target((CONFIRM_CENTRE[0] + CONFIRM_RADIUS + 1,
                                                                             CONFIRM_CENTRE[1]))


def test_what_asks_first():
    assert {Action.SPEAK, Action.SAVE, Action.CLEAR, Action.NEW_MESSAGE, Action.PHRASE} <= CONFIRMED
    assert Action.STOP not in CONFIRMED and Action.DELETE_CHAR not in CONFIRMED


# -- switches that stop --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", [OneButtonDynamic, TwoButtonDynamic])
def test_a_dynamic_mode_stops_after_a_while_without_a_press(mode):
    m = mode(SwitchConfig(idle_stop_s=5.0))
    m.press(0, 0.0)
    m.release(0, 0.1)
    assert m.running
    for t in np.arange(0.2, 4.9, 0.1):
        m.update(float(t))
    assert m.running
    m.update(5.1)
    assert not m.running


def test_a_switch_held_down_is_stuck_and_forgotten():
    m = OneButtonDynamic(SwitchConfig(idle_stop_s=5.0))
    m.press(0, 0.0)
    m.release(0, 0.1)
    m.press(0, 1.0)  # down, and never up: a switch left pressed on its socket
    for t in np.arange(1.1, 6.5, 0.1):
        m.update(float(t))
    assert not m.running and m.stuck == 1
    m.press(0, 7.0)  # the next press is taken
    assert m.running


def test_scanning_keeps_its_own_rounds_and_zero_means_never():
    m = OneButtonDynamic(SwitchConfig(idle_stop_s=0.0))
    m.press(0, 0.0)
    for t in range(1, 100):
        m.update(float(t))
    assert m.running
    assert not Scanning.idle_stops


def test_a_held_key_sent_as_release_press_pairs_is_one_long_press():
    repeat = KeyRepeat(gap_s=0.03)
    events = repeat.press(0, 10.0)
    for i in range(1, 30):  # an X server that does not flag its repeats: pairs at once, every 33 ms
        events += repeat.release(0, 10.0 + 0.5 + i * 0.033)
        events += repeat.press(0, 10.0 + 0.5 + i * 0.033 + 0.001)
    events += repeat.release(0, 12.0)
    events += repeat.due(12.01)
    assert [(e.switch, e.down) for e in events] == [(0, True)]
    events = repeat.due(12.1)
    assert [(e.switch, e.down, e.t) for e in events] == [(0, False, 12.0)]
    assert [(e.switch, e.down) for e in repeat.press(1, 13.0) + repeat.release(1, 13.2) + repeat.press(1, 13.4)] == [
        (1, True), (1, False), (1, True)]  # two presses with a real gap are two presses


def test_the_simulated_switch_user_pauses_and_the_mode_stops_doing_nothing_meanwhile():
    """30 s without a press after each phrase: the mode stops (6 s), no action happens, and what it wrote after the
    first character the last press brought is taken back (before: it wrote on for the whole pause, and two-button
    once spoke)."""
    from dasher_rnn.zoom.switch_user import SwitchUserConfig, simulate_switch

    c = WritingController(writer_source("ppm", trained_ppm=_ppm()),
                          ControllerConfig(preset="switch", speed_bps=1.0, auto_speed=False))
    for name in ("one-button", "two-button"):
        from dasher_rnn.zoom.switch_modes import switch_mode

        c.set_switch_mode(switch_mode(name))
        result = simulate_switch(c, ["the cat", "sat on"], fps=30.0, max_seconds=200.0,
                                 user=SwitchUserConfig(seed=1, pause_s=30.0))
        assert not result.failed
        assert result.switch is not None and not c.running
        assert result.switch["paused_actions"] == [] and result.switch["paused_changed"] <= 2 * 3


def _ppm() -> PPMModel:
    model = PPMModel(ALPHABET)
    model.train_text("\n".join(make_sentences(300)) + "\n")
    return model


def test_view_scale_of_the_confirmation_target():
    """The target is about 3.5 degrees across on the default screen (targets a tired eye can hit)."""
    screen = Screen()
    view_px = 960
    across = 2 * CONFIRM_RADIUS / MAX_Y * view_px / screen.px_per_degree
    assert 3.0 <= across <= 8.0


def test_a_switch_time_out_keeps_only_the_character_the_last_press_brought():
    """What a dynamic mode writes after the first character its last press brought is nobody's: a time-out takes it
    back (before: it kept all it wrote in the first half of the time-out, about two characters more a pause)."""
    from dasher_rnn.zoom.switch_modes import switch_mode

    c = WritingController(writer_source("ppm", trained_ppm=_ppm()),
                          ControllerConfig(preset="switch", speed_bps=2.0, auto_speed=False))
    c.set_switch_mode(switch_mode("one-button"))
    c.press(0)
    c.release(0)
    brought, texts = None, []
    for _ in range(int(10 / DT)):
        c.frame(None, DT)
        texts.append(c.text)
        if brought is None and c.text:
            brought = c.text
    assert brought and any(len(t) > len(brought) for t in texts)  # it wrote on after the first character
    assert not c.running and c.text == brought
