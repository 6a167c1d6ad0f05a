"""The real window written with switches: each switch input chosen in turn, "hello" written with synthetic key
presses (Space, the first switch; Enter, the second) through the application's event filter, as a switch interface
that types keys would send them, and the control box reached the same way.

When to press is decided by the simulated switch user (``zoom/switch_user.py``), whose presses here are real key
events sent to the window instead of calls on the controller. The window's frames are driven with a fixed time
step and the model's answers are waited for between frames, so the test needs no real time and repeats exactly.
"""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import os
from collections.abc import Callable

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before Qt is imported: no display needed

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget

from dasher_rnn.input.registry import INPUTS
from dasher_rnn.ui.window import MainWindow
from dasher_rnn.zoom.boxes import Frame
from dasher_rnn.zoom.control import Action
from dasher_rnn.zoom.controller import WritingController
from dasher_rnn.zoom.simulate import wait_for_answers
from dasher_rnn.zoom.switch_user import SwitchUser, SwitchUserConfig
from dasher_rnn.zoom.switching import SwitchState
from tests.test_ui import open_window

SWITCH_INPUTS = [name for name, kind in INPUTS.items() if kind.family == "switch"]
KEYS = (Qt.Key.Key_Space, Qt.Key.Key_Return)  # the first and the second switch
FPS = 30.0
DT = 1.0 / FPS


class KeyedSwitches:
    """A controller as the simulated user sees it, except that a press or release is a key event sent to the
    ``widget`` whose window's switch filter turns it into the press. The frames (``tick``, of a given length) run up
    to the moment the key is meant for first (a frame of whatever length is left), so that it lands when the user
    pressed it and the test does not depend on how the frames fall."""

    def __init__(self, controller: WritingController, widget: QWidget, tick: Callable[[float], Frame | None]) -> None:
        self.controller, self.widget, self.tick = controller, widget, tick
        self.sent: list[tuple[int, bool]] = []
        self.actions: list[tuple[Action, str]] = []  # the control box's actions the frames reached, each with the
        # message as it left it
        self.frames = 0

    def __getattr__(self, name: str):
        return getattr(self.controller, name)

    def run_to(self, t: float) -> None:
        """Frames up to time ``t`` on the controller's clock: one that long, if it is ahead."""
        dt = t - self.controller.clock
        if dt > 1e-9:
            frame = self.tick(dt)
            self.frames += 1
            if self.frames % 40 == 0:
                QApplication.processEvents()  # paint now and then, as the real loop does
            if frame is not None and frame.action is not None:
                self.actions.append((frame.action, self.controller.zoom.output))

    def press(self, button: int, t: float | None = None) -> None:
        self.run_to(self.controller.clock if t is None else t)
        self.sent.append((button, True))
        QTest.keyPress(self.widget, KEYS[button])

    def release(self, button: int, t: float | None = None) -> None:
        self.run_to(self.controller.clock if t is None else t)
        self.sent.append((button, False))
        QTest.keyRelease(self.widget, KEYS[button])


def switch_user(window: MainWindow, seed: int = 0) -> tuple[SwitchUser, KeyedSwitches]:
    """The simulated user pressing Space and Enter in the window, whose frames are ``writing.tick``."""
    keys = KeyedSwitches(window.controller, window, window.writing.tick)
    return SwitchUser(keys, SwitchUserConfig(seed=seed)), keys  # type: ignore[arg-type]  # duck-typed


def write(person: SwitchUser, keys: KeyedSwitches, text: str, action: Action | None = None,
          seconds: float = 240.0) -> None:
    """Frames until the message is ``text`` (then, with ``action``, until the control box's action happened),
    the user pressing keys as it decides; at most ``seconds`` of simulated time."""
    c = keys.controller
    keys.actions.clear()
    deadline = c.clock + seconds
    while c.clock < deadline:
        zoom = c.zoom
        if action is None and zoom.output == text:
            break
        wait_for_answers(zoom)
        now = c.clock
        person.decide(now, zoom.context + text, action)
        person.land(now + DT)
        keys.run_to(now + DT)
        if action is not None and action in dict(keys.actions):
            break
        wrong = [a for a, _text in keys.actions if a not in (action, Action.LETTERS)]  # back to the letters: harmless
        assert not wrong, f"{wrong} on the way to {text!r} {action or ''}"
    else:
        raise AssertionError(f"did not write {text!r} {action or ''} in {seconds} s: {c.zoom.output!r}")
    person.finish()


@pytest.fixture
def window(qtbot, settings_path):  # noqa: F811
    return open_window(qtbot)


def test_each_switch_input_writes_hello_with_key_presses(window):
    assert SWITCH_INPUTS == ["one-button", "two-button", "scanning", "step-scan"]
    c = window.controller
    for name in SWITCH_INPUTS:
        window.input.set_input(name)
        assert window.input.name == name and c.switch is not None and c.switch.name == name
        window.writing.set_speed(1.5)
        window.writing.tick(0.0)
        assert c.preset.name == "switch" and not c.running and "press a switch" in window.view.hint
        person, keys = switch_user(window)
        write(person, keys, "hello")
        assert c.zoom.output == "hello" and window.panel.toPlainText().splitlines()[-1] == "hello", name
        shown = window.view.switch  # the mode's markers or scanning boxes are drawn over the boxes
        assert shown is not None and shown.mode == name and (shown.markers or shown.boxes)
        # every key press reached the mode once (none also triggered the Start action, nor repeated)
        assert c.switch.presses == sum(down for _button, down in keys.sent) > 1
        assert {button for button, _down in keys.sent} == ({0} if c.switch.switches == 1 else {0, 1})
        window.messages.new_message()
        window.writing.stop()


