import json
import math
import os

import pytest
from pydantic import ValidationError

from dasher_rnn import settings
from dasher_rnn.input.presets import PRESETS
from dasher_rnn.settings import Preferences, SettingsError, SettingsStore
from dasher_rnn.zoom.controller import ControllerConfig


def replace(prefs: Preferences, **changes) -> Preferences:
    """A copy with changes and no validation (as dataclasses.replace did), to test what validation makes of them."""
    return prefs.model_copy(update=changes)


@pytest.fixture
def store(tmp_path):
    return SettingsStore(tmp_path / "config" / "settings.json")


def test_missing_file_gives_defaults(store):
    assert store.load() == Preferences() and store.notice is None


def test_defaults_match_the_mouse_preset():
    prefs, mouse = Preferences(), PRESETS["mouse"]
    assert (prefs.speed_bps, prefs.auto_speed, prefs.reverse_speed) == (mouse.speed_bps, mouse.auto_speed, mouse.reverse_speed)
    assert prefs.validated() == (prefs, [])


def test_round_trip_creates_the_folder(store):
    prefs = replace(Preferences(), speed_bps=2.5, input="gaze-udp", gaze_port=6000, preset="eye-tracker",
                    font_size=20, colour_scheme="high-contrast", adaptation=False, model="ppm")
    store.save(prefs)
    assert store.load() == prefs and store.notice is None
    assert not [p for p in store.path.parent.iterdir() if p.name != "settings.json"]  # no temporary file left


def test_corrupt_file_is_moved_aside(store):
    store.path.parent.mkdir(parents=True)
    store.path.write_text('{"speed_bps": 2.0,')
    assert store.load() == Preferences()
    assert "corrupt" in store.notice
    kept = list(store.path.parent.glob("settings.json.broken-*"))  # files.set_aside, as every file set aside
    assert len(kept) == 1 and kept[0].read_text() == '{"speed_bps": 2.0,'
    assert not store.path.exists()
    store.save(Preferences())
    assert store.load() == Preferences() and store.notice is None


@pytest.mark.parametrize("content", [b"\xff\xfe garbage", b"[1, 2, 3]", b""])
def test_other_unreadable_content_is_corrupt(store, content):
    store.path.parent.mkdir(parents=True)
    store.path.write_bytes(content)
    assert store.load() == Preferences() and "corrupt" in store.notice


def test_interrupted_write_leaves_the_old_file(store, monkeypatch):
    store.save(replace(Preferences(), speed_bps=3.0))
    before = store.path.read_text()

    def fail(*_args):
        raise OSError("disk on fire")

    monkeypatch.setattr(settings.os, "replace", fail)
    with pytest.raises(SettingsError, match="disk on fire"):
        store.save(replace(Preferences(), speed_bps=4.0))
    monkeypatch.undo()
    assert store.path.read_text() == before
    assert store.load().speed_bps == 3.0
    assert [p.name for p in store.path.parent.iterdir()] == ["settings.json"]


def test_wrong_types_and_ranges_fall_back_per_key(store):
    data = Preferences().model_dump() | {"font_size": "big", "auto_speed": 1, "input": "joystick", "gaze_port": 70000,
                                   "turbo_factor": float("nan"), "preset": "eye-tracker", "speed_bps": 20,
                                   "profile": "", "unknown_key": [1, 2]}
    store.path.parent.mkdir(parents=True)
    store.path.write_text(json.dumps(data))
    prefs = store.load()
    assert prefs == replace(Preferences(), preset="eye-tracker", speed_bps=8.0)
    for key in ("font_size", "auto_speed", "input", "gaze_port", "turbo_factor", "speed_bps", "profile"):
        assert key in store.notice
    assert "unknown_key" not in store.notice and "preset" not in store.notice


def test_integers_are_accepted_for_floats(store):
    store.path.parent.mkdir(parents=True)
    store.path.write_text('{"speed_bps": 2, "reverse_speed": 1}')
    prefs = store.load()
    assert prefs.speed_bps == 2.0 and isinstance(prefs.speed_bps, float) and store.notice is None


def test_save_repairs_bad_values(store):
    store.save(replace(Preferences(), speed_bps=0.0, font_size="huge"))
    saved = json.loads(store.path.read_text())
    assert saved["speed_bps"] == 0.1 and saved["font_size"] == 14


def test_env_override(tmp_path, monkeypatch):
    target = tmp_path / "elsewhere" / "prefs.json"
    monkeypatch.setenv("DASHER_RNN_CONFIG", str(target))
    store = SettingsStore()
    assert store.path == target
    store.save(replace(Preferences(), font_size=30))
    assert json.loads(target.read_text())["font_size"] == 30
    monkeypatch.delenv("DASHER_RNN_CONFIG")
    assert SettingsStore().path.name == "settings.json" and SettingsStore().path != target
    assert os.fspath(SettingsStore(target).path) == os.fspath(target)


@pytest.mark.parametrize("key", ["font_size", "gaze_port", "reverse_speed", "turbo_factor", "speed_bps"])
def test_a_huge_integer_does_not_stop_start_up(store, key):
    """A 401-digit integer (a hand edit) once raised OverflowError while loading."""
    store.path.parent.mkdir(parents=True)
    store.path.write_text(f'{{"{key}": 1{"0" * 400}, "colour_scheme": "high-contrast"}}')
    prefs = store.load()
    expected = 8.0 if key == "speed_bps" else getattr(Preferences(), key)  # the speed is clamped, not reset
    assert getattr(prefs, key) == expected and prefs.colour_scheme == "high-contrast"
    assert key in store.notice


@pytest.mark.parametrize("text, speed", [("NaN", 1.5), ("Infinity", 8.0), ("-Infinity", 0.1), ("1e400", 8.0)])
def test_non_finite_numbers_fall_back(store, text, speed):
    store.path.parent.mkdir(parents=True)
    store.path.write_text(f'{{"speed_bps": {text}, "reverse_speed": {text}, "turbo_factor": {text}, "font_size": {text}}}')
    prefs = store.load()
    assert prefs.speed_bps == speed
    assert (prefs.reverse_speed, prefs.turbo_factor, prefs.font_size) == (1.0, 2.0, 14)
    for key in ("speed_bps", "reverse_speed", "turbo_factor", "font_size"):
        assert key in store.notice
    assert all(math.isfinite(v) for v in json.loads(json.dumps(prefs.model_dump())).values() if isinstance(v, float))


def test_preferences_built_in_code_are_strict():
    with pytest.raises(ValidationError):
        Preferences(font_size="big")
    with pytest.raises(ValidationError):
        Preferences().updated(preset="joystick")
    with pytest.raises(ValidationError):
        Preferences().speed_bps = 3.0  # frozen: the owner replaces its preferences, nobody shares a mutable copy
    prefs = Preferences().updated(speed_bps=2, preset="eye-tracker")
    assert prefs.speed_bps == 2.0 and prefs.preset == "eye-tracker" and Preferences().preset == "mouse"


def test_the_controller_values_come_from_the_preferences():
    assert Preferences().controller_config() == ControllerConfig()  # one set of defaults
    prefs = Preferences().updated(speed_bps=3.0, reverse_speed=0.5, auto_speed=False, preset="head-mouse",
                                  turbo_factor=4.0)
    # control mode follows the preset (on for the head mouse) until the user chooses
    assert prefs.controller_config() == ControllerConfig(3.0, 0.5, False, "head-mouse", 4.0, control_mode=True)
    assert not prefs.updated(control_mode=False).controller_config().control_mode
    assert Preferences().updated(control_mode=True).controller_config().control_mode
