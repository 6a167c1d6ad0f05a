"""Each part of the main window on its own: built from what it needs (a controller, the widgets it drives, the
preferences keeper and a notices stand-in), never from the window."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMainWindow, QSplitter, QStatusBar

from dasher_rnn.adapt.writer import WriterStatus
from dasher_rnn.journal import Journal
from dasher_rnn.settings import SettingsError, SettingsStore
from dasher_rnn.ui.parts.input import InputPart
from dasher_rnn.ui.parts.learning import LearningPart
from dasher_rnn.ui.parts.looks import LooksPart
from dasher_rnn.ui.parts.messages import MessagesPart
from dasher_rnn.ui.parts.output import OutputPart
from dasher_rnn.ui.parts.prefs import PrefsKeeper
from dasher_rnn.ui.parts.progress import ProgressPart
from dasher_rnn.ui.parts.speech import SpeechPart
from dasher_rnn.ui.parts.status import StatusPart
from dasher_rnn.ui.parts.writing import WritingPart
from dasher_rnn.ui.speech import Speaker
from dasher_rnn.ui.text_panel import OutputPanel
from dasher_rnn.ui.view import DasherView
from dasher_rnn.zoom.controller import WritingController
from dasher_rnn.zoom.figures import Stats
from dasher_rnn.zoom.simulate import target_pointer
from tests.conftest import writer_source
from tests.test_direct_output import FakeTyper
from tests.test_progress import profile_source
from tests.test_ui import DT, ppm_source


class Notices:
    """The status bar's stand-in: what the parts said."""

    def __init__(self) -> None:
        self.notices: dict[str, str] = {}
        self.messages: list[str] = []

    def set_notice(self, key: str, text: str) -> None:
        self.notices[key] = text

    def show_message(self, text: str, ms: int = 4000) -> None:
        self.messages.append(text)


class SpyStore(SettingsStore):
    """Saves in memory; ``fail`` makes saving fail as a read-only folder would."""

    def __init__(self) -> None:
        super().__init__(Path("/nonexistent/settings.json"))
        self.saved: list = []
        self.fail = False

    def save(self, prefs) -> None:
        if self.fail:
            raise SettingsError("could not save the settings: read-only")
        self.saved.append(prefs)


def write(controller: WritingController, text: str) -> None:
    """Steer the controller until ``text`` is written."""
    controller.start()
    for _ in range(1000):
        controller.frame(target_pointer(controller.zoom, text), DT)
        if controller.zoom.output == text:
            return
    raise AssertionError(f"did not write {text!r}")


@pytest.fixture
def notices() -> Notices:
    return Notices()


@pytest.fixture
def keeper(qapp, notices) -> PrefsKeeper:
    store = SpyStore()
    return PrefsKeeper(store, store.load().updated(speed_bps=4.0, auto_speed=False), notices)


@pytest.fixture
def host(qtbot) -> QMainWindow:
    window = QMainWindow()
    qtbot.addWidget(window)
    return window


def test_status_keeps_one_notice_per_topic_and_shows_the_figures(qapp):
    status = StatusPart(QStatusBar())
    status.set_notice("input", "Gaze over UDP on port 5555.")
    status.set_notice("settings", "settings.json could not be read")
    assert status.notice == "Gaze over UDP on port 5555.  ·  settings.json could not be read"
    status.set_notice("input", "")
    assert status.notice == "settings.json could not be read"
    stats = Stats(speed_bps=2.5, bits_per_second=1.25, chars_per_minute=12.0, characters=3, running=True)
    status.show_figures(stats, None)
    assert status.speed_label.text() == "Speed 2.5 bits/s" and status.adaptation_label.text() == "adaptation off"
    assert status.profile_label.text() == "profile: none"
    learning = WriterStatus(model="hybrid", description="", profile="anna", adapting=True, can_adapt=True,
                            learns=("rnn", "ppm"), backend=None, updates=3, rollbacks=1, notice="profile repaired")
    status.show_figures(stats, learning)
    assert status.adaptation_label.text() == "adapting: 3 updates, 1 rollbacks"
    assert status.profile_label.text() == "profile: anna" and "profile repaired" in status.notice


def test_the_keeper_remembers_saves_once_settled_and_says_when_saving_fails(qtbot, keeper, notices):
    keeper.remember(font_size=20)
    keeper.remember(font_size=22)
    assert keeper.prefs.font_size == 22 and keeper.store.saved == []  # not yet: a held control changes often
    qtbot.waitUntil(lambda: len(keeper.store.saved) == 1)
    assert keeper.store.saved[0].font_size == 22
    keeper.store.fail = True
    keeper.save()
    assert "read-only" in notices.notices["settings"] and keeper.prefs.font_size == 22  # still in effect


