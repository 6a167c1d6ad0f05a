"""The main window: the composition of its parts (``ui/parts/``), laid out in menus, toolbars and a status bar.

Everything about writing (zooming, start and stop, dwell, speed control, learning) happens in the controller;
each part owns one concern of the window around it. This module builds the parts from what each needs, puts
their controls in menus and toolbars, connects their signals, and does what spans several of them: the status
figures, the control box's actions, the tutorial, the dialogs and closing.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent, QKeySequence
from PySide6.QtWidgets import QDialog, QLabel, QMainWindow, QMessageBox, QSplitter, QToolBar, QWidget

from dasher_rnn.adapt.profile_files import ProfileError
from dasher_rnn.adapt.profiles import ProfileStore
from dasher_rnn.adapt.writer import MODELS
from dasher_rnn.journal import Journal
from dasher_rnn.settings import Preferences, SettingsStore
from dasher_rnn.ui.documents import documents_folder
from dasher_rnn.ui.parts.dock import DockPart
from dasher_rnn.ui.parts.input import InputPart
from dasher_rnn.ui.parts.learning import LearningPart
from dasher_rnn.ui.parts.looks import PANEL_HEIGHT, LooksPart
from dasher_rnn.ui.parts.messages import MessagesPart
from dasher_rnn.ui.parts.output import OutputPart
from dasher_rnn.ui.parts.phrases import PhrasesPart
from dasher_rnn.ui.parts.prefs import PrefsKeeper
from dasher_rnn.ui.parts.progress import ProgressPart
from dasher_rnn.ui.parts.speech import SpeechPart
from dasher_rnn.ui.parts.status import StatusPart
from dasher_rnn.ui.parts.writing import WritingPart
from dasher_rnn.ui.preferences_dialog import PreferencesDialog, ProfileDialog
from dasher_rnn.ui.text_panel import OutputPanel
from dasher_rnn.ui.tutorial import TutorialDialog
from dasher_rnn.ui.view import DasherView
from dasher_rnn.ui.widgets import make_action
from dasher_rnn.zoom.boxes import Frame
from dasher_rnn.zoom.control import Action, action_label
from dasher_rnn.zoom.controller import WritingController
from dasher_rnn.zoom.practice import practice_phrases
from dasher_rnn.zoom.sources import WriterSource

SPEED_STEP = 0.2  # bits/s: the control box's Faster and Slower
FULL_SCREEN_PRESETS = ("eye-tracker", "head-mouse")  # the window opens full screen for these (docked: direct output)


class MainWindow(QMainWindow):
    def __init__(self, controller: WritingController, store: SettingsStore, prefs: Preferences,
                 start_timer: bool = True, parent: QWidget | None = None, journal: Journal | None = None,
                 language_source: Callable[[str], WriterSource] | None = None) -> None:
        """``controller`` is built from ``prefs.controller_config()``; ``prefs`` are what ``store`` loaded;
        ``journal`` keeps the text safe on disk as it is written (the app always gives one); ``language_source``
        builds the source that writes a language (a code), for switching without a restart."""
        super().__init__(parent)
        self.controller, self.journal, self.language_source = controller, journal, language_source
        self.tutorial: TutorialDialog | None = None
        self._dialog: QDialog | None = None  # the Preferences, Profile or Help dialog last opened
        self._closed = False
        self._frames_were_running = False  # before the tutorial opened
        self._show_title()

        self.view = DasherView(controller.zoom.alphabet)
        self.panel = OutputPanel()
        self.panel.set_orientation(controller.zoom.alphabet.orientation)  # right to left for Arabic, Hebrew
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

        self.status = status = StatusPart(self.statusBar())
        self.keeper = keeper = PrefsKeeper(store, prefs, status, self)
        self._remember_model()
        self.input = InputPart(controller, self.view, keeper, status, self)
        self.writing = WritingPart(controller, self.view, keeper, status, self.input.pointer_screen, self)
        self.messages = MessagesPart(controller, self.panel, status, self, journal)
        self.speech = SpeechPart(controller, status, self)
        self.looks = LooksPart(self.view, self.panel, splitter, keeper, self)
        self.dock = DockPart(controller, keeper, self, self.looks, self._size_to_screen)
        self.output = OutputPart(controller, keeper, status, self.speech, self.messages.copy_all, self, dock=self.dock)
        self.learning = LearningPart(controller.writer, keeper, status, self)
        self.progress = ProgressPart(controller, status, self)
        self.phrases = PhrasesPart(controller, status, self)
        self._build_actions()
        self._build_menus()
        self._build_toolbars()
        self._connect()

        self.writing.show_settings()
        self.looks.apply_prefs()
        self.learning.apply_prefs()
        self.input.apply_prefs()
        self.output.apply_prefs()
        self.messages.offer_restore()

        self.writing.tick(0.0)
        if start_timer:
            self.writing.start_frames()
        self.resize(1100, 800)  # until show_sized_to_screen (tests and scripts size it themselves)
        self.view.setFocus()

    # -- building -------------------------------------------------------------------------------
    def _build_actions(self) -> None:
        self.preferences_action = make_action(self, "Preferences", self.show_preferences, None,
                                              "Speed, input, stopping, looks, learning and output, with large "
                                              "controls")
        self.profile_action = make_action(self, "Profile", self.show_profiles, None,
                                          "Whose writing the model learns (used from the next start)")
        self.help_action = make_action(self, "Help", self.show_help, QKeySequence.StandardKey.HelpContents,
                                       "How to steer, start and stop, back out and undo; where things are kept")
        self.tutorial_action = make_action(self, "Tutorial", lambda: self.open_tutorial(), None,  # not ``checked``
                                           "Learn to steer: short practice phrases, nothing of them learned")
        self.tutorial_action.setEnabled(self.controller.writer is not None)
        self.quit_action = make_action(self, "Quit", self.close, QKeySequence.StandardKey.Quit, "Close the window")

    def _build_menus(self) -> None:
        w, m, looks = self.writing, self.messages, self.looks
        menus = (("&File", (m.save_action, m.save_as_action, None, self.preferences_action, self.profile_action, None,
                            self.quit_action)),
                 ("&Edit", (w.undo_action,)),
                 ("&Text", (m.copy_action, m.clear_action, m.new_message_action, self.speech.speak_action, None,
                            self.phrases.phrases_action, self.phrases.add_action)),
                 ("&Writing", (w.start_action, w.turbo_action, w.control_action)),
                 ("&View", (looks.panel_action, looks.full_screen_action, self.progress.progress_action,
                            self.input.preview_action)),
                 ("&Output", self.output.actions),
                 ("&Help", (self.help_action, self.tutorial_action)))
        for title, actions in menus:
            menu = self.menuBar().addMenu(title)
            for action in actions:
                menu.addSeparator() if action is None else menu.addAction(action)

    def _build_toolbars(self) -> None:
        """Writing controls on the first row; text actions and how things look on the second (one row does
        not fit a laptop screen)."""
        w, m, looks = self.writing, self.messages, self.looks
        controls = QToolBar("Writing")
        controls.setObjectName("writing-toolbar")
        controls.addAction(w.start_action)
        controls.addAction(w.undo_action)
        undo_button = controls.widgetForAction(w.undo_action)  # large: the one to reach for after a mistake
        undo_font = undo_button.font()
        undo_font.setBold(True)
        undo_font.setPointSizeF(undo_font.pointSizeF() * 1.3)
        undo_button.setFont(undo_font)
        undo_button.setMinimumSize(140, 40)
        controls.addAction(w.turbo_action)
        _add_labelled(controls, " Speed ", w.speed_box)
        controls.addWidget(w.auto_speed_box)
        controls.addSeparator()
        _add_labelled(controls, " Input ", self.input.input_box)
        _add_labelled(controls, " Preset ", self.input.preset_box)
        controls.addSeparator()
        controls.addWidget(self.learning.adapt_box)
        controls.addSeparator()
        controls.addAction(m.new_message_action)  # far from Copy all, on the other row
        self.addToolBar(controls)
        self.addToolBarBreak()

        self.text_bar = text = QToolBar("Text")  # hidden while docked (a strip for direct output): all in the menus
        text.setObjectName("text-toolbar")
        for action in (m.copy_action, m.save_action, self.speech.speak_action, self.phrases.phrases_action):
            text.addAction(action)
        text.addSeparator()
        _add_labelled(text, " Font ", looks.font_box)
        _add_labelled(text, " Colours ", looks.scheme_box)
        text.addSeparator()
        text.addAction(looks.panel_action)
        text.addAction(looks.full_screen_action)
        text.addSeparator()
        for action in (self.preferences_action, self.profile_action, self.help_action):
            text.addAction(action)
        text.addSeparator()
        text.addAction(m.clear_action)  # last, away from the rest: it throws the text away (with an Undo)
        self.addToolBar(text)
        self.addToolBarBreak()
        self.addToolBar(m.undo_bar)

    def _connect(self) -> None:
        w, m = self.writing, self.messages
        w.framed.connect(self._on_frame)
        w.keep_awake.append(lambda: self.output.waiting)  # its retries come with the frames
        self.phrases.wrote.connect(self._on_phrase_written)
        w.stopped.connect(self.output.on_stop)
        w.status_due.connect(self.update_status)
        self.input.preset_chosen.connect(lambda _name: w.show_settings())
        self.input.preset_chosen.connect(lambda _name: self.dock.follow_preset())  # each preset docks its own way
        self.dock.docked_changed.connect(lambda docked: self.text_bar.setVisible(not docked))
        m.discarding.connect(self._on_discarding)
        m.finished.connect(self._on_message_finished)
        m.changed.connect(self._on_text_changed)
        self.learning.changed.connect(self.update_status)

    # -- what the parts tell each other -------------------------------------------------------
    def _on_frame(self, frame: Frame) -> None:
        if frame.finished is not None:  # New message in the control box: that message is final
            self._on_message_finished(frame.finished)
        self.output.on_frame(frame)
        self.phrases.on_frame(frame)
        if frame.action is not None:
            self._on_control_action(frame.action)
        self.messages.show_text()

    def _on_phrase_written(self, frame: Frame) -> None:
        """A phrase chosen in the Phrases dialog went into the message: as a frame of writing."""
        self._on_frame(frame)
        self.view.set_frame(frame, 0.0)

    def _on_message_finished(self, text: str) -> None:
        self.output.finish_message(text)
        self.progress.record(self.controller.finished_stats)

    def _on_discarding(self) -> None:
        self.progress.record()
        self.output.discard()

    def _on_text_changed(self) -> None:
        self.writing.show_running()
        self.view.set_frame(self.controller.zoom.idle(), 0.0)

    def _on_control_action(self, action: Action) -> None:
        """The crosshair entered an action's box in the control box: the zoom has made its text edits and the
        controller has stopped (Stop) or started the next message (New message); the rest is done here."""
        if action in (Action.SPEAK, Action.SPEAK_SENTENCE):
            if self.speech.say_why_not("Speak"):
                self.speech.speak() if action == Action.SPEAK else self.speech.speak_sentence()
        elif action == Action.COPY:
            self.messages.copy_all()
        elif action == Action.UNDO_RUN:
            self.writing.undo_writing()  # says what it took back
            return
        elif action == Action.SAVE:
            self.messages.save_text()  # says where it went
            return
        elif action == Action.CLEAR:
            self.messages.clear_text()
        elif action == Action.RESTORE:
            if self.journal is None or self.journal.pending is None:
                self.status.show_message("Control box: no unsaved text to restore", 4000)
                return
            self.messages.resolve_restore(True)
        elif action in (Action.FASTER, Action.SLOWER):
            step = SPEED_STEP if action == Action.FASTER else -SPEED_STEP
            self.writing.speed_box.setValue(self.writing.speed_box.value() + step)
            self.status.show_message(f"Control box: speed {self.controller.speed_bps:.1f} bits/s", 3000)
            return
        self.status.show_message(f"Control box: {action_label(action)}", 3000)

    def update_status(self) -> None:
        """The status bar's figures and the notices that come from elsewhere (the journal, the gaze source)."""
        c = self.controller
        self.status.show_figures(c.stats(), c.writer.status() if c.writer is not None else None)
        if self.journal is not None:
            self.status.set_notice("journal", self.journal.notice or "")
        self.input.follow_state()
        self.status.set_notice("input-problems", self.input.problems())
        self.writing.follow_speed()

    # -- the window -------------------------------------------------------------------------------
    def _show_title(self) -> None:
        self.setWindowTitle(f"dasher-rnn ({getattr(self.controller.source, 'name', 'model')})")

    def _remember_model(self) -> None:
        """The settings' "model" names what predicts, as the title does (saved with the next save: closing saves)."""
        name = getattr(self.controller.source, "name", None)
        if name in MODELS and name != self.keeper.prefs.model:
            self.keeper.prefs = self.keeper.prefs.updated(model=name)

    def set_language(self, code: str) -> bool:
        """Write ``code``'s language from now on, without a restart: the message is finished, the old Writer saves
        its profile and closes, and every part follows the new one (alphabet, direction, speech, learning,
        progress). False, with a notice, when the language cannot be written here."""
        if self.language_source is None:
            self.status.set_notice("language", "Changing the language needs a restart here.")
            return False
        if self.controller.zoom.output:
            self.messages.new_message()
        try:
            source = self.language_source(code)
        except Exception as exc:  # an unknown code, a broken model folder: the user gets a message, not a traceback
            self.status.set_notice("language", f"Could not write {code!r}: {exc}")
            return False
        old = self.controller.set_source(source)
        try:
            old.close()
        except ProfileError as exc:
            self.status.set_notice("profile", f"What was learned could not be saved ({exc})")
        alphabet = source.alphabet
        self.view.alphabet = alphabet
        self.panel.set_orientation(alphabet.orientation)
        self.speech.set_language(alphabet.language)
        self.learning.apply_prefs(self.controller.writer)
        self.progress.follow_writer()
        self.phrases.follow_writer()
        self._remember_model()  # PPM alone writes a language no RNN writes: the title and the settings say so
        self.keeper.remember(language=alphabet.language or code)
        self.status.set_notice("language", "")
        self._show_title()
        self.writing.show_running()
        self.view.set_frame(self.controller.zoom.idle(), 0.0)
        self.update_status()
        return True

    def show_sized_to_screen(self) -> None:
        """Open as large as the screen: full screen for the gaze and head-mouse presets (every pixel is a
        target), the whole available area otherwise; with direct output on, docked instead (a strip at an edge of
        the screen, as the preset's layout says: the program it types into has the rest)."""
        if self.dock.docked:
            self.dock.place()
        else:
            self._size_to_screen()

    def _size_to_screen(self) -> None:
        if self.controller.preset.name in FULL_SCREEN_PRESETS:
            self.looks.set_full_screen(True)
        else:
            self.looks.fit_to_screen()
            self.showMaximized()

    def open_tutorial(self, start_timer: bool = True) -> TutorialDialog | None:
        """Show the tutorial over the window; the window's own frames wait until it closes (so gaze and dwell
        act only there). It practises with this Writer and teaches it nothing. None once the window closed
        (the first start opens it a moment after showing the window, which may be closed by then)."""
        if self._closed:
            return None
        if self.tutorial is not None:
            return self.tutorial
        self.writing.stop()
        self._frames_were_running = self.writing.pause_frames()
        self.splitter.setEnabled(False)  # the canvas waits too (with direct output the tutorial is not modal)
        dialog = self.tutorial = TutorialDialog(self.controller.writer, self.keeper.prefs, self.controller.speed_bps,
                                                self.input.gaze, self, start_timer=start_timer,
                                                phrases=practice_phrases(self.controller.zoom.alphabet),
                                                switch_source=self.input.switches.source)
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
            self.writing.set_speed(dialog.chosen_speed)  # as if set in the box: the controller and preferences
        # done once a practice phrase was written or Skip pressed: only opened and closed (a carer setting up), it
        # opens again next time
        if dialog is not None and dialog.completed and not self.keeper.prefs.tutorial_done:
            self.keeper.remember(tutorial_done=True)
        self.splitter.setEnabled(True)
        if self._frames_were_running and not self._closed:
            self.writing.start_frames()
        if dialog is not None:
            dialog.deleteLater()

    def preferences_dialog(self) -> PreferencesDialog:
        return PreferencesDialog(self.controller, self.keeper, writing=self.writing, input=self.input,
                                 looks=self.looks, learning=self.learning, output=self.output,
                                 switch_language=self.set_language if self.language_source is not None else None,
                                 parent=self)

    def profile_dialog(self, store: ProfileStore | None = None) -> ProfileDialog:
        return ProfileDialog(self.controller.writer, self.keeper, store, parent=self)

    def show_preferences(self) -> None:
        self._dialog = self.preferences_dialog()
        self._dialog.open()

    def show_profiles(self) -> None:
        self._dialog = self.profile_dialog()
        self._dialog.open()

    def show_help(self) -> None:
        from dasher_rnn.adapt.profiles import profiles_dir
        from dasher_rnn.journal import default_path as journal_path
        from dasher_rnn.ui.help import HelpDialog

        journal = self.journal.path if self.journal is not None else journal_path()
        self._dialog = HelpDialog(self, documents_folder(), journal, profiles_dir(), self.keeper.store.path)
        self._dialog.open()

    # -- closing ------------------------------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:
        self.shutdown()
        event.accept()

    def shutdown(self) -> None:
        """Stop frames, keep the preferences, release the gaze source and the model (once)."""
        if self._closed:
            return
        self._closed = True
        self.writing.pause_frames()
        if self.tutorial is not None:  # its practice contexts go before the Writer does, and it closes with the
            self.tutorial.reject()  # window (a dialog left open would keep the application running)
        self.progress.record()
        c, keeper = self.controller, self.keeper
        if c.auto_speed_enabled and c.speed_bps != keeper.prefs.speed_bps:
            keeper.prefs = keeper.prefs.updated(speed_bps=c.speed_bps)  # where auto speed got to, as Dasher does
        keeper.save()
        if self.journal is not None:
            self.journal.note(c.text)
            self.journal.flush()
        self.input.close()
        self.output.close()
        self.speech.stop()
        try:
            c.close()
        except ProfileError as exc:  # a full disk or a read-only folder: the previous version of the profile stays
            QMessageBox.warning(self, "dasher-rnn", f"What the model learned this time could not be saved:\n\n{exc}")
            c.writer.close(save=False)


def _add_labelled(bar: QToolBar, label: str, widget: QWidget) -> None:
    bar.addWidget(QLabel(label))
    bar.addWidget(widget)
