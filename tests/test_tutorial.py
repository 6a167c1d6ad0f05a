"""The first-run tutorial: steering explained per input, practice phrases with the target path, a suggested
speed, and nothing written in it learned (PPM counts and RNN weights unchanged) or journaled; for a switch input,
its mode explained press by press and the practice written with switches; for the eye tracker and the head mouse,
practice started and stopped by dwell (the ring drawn), hints in their words, and the control-box step; done (no
longer opened by itself) only once a phrase was written or it was skipped."""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import socket
import time

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QPushButton

from dasher_rnn.input.gaze import GazeSource
from dasher_rnn.input.registry import INPUTS
from dasher_rnn.journal import Journal
from dasher_rnn.settings import SettingsStore
from dasher_rnn.ui.tutorial import INTRO_PAGE, PRACTICE_PAGE, RESULT_PAGE, TutorialDialog, steering_help
from dasher_rnn.zoom.control import Action
from dasher_rnn.zoom.figures import MessageStats
from dasher_rnn.zoom.geometry import ORIGIN_X, ORIGIN_Y
from dasher_rnn.zoom.model import ZoomModel
from dasher_rnn.zoom.practice import on_course, suggest_speed, target_path
from dasher_rnn.zoom.simulate import REVERSE_X, target_pointer, wait_for_answers
from dasher_rnn.zoom.switch_user import SwitchUser, SwitchUserConfig
from dasher_rnn.zoom.switching import SwitchConfig
from tests.conftest import writer_source
from tests.test_switch_window import KeyedSwitches, write
from tests.test_ui import DT, open_window, ppm_source


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
        if window.tutorial is not None and len(seen) > 1:
            window.tutorial.skip_tutorial()  # skipped: remembered as done
        window.close()  # the first time with the tutorial open: only opened and closed, as a carer setting up does
        return 0

    monkeypatch.setattr(QApplication, "exec", exec_once)
    settings = tmp_path / "settings.json"
    assert app_module.run_app("uniform", settings_path=settings) == 0
    assert not SettingsStore(settings).load().tutorial_done
    assert app_module.run_app("uniform", settings_path=settings) == 0
    assert app_module.run_app("uniform", settings_path=settings) == 0
    assert seen == [True, True, False] and SettingsStore(settings).load().tutorial_done


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


# -- the eye tracker and the head mouse ---------------------------------------------------------------------------------
class ViewGaze(GazeSource):
    """Gaze in the view's own space (as Dasher's socket input sends it), put wherever the test looks."""

    space = "view"

    def __init__(self) -> None:
        super().__init__(stale_after=600.0)  # no real time: a sample stays fresh between the test's frames

    def look(self, view, x: float, y: float) -> None:
        """Look at Dasher coordinates (x, y) of ``view``."""
        sx, sy = view.viewport().to_screen(x, y)
        self._push(sx / view.width(), sy / view.height(), time.monotonic())


class MousePointer:
    """The mouse (no gaze source), moved by the test: the view's pointer override."""

    def look(self, view, x: float, y: float) -> None:
        view.set_pointer_override(view.viewport().to_screen(x, y))


class FakeSpeaker:
    def __init__(self, available: bool = True) -> None:
        self.available, self.reason, self.said = available, "" if available else "No voice to speak with.", []

    def speak(self, text: str) -> bool:
        self.said.append(text)
        return True

    def stop(self) -> None:
        pass


def shown(dialog: TutorialDialog) -> list[str]:
    """Every text the practice shows: the hint on the canvas, the task above it, how to start and stop."""
    return [dialog.view.hint, dialog.phrase_label.text(), dialog.how_label.text()]


def gaze_user(dialog: TutorialDialog, pointer, until, frames: int = 6000, seen: set[str] | None = None,
              goal=None) -> None:
    """A user doing what the tutorial asks with a pointer that cannot click: resting on the red cross while writing is
    stopped, then looking where a practised user aims for what it asks (``goal``: something else, to go astray)
    until ``until()``; ``seen`` collects what was shown."""
    c = dialog.controller
    for i in range(frames):
        wait_for_answers(c.zoom)
        if not c.running:
            pointer.look(dialog.view, ORIGIN_X, ORIGIN_Y)
        else:
            pointer.look(dialog.view, *target_pointer(c.zoom, *(goal or dialog.goal())))
        dialog.tick(DT)
        if seen is not None:
            seen.update(shown(dialog))
        if i % 50 == 0:
            QApplication.processEvents()
        if until():
            return
    raise AssertionError(f"gave up at {c.zoom.output!r}: {dialog.view.hint!r}")


