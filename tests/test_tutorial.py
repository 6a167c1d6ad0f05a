"""The first-run tutorial: steering explained per input, practice phrases with the target path, a suggested
speed, and nothing written in it learned (PPM counts and RNN weights unchanged) or journaled; for a switch input,
its mode explained press by press and the practice written with switches."""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import socket

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QPushButton

from dasher_rnn.input.registry import INPUTS
from dasher_rnn.input.switch import SwitchConfig
from dasher_rnn.journal import Journal
from dasher_rnn.settings import SettingsStore
from dasher_rnn.ui.tutorial import INTRO_PAGE, PRACTICE_PAGE, RESULT_PAGE, TutorialDialog, steering_help
from dasher_rnn.zoom.controller import MessageStats
from dasher_rnn.zoom.geometry import ORIGIN_Y
from dasher_rnn.zoom.model import ZoomModel
from dasher_rnn.zoom.practice import on_course, suggest_speed, target_path
from dasher_rnn.zoom.simulate import REVERSE_X, target_pointer, wait_for_answers
from dasher_rnn.zoom.switch_user import SwitchUser, SwitchUserConfig
from tests.conftest import writer_source
from tests.test_switch_window import KeyedSwitches, write
from tests.test_ui import DT, open_window, ppm_source, settings_path  # noqa: F401 -- the fixture


def practise(dialog: TutorialDialog, frames: int = 4000) -> None:
    """Steer the tutorial's canvas at its current phrase, as a practised user would, until it is written."""
    zoom, view = dialog.controller.zoom, dialog.view
    phrase = dialog.phrase
    for i in range(frames):
        wait_for_answers(zoom)
        view.set_pointer_override(view.viewport().to_screen(*target_pointer(zoom, zoom.context + phrase)))
        dialog.tick(DT)
        if i % 50 == 0:
            QApplication.processEvents()
        if dialog.scores[dialog.index] is not None:
            return
    raise AssertionError(f"did not write {phrase!r}: {zoom.output!r}")


def open_tutorial(qtbot, window) -> TutorialDialog:
    dialog = window.open_tutorial(start_timer=False)
    qtbot.addWidget(dialog)
    assert dialog.pages.currentIndex() == INTRO_PAGE
    return dialog


def test_steering_is_explained_for_each_input():
    texts = {name: steering_help(name) for name in ("mouse", "eye-tracker", "head-mouse")}
    assert "Click" in texts["mouse"] and "the ring" not in texts["mouse"]
    assert "Look at" in texts["eye-tracker"] and "1 s, until the ring" in texts["eye-tracker"]
    assert "head" in texts["head-mouse"] and "1.5 s" in texts["head-mouse"]
    for text in texts.values():
        assert "Start and stop" in text and "Back out" in text and "left of the red cross" in text


def test_the_target_path_is_the_next_box_and_empty_when_astray():
    source = ppm_source()
    zoom = ZoomModel(source)
    zoom.idle()
    path = target_path(zoom, "hello")
    assert [b.char for b in path][:2] == ["h", "e"] and path[0].index == 0 and len(path) <= 3
    assert path[0].y2 - path[0].y1 > path[1].y2 - path[1].y1  # nested: each inside the one before
    for _ in range(3000):  # steer until "h" is written: the next box is then "e"
        zoom.step(*target_pointer(zoom, "hello"), DT, 3.0)
        if zoom.output == "h":
            break
    assert target_path(zoom, "hello")[0].char == "e"
    for _ in range(3000):  # a wrong character: the right box beside it is the next
        zoom.step(*target_pointer(zoom, "hx"), DT, 3.0)
        if zoom.output == "hx":
            break
    assert not on_course(zoom, "hello") and target_path(zoom, "hello")[0].char == "e"
    for _ in range(3000):  # gone further astray, past the root: no path, back out first
        zoom.step(*target_pointer(zoom, "hxyz"), DT, 3.0)
        if not "hello".startswith(zoom.root_text):
            break
    assert target_path(zoom, "hello") == [] and target_pointer(zoom, "hello") == (REVERSE_X, ORIGIN_Y)
    source.close()


