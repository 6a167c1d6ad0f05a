"""What moves the pointer, and the input preset: the Input and Preset boxes, and the source that runs (a gaze
source, a head pointer, or the switches of a switch input, ``parts/switches.py``).

The writing part asks ``pointer_screen`` once a frame (a switch input hands its presses to the controller then); a
preset chosen here brings its speeds and control mode into the controller, and ``preset_chosen`` tells the other
parts to show them.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QSignalBlocker, Signal
from PySide6.QtGui import QAction, QGuiApplication
from PySide6.QtWidgets import QComboBox

from dasher_rnn.input.gaze import GazeSource, GazeSourceError
from dasher_rnn.input.one_euro import OneEuroFilter
from dasher_rnn.input.presets import PRESETS
from dasher_rnn.input.registry import INPUTS, open_source
from dasher_rnn.input.webcam import HeadPointerSource
from dasher_rnn.ui.gaze_input import gaze_to_view
from dasher_rnn.ui.head_preview import HeadPreviewWindow
from dasher_rnn.ui.parts.prefs import PrefsKeeper
from dasher_rnn.ui.parts.status import Notices
from dasher_rnn.ui.parts.switches import SwitchPart
from dasher_rnn.ui.view import DasherView
from dasher_rnn.ui.widgets import wrap_tip
from dasher_rnn.zoom.controller import WritingController


class InputPart(QObject):
    preset_chosen = Signal(str)  # the user picked a preset: the controller has its speeds and control mode

    def __init__(self, controller: WritingController, view: DasherView, keeper: PrefsKeeper, notices: Notices,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.controller, self.view, self.keeper, self.notices = controller, view, keeper, notices
        self.gaze: GazeSource | None = None
        self.switches = SwitchPart(controller, view, self)
        self.input_box = QComboBox()
        for name, kind in INPUTS.items():
            self.input_box.addItem(kind.label, name)
        self.input_box.setToolTip("What moves the pointer")
        self.input_box.currentIndexChanged.connect(lambda i: self.set_input(self.input_box.itemData(i)))
        self.preset_box = QComboBox()
        for name, p in PRESETS.items():
            self.preset_box.addItem(p.label, name)
        self.preset_box.setToolTip(wrap_tip("Starting settings for your input device (speed, dwell, smoothing)"))
        self.preset_box.currentIndexChanged.connect(lambda i: self.select_preset(self.preset_box.itemData(i)))
        self.head_preview: HeadPreviewWindow | None = None  # the head pointer's camera picture, while it runs
        self.preview_action = QAction("Head pointer preview", self)
        self.preview_action.setToolTip(wrap_tip("The camera's picture with your face's tracking, and Recentre"))
        self.preview_action.setEnabled(False)  # while the head pointer runs
        self.preview_action.triggered.connect(self.show_head_preview)

    def apply_prefs(self) -> None:
        """Bring the saved input's preset (unless the user chose another by hand for it: ``app --input gaze-udp``
        with new settings writes by dwell, with the control box), show it, and start the saved input (without
        re-saving the input: a tracker missing now is tried again next time)."""
        self._bring_preset()
        self._show_preset(self.controller.preset.name)
        self.set_input(self.keeper.prefs.input, remember=False)

    @property
    def name(self) -> str:
        """The input in use ("mouse" when a gaze source could not start)."""
        return self.input_box.currentData()

    def _show_preset(self, name: str) -> None:
        with QSignalBlocker(self.preset_box):
            self.preset_box.setCurrentIndex(max(0, self.preset_box.findData(name)))

    def select_preset(self, name: str, by_hand: bool = True) -> None:
        """A preset brings its speeds, smoothing for gaze, and its control mode. ``by_hand``: the user picked it
        (the Preset box, Preferences), and it stays with the input in use; otherwise the input brought it."""
        c = self.controller
        p = c.apply_preset(name, adopt_speeds=True)
        self._show_preset(name)
        if self.gaze is not None:
            self.gaze.smoothing = OneEuroFilter(p.smoothing_min_cutoff, p.smoothing_beta)
        self.keeper.remember(preset=name, preset_chosen_for=self.keeper.prefs.input if by_hand else None,
                             speed_bps=c.speed_bps, reverse_speed=c.reverse_speed, auto_speed=c.auto_speed_enabled,
                             control_mode=c.control_mode)
        self.preset_chosen.emit(name)

    def _bring_preset(self) -> None:
        """The input the user chose brings its preset, unless they chose a preset by hand for that input."""
        wanted = self.keeper.prefs.preset_for_input()
        if wanted != self.controller.preset.name:
            self.select_preset(wanted, by_hand=False)

    def set_input(self, name: str, remember: bool = True) -> None:
        """Switch the pointer to the mouse, a gaze source or switches; a source that cannot start falls back to the
        mouse.

        ``remember`` (a choice by the user) saves it, and the input brings its preset unless the user chose one by
        hand for it (switches: the control box; a gaze: dwell); at start-up a missing tracker does not overwrite
        the saved choice, so it is tried again next time.
        """
        self.close()
        kind = INPUTS.get(name)
        if kind is not None and kind.family == "switch":
            self.notices.set_notice("input", self.switches.start(name, self.keeper.prefs))
        elif kind is None or kind.opener is None:
            name = "mouse"
            self.notices.set_notice("input", "")
        else:
            try:
                self.gaze = open_source(name, self._options(), self.controller.preset)
            except GazeSourceError as exc:
                self.notices.set_notice("input", f"{kind.label}: {exc}; using the mouse.")
                name = "mouse"
            else:
                self.notices.set_notice("input", f"{self.gaze.description}.")
                if isinstance(self.gaze, HeadPointerSource):
                    self.preview_action.setEnabled(True)
                    self.show_head_preview()
        self.view.use_mouse = name == "mouse"
        self.view.set_pointer_override(None)
        with QSignalBlocker(self.input_box):
            self.input_box.setCurrentIndex(max(0, self.input_box.findData(name)))
        if remember:
            self.keeper.remember(input=name)
            self._bring_preset()

    def show_head_preview(self) -> None:
        """Open (or bring up) the head pointer's preview window, while the head pointer runs."""
        if not isinstance(self.gaze, HeadPointerSource):
            return
        if self.head_preview is None:
            self.head_preview = HeadPreviewWindow(self.gaze, self.view.window())
        self.head_preview.show()
        self.head_preview.raise_()

    def _options(self) -> dict[str, object]:
        """What an input's opener is given: the preferences, and the screen the window is on in physical pixels
        (the size of the screen whose pixels a tracker such as OptiKey's bridges sends)."""
        options: dict[str, object] = self.keeper.prefs.model_dump()
        screen = self.view.screen()
        if screen is not None:
            geometry, ratio = screen.geometry(), screen.devicePixelRatio()
            options["screen_size"] = (max(1, round(geometry.width() * ratio)), max(1, round(geometry.height() * ratio)))
            options["screen_origin"] = (round(geometry.x() * ratio), round(geometry.y() * ratio))
        return options

    def follow_state(self) -> None:
        """The input's line in the status bar as its source says now (connecting, receiving, retrying, following a
        face...): a source's state changes after it opens, and the line set then would go on saying it."""
        if self.gaze is not None:
            self.notices.set_notice("input", f"{self.gaze.description}.")

    def problems(self) -> str:
        """Why the source gives no pointer now (lost, silent) and what went wrong with its data (bad datagrams or
        lines, a stopped receiver), for the status bar."""
        if self.gaze is None:
            return self.switches.problems()
        return "; ".join(part for part in (self.gaze.lost_reason(), self.gaze.problems()) if part)

    def pointer_screen(self) -> tuple[tuple[float, float] | None, bool]:
        """(where the pointer is in view pixels, whether it counts as inside the view)."""
        self.switches.tick()  # a switch input: its presses before the frame (the controller then ignores the pointer)
        if self.gaze is not None:
            sample = self.gaze.latest()
            if sample is None:
                self.view.set_pointer_override(None)
                return None, False
            screen = self.view.screen() or QGuiApplication.primaryScreen()
            point = gaze_to_view(sample, screen.geometry(), self.view)
            self.view.set_pointer_override(point)
            # a gaze just off the view (a tracker's error at its edge) is on its edge; further out, it is away
            caught = self.view.viewport().caught_pixel(point.x(), point.y())
            return caught if caught is not None else (point.x(), point.y()), caught is not None
        pointer = self.view.pointer_screen
        return pointer, pointer is not None

    def close(self) -> None:
        """Stop the gaze source or the switches, if they run."""
        self.switches.stop()
        preview, self.head_preview = self.head_preview, None
        self.preview_action.setEnabled(False)
        if preview is not None:
            preview.close()
            preview.deleteLater()
        gaze, self.gaze = self.gaze, None
        if gaze is not None:
            gaze.close()
            self.notices.set_notice("input-problems", "")
