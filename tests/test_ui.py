"""The desktop window driven as a user would: pointer into boxes, clicks, keys, gaze datagrams, text actions.

Frames are advanced by calling the window's ``tick`` with a fixed time step (the frame timer is off), so
nothing depends on this machine's speed; one test only checks that the timer does drive frames.
"""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before Qt is imported: no display needed

import importlib.util
import json
import socket

import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt, QTimer
from PySide6.QtGui import QColor, QGuiApplication, QImage, QPainter
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox, QToolBar

from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.settings import SettingsStore
from dasher_rnn.ui.paint import paint_frame
from dasher_rnn.ui.parts.writing import frame_interval_ms
from dasher_rnn.ui.speech import Speaker
from dasher_rnn.ui.text_panel import OutputPanel
from dasher_rnn.ui.window import MainWindow
from dasher_rnn.zoom.controller import AWAY_STOP_S, WritingController
from dasher_rnn.zoom.geometry import ORIGIN_X, ORIGIN_Y, Viewport
from dasher_rnn.zoom.simulate import REVERSE_X, target_pointer, wait_for_answers
from tests.conftest import make_sentences, writer_source

DT = 1 / 30
ALPHABET = load_alphabet("english")


def ppm_source():
    model = PPMModel(ALPHABET)
    model.train_text("\n".join(make_sentences(300)) + "\n")
    return writer_source("ppm", trained_ppm=model)


def open_window(qtbot, source=None, store: SettingsStore | None = None, journal=None, **prefs) -> MainWindow:
    store = store or SettingsStore()
    loaded = store.load().model_copy(update={"speed_bps": 4.0, "auto_speed": False, **prefs})  # unchecked: port 0
    window = MainWindow(WritingController(source or ppm_source(), loaded.controller_config()), store, loaded,
                        start_timer=False, journal=journal)
    qtbot.addWidget(window)  # closed (and so shut down) after the test
    window.resize(760, 700)  # inside the offscreen screen (800 x 800): pointer events off it are lost
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    assert QTest.qWaitForWindowActive(window)  # window shortcuts (Space, Ctrl+N) need an active window
    return window


def point_at(window: MainWindow, x: float, y: float) -> tuple[float, float]:
    """Put the pointer at Dasher coordinates (x, y) through the view's override; its screen position."""
    pos = window.view.viewport().to_screen(x, y)
    window.view.set_pointer_override(pos)
    return pos


def steer(window: MainWindow, target: str, frames: int = 3000, lockstep: bool = False) -> None:
    """Aim at ``target`` (the message) frame by frame until it is written."""
    zoom = window.controller.zoom
    for i in range(frames):
        if lockstep:
            wait_for_answers(zoom)
        point_at(window, *target_pointer(zoom, zoom.context + target))
        window.writing.tick(DT)
        if i % 50 == 0:
            QApplication.processEvents()  # paint now and then, as the real loop does
        if zoom.output == target:
            return
    raise AssertionError(f"did not write {target!r}: {zoom.output!r}")


def test_click_starts_and_steering_into_boxes_writes_into_the_panel(qtbot, settings_path):
    window = open_window(qtbot)
    view = window.view
    assert not window.controller.running and "click" in view.hint
    qtbot.mouseClick(view, Qt.MouseButton.LeftButton, pos=QPoint(50, 50))
    assert window.controller.running and view.hint == ""
    assert window.writing.start_action.text() == "Stop"

    # a real mouse move lands in the view's pointer and in the frame's steering
    x, y = target_pointer(window.controller.zoom, "I want")
    sx, sy = view.viewport().to_screen(max(x, 200.0), y)  # well inside the view
    QTest.mouseMove(view, QPoint(round(sx), round(sy)))
    assert view.pointer_screen == pytest.approx((round(sx), round(sy)))
    window.writing.tick(DT)
    assert window.controller.zoom.bits_total > 0

    steer(window, "I want some water.")
    assert window.panel.toPlainText() == "I want some water."
    QApplication.processEvents()
    assert view.frame is not None and view.frame.boxes