def test_the_speed_suggestion_follows_rate_and_corrections():
    assert suggest_speed([], 1.5) is None  # nothing finished: nothing to measure
    clean = MessageStats(characters=5, seconds=10.0, bits=14.0, corrections=0)
    faster = suggest_speed([clean], 1.5)
    assert faster.speed_bps > 1.5 and faster.bits_per_second == pytest.approx(1.4)
    assert faster.chars_per_minute == pytest.approx(30.0)
    sloppy = MessageStats(characters=5, seconds=10.0, bits=14.0, corrections=4)
    assert suggest_speed([sloppy], 1.5).speed_bps < 1.5
    hesitant = MessageStats(characters=5, seconds=20.0, bits=8.0, corrections=0)
    assert suggest_speed([hesitant], 1.5).speed_bps == 1.5
    assert suggest_speed([clean], 8.0).speed_bps == 8.0  # never beyond the range


def test_the_tutorial_teaches_the_model_nothing_and_suggests_a_speed(qtbot, settings_path, tmp_path):  # noqa: F811
    journal = Journal(tmp_path / "journal.json", interval=0.0)
    window = open_window(qtbot, journal=journal)
    writer = window.controller.writer
    ppm = writer.mixer.ppm
    counts = ppm.snapshot()["counts"].copy()
    committed = writer.status().committed
    window.writing.timer.start()  # the window's frames pause while the tutorial is open
    dialog = open_tutorial(qtbot, window)
    assert not window.writing.timer.isActive() and not window.keeper.prefs.tutorial_done

    qtbot.mouseClick(dialog.start_practice_button, Qt.MouseButton.LeftButton)  # no keyboard needed
    assert dialog.pages.currentIndex() == PRACTICE_PAGE and dialog.phrase == "hello"
    dialog.tick(DT)
    assert [b.char for b in dialog.view.path][:1] == ["h"]  # the box to steer to is shown
    assert "start" in dialog.view.hint.lower()
    qtbot.mouseClick(dialog.view, Qt.MouseButton.LeftButton)  # the mouse preset: a click starts
    assert dialog.controller.running and dialog.view.aim is not None
    practise(dialog)
    assert dialog.controller.zoom.output == "hello" and not dialog.controller.running
    assert dialog.scores[0].seconds > 0 and dialog.scores[0].bits > 0

    # nothing of it reached the Writer: PPM's counts, the message stream, the window's text and journal
    assert np.array_equal(ppm.snapshot()["counts"], counts)
    assert writer.status().committed == committed
    assert window.controller.text == "" and window.panel.toPlainText() == ""
    assert journal._text == ""

    for _ in range(int(2 / DT)):  # "well done", then the next phrase by itself
        dialog.tick(DT)
    assert dialog.index == 1 and dialog.controller.zoom.output == ""
    dialog.skip_phrase()
    dialog.skip_phrase()
    assert dialog.pages.currentIndex() == RESULT_PAGE
    s = dialog.suggestion
    assert s is not None and s.phrases == 1 and s.bits_per_second > 0
    if s.speed_bps != s.current_bps:  # a new speed is offered beside the old one
        assert f"{s.speed_bps:.1f} bits/s" in dialog.use_button.text() and not dialog.use_button.isHidden()
        qtbot.mouseClick(dialog.use_button, Qt.MouseButton.LeftButton)
    else:  # the same speed: one button to start writing
        assert dialog.use_button.isHidden() and dialog.keep_button.text() == "Start writing"
        qtbot.mouseClick(dialog.keep_button, Qt.MouseButton.LeftButton)
    assert window.tutorial is None and window.writing.timer.isActive()
    assert window.controller.speed_bps == pytest.approx(s.speed_bps)
    assert window.keeper.prefs.speed_bps == pytest.approx(s.speed_bps)
    assert window.keeper.prefs.tutorial_done
    window.keeper.save()
    assert SettingsStore().load().tutorial_done

    # the same phrase written in the window itself is learned (so the check above can fail)
    window.writing.timer.stop()
    window.writing.toggle_running()
    zoom = window.controller.zoom
    for _ in range(4000):
        window.view.set_pointer_override(window.view.viewport().to_screen(*target_pointer(zoom, "hello")))
        window.writing.tick(DT)
        if zoom.output == "hello":
            break
    window.messages.new_message()
    assert not np.array_equal(ppm.snapshot()["counts"], counts)


