"""The window's output options: direct output into the focused program, copy all on stop, speak on stop.

The composition hands it the writing part's frames (``on_frame``), a stop (``on_stop``), a finished message
(``finish_message``, once the next one has started), Clear (``discard``) and the window's shutdown (``close``).
The Output menu's actions, the window's flags and the output notice live here. The typing itself is
``dasher_rnn.output``'s, without Qt.

In direct mode the window stays on top and never takes the keyboard focus (it does not activate when shown or
clicked), so the program the user picked keeps receiving the keys; and it is docked (``parts/dock.py``, its menu
in the Output menu): a strip at an edge of the screen, so that the program it types into can be seen beside it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QGuiApplication
from PySide6.QtWidgets import QWidget

from dasher_rnn.output import DirectOutput, OutputUnavailable, Typer, open_typer
from dasher_rnn.output.typers import on_wayland
from dasher_rnn.ui.parts.dock import DockPart
from dasher_rnn.ui.parts.prefs import PrefsKeeper
from dasher_rnn.ui.parts.speech import SpeechPart
from dasher_rnn.ui.parts.status import Notices
from dasher_rnn.ui.widgets import make_action, wrap_tip
from dasher_rnn.zoom.boxes import Frame
from dasher_rnn.zoom.controller import WritingController

log = logging.getLogger(__name__)

OUR_FOCUS = "this window has the keyboard focus: click the program to write into"


class OutputPart:
    def __init__(self, controller: WritingController, keeper: PrefsKeeper, notices: Notices, speech: SpeechPart,
                 copy_all: Callable[[], None], host: QWidget,
                 typer_factory: Callable[[], Typer] | None = None, dock: DockPart | None = None) -> None:
        """``host`` is the window whose flags keep the focus where it is; ``copy_all`` copies the text;
        ``typer_factory`` makes the typer when direct output is switched on (default: ``open_typer``); ``dock``
        docks the window while direct output is on (None: it stays as it is)."""
        self.controller, self.keeper, self.notices, self.speech = controller, keeper, notices, speech
        self.host, self._copy_all, self.dock = host, copy_all, dock
        self._typer_factory = typer_factory
        self.direct: DirectOutput | None = None
        self._notice = ""
        self.direct_action = make_action(host, "Type into the focused program", self._on_direct, None,
                                         "Type each character you write into the program that has the keyboard "
                                         "focus (this window stays on top and never takes the focus)", checkable=True)
        self.copy_on_stop_action = make_action(host, "Copy all on stop", self.set_copy_on_stop, None,
                                               "Copy all the text to the clipboard whenever writing stops",
                                               checkable=True)
        self.speak_on_stop_action = make_action(host, "Speak on stop", self.set_speak_on_stop, None,
                                                "Read the current message aloud whenever writing stops",
                                                checkable=True)
        if not speech.available:
            self.speak_on_stop_action.setEnabled(False)
            self.speak_on_stop_action.setToolTip(wrap_tip(speech.speaker.reason))
        self.actions: tuple[QAction, ...] = (self.direct_action,) + ((dock.menu_action,) if dock is not None else ()) \
            + (self.copy_on_stop_action, self.speak_on_stop_action)  # the Output menu

    # -- preferences --------------------------------------------------------------------------------------
    def apply_prefs(self) -> None:
        """Show the loaded preferences and put them into effect (without saving them)."""
        prefs = self.keeper.prefs
        self.copy_on_stop_action.setChecked(prefs.copy_on_stop)
        self.speak_on_stop_action.setChecked(prefs.speak_on_stop)
        self.set_output(prefs.output, remember=False)

    def _on_direct(self, on: bool) -> None:
        self.set_output("direct" if on else "panel")

    def set_copy_on_stop(self, on: bool) -> None:
        self.copy_on_stop_action.setChecked(on)
        self.keeper.remember(copy_on_stop=on)

    def set_speak_on_stop(self, on: bool) -> None:
        self.speak_on_stop_action.setChecked(on)
        self.keeper.remember(speak_on_stop=on)

    def set_output(self, output: str, remember: bool = True) -> None:
        """``"direct"``: also type into the focused program (a message in the status bar when that cannot work);
        ``"panel"``: only our panel."""
        self.direct_action.setChecked(output == "direct")
        self._close_direct()
        notice = ""
        if output == "direct":
            try:
                self.direct = DirectOutput((self._typer_factory or open_typer)())
            except OutputUnavailable as exc:
                notice = f"Direct output unavailable: {exc}. The text stays in this window (Copy all to paste it)."
            else:
                if on_wayland():
                    notice = "Direct output on Wayland reaches only programs running under XWayland."
        self._set_notice(notice)
        direct = output == "direct"
        if self.dock is not None and direct:  # docked first: the flags' change shows the window where it goes
            self.dock.set_docked(True)
        self._set_window_flags(direct)
        if self.dock is not None and not direct:  # put back once it may take the focus again (full screen does)
            self.dock.set_docked(False)
        if remember:
            self.keeper.remember(output=output)

    def _set_window_flags(self, direct: bool) -> None:
        w = self.host
        flags = Qt.WindowType.WindowDoesNotAcceptFocus | Qt.WindowType.WindowStaysOnTopHint
        wanted = (w.windowFlags() | flags) if direct else (w.windowFlags() & ~flags)
        w.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, direct)
        if wanted != w.windowFlags():
            visible = w.isVisible()
            w.setWindowFlags(wanted)  # hides the window
            if visible:
                w.show()

    # -- the window's events ---------------------------------------------------------------------------------
    @property
    def waiting(self) -> bool:
        """Direct output has characters it could not type yet (it tries again each frame)."""
        return self.direct is not None and bool(self.direct.problem)

    def on_frame(self, frame: Frame) -> None:
        """Track the frame's commits and type what is due (the whole message while stopped)."""
        if self.direct is None:
            return
        self.direct.track(frame.committed, frame.uncommitted)
        self._sync()

    def _sync(self, flush: bool = False) -> None:
        c = self.controller
        blocked = OUR_FOCUS if QGuiApplication.focusWindow() is not None else ""
        problem = self.direct.sync(c.zoom.output if flush or not c.running else None, blocked)
        self._set_notice(problem)

    def on_stop(self) -> None:
        """Writing stopped: deliver the whole message, copy it all, say it (as the user chose)."""
        if self.direct is not None:
            self._sync()
        if self.copy_on_stop_action.isChecked():
            self._copy_all()
        if self.speak_on_stop_action.isChecked() and self.speech.say_why_not("Speak on stop"):
            self.speech.speak()

    def finish_message(self, output: str) -> None:
        """A message was finished: all of ``output`` is final."""
        if self.direct is not None:
            self.direct.finish_message(output)
            self._set_notice(self.direct.problem)

    def discard(self) -> None:
        if self.direct is not None:
            self.direct.discard()
            self._set_notice("")

    def close(self) -> None:
        """Deliver what is still due (the window is closing), then let the keyboard go."""
        if self.direct is not None:
            self._sync(flush=True)
        self._close_direct()

    def _close_direct(self) -> None:
        direct, self.direct = self.direct, None
        if direct is not None:
            direct.close()

    def _set_notice(self, text: str) -> None:
        if text != self._notice:
            self._notice = text
            self.notices.set_notice("output", text)
            if text:
                log.info("%s", text)