def test_writing_starts_ticks_and_says_when_it_stopped(qtbot, keeper, notices, host):
    controller = WritingController(ppm_source(), keeper.prefs.controller_config())
    view = DasherView(controller.zoom.alphabet)
    pointer: list = [None]
    writing = WritingPart(controller, view, keeper, notices, lambda: (pointer[0], pointer[0] is not None), host)
    frames, stops, status = [], [], []
    writing.framed.connect(frames.append)
    writing.stopped.connect(lambda: stops.append(True))
    writing.status_due.connect(lambda: status.append(True))
    view.resize(600, 400)
    writing.toggle_running()
    assert controller.running and writing.start_action.text() == "Stop" and view.hint == ""
    for _ in range(300):
        pointer[0] = view.viewport().to_screen(*target_pointer(controller.zoom, "I see"))
        writing.tick(DT)
        if controller.zoom.output == "I see":
            break
    assert controller.zoom.output == "I see" and len(frames) == writing.frames and status
    writing.toggle_running()
    assert stops == [True] and writing.start_action.text() == "Start" and "click" in view.hint
    writing.undo_writing()  # the run comes back out, through a frame the rest follows
    assert controller.zoom.output == "" and notices.messages[-1] == "Took back the last run of writing"
    assert frames[-2].uncommitted or frames[-2].committed is not None

    writing.speed_box.setValue(2.5)
    assert controller.speed_bps == 2.5 == keeper.prefs.speed_bps
    writing.set_control_mode(True)
    assert controller.control_mode and keeper.prefs.control_mode and writing.control_action.isChecked()


def test_input_falls_back_to_the_mouse_and_a_preset_brings_its_speeds(qtbot, keeper, notices):
    controller = WritingController(ppm_source(), keeper.prefs.controller_config())
    view = DasherView(controller.zoom.alphabet)
    part = InputPart(controller, view, keeper, notices)
    chosen = []
    part.preset_chosen.connect(chosen.append)
    part.set_input("tobii")  # no tracker here
    assert part.name == "mouse" and part.gaze is None and "using the mouse" in notices.notices["input"]
    part.select_preset("head-mouse")
    assert chosen == ["head-mouse"] and keeper.prefs.preset == "head-mouse"
    assert keeper.prefs.speed_bps == controller.speed_bps == controller.preset.speed_bps
    keeper.prefs = keeper.prefs.model_copy(update={"gaze_port": 0})  # any free port (unchecked)
    part.set_input("gaze-udp")
    try:
        assert part.gaze is not None and part.name == "gaze-udp" and not view.use_mouse
        assert part.pointer_screen() == (None, False)  # nothing received yet: no pointer, not the mouse's
    finally:
        part.close()
    assert part.gaze is None


def test_messages_finish_clear_and_undo_and_save(qtbot, host, notices, tmp_path):
    controller = WritingController(writer_source("uniform"))
    panel = OutputPanel()
    journal = Journal(tmp_path / "journal.json")
    messages = MessagesPart(controller, panel, notices, host, journal)
    events = []
    messages.discarding.connect(lambda: events.append(("discarding", controller.text)))
    messages.finished.connect(lambda text: events.append(("finished", text)))
    messages.changed.connect(lambda: events.append(("changed", controller.text)))
    controller.history = "Hello.\n"
    messages.show_text()
    assert panel.toPlainText() == "Hello.\n"
    messages.new_message()  # nothing written: no message to take back
    assert events[:1] == [("finished", "")] and not messages.undo_bar.offered
    assert messages.save_text(tmp_path / "out.txt") and (tmp_path / "out.txt").read_text() == "Hello.\n"
    assert str(tmp_path / "out.txt") in notices.notices["saved"]
    events.clear()
    messages.clear_text()
    assert events == [("discarding", "Hello.\n"), ("changed", "")] and panel.toPlainText() == ""
    messages.undo_bar.undo()
    assert controller.text == "Hello.\n" and panel.toPlainText() == "Hello.\n"
    messages.copy_all()
    assert QGuiApplication.clipboard().text() == "Hello.\n"