def test_backing_out_deletes_text_from_the_panel(qtbot, settings_path):
    window = open_window(qtbot)
    window.writing.toggle_running()
    steer(window, "We need")
    assert window.panel.toPlainText() == "We need"
    point_at(window, REVERSE_X, ORIGIN_Y)  # left of the crosshair
    for _ in range(600):
        window.writing.tick(DT)
        if len(window.panel.toPlainText()) < len("We need") - 2:
            break
    text = window.panel.toPlainText()
    assert len(text) < len("We need") - 2 and "We need".startswith(text)


def test_space_toggles_and_stop_freezes_the_zoom(qtbot, settings_path):
    window = open_window(qtbot)
    view = window.view
    QTest.keyClick(view, Qt.Key.Key_Space)
    assert window.controller.running
    steer(window, "Tom")
    QTest.keyClick(view, Qt.Key.Key_Space)
    assert not window.controller.running and "Space" in view.hint
    zoom = window.controller.zoom
    before = (zoom.root_lo, zoom.root_hi, zoom.bits_total, window.panel.toPlainText())
    point_at(window, 100.0, 500.0)
    for _ in range(30):
        frame = window.writing.tick(DT)
        assert frame.bits == 0
    assert (zoom.root_lo, zoom.root_hi, zoom.bits_total, window.panel.toPlainText()) == before


def test_pointer_leaving_the_view_is_none(qtbot, settings_path):
    window = open_window(qtbot)
    view = window.view
    QTest.mouseMove(view, QPoint(100, 100))
    assert view.pointer_screen is not None
    QApplication.sendEvent(view, QEvent(QEvent.Type.Leave))
    assert view.pointer_screen is None


def test_clicks_do_not_start_with_a_dwell_preset(qtbot, settings_path):
    window = open_window(qtbot)
    window.input.preset_box.setCurrentIndex(window.input.preset_box.findData("eye-tracker"))
    assert window.controller.preset.name == "eye-tracker"
    assert window.writing.speed_box.value() == pytest.approx(0.8)  # the preset brings its speed
    window.writing.tick(DT)
    assert "rest the pointer" in window.view.hint
    qtbot.mouseClick(window.view, Qt.MouseButton.LeftButton)
    assert not window.controller.running


def test_preferences_persist_in_the_settings_file(qtbot, settings_path):
    window = open_window(qtbot)
    window.writing.speed_box.setValue(3.2)
    window.looks.scheme_box.setCurrentIndex(window.looks.scheme_box.findData("high-contrast"))
    window.looks.font_box.setValue(20)
    window.writing.auto_speed_box.setChecked(True)
    window.close()
    assert settings_path.is_file()
    prefs = SettingsStore().load()
    assert (prefs.speed_bps, prefs.colour_scheme, prefs.font_size, prefs.auto_speed) == (3.2, "high-contrast", 20, True)

    store = SettingsStore(settings_path)
    loaded = store.load()
    again = MainWindow(WritingController(writer_source("uniform"), loaded.controller_config()), store, loaded,
                       start_timer=False)
    qtbot.addWidget(again)
    assert again.writing.speed_box.value() == pytest.approx(3.2)
    assert again.controller.speed_bps == pytest.approx(3.2)
    assert again.view.scheme == "high-contrast"
    assert again.looks.scheme_box.currentData() == "high-contrast"
    assert again.panel.font().pointSize() == 20


