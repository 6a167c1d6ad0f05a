"""The writing controller without a window: start/stop, dwell, pausing, turbo, text and statistics.

The controller takes plain values (ControllerConfig); nothing here knows the app's preferences."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.input.presets import PRESETS
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.zoom.controller import AWAY_STOP_S, SPEED_RANGE, ControllerConfig, WritingController
from dasher_rnn.zoom.geometry import ORIGIN_X, ORIGIN_Y, Viewport
from dasher_rnn.zoom.simulate import REVERSE_X, target_pointer, wait_for_answers
from tests.conftest import make_sentences, writer_source

ALPHABET = load_alphabet("english")


def controller(**values) -> WritingController:
    return WritingController(writer_source("uniform"), ControllerConfig(**{"auto_speed": False, **values}))


def write(c: WritingController, target: str, frames: int = 20000) -> None:
    for _ in range(frames):
        c.frame(target_pointer(c.zoom, c.zoom.context + target), 1 / 60)
        if c.zoom.output == target:
            return
    raise AssertionError(f"did not write {target!r}: {c.zoom.output!r}")


def test_nothing_moves_until_started_and_stop_freezes():
    c = controller(speed_bps=4.0)
    for _ in range(30):
        c.frame((100.0, 1000.0), 1 / 60)
    assert c.zoom.bits_total == 0 and c.text == ""
    c.start()
    write(c, "hi")
    c.stop()
    before = c.zoom.bits_total
    c.frame((100.0, 1000.0), 1 / 60)
    assert c.zoom.bits_total == before and c.text == "hi"


def test_messages_accumulate_in_the_history_and_clear_empties():
    c = controller(speed_bps=4.0)
    c.start()
    write(c, "ab")
    c.new_message()
    assert c.text == "ab\n" and c.zoom.output == ""
    write(c, "c")
    assert c.text == "ab\nc"
    c.clear()
    assert c.text == ""


def test_dwell_at_the_crosshair_starts_and_leaving_the_view_pauses_with_the_eye_tracker_preset():
    c = controller(preset="eye-tracker")
    t = 0.0
    while not c.running and t < 5:
        c.frame((ORIGIN_X, ORIGIN_Y), 0.05)
        t += 0.05
    assert c.running and t >= c.preset.dwell_seconds - 0.06
    for _ in range(round(AWAY_STOP_S / 0.05) + 1):
        c.frame(None, 0.05)
    assert not c.running


def test_turbo_multiplies_the_speed_and_presets_can_set_speeds():
    c = controller(speed_bps=1.0, turbo_factor=3.0)
    c.turbo = True
    assert c.effective_speed == 3.0
    c.apply_preset("eye-tracker", adopt_speeds=True)
    assert c.speed_bps == c.preset.speed_bps and c.reverse_speed == c.preset.reverse_speed


def test_stats_report_writing_speed():
    c = controller(speed_bps=4.0)
    c.start()
    write(c, "ok")
    stats = c.stats()
    assert stats.running and stats.characters == 2 and stats.chars_per_minute > 0


def test_viewport_round_trips_and_puts_the_crosshair_mid_height():
    v = Viewport(800, 600)
    assert v.crosshair[1] == 300
    sx, sy = v.to_screen(1000.0, 3000.0)
    assert v.to_dasher(sx, sy) == pytest.approx((1000.0, 3000.0))


def test_the_defaults_are_the_mouse_preset():
    c = WritingController(writer_source("uniform"))
    mouse = PRESETS["mouse"]
    assert c.config == ControllerConfig() and c.preset == mouse
    assert (c.speed_bps, c.reverse_speed, c.auto_speed_enabled) == (mouse.speed_bps, mouse.reverse_speed, mouse.auto_speed)


def test_values_are_clamped_and_the_config_reports_what_is_in_effect():
    c = controller(speed_bps=50.0, reverse_speed=0.0, turbo_factor=2.5, preset="head-mouse")
    assert c.config == ControllerConfig(SPEED_RANGE[1], 0.1, False, "head-mouse", 2.5)
    c.set_speed(-1.0)
    c.set_auto_speed(True)
    c.set_turbo_factor(100.0)
    assert c.config == ControllerConfig(SPEED_RANGE[0], 0.1, True, "head-mouse", 8.0)
    assert c.zoom.config.reverse_speed == 0.1  # the zoom model caps reversing with it


def test_picking_a_preset_adopts_its_speeds_only_when_asked():
    c = controller(speed_bps=3.0, auto_speed=True)
    c.apply_preset("eye-tracker")
    assert (c.speed_bps, c.auto_speed_enabled) == (3.0, True)
    eye = c.apply_preset("eye-tracker", adopt_speeds=True)
    assert (c.speed_bps, c.reverse_speed, c.auto_speed_enabled) == (eye.speed_bps, eye.reverse_speed, eye.auto_speed)
    with pytest.raises(ValueError, match="unknown input preset"):
        c.apply_preset("joystick")


def test_auto_speed_moves_the_speed_only_when_enabled():
    for enabled in (False, True):
        c = controller(speed_bps=2.0, auto_speed=enabled)
        c.start()
        for i in range(600):  # steering straight ahead, far right, following the growing box: fast
            c.frame((ORIGIN_X - 1500.0 + 300.0 * math.sin(i / 20), ORIGIN_Y), 1 / 60)
        assert c.running and (c.speed_bps != 2.0) == enabled


def test_a_resting_pointer_does_not_raise_auto_speed():
    """The evidence: 20 s of a resting pointer took auto speed from 1.5 to 3.8 bits/s. Resting is not steering."""
    c = controller(speed_bps=1.5, auto_speed=True, rest_stop_seconds=0.0)  # never stops: the speed rule alone
    c.start()
    for _ in range(20 * 60):
        c.frame((ORIGIN_X - 1500.0, ORIGIN_Y + 40.0), 1 / 60)
    assert c.running and c.speed_bps == 1.5


@pytest.mark.parametrize("name", list(PRESETS))
def test_leaving_the_canvas_pauses_with_every_preset(name):
    c = controller(preset=name)
    c.start()
    for _ in range(10):  # started from a button, the pointer not on the canvas yet: waits for it
        c.frame(None, 1 / 60)
    assert c.running and c.zoom.bits_total == 0
    c.frame((ORIGIN_X - 500.0, ORIGIN_Y), 1 / 60)
    assert c.running and c.zoom.bits_total > 0
    bits = c.zoom.bits_total
    for _ in range(int(AWAY_STOP_S * 60) - 1):  # it left: a blink, a glance at the text, a hand off the edge pauses
        c.frame(None, 1 / 60)
    assert c.running and c.zoom.bits_total == bits
    c.frame(None, 2 / 60)  # away for longer: nobody is steering
    assert not c.running and c.stopped_because == "outside"
    c.start()
    assert c.stopped_because == ""


def test_pausing_outside_can_be_turned_off_for_the_mouse():
    c = controller(pause_outside=False)
    c.start()
    c.frame((ORIGIN_X - 500.0, ORIGIN_Y), 1 / 60)
    c.frame(None, 1 / 60)
    assert c.running and c.config.pause_outside is False


def test_a_resting_pointer_stops_writing_within_the_set_time():
    c = controller(speed_bps=2.0, rest_stop_seconds=2.5)
    c.start()
    write(c, "ab")
    dt, rested = 1 / 30, 0.0
    while c.running and rested < 10:
        c.frame((ORIGIN_X - 800.0, ORIGIN_Y - 300.0), dt)
        rested += dt
    assert not c.running and c.stopped_because == "rest"
    assert 2.5 - dt <= rested <= 2.5 + 2 * dt  # simulated seconds, not this machine's
    never = controller(rest_stop_seconds=0.0)
    never.start()
    for _ in range(20 * 30):
        never.frame((ORIGIN_X - 800.0, ORIGIN_Y - 300.0), dt)
    assert never.running


def test_a_gaze_kept_on_the_crosshair_starts_once_and_stops_only_after_leaving_it():
    """A dwell fires once per visit: a gaze kept on the crosshair toggled start and stop every 1.1 s before."""
    c = controller(preset="eye-tracker")
    dt, t = 1 / 30, 0.0
    states = []
    while t < 10.0:
        c.frame((ORIGIN_X, ORIGIN_Y), dt)
        t += dt
        states.append(c.running)
    flips = [i for i in range(1, len(states)) if states[i] != states[i - 1]]
    assert len(flips) == 1 and states[-1]  # started after a second, and stayed so
    for _ in range(10):
        c.frame((ORIGIN_X - 1500.0, ORIGIN_Y - 1000.0), dt)  # away ...
    while c.running and t < 20.0:
        c.frame((ORIGIN_X, ORIGIN_Y), dt)  # ... and back: a new dwell stops
        t += dt
    assert not c.running


def ppm_controller() -> WritingController:
    model = PPMModel(ALPHABET)
    model.train_text("\n".join(make_sentences(300)) + "\n")
    return WritingController(writer_source("ppm", trained_ppm=model), ControllerConfig(speed_bps=4.0, auto_speed=False))


def ppm_counts(c: WritingController) -> dict:
    return c.writer.mixer.ppm.snapshot()


def same_counts(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_undo_takes_back_the_last_run_and_what_it_taught_the_model():
    c = ppm_controller()
    untouched = ppm_counts(c)
    assert not c.can_undo and not c.undo_run()
    c.start()
    write(c, "I want")
    c.stop()
    after_first = (c.text, ppm_counts(c))
    assert c.zoom._committed > 0 and not same_counts(after_first[1], untouched)  # it learned from the first run
    c.start()
    c.stop()
    c.start()  # runs that wrote nothing are no runs to undo
    write(c, "I want some water.")
    assert not same_counts(ppm_counts(c), after_first[1])
    assert c.can_undo and c.undo_run()
    assert not c.running
    assert c.text == after_first[0] and same_counts(ppm_counts(c), after_first[1])
    assert c.undo_run()  # one run further back: the message start, and nothing learned
    assert c.text == "" and same_counts(ppm_counts(c), untouched) and not c.can_undo
    c.start()
    write(c, "We need")  # writing goes on from there as usual
    assert c.text == "We need"


def test_undo_relearns_what_the_run_backed_out_of():
    c = ppm_controller()
    c.start()
    write(c, "The nurse")
    c.stop()
    before = (c.text, ppm_counts(c))
    committed = c.zoom.mark().committed
    c.start()
    while c.zoom.mark().committed > committed - 2:  # backing out of committed text unlearns it ...
        c.frame((REVERSE_X, ORIGIN_Y), 1 / 60)
    assert c.running and not same_counts(ppm_counts(c), before[1])
    assert c.undo_run()  # ... and undo puts it back, learned as it was
    assert c.text == before[0] and same_counts(ppm_counts(c), before[1])


def test_undo_does_not_reach_into_an_earlier_message():
    c = ppm_controller()
    c.start()
    write(c, "Tom")
    c.new_message()
    assert not c.can_undo and not c.undo_run() and c.text == "Tom\n"


def test_undo_with_the_adapting_rnn_restores_the_text_and_the_weights():
    c = WritingController(writer_source("rnn"), ControllerConfig(speed_bps=3.0, auto_speed=False))
    try:
        def steer(target: str) -> None:
            for _ in range(20000):
                wait_for_answers(c.zoom)  # the same run however busy this machine is
                c.frame(target_pointer(c.zoom, c.zoom.context + target), 1 / 30)
                if c.zoom.output == target:
                    return
            raise AssertionError(c.zoom.output)

        def probe() -> np.ndarray:
            w = c.writer
            w.flush()
            handle = w.root("I would like")
            probs = w.request([handle]).result()[0].probs
            w.release(handle)
            return probs

        c.start()
        steer("hello there")
        c.stop()
        for _ in range(5):  # stopped, the view settles as the last answers arrive
            wait_for_answers(c.zoom)
            c.frame(None, 1 / 30)
        kept, before = c.text, probe()
        c.start()
        steer("hello there, how are you doing today? i am well")  # well over 20 committed characters: the RNN adapts
        c.stop()
        c.writer.flush()
        assert c.writer.status().updates >= 1 and not np.allclose(probe(), before, atol=1e-6)
        assert c.undo_run()
        for _ in range(5):
            wait_for_answers(c.zoom)
            c.frame(None, 1 / 30)
        assert c.text == kept
        assert np.allclose(probe(), before, atol=1e-5)  # what the run taught the RNN is gone
    finally:
        c.close()