def dwell_until(dialog: TutorialDialog, pointer, running: bool) -> tuple[int, list[float]]:
    """Rest on the red cross until writing is ``running`` (or not): the frames it took, the ring's fill each frame."""
    c, ring = dialog.controller, []
    while c.running != running:
        pointer.look(dialog.view, ORIGIN_X, ORIGIN_Y)
        dialog.tick(DT)
        ring.append(dialog.view.dwell_progress)
        assert len(ring) < 3 / DT, "the dwell never fired"
    return len(ring), ring


def test_the_gaze_practice_starts_and_stops_by_dwell_with_its_ring(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot, preset="eye-tracker", rest_stop_seconds=0.0)
    gaze = window.input.gaze = ViewGaze()  # the window's gaze source: the practice's pointer
    dialog = open_tutorial(qtbot, window)
    assert dialog.gaze is gaze and not dialog.view.use_mouse and dialog.input_buttons["eye-tracker"].isChecked()
    dialog.start_practice()
    c = dialog.controller
    assert c.preset.name == "eye-tracker" and c.preset.dwell_start and c.control_mode
    dialog.tick(DT)
    assert dialog.view.hint == "Rest your eyes on the red cross until the ring fills, to start"
    qtbot.mouseClick(dialog.view, Qt.MouseButton.LeftButton)  # a click is no way to start here
    assert not c.running

    frames, ring = dwell_until(dialog, gaze, running=True)  # the same rule as the window: the preset's 1 s
    assert c.preset.dwell_seconds <= frames * DT <= c.preset.dwell_seconds + 3 * DT
    assert all(a < b for a, b in zip(ring[:-2], ring[1:-1], strict=True)) and ring[-2] > 0.9  # the ring filled
    dialog.view.set_frame(dialog.view.frame, 0.5)
    half = dialog.view.grab().toImage()
    dialog.view.set_frame(dialog.view.frame, 0.0)
    assert half != dialog.view.grab().toImage()  # and it is drawn round the cross

    gaze_user(dialog, gaze, lambda: len(c.zoom.output) >= 2)  # steering with the gaze writes
    assert c.running and not window.controller.running  # the window's frames wait
    frames, _ = dwell_until(dialog, gaze, running=False)  # rest on the cross again: stopped
    assert c.preset.dwell_seconds <= frames * DT <= c.preset.dwell_seconds + 3 * DT
    assert "until the ring fills, to start" in dialog.view.hint
    gaze_user(dialog, gaze, lambda: dialog.scores[0] is not None)  # started again by dwell, and written
    assert c.zoom.output == "hello" and not c.running and dialog.completed
    dialog.reject()
    assert window.keeper.prefs.tutorial_done  # a phrase was written


@pytest.mark.parametrize("window_preset, picked", [("mouse", "eye-tracker"), ("head-mouse", "head-mouse")])
def test_the_hints_never_say_click_for_the_gaze_presets(qtbot, settings_path, window_preset, picked):  # noqa: F811
    """The eye tracker picked on the first page over the mouse preset (the issue's case: a tracker that moves the
    mouse pointer), and the head mouse as the window's preset: the practice starts by dwell and says so."""
    window = open_window(qtbot, preset=window_preset, rest_stop_seconds=0.0)
    window.speech.speaker = FakeSpeaker()
    dialog = open_tutorial(qtbot, window)
    qtbot.mouseClick(dialog.input_buttons[picked], Qt.MouseButton.LeftButton)
    dialog.phrases = ("hello",)
    dialog.start_practice()
    c, pointer, seen = dialog.controller, MousePointer(), set()
    assert c.preset.name == picked and c.preset.dwell_start and c.control_mode
    assert window.controller.preset.name == window_preset  # the window's settings are its own
    gaze_user(dialog, pointer, lambda: c.zoom.output == "he", seen=seen)
    gaze_user(dialog, pointer, lambda: not "hello".startswith(c.zoom.root_text), seen=seen, goal=("hxyz", None))
    gaze_user(dialog, pointer, lambda: dialog.scores[0] is not None, seen=seen)  # backed out, and written
    for _ in range(int(2 / DT)):
        dialog.tick(DT)
        seen.update(shown(dialog))
    assert dialog.control_step
    gaze_user(dialog, pointer, lambda: dialog.control_task is None, seen=seen)
    text = " ".join(seen)
    assert "click" not in text.lower()
    rest = "Rest your eyes" if picked == "eye-tracker" else "Hold the pointer"
    back = "look left" if picked == "eye-tracker" else "point your head left"
    assert f"{rest} on the red cross until the ring fills, to start" in seen
    assert f"Not this way: {back} of the red cross to back out" in seen
    assert "Not this one: steer into the green box beside it" in seen and "Well done: now the control box" in seen
    dialog.reject()