def test_a_tutorial_phrase_leaves_the_rnn_weights_unchanged(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot, writer_source("rnn"), speed_bps=3.0)
    writer = window.controller.writer
    assert writer.status().adapting
    before, _ = writer.session.snapshot().result(60)
    dialog = open_tutorial(qtbot, window)
    dialog.phrases = ("hi there",)
    dialog.start_practice()
    dialog.toggle_running()
    practise(dialog)
    writer.flush()
    after, _ = writer.session.snapshot().result(60)
    assert before.keys() == after.keys()
    assert all(bool((before[k] == after[k]).all()) for k in before)
    status = writer.status()
    assert status.updates == 0 and status.committed == 0 and status.adapting  # adapting as before
    dialog.reject()
    assert window.tutorial is None


def test_skipping_the_tutorial_remembers_it_and_help_opens_it_again(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot)
    assert not window.keeper.prefs.tutorial_done
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    assert window.tutorial_action in help_menu.actions()
    dialog = open_tutorial(qtbot, window)
    skip = next(b for b in dialog.findChildren(QPushButton) if b.text() == "Skip the tutorial")
    assert skip.minimumHeight() >= 56 or skip.sizeHint().height() >= 56  # large, for gaze and dwell
    qtbot.mouseClick(skip, Qt.MouseButton.LeftButton)
    assert window.tutorial is None and window.keeper.prefs.tutorial_done
    window.tutorial_action.trigger()
    assert window.tutorial is not None and window.tutorial.timer.isActive()  # its frames run
    window.tutorial.reject()


def test_the_tutorial_explains_the_chosen_input(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot, preset="head-mouse")
    dialog = open_tutorial(qtbot, window)
    assert "head" in dialog.help_label.text() and dialog.input_buttons["head-mouse"].isChecked()
    dialog.input_buttons["eye-tracker"].click()
    assert "Look at" in dialog.help_label.text() and not dialog.input_buttons["head-mouse"].isChecked()
    dialog.start_practice()
    dialog.tick(DT)
    assert "red cross" in dialog.view.hint  # dwell to start, as the preset says
    dialog.reject()


def test_the_app_opens_the_tutorial_on_the_first_start_only(qapp, tmp_path, monkeypatch):
    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.ui import app as app_module
    from dasher_rnn.ui.window import MainWindow

    monkeypatch.setenv("DASHER_RNN_JOURNAL", str(tmp_path / "journal.json"))
    monkeypatch.setattr(app_module, "build_writer", lambda config: build_writer(WriterConfig(model="uniform")))
    seen = []

    def exec_once(self) -> int:
        QApplication.processEvents()
        window = next(w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible())
        seen.append(window.tutorial is not None)
        if window.tutorial is not None:
            window.tutorial.reject()  # skipped: remembered as done
        window.close()
        return 0

    monkeypatch.setattr(QApplication, "exec", exec_once)
    settings = tmp_path / "settings.json"
    assert app_module.run_app("uniform", settings_path=settings) == 0
    assert app_module.run_app("uniform", settings_path=settings) == 0
    assert seen == [True, False] and SettingsStore(settings).load().tutorial_done


def test_with_direct_output_the_tutorial_never_takes_the_focus_either(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot)
    window.output._set_window_flags(True)  # as direct output sets them: keys go to the other program
    dialog = open_tutorial(qtbot, window)
    assert dialog.windowFlags() & Qt.WindowType.WindowDoesNotAcceptFocus
    assert dialog.testAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
    assert not dialog.isModal() and not window.view.isEnabled()  # Qt would give a modal one the focus
    dialog.reject()
    assert window.view.isEnabled()


def test_closing_the_window_closes_the_tutorial(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot)
    dialog = open_tutorial(qtbot, window)
    window.close()  # e.g. SIGTERM: the application must not stay up for the dialog
    assert not dialog.isVisible() and dialog._closed
    assert window.open_tutorial() is None  # too late: a closed window opens nothing


