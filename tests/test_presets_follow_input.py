"""Issue 46: one input setting sets up everything. `dasher-rnn app --input NAME` (and the Input box) brings that
input's preset (dwell start, the control box, full screen for the eye tracker; the control box for switches) unless
the user chose another preset by hand for that input, which is kept; `--preset NAME` chooses one by hand."""

from __future__ import annotations

import json
import socket

import pytest
from PySide6.QtWidgets import QApplication

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.input.presets import PRESETS
from dasher_rnn.input.registry import INPUTS
from dasher_rnn.settings import Preferences, SettingsStore


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_app(monkeypatch, tmp_path, *args: str) -> dict[str, object]:
    """`dasher-rnn app ARGS` with the settings at tmp_path/settings.json: what the window showed once started (the
    tutorial of a first start opened), then closed as a user closes it."""
    from dasher_rnn.cli import main
    from dasher_rnn.ui import app as app_module
    from dasher_rnn.ui.window import MainWindow

    monkeypatch.setenv("DASHER_RNN_JOURNAL", str(tmp_path / "journal.json"))
    monkeypatch.setattr("dasher_rnn.ui.preflight.app_problem", lambda: None)
    monkeypatch.setattr(app_module, "build_writer", lambda config: build_writer(WriterConfig(model="uniform")))
    seen: dict[str, object] = {}

    def exec_once(self) -> int:
        window = next(w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible())
        QApplication.processEvents()  # the first start's tutorial opens
        c = window.controller
        tutorial = window.tutorial
        seen.update(preset=c.preset.name, box=window.input.preset_box.currentData(), control=c.control_mode,
                    dwell=c.preset.dwell_start, click=c.preset.start_on_click, speed=c.speed_bps,
                    full_screen=window.isFullScreen(), input=window.input.name,
                    tutorial_preset=None if tutorial is None else tutorial.chosen)
        window.close()
        return 0

    monkeypatch.setattr(QApplication, "exec", exec_once)
    assert main(["app", "--model", "uniform", "--settings", str(tmp_path / "settings.json"), *args]) == 0
    return seen


def saved(tmp_path) -> dict[str, object]:
    return json.loads((tmp_path / "settings.json").read_text())


def test_gaze_udp_with_new_settings_brings_the_eye_tracker_preset(qapp, tmp_path, monkeypatch):
    seen = start_app(monkeypatch, tmp_path, "--input", "gaze-udp", "--gaze-port", str(free_udp_port()))
    eye = PRESETS["eye-tracker"]
    assert seen["input"] == "gaze-udp" and seen["preset"] == seen["box"] == "eye-tracker"
    assert seen["dwell"] and not seen["click"] and seen["control"] and seen["full_screen"]
    assert seen["speed"] == pytest.approx(eye.speed_bps)
    assert seen["tutorial_preset"] == "eye-tracker"  # "Writing with an eye tracker", not the mouse's
    prefs = saved(tmp_path)
    assert (prefs["preset"], prefs["input"], prefs["preset_chosen_for"]) == ("eye-tracker", "gaze-udp", None)


@pytest.mark.parametrize("name", ["one-button", "scanning"])
def test_a_switch_input_with_new_settings_brings_the_switch_preset_and_its_control_box(qapp, tmp_path, monkeypatch,
                                                                                        name):
    seen = start_app(monkeypatch, tmp_path, "--input", name)
    assert seen["input"] == name and seen["preset"] == "switch" and seen["control"]  # Stop, Speak, Save reachable
    assert not seen["click"] and not seen["full_screen"] and seen["tutorial_preset"] == "switch"
    assert saved(tmp_path)["preset"] == "switch"


@pytest.mark.parametrize("name", list(INPUTS))
def test_every_input_brings_its_own_preset_unless_one_was_chosen_by_hand_for_it(name):
    new = Preferences().updated(input=name)
    assert new.preset_for_input() == INPUTS[name].preset
    by_hand = new.with_preset("head-mouse")
    assert by_hand.preset_chosen_for == name and by_hand.preset_for_input() == "head-mouse"
    other = next(n for n, kind in INPUTS.items() if n != name and kind.family != "mouse")
    assert by_hand.updated(input=other).preset_for_input() == INPUTS[other].preset  # chosen for another input
    if INPUTS[name].family != "mouse":
        assert new.updated(preset="head-mouse").preset_for_input() == INPUTS[name].preset  # not chosen: replaced


