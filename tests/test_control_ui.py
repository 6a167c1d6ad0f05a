"""Control mode in the window: the control boxes drawn with their labels, and actions reaching the window."""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before Qt is imported: no display needed


import pytest
from PySide6.QtGui import QColor, QGuiApplication, QImage, QPainter
from PySide6.QtTest import QTest

from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.settings import SettingsStore
from dasher_rnn.ui.paint import paint_frame
from dasher_rnn.ui.window import MainWindow
from dasher_rnn.zoom.boxes import ZoomSettings
from dasher_rnn.zoom.confirmations import CONFIRM_CENTRE
from dasher_rnn.zoom.control import Action
from dasher_rnn.zoom.controller import WritingController
from dasher_rnn.zoom.geometry import Viewport, y_to_screen
from dasher_rnn.zoom.model import ZoomModel
from dasher_rnn.zoom.simulate import target_pointer, wait_for_answers
from tests.conftest import make_sentences, writer_source
from tests.test_zoom import RecordingSource

ALPHABET = load_alphabet("english")
DT = 1 / 30


def open_window(qtbot, **prefs) -> MainWindow:
    model = PPMModel(ALPHABET)
    model.train_text("\n".join(make_sentences(300)) + "\n")
    store = SettingsStore()
    loaded = store.load().updated(speed_bps=4.0, auto_speed=False, **prefs)
    window = MainWindow(WritingController(writer_source("ppm", trained_ppm=model), loaded.controller_config()), store,
                        loaded, start_timer=False)
    qtbot.addWidget(window)
    window.resize(760, 700)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    assert QTest.qWaitForWindowActive(window)
    return window


def steer(window: MainWindow, target: str, action: Action | None = None, frames: int = 5000) -> None:
    """Aim at ``target`` (the message), then at ``action`` in the control box after it, frame by frame."""
    zoom = window.controller.zoom
    for _ in range(frames):
        if action is None and zoom.output == target:
            return
        wait_for_answers(zoom)
        x, y = target_pointer(zoom, zoom.context + target, action)
        window.view.set_pointer_override(window.view.viewport().to_screen(x, y))
        frame = window.writing.tick(DT)
        if frame.confirm is not None:  # it asks first (the presets that confirm): a click on the green circle
            assert frame.confirm.action == action and window.view.confirm is not None
            window.view.set_pointer_override(window.view.viewport().to_screen(*CONFIRM_CENTRE))
            window.writing._on_view_clicked()
            frame = window.writing.tick(DT)
            window.writing.toggle_running()  # writing stays stopped after a confirmation: the user goes on
        if action is not None and frame.action is not None:
            assert frame.action == action
            return
    raise AssertionError(f"did not reach {target!r} {action}: {zoom.output!r}")


@pytest.mark.parametrize("scheme", ["default", "high-contrast"])
def test_paint_frame_draws_the_control_boxes_with_their_labels(qapp, scheme):
    zoom = ZoomModel(RecordingSource(), ZoomSettings(speed_bps=3.0, control=True))
    for _ in range(3000):  # into the control box after "a", until it fills the view
        zoom.step(*target_pointer(zoom, "a", Action.COPY), 1 / 60)
        if not zoom.root.is_letter:
            break
    frame = zoom.idle()
    actions = [d for d in frame.boxes if d.box.action is not None]
    assert len(actions) >= 3
    image = QImage(900, 600, QImage.Format.Format_ARGB32_Premultiplied)
    viewport = Viewport(900, 600)
    painter = QPainter(image)
    paint_frame(painter, frame, viewport, ALPHABET, scheme, None, 0.0)
    painter.end()
    labelled = 0
    for drawn in actions:
        top, bottom = y_to_screen(drawn.y1) * viewport.scale, y_to_screen(drawn.y2) * viewport.scale
        if bottom - top < 30 or top < 0 or bottom > 600:
            continue
        left = viewport.screen_x(drawn.y2 - drawn.y1)
        middle = round((top + bottom) / 2)
        row = {image.pixelColor(x, middle).name() for x in range(round(left) + 2, 898)}
        fill = image.pixelColor(890, round(top) + 3)  # the box's own colour, away from its label
        assert fill != QColor("#ffffff") and fill != QColor("#000000")
        assert len(row - {fill.name()}) > 1  # its label's strokes
        labelled += 1
    assert labelled >= 2


def test_actions_in_the_control_box_reach_the_window(qtbot, settings_path):
    window = open_window(qtbot, preset="head-mouse")
    c = window.controller
    assert c.control_mode and window.writing.control_action.isChecked()  # on for the head mouse
    window.writing.toggle_running()
    steer(window, "I see")
    steer(window, "I see", Action.COPY)
    assert QGuiApplication.clipboard().text() == "I see" and c.running
    assert "Copy" in window.statusBar().currentMessage()
    steer(window, "I see", Action.NEW_MESSAGE)
    assert c.history == "I see\n" and window.panel.toPlainText() == "I see\n" and c.zoom.output == ""
    steer(window, "Go")
    steer(window, "Go", Action.STOP)
    assert not c.running and "control box" in window.view.hint and window.panel.toPlainText() == "I see\nGo"
    window.writing.control_action.trigger()  # off, and remembered
    assert not c.control_mode and window.keeper.prefs.control_mode is False
    assert len(c.zoom.layout(c.zoom.root)) == len(ALPHABET) + 1
    window.input.select_preset("eye-tracker")  # a preset brings its control mode
    assert c.control_mode and window.writing.control_action.isChecked() and window.keeper.prefs.control_mode
    window.close()
    assert SettingsStore().load().control_mode is True


def test_control_actions_reach_the_focused_program_in_direct_output(qtbot, settings_path, monkeypatch):
    from tests.test_direct_output import FakeTyper, open_direct_window

    monkeypatch.setattr(QGuiApplication, "focusWindow", staticmethod(lambda: None))  # another program has the focus
    typer = FakeTyper()
    window = open_direct_window(qtbot, lambda: typer, control_mode=True)
    c = window.controller
    window.writing.toggle_running()
    steer(window, "I want tea")
    steer(window, "I want tea", Action.DELETE_WORD)  # Backspace for what the other program got of "tea"
    assert c.zoom.output == "I want " and "I want ".startswith(typer.screen) and "BS" in typer.keys
    steer(window, "I want coffee")
    steer(window, "I want coffee", Action.NEW_MESSAGE)  # the whole message goes, and stays
    assert typer.screen == "I want coffee" and c.history == "I want coffee\n"
    steer(window, "Go")
    steer(window, "Go", Action.STOP)
    assert typer.screen == "I want coffeeGo"  # stopped: all of the message so far
    window.close()
