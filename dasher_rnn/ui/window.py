"""The main window: wires the controls, the frame timer and the input devices to a WritingController.

Everything about writing (zooming, start and stop, dwell, speed control, learning) happens in the
controller; the window only feeds it pointer positions, draws the frames it returns, shows the text and
figures, and owns the user's preferences: when the user changes something it tells the controller (through
its methods), updates its Preferences and saves them through the SettingsStore.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QElapsedTimer, QRectF, QSignalBlocker, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QSpinBox,
    QSplitter,
    QToolBar,
    QWidget,
)

from dasher_rnn.adapt.profiles import ProfileError
from dasher_rnn.adapt.progress import MessageRecord, ProgressLog
from dasher_rnn.adapt.progress import now as progress_now
from dasher_rnn.input.gaze import GazeSource, GazeSourceError
from dasher_rnn.input.one_euro import OneEuroFilter
from dasher_rnn.input.presets import PRESETS
from dasher_rnn.journal import Journal
from dasher_rnn.settings import FONT_SIZE_RANGE, Preferences, SettingsError, SettingsStore
from dasher_rnn.ui.documents import documents_folder, timestamped_path
from dasher_rnn.ui.gaze_input import GAZE_INPUTS, gaze_to_view, open_gaze_source
from dasher_rnn.ui.output_mode import OutputMode
from dasher_rnn.ui.speech import Speaker
from dasher_rnn.ui.stats_view import StatsDialog
from dasher_rnn.ui.text_panel import OutputPanel
from dasher_rnn.ui.tutorial import TutorialDialog
from dasher_rnn.ui.undo_bar import UndoBar
from dasher_rnn.ui.view import DasherView
from dasher_rnn.ui.widgets import wrap_tip
from dasher_rnn.zoom.control import CONTROL_ITEMS, Action, last_sentence
from dasher_rnn.zoom.controller import SPEED_RANGE, MessageStats, WritingController
from dasher_rnn.zoom.model import Frame

log = logging.getLogger(__name__)

INPUT_LABELS = {"mouse": "Mouse", "gaze-udp": "Gaze over UDP", "tobii": "Tobii eye tracker",
                "dasher-socket": "Dasher socket"}
SCHEME_LABELS = {"default": "Default", "high-contrast": "High contrast"}
DEFAULT_INTERVAL_MS = 16
MAX_DT = 0.1  # a stalled frame (window dragged, machine busy) must not jump the zoom
STATUS_SECONDS = 0.25  # the status bar's figures change slowly; refreshing them every frame is wasted work
SAVE_DELAY_MS = 500  # a spin box held down changes many times a second: save once it settles
PANEL_HEIGHT = 110  # the text panel's starting height in pixels (the canvas takes the rest)
FULL_SCREEN_PRESETS = ("eye-tracker", "head-mouse")  # the window opens full screen for these


def frame_interval_ms(refresh_hz: float) -> int:
    """One frame per screen refresh (16 ms when the screen does not say)."""
    return max(4, round(1000 / refresh_hz)) if refresh_hz and refresh_hz > 1 else DEFAULT_INTERVAL_MS


class MainWindow(QMainWindow):
    def __init__(self, controller: WritingController, store: SettingsStore, prefs: Preferences,
                 start_timer: bool = True, parent: QWidget | None = None, journal: Journal | None = None) -> None:
        """``controller`` is built from ``prefs.controller_config()``; ``prefs`` are what ``store`` loaded;
        ``journal`` keeps the text safe on disk as it is written (the app always gives one)."""
        super().__init__(parent)
        self.controller = controller
        self.store = store
        self.prefs = prefs
        self.journal = journal
        self.restore_bar: QToolBar | None = None
        self._dialog: QDialog | None = None  # the Preferences, Profile or Help dialog last opened
        self.gaze: GazeSource | None = None
        self.frames = 0
        self._closed = False
        self._running_shown: bool | None = None
        self._since_status = STATUS_SECONDS
        self._notices: dict[str, str] = {}
        self.speaker = Speaker()
        self.setWindowTitle(f"dasher-rnn ({getattr(controller.source, 'name', 'model')})")

        self.view = DasherView(controller.zoom.alphabet)
        self.panel = OutputPanel()
        # the text panel above the canvas: dragged smaller (down to nothing) or hidden with the Text panel button;
        # the canvas takes all the rest
        self.splitter = splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.panel)
        splitter.addWidget(self.view)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        splitter.setCollapsible(0, True)
        splitter.setCollapsible(1, False)
        splitter.setHandleWidth(8)  # easy to grab with a head mouse
        self.setCentralWidget(splitter)
        splitter.setSizes([PANEL_HEIGHT, 10 * PANEL_HEIGHT])

        self._build_actions()
        self._build_menus()
        self._build_toolbars()
        self._build_status_bar()
        self.output_mode = OutputMode(self)  # the Output menu: direct output, copy and speak on stop
        self._build_tutorial_and_progress()
        self.view.clicked.connect(self._on_view_clicked)

        self._save_timer = QTimer(self)
        self._save_timer.setSingleShot(True)
        self._save_timer.setInterval(SAVE_DELAY_MS)
        self._save_timer.timeout.connect(self.save_prefs)

        self._apply_prefs()
        if store.notice:
            self.set_notice("settings", store.notice)
        self._offer_restore()

        self._clock = QElapsedTimer()
        self._clock.start()
        self.timer = QTimer(self)
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        screen = QGuiApplication.primaryScreen()
        self.timer.setInterval(frame_interval_ms(screen.refreshRate() if screen is not None else 0.0))
        self.timer.timeout.connect(self.tick)
        self.tick(0.0)
        if start_timer:
            self.timer.start()
        self.resize(1100, 800)  # until show_sized_to_screen (tests and scripts size it themselves)
        self.view.setFocus()

    # -- building -----------------------------------------------------------------------
    def _action(self, text: str, slot, shortcut: QKeySequence | str | None = None, tip: str = "",
                checkable: bool = False) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setToolTip(wrap_tip(tip))  # a long tooltip is never cut off at the window's edge
            action.setStatusTip(tip)
        action.setCheckable(checkable)
        action.triggered.connect(slot)
        self.addAction(action)  # shortcuts work whichever widget has the focus
        return action

    def _build_actions(self) -> None:
        self.start_action = self._action("Start", self.toggle_running, "Space", "Start or stop writing (Space)")
        self.undo_action = self._action("Undo writing", self.undo_writing, QKeySequence.StandardKey.Undo,
                                        "Take back what the last run of writing wrote (since the last start), "
                                        "and what it taught the model")
        self.undo_action.setEnabled(False)
        self.turbo_action = self._action("Turbo", self._on_turbo, None,
                                         "Zoom faster while this is on or while Shift is held", checkable=True)
        self.copy_action = self._action("Copy all", self.copy_all, "Ctrl+Shift+C", "Copy all the text to the clipboard")
        self.clear_action = self._action("Clear", self.clear_text, None, "Throw away all the text")
        self.save_action = self._action("Save", self.save_text, QKeySequence.StandardKey.Save,
                                        f"Save all the text at once into a new file in {documents_folder()}")
        self.save_as_action = self._action("Save As…", self.save_text_as, QKeySequence.StandardKey.SaveAs,
                                           "Save all the text to a file you name")
        self.preferences_action = self._action("Preferences", self.show_preferences, None,
                                               "Speed, input, stopping, looks, learning and output, with large "
                                               "controls")
        self.profile_action = self._action("Profile", self.show_profiles, None,
                                           "Whose writing the model learns (used from the next start)")
        self.help_action = self._action("Help", self.show_help, QKeySequence.StandardKey.HelpContents,
                                        "How to steer, start and stop, back out and undo; where things are kept")
        self.speak_action = self._action("Speak", self.speak, "Ctrl+R", "Read the current message aloud")
        if not self.speaker.available:
            self.speak_action.setEnabled(False)
            self.speak_action.setToolTip(wrap_tip(self.speaker.reason))
            self.speak_action.setStatusTip(self.speaker.reason)
        self.new_message_action = self._action("New message", self.new_message, "Ctrl+N",
                                               "Finish this message and start the next (Ctrl+N)")
        self.quit_action = self._action("Quit", self.close, QKeySequence.StandardKey.Quit, "Close the window")
        self.panel_action = self._action("Text panel", self.set_text_panel, None,
                                         "Show or hide the text above the canvas (drag its edge to resize it)",
                                         checkable=True)
        self.control_action = self._action("Control box", self.set_control_mode, None,
                                           "A box after the letters to stop, delete, speak, copy and start a new "
                                           "message by steering, without a click (Dasher's control mode)",
                                           checkable=True)
        self.full_screen_action = self._action("Full screen", self.set_full_screen, "F11",
                                               "Use the whole screen for the window (F11)", checkable=True)

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        file_menu.addAction(self.save_action)
        file_menu.addAction(self.save_as_action)
        file_menu.addSeparator()
        file_menu.addAction(self.preferences_action)
        file_menu.addAction(self.profile_action)
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)
        edit_menu = bar.addMenu("&Edit")
        edit_menu.addAction(self.undo_action)
        text_menu = bar.addMenu("&Text")
        for action in (self.copy_action, self.clear_action, self.new_message_action, self.speak_action):
            text_menu.addAction(action)
        writing_menu = bar.addMenu("&Writing")
        writing_menu.addAction(self.start_action)
        writing_menu.addAction(self.turbo_action)
        writing_menu.addAction(self.control_action)
        view_menu = bar.addMenu("&View")
        view_menu.addAction(self.panel_action)
        view_menu.addAction(self.full_screen_action)
        help_menu = bar.addMenu("&Help")
        help_menu.addAction(self.help_action)

    def _menu(self, title: str):
        """The menu bar's menu called ``title``, made when there is none."""
        for action in self.menuBar().actions():
            if action.menu() is not None and action.text() == title:
                return action.menu()
        return self.menuBar().addMenu(title)

    def _build_tutorial_and_progress(self) -> None:
        self.tutorial: TutorialDialog | None = None
        self.tutorial_action = self._action("Tutorial", lambda: self.open_tutorial(), None,  # not ``checked``
                                            "Learn to steer: short practice phrases, nothing of them learned")
        self.tutorial_action.setEnabled(self.controller.writer is not None)
        self._menu("&Help").addAction(self.tutorial_action)
        self.progress_action = self._action("Progress", lambda: self.open_progress(), None,
                                            "Characters per minute and bits per character of your messages over time")
        self._menu("&View").addAction(self.progress_action)
        writer = self.controller.writer
        self.progress_log = ProgressLog.for_profile(writer.store, writer.profile) \
            if writer is not None and writer.profile and getattr(writer, "store", None) is not None else None

    def _build_toolbars(self) -> None:
        """Writing controls on the first row; text actions and how things look on the second (one row does
        not fit a laptop screen)."""
        controls = QToolBar("Writing")
        controls.setObjectName("writing-toolbar")
        controls.addAction(self.start_action)
        controls.addAction(self.undo_action)
        undo_button = controls.widgetForAction(self.undo_action)  # large: the one to reach for after a mistake
        undo_font = undo_button.font()
        undo_font.setBold(True)
        undo_font.setPointSizeF(undo_font.pointSizeF() * 1.3)
        undo_button.setFont(undo_font)
        undo_button.setMinimumSize(140, 40)
        controls.addAction(self.turbo_action)

        self.speed_box = QDoubleSpinBox()
        self.speed_box.setRange(*SPEED_RANGE)
        self.speed_box.setSingleStep(0.1)
        self.speed_box.setDecimals(1)
        self.speed_box.setSuffix(" bits/s")
        self.speed_box.setToolTip(wrap_tip("Zoom speed: the most information per second you write"))
        self.speed_box.valueChanged.connect(self._on_speed)
        controls.addWidget(QLabel(" Speed "))
        controls.addWidget(self.speed_box)

        self.auto_speed_box = QCheckBox("Auto")
        self.auto_speed_box.toggled.connect(self._on_auto_speed)
        controls.addWidget(self.auto_speed_box)
        controls.addSeparator()

        self.input_box = QComboBox()
        for name, label in INPUT_LABELS.items():
            self.input_box.addItem(label, name)
        self.input_box.setToolTip("What moves the pointer")
        self.input_box.currentIndexChanged.connect(self._on_input)
        controls.addWidget(QLabel(" Input "))
        controls.addWidget(self.input_box)

        self.preset_box = QComboBox()
        for name, p in PRESETS.items():
            self.preset_box.addItem(p.label, name)
        self.preset_box.setToolTip(wrap_tip("Starting settings for your input device (speed, dwell, smoothing)"))
        self.preset_box.currentIndexChanged.connect(self._on_preset)
        controls.addWidget(QLabel(" Preset "))
        controls.addWidget(self.preset_box)
        controls.addSeparator()

        self.adapt_box = QCheckBox("Adapt")
        self.adapt_box.toggled.connect(self._on_adaptation)
        controls.addWidget(self.adapt_box)
        controls.addSeparator()
        controls.addAction(self.new_message_action)  # far from Copy all, on the other row
        self.addToolBar(controls)
        self.addToolBarBreak()

        text = QToolBar("Text")
        text.setObjectName("text-toolbar")
        for action in (self.copy_action, self.save_action, self.speak_action):
            text.addAction(action)
        text.addSeparator()

        self.font_box = QSpinBox()
        self.font_box.setRange(*FONT_SIZE_RANGE)
        self.font_box.setSuffix(" pt")
        self.font_box.setToolTip("Size of the text panel's font")
        self.font_box.valueChanged.connect(self._on_font_size)
        text.addWidget(QLabel(" Font "))
        text.addWidget(self.font_box)

        self.scheme_box = QComboBox()
        for name, label in SCHEME_LABELS.items():
            self.scheme_box.addItem(label, name)
        self.scheme_box.setToolTip("Colours of the boxes and the text")
        self.scheme_box.currentIndexChanged.connect(self._on_scheme)
        text.addWidget(QLabel(" Colours "))
        text.addWidget(self.scheme_box)
        text.addSeparator()
        text.addAction(self.panel_action)
        text.addAction(self.full_screen_action)
        text.addSeparator()
        for action in (self.preferences_action, self.profile_action, self.help_action):
            text.addAction(action)
        text.addSeparator()
        text.addAction(self.clear_action)  # last, away from the rest: it throws the text away (with an Undo)
        self.addToolBar(text)
        self.undo_bar = UndoBar(self)  # the large Undo after New message and Clear
        self.addToolBarBreak()
        self.addToolBar(self.undo_bar)

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        self.speed_label = QLabel()
        self.rate_label = QLabel()
        self.cpm_label = QLabel()
        self.adaptation_label = QLabel()
        self.profile_label = QLabel()
        self.notice_label = QLabel()
        self.notice_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        for label in (self.speed_label, self.rate_label, self.cpm_label, self.adaptation_label, self.profile_label):
            bar.addWidget(label)
        bar.addWidget(self.notice_label, 1)

    # -- preferences ----------------------------------------------------------------------
    def _apply_prefs(self) -> None:
        """Show the loaded preferences in the controls and put them into effect (without re-saving them)."""
        prefs, c = self.prefs, self.controller
        with QSignalBlocker(self.speed_box):
            self.speed_box.setValue(c.speed_bps)
        self._show_auto_speed()
        with QSignalBlocker(self.preset_box):
            self.preset_box.setCurrentIndex(max(0, self.preset_box.findData(c.preset.name)))
        with QSignalBlocker(self.control_action):
            self.control_action.setChecked(c.control_mode)
        with QSignalBlocker(self.font_box):
            self.font_box.setValue(prefs.font_size)
        with QSignalBlocker(self.scheme_box):
            self.scheme_box.setCurrentIndex(max(0, self.scheme_box.findData(prefs.colour_scheme)))
        self.panel.set_font_size(prefs.font_size)
        self.panel.set_scheme(prefs.colour_scheme)
        self.set_text_panel(prefs.text_panel, remember=False)
        self.view.scheme = prefs.colour_scheme
        self.view.min_label_px = prefs.label_min_px
        self._setup_adaptation()
        self.set_input(prefs.input, remember=False)
        self.output_mode.apply_prefs()

    def _setup_adaptation(self) -> None:
        writer = self.controller.writer
        can_adapt = writer is not None and writer.can_adapt
        with QSignalBlocker(self.adapt_box):
            self.adapt_box.setChecked(self.prefs.adaptation and can_adapt)
        if not can_adapt:
            why = "This model does not learn while you write" if writer is None or writer.model == "uniform" \
                else "Adaptation was off when the app started: tick to turn it on from the next start"
            self.adapt_box.setToolTip(wrap_tip(why))
            self.adapt_box.setEnabled(writer is not None and writer.model != "uniform")
        else:
            learns = " and ".join(writer.status().learns)
            self.adapt_box.setToolTip(wrap_tip(f"Learn from what you write ({learns} adapt to you)"))
            if not self.prefs.adaptation:
                writer.set_adapting(False)

    def remember(self, **changes: object) -> None:
        """The user changed preferences: keep them, and save soon (a held spin box changes many times a second)."""
        self.prefs = self.prefs.updated(**changes)
        self._save_timer.start()

    def save_prefs(self) -> None:
        self._save_timer.stop()
        try:
            self.store.save(self.prefs)
        except SettingsError as exc:
            self.set_notice("settings", str(exc))

    def _on_speed(self, value: float) -> None:
        self.controller.set_speed(value)
        self.remember(speed_bps=self.controller.speed_bps)

    def _show_auto_speed(self) -> None:
        """The box follows the setting; presets that keep the speed fixed (gaze) grey it out."""
        allowed = self.controller.preset.auto_speed
        with QSignalBlocker(self.auto_speed_box):
            self.auto_speed_box.setChecked(self.controller.auto_speed_enabled)
        self.auto_speed_box.setEnabled(allowed)
        self.auto_speed_box.setToolTip("Adjust the speed automatically to how you steer" if allowed
                                       else "This input preset keeps the speed fixed")

    def _on_auto_speed(self, on: bool) -> None:
        self.controller.set_auto_speed(on)
        self.remember(auto_speed=on)

    def _on_preset(self, index: int) -> None:
        name = self.preset_box.itemData(index)
        self.select_preset(name)

    def select_preset(self, name: str) -> None:
        """The user picked a preset: it brings its speeds (and smoothing for gaze)."""
        c = self.controller
        p = c.apply_preset(name, adopt_speeds=True)
        with QSignalBlocker(self.preset_box):
            self.preset_box.setCurrentIndex(max(0, self.preset_box.findData(name)))
        with QSignalBlocker(self.speed_box):
            self.speed_box.setValue(self.controller.speed_bps)
        self._show_auto_speed()
        if self.gaze is not None:
            self.gaze.smoothing = OneEuroFilter(p.smoothing_min_cutoff, p.smoothing_beta)
        with QSignalBlocker(self.control_action):
            self.control_action.setChecked(c.control_mode)  # the preset brings its control mode
        self._running_shown = None  # the hint depends on the preset
        self.remember(preset=name, speed_bps=c.speed_bps, reverse_speed=c.reverse_speed, auto_speed=c.auto_speed_enabled,
                      control_mode=c.control_mode)

    def set_control_mode(self, on: bool) -> None:
        """Show the control box after the letters, or not (the view starts again from the text); the choice is kept."""
        with QSignalBlocker(self.control_action):
            self.control_action.setChecked(bool(on))
        self.output_mode.on_frame(self.controller.set_control_mode(bool(on)))
        self.view.set_frame(self.controller.zoom.idle(), 0.0)
        self.remember(control_mode=bool(on))

    def _on_adaptation(self, on: bool) -> None:
        self.remember(adaptation=on)
        writer = self.controller.writer
        if writer is not None and writer.can_adapt:
            writer.set_adapting(on)
        elif on:
            self.set_notice("adaptation", "Adaptation will be on from the next start.")
        self.update_status()

    def _on_font_size(self, size: int) -> None:
        self.panel.set_font_size(size)
        self.remember(font_size=size)

    def _on_scheme(self, index: int) -> None:
        self.set_scheme(self.scheme_box.itemData(index))

    def set_scheme(self, scheme: str) -> None:
        with QSignalBlocker(self.scheme_box):
            self.scheme_box.setCurrentIndex(max(0, self.scheme_box.findData(scheme)))
        self.view.scheme = scheme
        self.panel.set_scheme(scheme)
        self.panel.set_font_size(self.prefs.font_size)
        self.view.update()
        self.remember(colour_scheme=scheme)

    # -- layout ---------------------------------------------------------------------------
    def set_text_panel(self, shown: bool, remember: bool = True) -> None:
        """Show or hide the text panel (the canvas takes its place); the choice is kept."""
        shown = bool(shown)
        with QSignalBlocker(self.panel_action):
            self.panel_action.setChecked(shown)
        self.panel.setVisible(shown)
        if shown and self.splitter.sizes()[0] == 0:  # dragged shut before: open it again at its usual height
            self.splitter.setSizes([PANEL_HEIGHT, max(1, sum(self.splitter.sizes()) - PANEL_HEIGHT)])
        if remember:
            self.remember(text_panel=shown)

    def set_full_screen(self, on: bool) -> None:
        with QSignalBlocker(self.full_screen_action):
            self.full_screen_action.setChecked(bool(on))
        if on:
            self.showFullScreen()
        else:
            self.showNormal()
            self._fit_to_screen()

    def _fit_to_screen(self) -> None:
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is not None:
            self.setGeometry(screen.availableGeometry())

    def show_sized_to_screen(self) -> None:
        """Open as large as the screen: full screen for the gaze and head-mouse presets (every pixel is a
        target), the whole available area otherwise."""
        if self.controller.preset.name in FULL_SCREEN_PRESETS:
            self.set_full_screen(True)
        else:
            self._fit_to_screen()
            self.showMaximized()

    # -- input ----------------------------------------------------------------------------
    def _on_input(self, index: int) -> None:
        self.set_input(self.input_box.itemData(index), remember=True)

    def set_input(self, name: str, remember: bool = True) -> None:
        """Switch the pointer to the mouse or a gaze source; a source that cannot start falls back to the mouse.

        ``remember`` (a choice by the user) saves it; at start-up a missing tracker does not overwrite the saved
        choice, so it is tried again next time.
        """
        self._close_gaze()
        if name not in GAZE_INPUTS:
            name = "mouse"
            self.set_notice("input", "")
        else:
            try:
                self.gaze = open_gaze_source(name, self.prefs, self.controller.preset)
            except GazeSourceError as exc:
                self.set_notice("input", f"{INPUT_LABELS[name]}: {exc}; using the mouse.")
                name = "mouse"
            else:
                self.set_notice("input", f"{self.gaze.description}.")
                if remember and self.controller.preset.name == "mouse":
                    self.select_preset("eye-tracker")  # clicking to start and fast zooming do not suit gaze
        self.view.use_mouse = name == "mouse"
        self.view.set_pointer_override(None)
        with QSignalBlocker(self.input_box):
            self.input_box.setCurrentIndex(max(0, self.input_box.findData(name)))
        if remember:
            self.remember(input=name)

    def _close_gaze(self) -> None:
        gaze, self.gaze = self.gaze, None
        if gaze is not None:
            gaze.close()
            self.set_notice("input-problems", "")

    def _pointer_screen(self) -> tuple[tuple[float, float] | None, bool]:
        """(where the pointer is in view pixels, whether it counts as inside the view)."""
        if self.gaze is not None:
            sample = self.gaze.latest()
            if sample is None:
                self.view.set_pointer_override(None)
                return None, False
            screen = self.view.screen() or QGuiApplication.primaryScreen()
            point = gaze_to_view(sample, screen.geometry(), self.view)
            self.view.set_pointer_override(point)
            return (point.x(), point.y()), QRectF(self.view.rect()).contains(point)
        pointer = self.view.pointer_screen
        return pointer, pointer is not None

    # -- frames -----------------------------------------------------------------------------
    def tick(self, dt: float | None = None) -> Frame:
        """One frame: read the pointer, step the controller, draw. ``dt`` (seconds) defaults to the time
        since the last frame; tests and scripts pass a fixed one."""
        elapsed = self._clock.restart() / 1000.0
        if dt is None:
            dt = min(elapsed, MAX_DT)
        pointer_screen, inside = self._pointer_screen()
        pointer = self.view.viewport().to_dasher(*pointer_screen) if pointer_screen is not None and inside else None
        shift = bool(QGuiApplication.keyboardModifiers() & Qt.KeyboardModifier.ShiftModifier)
        self.controller.turbo = self.turbo_action.isChecked() or shift
        frame = self.controller.frame(pointer, dt)
        if frame.finished is not None:  # New message in the control box: that message is final
            self.output_mode.finish_message(frame.finished)
            self.record_message(self.controller.finished_stats)
        self.output_mode.on_frame(frame)
        if frame.action is not None:
            self._on_control_action(frame.action)
        self.view.set_frame(frame, self.controller.dwell.progress)
        self.panel.show_text(self.controller.text)
        if self.journal is not None:
            self.journal.note(self.controller.text)
        self.frames += 1
        if self.controller.running != self._running_shown:
            self._show_running()
        if self.controller.running:  # while running there is always the run itself to take back
            self.undo_action.setEnabled(True)
        self._since_status += dt
        if self._since_status >= STATUS_SECONDS:
            self.update_status()
        return frame

    def _show_running(self) -> None:
        was_running = self._running_shown
        running = self._running_shown = self.controller.running
        if was_running and not running:
            self.output_mode.on_stop()
        self.start_action.setText("Stop" if running else "Start")
        self.undo_action.setEnabled(running or self.controller.can_undo)
        why = {"outside": "Paused (the pointer left the canvas)",
               "rest": "Stopped (the pointer rested)",
               "control": "Stopped (the control box)"}.get(self.controller.stopped_because, "Stopped")
        if running:
            self.view.hint = ""
        elif self.controller.preset.dwell_start:
            self.view.hint = f"{why}: rest the pointer on the crosshair to start"
        else:
            self.view.hint = f"{why}: click or press Space to start"
        self.view.update()

    def toggle_running(self) -> None:
        self.controller.toggle()
        self._show_running()

    def undo_writing(self) -> None:
        """Take back the last run of writing and what it taught the model (writing stops)."""
        undone = self.controller.undo_run()
        if undone is not None:
            self.output_mode.on_frame(undone)  # direct output takes the run back out of the other program too
        frame = self.controller.zoom.idle()
        self.output_mode.on_frame(frame)
        self.panel.show_text(self.controller.text)
        self._show_running()
        self.view.set_frame(frame, 0.0)
        self.statusBar().showMessage("Took back the last run of writing" if undone else "Nothing to take back", 4000)

    def _on_control_action(self, action: Action) -> None:
        """The crosshair entered an action's box in the control box: the zoom has made its text edits and the
        controller has stopped (Stop) or started the next message (New message); the rest is done here."""
        if action in (Action.SPEAK, Action.SPEAK_SENTENCE):
            if not self.speaker.available:
                self.set_notice("speech", f"Speak: {self.speaker.reason}.")
            elif action == Action.SPEAK:
                self.speak()
            else:
                c = self.controller
                self.speaker.speak(last_sentence(c.zoom.output)
                                   or last_sentence(next((m for m in reversed(c.history.splitlines()) if m.strip()), "")))
        elif action == Action.COPY:
            self.copy_all()
        label = next(item.label for item in CONTROL_ITEMS if item.action == action)
        self.statusBar().showMessage(f"Control box: {label}", 3000)

    def _on_view_clicked(self) -> None:
        self.view.setFocus()
        if self.controller.preset.start_on_click:
            self.toggle_running()

    def _on_turbo(self, on: bool) -> None:
        self.controller.turbo = on

    # -- status ---------------------------------------------------------------------------
    def update_status(self) -> None:
        self._since_status = 0.0
        if self.journal is not None and (self.journal.notice or "") != self._notices.get("journal", ""):
            self.set_notice("journal", self.journal.notice or "")
        c = self.controller
        stats = c.stats()
        self.speed_label.setText(f"Speed {stats.speed_bps:.1f} bits/s")
        self.rate_label.setText(f"{stats.bits_per_second:.1f} bits/s now")
        self.cpm_label.setText(f"{stats.chars_per_minute:.0f} chars/min")
        status = c.writer.status() if c.writer is not None else None
        if status is None or not status.adapting:
            self.adaptation_label.setText("adaptation off")
        elif "rnn" in status.learns:
            self.adaptation_label.setText(f"adapting: {status.updates} updates, {status.rollbacks} rollbacks")
        else:
            self.adaptation_label.setText(f"adapting: {' and '.join(status.learns)}")
        profile = status.profile if status is not None else None
        self.profile_label.setText(f"profile: {profile}" if profile else "profile: none")
        session_notice = status.notice if status is not None else None
        if session_notice and self._notices.get("profile") != session_notice:
            self.set_notice("profile", session_notice)
        if self.gaze is not None and self._notices.get("input-problems", "") != (problems := self.gaze.problems()):
            self.set_notice("input-problems", problems)  # bad datagrams or lines, a stopped receiver
        if (abs(self.speed_box.value() - c.speed_bps) >= 0.05 and not self.speed_box.hasFocus()):
            with QSignalBlocker(self.speed_box):  # auto speed moved the setting
                self.speed_box.setValue(c.speed_bps)

    def set_notice(self, key: str, text: str) -> None:
        """Keep one notice per topic (settings, profile, input...) in the status bar; empty text removes it."""
        if text:
            self._notices[key] = text
        else:
            self._notices.pop(key, None)
        joined = "  ·  ".join(self._notices.values())
        self.notice_label.setText(joined)
        self.notice_label.setToolTip(wrap_tip(joined, 100))

    @property
    def notice(self) -> str:
        return self.notice_label.text()

    # -- text actions -------------------------------------------------------------------------
    # -- the tutorial ---------------------------------------------------------------------------
    def open_tutorial(self, start_timer: bool = True) -> TutorialDialog | None:
        """Show the tutorial over the window; the window's own frames wait until it closes (so gaze and dwell
        act only there). It practises with this Writer and teaches it nothing. None once the window closed
        (the first start opens it a moment after showing the window, which may be closed by then)."""
        if self._closed:
            return None
        if self.tutorial is not None:
            return self.tutorial
        self.controller.stop()
        self._show_running()
        self._timer_was_active = self.timer.isActive()
        self.timer.stop()
        self.splitter.setEnabled(False)  # the canvas waits too (with direct output the tutorial is not modal)
        dialog = self.tutorial = TutorialDialog(self.controller.writer, self.prefs, self.controller.speed_bps,
                                                self.gaze, self, start_timer=start_timer)
        dialog.finished.connect(self._tutorial_closed)
        dialog.setGeometry(self.geometry())
        if self.windowFlags() & Qt.WindowType.WindowDoesNotAcceptFocus:  # direct output: the focus stays put
            dialog.setWindowFlags(dialog.windowFlags() | Qt.WindowType.WindowDoesNotAcceptFocus
                                  | Qt.WindowType.WindowStaysOnTopHint)
            dialog.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, True)
            dialog.setModal(False)  # Qt gives a modal window the focus, whatever its flags
        dialog.showFullScreen() if self.isFullScreen() else dialog.show()
        return dialog

    def _tutorial_closed(self, _result: int) -> None:
        dialog, self.tutorial = self.tutorial, None
        if dialog is not None and dialog.chosen_speed is not None:
            self.speed_box.setValue(dialog.chosen_speed)  # as if set in the box: the controller and preferences
        if not self.prefs.tutorial_done:
            self.remember(tutorial_done=True)
        self.splitter.setEnabled(True)
        self._clock.restart()
        if getattr(self, "_timer_was_active", False) and not self._closed:
            self.timer.start()
        if dialog is not None:
            dialog.deleteLater()

    # -- progress ---------------------------------------------------------------------------------
    def record_message(self, stats: MessageStats | None = None) -> None:
        """Keep how a message was written in the profile's record of progress: ``stats`` of one just finished,
        or (None) the current one, which is about to be cleared or closed. The tutorial's are never kept: it has
        its own controller."""
        stats = stats if stats is not None else self.controller.message_stats()
        if self.progress_log is None or stats.characters == 0 or stats.seconds <= 0:
            return
        record = MessageRecord(progress_now(), stats.characters, round(stats.seconds, 3), round(stats.bits, 3),
                               stats.corrections, speed_bps=round(self.controller.speed_bps, 2))
        try:
            self.progress_log.record(record)
        except OSError as exc:
            self.set_notice("progress", f"Could not keep this message's figures ({exc.strerror or exc})")

    def open_progress(self) -> StatsDialog:
        records = self.progress_log.read() if self.progress_log is not None else []
        writer = self.controller.writer
        dialog = StatsDialog(records, writer.profile if writer is not None else None, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.setGeometry(self.geometry())
        dialog.show()
        return dialog

    # -- unsaved text from an earlier run ------------------------------------------------------
    def _offer_restore(self) -> None:
        """Text written in an earlier run and never saved (a crash, a power cut, a closed window): offered back
        in a bar of large buttons until the user restores or discards it."""
        entry = self.journal.pending if self.journal is not None else None
        if entry is None:
            return
        bar = QToolBar("Unsaved text")
        bar.setObjectName("restore-toolbar")
        bar.setStyleSheet("QToolButton { font-size: 14pt; padding: 8px 16px; } QLabel { font-size: 12pt; }")
        words = len(entry.text.split())
        bar.addWidget(QLabel(f" Unsaved text from {entry.updated} ({words} words): "))
        bar.addAction("Restore it", lambda: self.resolve_restore(True)).setToolTip(wrap_tip(entry.text[-200:]))
        bar.addAction("Discard it", lambda: self.resolve_restore(False))
        self.addToolBarBreak()
        self.addToolBar(bar)
        self.restore_bar = bar

    def resolve_restore(self, restore: bool) -> None:
        entry = self.journal.pending if self.journal is not None else None
        if entry is not None and restore:
            c = self.controller
            c.history = entry.text + ("" if entry.text.endswith("\n") else "\n") + c.history
            self.panel.show_text(c.text)
            self.journal.note(c.text)
            self.journal.flush()
        if entry is not None:
            self.journal.resolve()
        if self.restore_bar is not None:
            self.removeToolBar(self.restore_bar)
            self.restore_bar.deleteLater()
            self.restore_bar = None
        self._offer_restore()  # an older one, if several runs ended unsaved

    def copy_all(self) -> None:
        QGuiApplication.clipboard().setText(self.controller.text)

    def clear_text(self) -> None:
        """Throw all the text away; a large Undo puts it back for a few seconds."""
        self.record_message()
        cleared = self.controller.text
        self.output_mode.discard()
        self.controller.clear()
        self.panel.show_text(self.controller.text)
        self._show_running()
        if cleared:
            self.undo_bar.offer("All the text was cleared.", lambda: self._restore_cleared(cleared))

    def _restore_cleared(self, text: str) -> None:
        """Undo Clear: the text comes back above whatever was written since (as finished messages)."""
        c = self.controller
        c.history = text + ("" if text.endswith("\n") else "\n") + c.history
        self.panel.show_text(c.text)
        self.statusBar().showMessage("The cleared text is back", 4000)

    def new_message(self) -> None:
        """Finish this message; a large Undo takes it back for a few seconds (while nothing new is written)."""
        finished = bool(self.controller.zoom.output)
        self.output_mode.finish_message(self.controller.zoom.output)
        self.controller.new_message()
        self.record_message(self.controller.finished_stats)
        self.panel.show_text(self.controller.text)
        self._show_running()
        if finished:
            self.undo_bar.offer("New message started.", self._reopen_message)

    def _reopen_message(self) -> None:
        reopened = self.controller.reopen_message()
        self.panel.show_text(self.controller.text)
        self.view.set_frame(self.controller.zoom.idle(), 0.0)
        self.statusBar().showMessage("Back in the last message" if reopened
                                     else "Something was written since: the new message stays", 4000)

    def save_text(self, path: str | Path | None = None) -> bool:
        """Write all the text as UTF-8, at once: to ``path``, or (none given) to a new timestamped file in the
        documents folder, with no dialog to answer. Errors go to a message box."""
        if not path:
            folder = documents_folder()
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                QMessageBox.warning(self, "Save the text", f"Could not make the folder {folder}:\n{exc}")
                return False
            path = timestamped_path(folder)
        return self._write_text(Path(path))

    def save_text_as(self) -> bool:
        """Save, asking where (for keyboard users)."""
        folder = documents_folder()
        start = folder if folder.is_dir() else Path.home()
        path, _ = QFileDialog.getSaveFileName(self, "Save the text", str(timestamped_path(start)),
                                              "Text files (*.txt);;All files (*)")
        return self._write_text(Path(path)) if path else False

    def _write_text(self, path: Path) -> bool:
        try:
            path.write_text(self.controller.text, encoding="utf-8")
        except OSError as exc:
            QMessageBox.warning(self, "Save the text", f"Could not save the text to {path}:\n{exc}")
            return False
        if self.journal is not None:
            self.journal.mark_saved(self.controller.text)
        self.statusBar().showMessage(f"Saved to {path}", 10000)
        self.set_notice("saved", f"Saved to {path}")  # stays until the next save: where the file went
        return True

    # -- dialogs --------------------------------------------------------------------------------
    def show_preferences(self) -> None:
        from dasher_rnn.ui.preferences_dialog import PreferencesDialog

        self._dialog = PreferencesDialog(self)
        self._dialog.open()

    def show_profiles(self) -> None:
        from dasher_rnn.ui.preferences_dialog import ProfileDialog

        self._dialog = ProfileDialog(self)
        self._dialog.open()

    def show_help(self) -> None:
        from dasher_rnn.adapt.profiles import profiles_dir
        from dasher_rnn.journal import default_path as journal_path
        from dasher_rnn.ui.help import HelpDialog

        journal = self.journal.path if self.journal is not None else journal_path()
        self._dialog = HelpDialog(self, documents_folder(), journal, profiles_dir(), self.store.path)
        self._dialog.open()

    def speak(self) -> None:
        """Say the current message, or the last finished one right after New message."""
        c = self.controller
        text = c.zoom.output.strip() or next((line for line in reversed(c.history.splitlines()) if line.strip()), "")
        self.speaker.speak(text)

    # -- closing ------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        self.shutdown()
        event.accept()

    def shutdown(self) -> None:
        """Stop frames, keep the preferences, release the gaze source and the model (once)."""
        if self._closed:
            return
        self._closed = True
        self.timer.stop()
        if self.tutorial is not None:  # its practice contexts go before the Writer does, and it closes with the
            self.tutorial.reject()  # window (a dialog left open would keep the application running)
        self.record_message()
        c = self.controller
        if c.auto_speed_enabled and c.speed_bps != self.prefs.speed_bps:
            self.prefs = self.prefs.updated(speed_bps=c.speed_bps)  # remember where auto speed got to, as Dasher does
        self.save_prefs()
        if self.journal is not None:
            self.journal.note(self.controller.text)
            self.journal.flush()
        self._close_gaze()
        self.output_mode.close()
        self.speaker.stop()
        try:
            c.close()
        except ProfileError as exc:  # a full disk or a read-only folder: the previous version of the profile stays
            QMessageBox.warning(self, "dasher-rnn", f"What the model learned this time could not be saved:\n\n{exc}")
            c.writer.close(save=False)
