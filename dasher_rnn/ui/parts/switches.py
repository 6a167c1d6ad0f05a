"""Switch access in the window: the switch mode (input/switch.py) the input chooses, fed by the user's switches.

The switches are the keyboard's Space (the first) and Enter (the second), the mouse buttons on the canvas (left,
right), and the switch source of the preferences (a game controller or the switch socket, input/switches.py).
While a switch input is chosen, those keys and buttons are switches and nothing else: they do not start writing
through the Start action nor click the canvas (an application event filter takes them first, only while this
window has the keyboard: it is the modal dialog on top, or, with none, the active window; so a dialog keeps its keys
even where the window manager has not made it the active window yet). Each frame the input part calls ``tick``, which hands the
source's presses to the controller and shows the mode's boxes and markers on the view.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent, QMouseEvent
from PySide6.QtWidgets import QApplication

from dasher_rnn.input.gaze import GazeSourceError
from dasher_rnn.input.switches import JoystickSwitches, KeyRepeat, UDPSwitches, open_switch_source
from dasher_rnn.settings import Preferences
from dasher_rnn.ui.view import DasherView
from dasher_rnn.zoom.controller import WritingController
from dasher_rnn.zoom.switch_modes import switch_mode
from dasher_rnn.zoom.switching import SwitchMode

SWITCH_KEYS = {Qt.Key.Key_Space: 0, Qt.Key.Key_Return: 1, Qt.Key.Key_Enter: 1}
SWITCH_BUTTONS = {Qt.MouseButton.LeftButton: 0, Qt.MouseButton.RightButton: 1}
_KEY_EVENTS = (QEvent.Type.KeyPress, QEvent.Type.KeyRelease, QEvent.Type.ShortcutOverride)
_MOUSE_EVENTS = (QEvent.Type.MouseButtonPress, QEvent.Type.MouseButtonRelease, QEvent.Type.MouseButtonDblClick)


class SwitchPart(QObject):
    def __init__(self, controller: WritingController, view: DasherView, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.controller, self.view = controller, view
        self.mode: SwitchMode | None = None
        self.source: JoystickSwitches | UDPSwitches | None = None
        self.repeat = KeyRepeat()  # the keys' repeats, told by their timing

    def start(self, name: str, prefs: Preferences) -> str:
        """Write with the switch mode ``name`` from now on; what to tell the user (the source that could not start,
        or how to press)."""
        self.stop()
        self.mode = switch_mode(name, prefs.switch_config())
        self.controller.set_switch_mode(self.mode)
        QApplication.instance().installEventFilter(self)
        try:
            self.source = open_switch_source(prefs.model_dump())
        except GazeSourceError as exc:
            return f"Switches: {exc}; Space and Enter, and the mouse buttons, are the switches."
        also = f", and {self.source.description[len('Switches: '):]}" if self.source is not None else ""
        return f"Switches: Space and Enter, the left and right mouse buttons{also}."

    def stop(self) -> None:
        """Back to the pointer (idempotent)."""
        if self.mode is not None:
            QApplication.instance().removeEventFilter(self)
            self.controller.set_switch_mode(None)
            self.mode = None
            self.view.switch = None
        source, self.source = self.source, None
        if source is not None:
            source.close()

    def problems(self) -> str:
        return self.source.problems() if self.source is not None else ""

    def tick(self) -> None:
        """Before a frame: the source's presses to the controller, the mode's view to the canvas."""
        if self.mode is None:
            return
        events = self.repeat.due(time.monotonic())
        if self.source is not None:
            events += self.source.events()
        for event in events:
            (self.controller.press if event.down else self.controller.release)(event.switch)
        shown = self.mode.view()
        self.view.switch = shown
        if self.controller.running:
            self.view.hint = shown.hint

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind in _KEY_EVENTS and isinstance(event, QKeyEvent):
            switch = SWITCH_KEYS.get(Qt.Key(event.key()))
            if switch is None or not self._has_the_keys() or event.modifiers() & (
                    Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier):
                return False
            if kind == QEvent.Type.ShortcutOverride:
                event.accept()  # a key press for this filter, not the Start action's shortcut
            elif not event.isAutoRepeat():  # and where the server does not flag a repeat, its timing tells
                now = time.monotonic()
                pressed = kind == QEvent.Type.KeyPress
                for e in (self.repeat.press if pressed else self.repeat.release)(switch, now):
                    self._switch(e.switch, e.down)
            return True
        if kind in _MOUSE_EVENTS and obj is self.view and isinstance(event, QMouseEvent):
            switch = SWITCH_BUTTONS.get(event.button())
            if switch is not None:
                for e in self.repeat.flush():  # a key's release held back comes first
                    self._switch(e.switch, e.down)
                self._switch(switch, kind != QEvent.Type.MouseButtonRelease)
                return True
        return False

    def _has_the_keys(self) -> bool:
        """The view's window has the keyboard: it is the modal dialog on top (the tutorial's canvas), or, with none
        open, the active window. A modal dialog over the window (the tutorial, Preferences) has the keys even before
        it is made the active window (or where it never is), and they must not start writing behind it."""
        return (QApplication.activeModalWidget() or QApplication.activeWindow()) is self.view.window()

    def _switch(self, switch: int, down: bool) -> None:
        (self.controller.press if down else self.controller.release)(switch)