def test_the_window_updates_the_controller_and_its_preferences(qtbot, settings_path):
    window = open_window(qtbot)
    c = window.controller
    assert not hasattr(c, "prefs")  # the controller holds plain values; the window owns the preferences
    window.input.preset_box.setCurrentIndex(window.input.preset_box.findData("head-mouse"))
    head = window.controller.preset
    assert c.config == window.keeper.prefs.controller_config()
    prefs = window.keeper.prefs
    assert (prefs.preset, prefs.speed_bps, prefs.reverse_speed) == ("head-mouse", head.speed_bps, head.reverse_speed)
    window.writing.auto_speed_box.setChecked(False)
    assert not c.auto_speed_enabled and not window.keeper.prefs.auto_speed
    window.writing.speed_box.setValue(2.5)
    assert c.speed_bps == window.keeper.prefs.speed_bps == 2.5
    c.set_speed(3.5)  # as auto speed would: the preferences follow only when the window saves it at the end
    assert window.keeper.prefs.speed_bps == 2.5
    window.close()
    saved = SettingsStore().load()
    assert (saved.preset, saved.speed_bps, saved.auto_speed, saved.reverse_speed) == ("head-mouse", 2.5, False, 0.8)


def test_a_bad_settings_file_shows_a_notice(qtbot, settings_path):
    settings_path.write_text("{not json")
    window = open_window(qtbot)
    assert "corrupt" in window.status.notice


def test_gaze_datagrams_move_the_pointer(qtbot, settings_path):
    window = open_window(qtbot, input="gaze-udp", gaze_port=0)  # port 0: any free port
    assert window.input.gaze is not None and window.input.input_box.currentData() == "gaze-udp"
    assert "UDP port" in window.status.notice
    view = window.view
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(json.dumps({"x": 0.5, "y": 0.5}).encode(), ("127.0.0.1", window.input.gaze.port))
        qtbot.waitUntil(lambda: window.input.gaze.received > 0, timeout=5000)
    window.writing.tick(DT)
    geometry = (view.screen() or QGuiApplication.primaryScreen()).geometry()
    expected = view.mapFromGlobal(QPointF(geometry.x() + 0.5 * geometry.width(), geometry.y() + 0.5 * geometry.height()))
    assert view.pointer_screen == pytest.approx((expected.x(), expected.y()), abs=0.5)
    window.input.set_input("mouse")
    assert window.input.gaze is None and window.keeper.prefs.input == "mouse"


def test_a_gaze_just_off_the_canvas_is_on_its_edge_and_further_out_is_away(qtbot, settings_path):
    """A tracker's error at the canvas's edge neither stops nor starts the writing (the gaze-trust issue)."""
    window = open_window(qtbot, input="gaze-udp", gaze_port=0)
    view = window.view
    geometry = (view.screen() or QGuiApplication.primaryScreen()).geometry()
    for dy, inside in ((-0.03, True), (-0.5, False)):  # a little above the canvas's top edge, then far above
        at = view.mapToGlobal(QPoint(view.width() // 2, round(dy * view.height())))
        received = window.input.gaze.received
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for i in range(60):  # a second of samples: the smoothing settles there
                sample = {"x": (at.x() - geometry.x()) / geometry.width(),
                          "y": (at.y() - geometry.y()) / geometry.height(), "t": 100.0 * (dy < -0.1) + i / 60}
                sock.sendto(json.dumps(sample).encode(), ("127.0.0.1", window.input.gaze.port))
        qtbot.waitUntil(lambda wanted=received + 60: window.input.gaze.received >= wanted, timeout=5000)
        pointer, caught = window.input.pointer_screen()
        assert caught is inside
        if inside:
            assert pointer[1] == 0.0  # on the top edge


def test_bad_gaze_datagrams_reach_the_status_bar_and_gaze_goes_on(qtbot, settings_path):
    """Issue 21: a 401-digit integer killed the receiver; the app stayed paused and showed nothing."""
    window = open_window(qtbot, input="gaze-udp", gaze_port=0)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b'{"x": ' + b"1" * 401 + b', "y": 0.5}', ("127.0.0.1", window.input.gaze.port))
        sock.sendto(b"0.5 0.5", ("127.0.0.1", window.input.gaze.port))
        qtbot.waitUntil(lambda: window.input.gaze.received > 0 and window.input.gaze.rejected > 0, timeout=5000)
    window.update_status()
    assert "Gaze over UDP: 1 bad datagram ignored" in window.status.notice and "too large" in window.status.notice
    window.writing.tick(DT)
    assert window.view.pointer_screen is not None
    window.input.set_input("mouse")
    assert "bad datagram" not in window.status.notice


def test_dasher_socket_lines_move_the_pointer_in_the_writing_area(qtbot, settings_path):
    window = open_window(qtbot, input="dasher-socket", socket_port=0, socket_x_label="XCoordinate",
                         socket_y_label="YCoordinate", socket_x_min=-100.0, socket_x_max=100.0, socket_y_min=512.0,
                         socket_y_max=0.0)
    assert window.input.gaze is not None and window.input.input_box.currentData() == "dasher-socket"
    assert "Listening for Dasher socket input on UDP port" in window.status.notice
    view = window.view
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"XCoordinate 50\nYCoordinate 128\nOtherData 12s\nYCoordinate nan\n",
                    ("127.0.0.1", window.input.gaze.port))
        qtbot.waitUntil(lambda: window.input.gaze.received > 0, timeout=5000)
    window.writing.tick(DT)
    # x: 50 in -100..100 is three quarters across; y: 128 in 512..0 (inverted) is three quarters down
    assert view.pointer_screen == pytest.approx((0.75 * view.width(), 0.75 * view.height()))
    window.update_status()
    assert "Dasher socket input: 1 bad line ignored (last: value is NaN" in window.status.notice
    window.input.set_input("mouse")
    assert window.input.gaze is None and "Dasher socket" not in window.status.notice