def test_output_types_into_the_focused_program_and_copies_on_stop(qtbot, host, keeper, notices, monkeypatch):
    monkeypatch.setattr(QGuiApplication, "focusWindow", staticmethod(lambda: None))  # another program has it
    controller = WritingController(ppm_source())
    speech = SpeechPart(controller, notices, host, Speaker(commands=(), use_qt=False))
    copies = []
    typer = FakeTyper()
    output = OutputPart(controller, keeper, notices, speech, lambda: copies.append(True), host, lambda: typer)
    output.set_output("direct")
    assert output.direct is not None and keeper.prefs.output == "direct"
    assert host.windowFlags() & Qt.WindowType.WindowDoesNotAcceptFocus  # the focus stays in the other program
    output.set_copy_on_stop(True)
    output.set_speak_on_stop(True)
    write(controller, "Hi")
    controller.stop()
    output.on_stop()
    assert typer.screen == "Hi" and copies == [True]
    assert "No speech available" in notices.notices["speech"]  # asked to speak, and said why it cannot
    output.close()
    assert output.direct is None and typer.closed


def test_speech_says_the_message_or_the_last_finished_one(qapp, host, notices):
    controller = WritingController(writer_source("uniform"))
    said = []
    speaker = Speaker(commands=(), use_qt=False)
    speaker.speak = lambda text: said.append(text) or True
    speech = SpeechPart(controller, notices, host, speaker)
    controller.history = "First one. Second one.\n"
    speech.speak()
    speech.speak_sentence()
    assert said == ["First one. Second one.", "Second one."]
    assert not speech.speak_action.isEnabled() and not speech.say_why_not("Speak")
    assert "No speech available" in notices.notices["speech"]


def test_speech_speaks_the_alphabets_language_or_says_it_has_no_voice(qapp, host, notices, monkeypatch):
    controller = WritingController(writer_source("uniform"))
    asked = []

    class FakeSpeaker(Speaker):
        def set_language(self, language: str) -> bool:
            asked.append(language)
            self.language_note = "espeak-ng has no voice for 'sw': the default voice speaks" if language == "sw" else ""
            return not self.language_note

    speech = SpeechPart(controller, notices, host, FakeSpeaker(commands=(), use_qt=False))
    assert asked[-1] == controller.zoom.alphabet.language == "en" and notices.notices["speech"] == ""
    speech.set_language("sw")
    assert "no voice for 'sw'" in notices.notices["speech"]


def test_looks_apply_the_preferences_and_remember_changes(qtbot, host, keeper):
    view = DasherView(WritingController(writer_source("uniform")).zoom.alphabet)
    panel = OutputPanel()
    splitter = QSplitter(Qt.Orientation.Vertical)
    splitter.addWidget(panel)
    splitter.addWidget(view)
    host.setCentralWidget(splitter)
    looks = LooksPart(view, panel, splitter, keeper, host)
    keeper.prefs = keeper.prefs.updated(colour_scheme="high-contrast", text_panel=False, label_min_px=20)
    looks.apply_prefs()
    assert view.scheme == "high-contrast" and not looks.panel_action.isChecked() and view.min_label_px == 20
    looks.set_scheme("default")
    looks.set_text_panel(True)
    looks.set_font_size(18)
    assert (keeper.prefs.colour_scheme, keeper.prefs.text_panel, keeper.prefs.font_size) == ("default", True, 18)
    assert looks.scheme_box.currentData() == "default" and looks.font_box.value() == 18


def test_learning_says_why_a_model_cannot_learn(qapp, keeper, notices):
    nothing = LearningPart(None, keeper, notices)
    nothing.apply_prefs()
    assert not nothing.adapt_box.isEnabled() and "does not learn" in nothing.adapt_box.toolTip()
    writer = writer_source("ppm").writer
    keeper.prefs = keeper.prefs.updated(adaptation=False)
    learning = LearningPart(writer, keeper, notices)
    learning.apply_prefs()  # the preferences say no: the Writer stops learning
    assert not learning.adapt_box.isChecked() and not writer.status().adapting
    changed = []
    learning.changed.connect(lambda: changed.append(True))
    learning.set_adapting(True)
    assert keeper.prefs.adaptation and writer.status().adapting and changed == [True]
    assert learning.adapt_box.isChecked() and "the memory of your words" in " ".join(learning.adapt_box.toolTip().split())
    writer.close(save=False)


def test_progress_records_a_message_in_the_profile(qtbot, host, notices, tmp_path):
    assert ProgressPart(WritingController(writer_source("uniform")), notices, host).log is None
    controller = WritingController(profile_source(tmp_path / "profiles"))
    progress = ProgressPart(controller, notices, host)
    write(controller, "I see")
    progress.record()
    records = progress.log.read()
    assert len(records) == 1 and records[0].characters == 5
    dialog = progress.open_progress()
    qtbot.addWidget(dialog)
    assert dialog.isVisible()
    controller.close()
