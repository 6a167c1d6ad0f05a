"""Issue 46: an idle window costs nothing. Stopped, with nothing moving and no input, the frame timer stops (only a
slow look at the input remains); a mouse on the canvas, a start, a gaze that moves or a switch press brings the frames
back. Behaviour, not timing: the waits are generous bounds, nothing is measured."""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import time

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from dasher_rnn.input.gaze import GazeSource
from dasher_rnn.settings import SettingsStore
from dasher_rnn.ui.window import MainWindow
from dasher_rnn.zoom.controller import WritingController
from tests.conftest import writer_source

WAIT_MS = 10_000


class StillGaze(GazeSource):
    def __init__(self) -> None:
        super().__init__(stale_after=600.0)

    def look(self, x: float, y: float) -> None:
        self._push(x, y, time.monotonic())


def running_window(qtbot, **prefs) -> MainWindow:
    """A window with its frames running, as the app opens it."""
    store = SettingsStore()
    loaded = store.load().updated(tutorial_done=True, **prefs)
    window = MainWindow(WritingController(writer_source("uniform"), loaded.controller_config()), store, loaded)
    qtbot.addWidget(window)
    window.resize(760, 700)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    assert QTest.qWaitForWindowActive(window)
    return window


def wait_idle(qtbot, window: MainWindow) -> None:
    qtbot.waitUntil(lambda: window.writing.idle, timeout=WAIT_MS)
    assert not window.writing.timer.isActive()  # no frame is drawn


def test_a_stopped_window_with_nothing_moving_stops_its_frame_timer_and_the_mouse_wakes_it(qtbot, settings_path):  # noqa: F811
    window = running_window(qtbot)
    assert window.writing.timer.isActive()
    wait_idle(qtbot, window)
    QTest.mouseMove(window.view, QPoint(300, 200))  # the mouse on the canvas
    assert window.writing.timer.isActive() and not window.writing.idle
    wait_idle(qtbot, window)
    QTest.keyClick(window, Qt.Key.Key_Space)  # Start
    assert window.controller.running and window.writing.timer.isActive()
    qtbot.wait(800)  # writing: the frames go on
    assert window.writing.timer.isActive()
    QTest.keyClick(window, Qt.Key.Key_Space)  # Stop
    assert not window.controller.running
    wait_idle(qtbot, window)


def test_a_gaze_that_moves_wakes_the_frames_and_a_still_or_silent_one_lets_them_rest(qtbot, settings_path):  # noqa: F811
    window = running_window(qtbot)
    gaze = window.input.gaze = StillGaze()
    window.view.use_mouse = False
    gaze.look(0.3, 0.4)
    wait_idle(qtbot, window)  # the gaze rests away from the crosshair: nothing moves
    gaze.look(0.6, 0.5)
    qtbot.waitUntil(lambda: window.writing.timer.isActive(), timeout=WAIT_MS)
    wait_idle(qtbot, window)
    window.input.gaze = None  # the tracker sends nothing


def test_a_switch_press_while_idle_starts_writing_with_frames(qtbot, settings_path):  # noqa: F811
    window = running_window(qtbot, input="one-button")
    wait_idle(qtbot, window)
    QTest.keyClick(window, Qt.Key.Key_Space)  # the switch
    qtbot.waitUntil(lambda: window.controller.running and window.writing.timer.isActive(), timeout=WAIT_MS)
    window.writing.stop()
    wait_idle(qtbot, window)


def test_the_tutorial_pauses_the_resting_frames_and_gives_them_back(qtbot, settings_path):  # noqa: F811
    window = running_window(qtbot)
    wait_idle(qtbot, window)
    dialog = window.open_tutorial(start_timer=False)
    assert not window.writing.timer.isActive() and not window.writing.idle
    dialog.reject()
    assert window.writing.timer.isActive()


def test_characters_waiting_for_direct_output_keep_the_frames_going(qtbot, settings_path, monkeypatch):  # noqa: F811
    from dasher_rnn.ui.parts.output import OutputPart

    waiting = {"now": True}
    monkeypatch.setattr(OutputPart, "waiting", property(lambda self: waiting["now"]))
    window = running_window(qtbot)
    qtbot.wait(1500)  # three times as long as stillness needs to rest the frames: they go on, retrying the typing
    assert window.writing.timer.isActive() and not window.writing.idle
    waiting["now"] = False  # typed
    wait_idle(qtbot, window)