def test_unusable_socket_ranges_fall_back_to_the_mouse_with_a_message(qtbot, settings_path):
    window = open_window(qtbot, input="dasher-socket", socket_port=0, socket_x_min=0.5, socket_x_max=0.5)
    assert window.input.gaze is None and window.input.input_box.currentData() == "mouse"
    assert "Dasher socket" in window.status.notice and "must not be empty" in window.status.notice


def test_a_missing_eye_tracker_falls_back_to_the_mouse(qtbot, settings_path):
    if importlib.util.find_spec("tobii_research") is not None:
        pytest.skip("tobii-research is installed")
    window = open_window(qtbot)
    window.input.input_box.setCurrentIndex(window.input.input_box.findData("tobii"))
    assert window.input.gaze is None and window.input.input_box.currentData() == "mouse"
    assert "Tobii" in window.status.notice and "using the mouse" in window.status.notice


def test_text_actions(qtbot, settings_path, tmp_path, monkeypatch):
    window = open_window(qtbot)
    window.writing.toggle_running()
    steer(window, "I see")
    window.messages.copy_all()
    assert QGuiApplication.clipboard().text() == "I see"

    out = tmp_path / "out.txt"
    monkeypatch.setenv("DASHER_RNN_DOCUMENTS", str(tmp_path / "documents"))
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(out), ""))
    assert window.messages.save_text_as()
    assert out.read_text(encoding="utf-8") == "I see"
    warnings = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: warnings.append(a))
    assert not window.messages.save_text(tmp_path / "no-such-folder" / "x.txt")
    assert warnings and "Could not save" in warnings[0][2]

    QTest.keyClick(window.view, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)  # new message
    assert window.controller.history == "I see\n" and window.panel.toPlainText() == "I see\n"
    steer(window, "Go")
    assert window.panel.toPlainText() == "I see\nGo"
    window.messages.clear_text()
    assert window.panel.toPlainText() == "" and window.controller.text == ""
    if not window.speech.speaker.available:
        speak = window.speech.speak_action
        assert not speak.isEnabled() and "No speech" in speak.toolTip().replace("\n", " ")