def test_the_mouse_input_keeps_a_pointer_preset_but_not_the_switches():
    """The system pointer may be moved by a head mouse or an eye tracker: the preset says which."""
    for name in ("mouse", "eye-tracker", "head-mouse"):
        assert Preferences().updated(preset=name).preset_for_input() == name
    assert Preferences().updated(preset="switch").preset_for_input() == "mouse"


def test_a_preset_chosen_by_hand_is_kept_at_the_next_start_and_another_input_brings_its_own(qapp, tmp_path,
                                                                                            monkeypatch):
    port = str(free_udp_port())
    start_app(monkeypatch, tmp_path, "--input", "gaze-udp", "--gaze-port", port)
    seen = start_app(monkeypatch, tmp_path, "--preset", "head-mouse")  # chosen by hand for the gaze
    assert (seen["input"], seen["preset"], seen["box"]) == ("gaze-udp", "head-mouse", "head-mouse")
    assert seen["speed"] == pytest.approx(PRESETS["head-mouse"].speed_bps)  # it brings its speeds
    assert saved(tmp_path)["preset_chosen_for"] == "gaze-udp"
    seen = start_app(monkeypatch, tmp_path)
    assert seen["preset"] == "head-mouse"  # kept
    seen = start_app(monkeypatch, tmp_path, "--input", "two-button")
    assert seen["preset"] == "switch" and seen["control"]


def test_settings_from_before_keep_a_mouse_users_gaze_preset_and_repair_a_gaze_input_with_the_mouse_preset(
        qapp, tmp_path, monkeypatch):
    """A system-pointer eye tracker (the mouse input with the eye-tracker preset) was the user's choice; the gaze
    input saved with the mouse preset (the bug) was not."""
    store = SettingsStore(tmp_path / "settings.json")
    (tmp_path / "settings.json").write_text(json.dumps({"input": "mouse", "preset": "eye-tracker",
                                                        "tutorial_done": True}))
    assert store.load().preset_for_input() == "eye-tracker"
    (tmp_path / "settings.json").write_text(json.dumps({"input": "gaze-udp", "preset": "mouse",
                                                        "gaze_port": free_udp_port(), "tutorial_done": True}))
    assert store.load().preset_for_input() == "eye-tracker"
    assert start_app(monkeypatch, tmp_path)["preset"] == "eye-tracker"


def test_the_input_box_brings_the_inputs_preset_and_a_hand_choice_stays_with_its_input(qapp, qtbot, tmp_path):
    from dasher_rnn.ui.window import MainWindow
    from dasher_rnn.zoom.controller import WritingController
    from tests.conftest import writer_source

    store = SettingsStore(tmp_path / "settings.json")
    prefs = store.load().updated(tutorial_done=True)
    window = MainWindow(WritingController(writer_source("uniform"), prefs.controller_config()), store, prefs,
                        start_timer=False)
    qtbot.addWidget(window)
    part = window.input
    part.input_box.setCurrentIndex(part.input_box.findData("one-button"))
    assert window.controller.preset.name == "switch" and window.controller.control_mode
    part.preset_box.setCurrentIndex(part.preset_box.findData("mouse"))  # by hand, for the switch
    part.input_box.setCurrentIndex(part.input_box.findData("mouse"))
    assert window.controller.preset.name == "mouse"
    part.preset_box.setCurrentIndex(part.preset_box.findData("eye-tracker"))  # a tracker moving the system pointer
    part.input_box.setCurrentIndex(part.input_box.findData("scanning"))
    assert window.controller.preset.name == "switch"
    part.input_box.setCurrentIndex(part.input_box.findData("mouse"))
    assert window.controller.preset.name == "mouse"  # the hand choice went when another input brought its own