# -- switch users -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["one-button", "two-button", "scanning", "step-scan"])
def test_each_switch_mode_is_explained_press_by_press(mode):
    text = steering_help("switch", mode, SwitchConfig(scan_s=1.5, multi_press_s=0.8, long_press_s=1.2))
    assert INPUTS[mode].label.lower() in text and "Back out" in text and "Stop" in text and "control box" in text
    if mode in ("one-button", "two-button"):
        assert "twice quickly (within 0.8 s)" in text and "hold it down for 1.2 s" in text  # how to back out
        assert "Press once to stop backing out" in text
    if mode == "scanning":
        assert "1.5 s each" in text and "whole view" in text and "2 rounds without a press" in text
    if mode in ("two-button", "step-scan"):
        assert "Space" in text and "Enter" in text  # which switch does what
    assert steering_help("mouse", mode) == steering_help("mouse")  # the other inputs' buttons explain those
    overview = steering_help("switch")  # no switch input chosen: the four ways, and where to choose one
    assert all(INPUTS[m].label in overview for m in ("one-button", "two-button", "scanning", "step-scan"))


def tutorial_user(dialog: TutorialDialog, seed: int = 0):
    """The simulated switch user pressing Space and Enter in the tutorial, whose frames are its ticks."""
    keys = KeyedSwitches(dialog.controller, dialog, dialog.tick)
    return SwitchUser(keys, SwitchUserConfig(seed=seed)), keys  # type: ignore[arg-type]  # duck-typed


@pytest.mark.parametrize("mode", ["one-button", "scanning"])
def test_a_switch_user_practises_with_switches(qtbot, settings_path, mode):  # noqa: F811
    window = open_window(qtbot, input=mode, speed_bps=1.5)
    writer = window.controller.writer
    counts = writer.mixer.ppm.snapshot()["counts"].copy()
    dialog = open_tutorial(qtbot, window)
    assert dialog.switch_mode == mode and dialog.input_buttons["switch"].isChecked()
    assert INPUTS[mode].label.lower() in dialog.help_label.text()  # the mode chosen, explained
    dialog.start_practice()
    assert dialog.controller.switch is not None and dialog.controller.switch.name == mode
    dialog.tick(DT)
    assert dialog.view.hint == "Press a switch to start" and dialog.view.switch is not None
    person, keys = tutorial_user(dialog)
    write(person, keys, dialog.phrase)
    # the window's switches waited: the modal tutorial has the keys (even where it is not the active window)
    assert not window.controller.running and window.controller.switch.presses == 0
    assert dialog.scores[0] is not None and dialog.controller.zoom.output == "hello" and not dialog.controller.running
    assert dialog.view.aim is None and dialog.view.switch.mode == mode  # its marks or boxes; no point to aim at
    assert keys.sent and {button for button, _down in keys.sent} == {0}  # one switch: Space
    assert np.array_equal(writer.mixer.ppm.snapshot()["counts"], counts)  # nothing learned
    dialog.show_result()
    if mode == "scanning":  # the speed does not pace scanning: nothing to suggest
        assert dialog.use_button.isHidden() and "scan time" in dialog.result_label.text()
    else:
        assert "Suggested speed" in dialog.result_label.text()
    dialog.reject()
    assert window.tutorial is None
    window.activateWindow()  # as the window manager makes it again
    assert QTest.qWaitForWindowActive(window)
    QTest.keyClick(window, Qt.Key.Key_Space)  # the window's own switches again
    assert window.controller.running and window.controller.switch is not None


def test_the_windows_switch_socket_is_lent_to_the_practice(qtbot, settings_path):  # noqa: F811
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    window = open_window(qtbot, input="two-button", switch_source="socket", switch_port=port)
    source = window.input.switches.source
    assert source is not None and source.port == port
    dialog = open_tutorial(qtbot, window)
    assert dialog.switch_source is source  # the window's, not a second socket on the same port
    dialog.start_practice()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"press 2", ("127.0.0.1", port))
        qtbot.waitUntil(lambda: source.received > 0, timeout=5000)
    dialog.tick(DT)
    assert dialog.controller.running and dialog.controller.switch.presses == 1  # the socket's press started it
    assert not window.controller.running
    dialog.reject()
    assert window.input.switches.source is source  # still the window's, open
