import dataclasses

import pytest

from dasher_rnn.input.presets import PRESETS, Preset, preset


def test_known_presets_are_sensible():
    assert set(PRESETS) == {"mouse", "eye-tracker", "head-mouse", "switch"}
    for name, p in PRESETS.items():
        assert p.name == name and p.label
        assert 0.1 <= p.speed_bps <= 8.0
        assert 0 < p.dwell_radius < 0.5 and p.dwell_seconds > 0
        assert p.smoothing_min_cutoff > 0 and p.smoothing_beta >= 0 and p.reverse_speed > 0
    eye, mouse = preset("eye-tracker"), preset("mouse")
    assert eye.speed_bps < mouse.speed_bps
    assert eye.dwell_start and eye.pause_when_outside and not eye.start_on_click
    assert (eye.dwell_seconds, eye.dwell_radius) == (1.0, 0.06)
    assert eye.smoothing_min_cutoff < mouse.smoothing_min_cutoff  # stronger smoothing
    assert mouse.start_on_click and not mouse.dwell_start
    assert preset("head-mouse").dwell_seconds == 1.5
    switch = preset("switch")  # the switch mode steers: nothing starts by a click, a dwell or the pointer leaving
    assert not (switch.start_on_click or switch.dwell_start or switch.pause_when_outside or switch.auto_speed)
    assert switch.control_mode


def test_presets_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        preset("mouse").speed_bps = 3.0  # type: ignore[misc]
    assert isinstance(preset("mouse"), Preset)


def test_unknown_preset_lists_known_names():
    with pytest.raises(ValueError, match="mouse, eye-tracker, head-mouse, switch"):
        preset("joystick")