def test_speaker_runs_a_speech_command_without_waiting(tmp_path, monkeypatch):
    said = tmp_path / "said.txt"
    command = tmp_path / "espeak"
    command.write_text(f"#!/bin/sh\nshift\nprintf '%s' \"$1\" > {said}\n")
    command.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    speaker = Speaker(commands=("espeak",), use_qt=False)
    assert speaker.available and speaker.backend == "espeak"
    assert speaker.speak("hello there")
    speaker._process.wait(10)
    assert said.read_text() == "hello there"
    assert not Speaker(commands=("no-such-speech-command",), use_qt=False).available


def test_speaker_speaks_the_alphabets_language_and_says_when_it_has_no_voice(tmp_path, monkeypatch):
    said = tmp_path / "said.txt"
    command = tmp_path / "espeak-ng"
    command.write_text("#!/bin/sh\n"
                       'case "$1" in --voices=*) echo "Pty Language Age/Gender VoiceName File Other"; '
                       '[ "$1" = --voices=de ] && echo " 5  de --/M German gmw/de"; exit 0;; esac\n'
                       f'printf \'%s \' "$@" > {said}\n')
    command.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    speaker = Speaker(commands=("espeak-ng",), use_qt=False, language="de")
    assert speaker.language_note == ""
    assert speaker.speak("Guten Tag")
    speaker._process.wait(10)
    assert said.read_text() == "-v de -- Guten Tag "
    assert not speaker.set_language("sw") and "no voice for 'sw'" in speaker.language_note
    assert speaker.speak("Habari")  # the default voice speaks
    speaker._process.wait(10)
    assert said.read_text() == "-- Habari "


def test_the_frame_timer_drives_frames(qtbot, settings_path):
    store = SettingsStore()
    window = MainWindow(WritingController(writer_source("uniform")), store, store.load())
    qtbot.addWidget(window)
    window.show()
    first = window.writing.frames
    qtbot.waitUntil(lambda: window.writing.frames > first + 3, timeout=10000)
    assert frame_interval_ms(60) == 17 and frame_interval_ms(0) == 16


def test_output_panel_replaces_only_what_changed(qtbot):
    panel = OutputPanel()
    qtbot.addWidget(panel)
    for text in ["abc", "abd", "ab\ncd é", "ab\nc", "", "xyz"]:
        panel.show_text(text)
        assert panel.toPlainText() == text


@pytest.mark.parametrize("scheme", ["default", "high-contrast"])
def test_paint_frame_draws_boxes_crosshair_and_dwell_ring(qapp, scheme):
    controller = WritingController(writer_source("uniform"))
    frame = controller.frame(None, 0.0)
    image = QImage(600, 400, QImage.Format.Format_ARGB32_Premultiplied)
    viewport = Viewport(600, 400)
    painter = QPainter(image)
    paint_frame(painter, frame, viewport, ALPHABET, scheme, (500.0, 100.0), 0.5)
    painter.end()
    cx, cy = viewport.crosshair
    crosshair = image.pixelColor(round(cx) - 5, round(cy))
    assert crosshair == (QColor("#ffff00") if scheme == "high-contrast" else QColor("#c00000"))
    assert image.pixelColor(10, 10) == QColor("#000000" if scheme == "high-contrast" else "#ffffff")  # left of the boxes
    assert len({image.pixelColor(598, y).name() for y in range(0, 400, 2)}) > 3  # many boxes, several colours


def test_offscreen_renderer_paints_frames_into_an_image(qapp):
    from dasher_rnn.ui.offscreen import offscreen_renderer

    controller = WritingController(writer_source("uniform"))
    render = offscreen_renderer(ALPHABET, 320, 240)
    image = render(controller.frame(None, 0.0))
    assert image.size().width() == 320
    assert len({image.pixelColor(318, y).name() for y in range(0, 240, 2)}) > 3


def test_void_qt_calls_do_not_leak_none(qapp):
    """PySide6 6.12.0 takes a reference from None on every void call (Python < 3.12 then aborts after a few
    frames); pyproject.toml excludes it, and this catches an install that got it anyway."""
    point = QPointF()
    before = sys.getrefcount(None)
    for _ in range(1000):
        point.setX(1.0)
    assert sys.getrefcount(None) > before - 500