@pytest.mark.parametrize("voice", [True, False])
def test_the_control_box_step_sees_delete_word_speak_and_stop(qtbot, settings_path, voice):  # noqa: F811
    window = open_window(qtbot, preset="eye-tracker", rest_stop_seconds=0.0)
    speaker = window.speech.speaker = FakeSpeaker(voice)  # the window's voice, which the tutorial speaks with
    gaze = window.input.gaze = ViewGaze()
    dialog = open_tutorial(qtbot, window)
    dialog.phrases = ("hello", "see you soon")
    dialog.start_practice()
    c = dialog.controller
    dialog.skip_phrase()
    assert not dialog.control_step and dialog.phrase == "see you soon"
    dialog.skip_phrase()  # after the last phrase: the control box, with a message to work on
    assert dialog.control_step and c.zoom.output == "see you soon" and c.control_mode and not c.running
    expected = [Action.DELETE_WORD, Action.SPEAK, Action.STOP] if voice else [Action.DELETE_WORD, Action.STOP]
    assert dialog.control_tasks == expected and dialog.control_task == Action.DELETE_WORD
    assert "1 of" in dialog.phrase_label.text() and "<b>soon</b>" in dialog.phrase_label.text()
    assert "⌫ Word" in dialog.phrase_label.text() and dialog.skip_button.text() == "Skip this step"
    assert [b.char for b in dialog.view.path] == ["Control", "⌫ Word"]  # the way there is drawn
    assert ("Speak is left out: No voice to speak with." in dialog.how_label.text()) is not voice
    gaze_user(dialog, gaze, lambda: c.running)  # started by dwell
    assert dialog.view.hint == "Steer into the grey Control box at the bottom, then into ⌫ Word"

    gaze_user(dialog, gaze, lambda: dialog.control_task != Action.DELETE_WORD)
    assert c.zoom.output == "see you " and c.running  # the last word went; writing goes on
    if voice:
        assert dialog.control_task == Action.SPEAK and "Speak" in dialog.view.hint
        gaze_user(dialog, gaze, lambda: dialog.control_task != Action.SPEAK)
        assert speaker.said == ["see you"]
    assert dialog.control_task == Action.STOP and "into Stop" in dialog.view.hint
    gaze_user(dialog, gaze, lambda: dialog.control_task is None)
    assert [a for a in dialog.control_seen if a in expected] == expected  # each seen in a frame's action
    assert not c.running and c.stopped_because == "control" and speaker.said == (["see you"] if voice else [])
    assert dialog.view.hint == "Well done: that was the control box"
    for _ in range(int(2 / DT)):
        dialog.tick(DT)
    assert dialog.pages.currentIndex() == RESULT_PAGE
    assert not dialog.completed  # no phrase was written: the control box alone does not finish the tutorial
    dialog.reject()
    assert not window.keeper.prefs.tutorial_done


def test_the_tutorial_is_done_only_once_a_phrase_was_written_or_it_was_skipped(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot)
    dialog = open_tutorial(qtbot, window)
    dialog.reject()  # only opened and closed (Escape, or a carer closing it while setting up)
    assert window.tutorial is None and not window.keeper.prefs.tutorial_done
    dialog = open_tutorial(qtbot, window)
    dialog.start_practice()
    dialog.show_result()  # ended without writing a phrase
    assert dialog.keep_button.text() == "Start writing"
    qtbot.mouseClick(dialog.keep_button, Qt.MouseButton.LeftButton)
    assert window.tutorial is None and not window.keeper.prefs.tutorial_done
    window.keeper.save()
    assert not SettingsStore().load().tutorial_done  # so it opens by itself next time
    dialog = open_tutorial(qtbot, window)
    dialog.start_practice()
    dialog.toggle_running()
    practise(dialog)  # one phrase written
    assert dialog.completed
    dialog.reject()  # then closed
    assert window.keeper.prefs.tutorial_done
    window.keeper.save()
    assert SettingsStore().load().tutorial_done
