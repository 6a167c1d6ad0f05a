import json
import os
from dataclasses import asdict, replace

import pytest

from dasher_rnn import settings
from dasher_rnn.input.presets import PRESETS
from dasher_rnn.settings import Preferences, SettingsError, SettingsStore


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
    kept = list(store.path.parent.glob("settings.json.bad-*"))
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
    data = asdict(Preferences()) | {"font_size": "big", "auto_speed": 1, "input": "joystick", "gaze_port": 70000,
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