def test_the_rnn_writes_and_adapts_in_the_window(qtbot, settings_path):
    window = open_window(qtbot, writer_source("rnn"), speed_bps=3.0)
    window.writing.toggle_running()
    steer(window, "hello there", lockstep=True)
    assert window.panel.toPlainText() == "hello there"
    window.update_status()
    assert window.status.adaptation_label.text().startswith("adapting:")
    window.learning.adapt_box.setChecked(False)
    window.controller.writer.flush()
    window.update_status()
    assert window.status.adaptation_label.text() == "adaptation off" and not window.keeper.prefs.adaptation
    window.close()
    assert SettingsStore().load().adaptation is False


def test_run_app_reports_a_model_that_cannot_load(qapp, tmp_path, monkeypatch):
    from dasher_rnn.ui.app import run_app

    shown = []
    monkeypatch.setattr(QMessageBox, "critical", lambda *a, **k: shown.append(a))
    assert run_app("rnn", model_dir=tmp_path / "missing", settings_path=tmp_path / "settings.json") == 2
    assert shown and "Could not load" in shown[0][2]


def test_run_app_can_exit_after_its_first_frame_of_predictions(qapp, tmp_path, capsys):
    from dasher_rnn.ui.app import run_app

    # a first start (no settings): the tutorial would open; the check paints the window's boxes and closes it
    guard = QTimer(singleShot=True, interval=60_000)  # should it never paint: the test fails instead of hanging
    guard.timeout.connect(qapp.quit)
    guard.start()
    assert run_app("ppm", settings_path=tmp_path / "settings.json", exit_after_first_frame=True) == 0
    guard.stop()
    assert capsys.readouterr().out == "first frame\n"
    assert not any(w.isVisible() for w in QApplication.topLevelWidgets())


def test_the_text_panel_can_be_hidden_and_shrunk_and_the_canvas_takes_its_place(qtbot, settings_path):
    window = open_window(qtbot)
    view_height = window.view.height()
    assert window.looks.panel_action.isChecked() and window.panel.isVisible()
    window.looks.panel_action.trigger()  # the toolbar button: no keyboard needed
    QApplication.processEvents()
    assert not window.panel.isVisible() and window.view.height() > view_height
    assert window.keeper.prefs.text_panel is False
    window.looks.panel_action.trigger()
    QApplication.processEvents()
    assert window.panel.isVisible() and window.keeper.prefs.text_panel is True
    window.splitter.setSizes([0, 10_000])  # dragged shut: the splitter lets the panel collapse
    assert window.splitter.sizes()[0] == 0
    window.close()
    assert SettingsStore().load().text_panel is True


def test_the_window_opens_sized_to_the_screen_and_full_screen_for_gaze(qtbot, settings_path):
    store = SettingsStore()
    for preset_name, full in (("mouse", False), ("head-mouse", True)):
        prefs = store.load().updated(preset=preset_name)
        window = MainWindow(WritingController(writer_source("uniform"), prefs.controller_config()), store, prefs,
                            start_timer=False)
        qtbot.addWidget(window)
        window.show_sized_to_screen()
        qtbot.waitExposed(window)
        available = window.screen().availableGeometry()
        assert window.isFullScreen() == full and window.looks.full_screen_action.isChecked() == full
        assert window.frameGeometry().width() >= available.width() - 2
        assert window.frameGeometry().height() >= available.height() - 2
        window.looks.full_screen_action.trigger()  # a button leaves full screen (and enters it)
        assert window.isFullScreen() != full
        window.close()