@pytest.mark.parametrize("name", SWITCH_INPUTS)
@pytest.mark.parametrize("action", [Action.STOP, Action.DELETE_CHAR])
def test_the_control_box_stops_and_deletes_with_switches(window, name, action):
    c = window.controller
    window.input.set_input(name)
    assert c.control_mode and window.writing.control_action.isChecked()  # the switch preset brings the control box
    window.writing.set_speed(1.5)
    person, keys = switch_user(window, seed=1)
    write(person, keys, "hi", action)
    if action == Action.DELETE_CHAR:
        assert dict(keys.actions)[action] == "h"  # what the delete left
        assert c.running and window.panel.toPlainText() == c.zoom.output
        return
    assert dict(keys.actions)[action] == "hi"
    assert not c.running and c.stopped_because == "control" and c.switch.state == SwitchState.STOPPED
    window.writing.tick(DT)
    assert window.view.hint == "Stopped (the control box): press a switch to start"
    assert window.panel.toPlainText() == "hi" and window.writing.start_action.text() == "Start"
    QTest.keyClick(window, Qt.Key.Key_Space)  # a press starts again
    assert c.running and c.switch.running


def test_keys_and_mouse_buttons_are_switches_only_while_a_switch_input_is_chosen(window, qtbot):
    c, view = window.controller, window.view
    window.input.set_input("two-button")
    QTest.keyPress(window, Qt.Key.Key_Space)  # a press starts (the Start action, also on Space, does not toggle)
    assert c.running and c.switch.presses == 1 and window.writing.start_action.text() == "Start"
    QTest.keyRelease(window, Qt.Key.Key_Space)
    window.writing.tick(DT)
    assert window.writing.start_action.text() == "Stop"
    QTest.keyPress(window, Qt.Key.Key_Space, Qt.KeyboardModifier.NoModifier)
    QTest.keyPress(window, Qt.Key.Key_Return)  # held: a press of another switch is ignored until it comes up
    assert c.switch.presses == 2
    QTest.keyRelease(window, Qt.Key.Key_Space)
    QTest.keyRelease(window, Qt.Key.Key_Return)
    root = (c.zoom.root_lo, c.zoom.root_hi)
    QTest.mousePress(view, Qt.MouseButton.RightButton, pos=QPoint(50, 50))  # the second switch: shifts the view up
    QTest.mouseRelease(view, Qt.MouseButton.RightButton, pos=QPoint(50, 50))
    window.writing.tick(DT)
    assert c.switch.presses == 3 and c.zoom.root_lo < root[0] and c.running
    window.input.set_input("mouse")  # the keys are the window's own again: Space starts and stops
    assert c.switch is None and not c.running
    QTest.keyClick(window, Qt.Key.Key_Space)
    assert c.running


def test_a_scanning_selection_fires_only_the_action_it_ends_in():
    """What a scanning user meets in the control box (seen with the simulated step-scan user): the view holds the
    control box large, the crosshair in Delete (not yet wide enough to act), and the user selects the top box,
    whose zoom ends with the crosshair in Stop above it. Delete grows wide enough while the crosshair is still in it
    and acts first."""
    from dasher_rnn.zoom.model import ZoomModel
    from dasher_rnn.zoom.simulate import target_range
    from tests.conftest import writer_source

    source = writer_source("uniform")
    zoom = ZoomModel(source)
    zoom.set_control(True)
    wait_for_answers(zoom)
    zoom.idle()

    def select(y1: float, y2: float) -> list[Action]:
        zoom.schedule_zoom(y1, y2, 0.5)
        acted = []
        while zoom.zooming:
            wait_for_answers(zoom)
            frame = zoom.step(0.0, 2048.0, DT, 1.0)
            acted += [frame.action] if frame.action is not None else []
        return acted

    try:
        assert select(3914.5, 3988.4) == []  # the control box about 11,000 units high, the crosshair in Delete
        stop, delete = target_range(zoom, "", Action.STOP), target_range(zoom, "", Action.DELETE_CHAR)
        assert stop is not None and delete is not None and stop[0] < 512 < stop[1] <= delete[0] < 2048 < delete[1]
        assert delete[1] - delete[0] < 2048  # not yet wide enough to act
        assert select(-25.0, 1049.0) == [Action.STOP]  # scanning's top box: the zoom ends with the crosshair in Stop
    finally:
        source.close()


def test_a_modal_dialog_over_the_window_keeps_its_keys(window):
    """Space and Enter are the switches only while the window has the keyboard: a modal dialog over it (Preferences,
    the tutorial) has it, even before (or where) the window manager makes it the active window."""
    c = window.controller
    window.input.set_input("one-button")
    window.show_preferences()
    assert window._dialog is not None and window._dialog.isModal()
    QTest.keyClick(window, Qt.Key.Key_Space)  # sent to the window: here it still is the active one
    assert not c.running and c.switch.presses == 0
    window._dialog.accept()
    QTest.keyClick(window, Qt.Key.Key_Space)
    assert c.running and c.switch.presses == 1


def test_back_to_the_mouse_from_switches_brings_the_mouse_preset_back(window):
    window.input.set_input("scanning")
    assert window.controller.preset.name == "switch"
    window.input.set_input("mouse")
    assert window.controller.preset.name == "mouse" and window.controller.preset.start_on_click
    assert window.keeper.prefs.preset == "mouse"