def test_the_pointer_leaving_the_canvas_pauses_writing(qtbot, settings_path):
    window = open_window(qtbot)  # the mouse preset: pausing outside is the default for it too
    view = window.view
    qtbot.mouseClick(view, Qt.MouseButton.LeftButton, pos=QPoint(view.width() - 50, view.height() // 2))
    assert window.controller.running
    window.writing.tick(DT)
    QApplication.sendEvent(view, QEvent(QEvent.Type.Leave))  # off to the toolbar, say
    bits = window.controller.zoom.bits_total
    window.writing.tick(DT)
    assert window.controller.running and window.controller.zoom.bits_total == bits  # a pause ...
    window.writing.tick(AWAY_STOP_S)  # ... and away for a while: stopped
    assert not window.controller.running and "left the canvas" in view.hint and "click" in view.hint


def test_undo_writing_takes_back_the_run_from_the_toolbar_and_the_edit_menu(qtbot, settings_path):
    window = open_window(qtbot)
    assert not window.writing.undo_action.isEnabled()
    window.writing.toggle_running()
    steer(window, "I want")
    window.writing.toggle_running()
    kept = window.panel.toPlainText()
    ppm = window.controller.writer.mixer.ppm
    learned = ppm.snapshot()["counts"].sum()
    window.writing.toggle_running()
    steer(window, "I want some water.")
    assert ppm.snapshot()["counts"].sum() > learned
    assert window.writing.undo_action.isEnabled()
    button = window.findChild(QToolBar, "writing-toolbar").widgetForAction(window.writing.undo_action)
    assert button.minimumHeight() >= 40 and button.font().bold()  # large: the one to reach for after a mistake
    edit_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Edit")
    assert window.writing.undo_action in edit_menu.actions()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)  # no keyboard needed
    assert not window.controller.running and window.writing.start_action.text() == "Start"
    assert window.panel.toPlainText() == kept and ppm.snapshot()["counts"].sum() == learned


def test_labels_have_a_minimum_size_and_appear_when_their_box_grows():
    from dasher_rnn.ui.paint import MIN_LABEL_PX, label_pixels

    assert label_pixels(MIN_LABEL_PX - 1, 200, 0.65, 60) == 0  # too small for a legible label: none
    assert label_pixels(200, MIN_LABEL_PX - 1, 0.65, 60) == 0  # too narrow
    assert label_pixels(MIN_LABEL_PX, 200, 0.65, 60) == MIN_LABEL_PX  # grown past it: drawn, never smaller
    sizes = [label_pixels(h, 200, 0.65, 60) for h in range(MIN_LABEL_PX, 200)]
    assert sizes == sorted(sizes) and max(sizes) == 60
    assert label_pixels(15, 200, 0.65, 60, min_px=20) == 0 and label_pixels(25, 200, 0.65, 60, min_px=20) == 20


def test_the_window_takes_the_label_size_from_the_preferences(qtbot, settings_path):
    window = open_window(qtbot, label_min_px=20)
    assert window.view.min_label_px == 20


def test_a_resting_pointer_in_the_window_stops_and_never_speeds_up(qtbot, settings_path):
    """Issue 22's evidence, replayed: the mouse preset, auto speed on at 1.5 bits/s, the pointer left resting."""
    window = open_window(qtbot, speed_bps=1.5, auto_speed=True)
    assert window.controller.rest_stop_seconds == window.keeper.prefs.rest_stop_seconds > 0
    window.writing.toggle_running()
    point_at(window, 0.6 * ORIGIN_X, ORIGIN_Y - 350.0)
    seconds = 0.0
    while seconds < 20.0:
        window.writing.tick(DT)
        seconds += DT
    window.update_status()
    assert not window.controller.running and "rested" in window.view.hint
    assert window.controller.speed_bps == 1.5 and window.writing.speed_box.value() == pytest.approx(1.5)
    assert window.writing.undo_action.isEnabled()
    window.writing.undo_action.trigger()
    assert window.panel.toPlainText() == ""


def test_take_screenshot_writes_a_picture_of_the_window_writing(qapp, tmp_path, settings_path):
    from dasher_rnn.ui.app import take_screenshot

    path = take_screenshot(tmp_path / "shot.png", "hi", seconds=0.5, size=(640, 480), fps=10.0)
    image = QImage(str(path))
    assert not image.isNull() and image.width() >= 640
