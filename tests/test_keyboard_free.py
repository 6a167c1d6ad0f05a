"""Everything in the window reachable with a pointer alone: Save without a dialog, the Preferences dialog, the
profile picker, Help, Undo after New message and Clear, the text panel's placeholder, narrow tooltips; and the
speech command's process reaped."""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import json
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog, QPushButton

from dasher_rnn.adapt.profiles import ProfileStore
from dasher_rnn.settings import SettingsStore
from dasher_rnn.ui.documents import timestamped_path
from dasher_rnn.ui.help import HelpDialog
from dasher_rnn.ui.preferences_dialog import PreferencesDialog, ProfileDialog
from dasher_rnn.ui.speech import Speaker
from dasher_rnn.ui.text_panel import PLACEHOLDER
from dasher_rnn.ui.widgets import BUTTON_PX, TIP_WIDTH, Choice, Stepper, Toggle, wrap_tip
from tests.test_ui import open_window, steer


@pytest.fixture
def documents(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "Documents" / "dasher-rnn"
    monkeypatch.setenv("DASHER_RNN_DOCUMENTS", str(folder))
    monkeypatch.setenv("DASHER_RNN_JOURNAL", str(tmp_path / "journal.json"))
    return folder


def test_save_writes_a_timestamped_file_in_the_documents_folder_without_a_dialog(qtbot, settings_path, documents,
                                                                               monkeypatch):
    from dasher_rnn.journal import Journal

    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: pytest.fail("Save must not ask"))
    journal = Journal()
    window = open_window(qtbot, journal=journal)
    window.writing.toggle_running()
    steer(window, "I see")
    window.writing.toggle_running()
    assert window.messages.save_action.text() == "Save" and not window.messages.save_action.text().endswith("…")
    window.messages.save_action.trigger()
    files = sorted(documents.glob("dasher-*.txt"))
    assert len(files) == 1 and files[0].read_text(encoding="utf-8") == "I see"
    assert str(files[0]) in window.status.notice  # the status bar says where it went
    assert json.loads(journal.path.read_text())["saved"] is True  # the journal knows it was saved
    window.messages.save_text()  # a second save in the same second never overwrites the first
    assert len(list(documents.glob("dasher-*.txt"))) == 2
    assert window.messages.save_as_action in window.menuBar().actions()[0].menu().actions()  # Save As for keyboard users


def test_timestamped_names_never_collide(tmp_path):
    first = timestamped_path(tmp_path, now=0.0)
    first.write_text("a")
    second = timestamped_path(tmp_path, now=0.0)
    assert second != first and second.name.endswith("-2.txt")


def test_preferences_dialog_changes_apply_and_are_saved_in_one_place(qtbot, settings_path, documents):
    window = open_window(qtbot)
    dialog = window.preferences_dialog()
    qtbot.addWidget(dialog)
    for stepper in dialog.findChildren(Stepper):  # nothing to type: large − and + buttons
        assert stepper.plus.minimumHeight() >= BUTTON_PX and stepper.minus.minimumWidth() >= BUTTON_PX
    for button in dialog.findChildren(QPushButton):
        assert button.minimumHeight() >= BUTTON_PX or button.sizeHint().height() >= BUTTON_PX

    speed = window.controller.speed_bps
    dialog.speed.plus.click()
    assert window.controller.speed_bps == pytest.approx(speed + 0.1)
    dialog.pause_outside.click()
    assert window.controller.pause_outside == window.keeper.prefs.pause_outside == dialog.pause_outside.isChecked()
    dialog.rest_stop.set_value(7, emit=True)
    assert window.controller.rest_stop_seconds == 7 == window.keeper.prefs.rest_stop_seconds
    dialog.label_size.plus.click()
    assert window.view.min_label_px == window.keeper.prefs.label_min_px == 14
    dialog.font_size.plus.click()
    assert window.keeper.prefs.font_size == 16 and window.looks.font_box.value() == 16
    dialog.scheme.buttons["high-contrast"].click()
    assert window.view.scheme == window.keeper.prefs.colour_scheme == "high-contrast"
    dialog.text_panel.click()
    assert not window.keeper.prefs.text_panel and not window.panel.isVisibleTo(window)
    dialog.turbo.plus.click()
    assert window.controller.turbo_factor == window.keeper.prefs.turbo_factor
    dialog.reverse_speed.minus.click()
    assert window.controller.reverse_speed == pytest.approx(window.keeper.prefs.reverse_speed)
    dialog.lower_share.plus.click()
    assert window.controller.source.start_lower_share == window.keeper.prefs.start_lower_share
    dialog.copy_on_stop.click()
    assert window.keeper.prefs.copy_on_stop and window.output.copy_on_stop_action.isChecked()
    dialog.adaptation.click()
    assert window.keeper.prefs.adaptation is dialog.adaptation.isChecked() is window.learning.adapt_box.isChecked()
    dialog.preset.buttons["eye-tracker"].click()  # a preset brings its speeds: the dialog shows them
    assert window.controller.preset.name == window.keeper.prefs.preset == "eye-tracker"
    assert dialog.speed.value() == pytest.approx(window.controller.speed_bps)
    assert not dialog.auto_speed.isEnabled()

    window.keeper.save()
    saved = SettingsStore(settings_path).load()
    assert saved == window.keeper.prefs
    assert (saved.rest_stop_seconds, saved.colour_scheme, saved.preset) == (7, "high-contrast", "eye-tracker")


def test_every_preference_a_user_changes_is_in_the_dialog(qtbot, settings_path, documents):
    window = open_window(qtbot)
    dialog = window.preferences_dialog()
    qtbot.addWidget(dialog)
    controls = {name for name, value in vars(dialog).items() if isinstance(value, Stepper | Toggle | Choice)}
    assert controls >= {"speed", "auto_speed", "reverse_speed", "turbo", "input", "preset", "pause_outside",
                        "rest_stop", "label_size", "font_size", "scheme", "text_panel", "adaptation", "lower_share",
                        "output", "copy_on_stop", "speak_on_stop"}


def test_the_profile_picker_keeps_the_choice_for_the_next_start(qtbot, settings_path, documents):
    store = ProfileStore()
    store.save("anna", {}, {"characters_adapted": 1234})
    window = open_window(qtbot)
    dialog = window.profile_dialog(store)
    qtbot.addWidget(dialog)
    assert "anna" in dialog.choice.buttons and "1,234" in dialog.choice.buttons["anna"].text()
    assert dialog.choice.buttons["anna"].minimumHeight() >= BUTTON_PX
    dialog.choice.buttons["anna"].click()
    assert window.keeper.prefs.profile == "anna"
    assert SettingsStore(settings_path).load().profile == "anna"  # saved at once
    assert "next start" in dialog.message.text()
    name = dialog.new_profile()
    assert name == "person-2" and window.keeper.prefs.profile == "person-2"


def test_switching_profile_saves_what_the_current_one_learned_first(qtbot, settings_path, documents):
    from dasher_rnn.lm.ppm import PPMModel
    from tests.conftest import make_sentences, writer_source
    from tests.test_ui import ALPHABET

    model = PPMModel(ALPHABET)
    model.train_text("\n".join(make_sentences(300)) + "\n")
    window = open_window(qtbot, source=writer_source("ppm", trained_ppm=model, profile="me"), profile="me")
    window.writing.toggle_running()
    steer(window, "I see")
    window.messages.new_message()  # committed: learned into profile "me"
    store = ProfileStore()
    assert not store.exists("me")
    dialog = window.profile_dialog(store)
    qtbot.addWidget(dialog)
    assert "In use now: me" in dialog.message.text()
    dialog.new_profile()
    assert store.exists("me") and "ppm" in store.load("me").parts  # saved before the switch
    assert "saved" in dialog.message.text() and "start dasher-rnn again" in dialog.message.text()


def test_help_says_how_to_steer_and_where_things_are_kept(qtbot, tmp_path):
    dialog = HelpDialog(None, tmp_path / "docs", tmp_path / "journal.json", tmp_path / "profiles",
                        tmp_path / "settings.json")
    qtbot.addWidget(dialog)
    text = dialog.text()
    for words in ("Starting and stopping", "Backing out", "Undo writing", "Eye tracker", "Head mouse",
                  str(tmp_path / "docs"), str(tmp_path / "profiles"), str(tmp_path / "journal.json")):
        assert words in text
    dialog.down.click()  # large buttons scroll it
    dialog.up.click()


def test_the_window_opens_preferences_profile_and_help_from_toolbar_buttons(qtbot, settings_path, documents):
    window = open_window(qtbot)
    for action, kind in ((window.preferences_action, PreferencesDialog), (window.profile_action, ProfileDialog),
                         (window.help_action, HelpDialog)):
        action.trigger()
        assert isinstance(window._dialog, kind) and window._dialog.isVisible()
        window._dialog.accept()


def test_clear_and_new_message_offer_a_large_undo(qtbot, settings_path, documents):
    window = open_window(qtbot)
    c = window.controller
    window.writing.toggle_running()
    steer(window, "I see")
    window.writing.toggle_running()
    window.messages.new_message()
    assert c.history == "I see\n" and window.messages.undo_bar.isVisibleTo(window) and window.messages.undo_bar.offered
    window.messages.undo_bar.undo_action.trigger()  # back in the message: writing goes on from its end
    assert c.history == "I see" and c.zoom.context == "I see"  # (a likely space may already sit under the crosshair)
    assert window.panel.toPlainText().startswith("I see") and "\n" not in c.text
    assert not window.messages.undo_bar.isVisibleTo(window)
    window.writing.toggle_running()
    steer(window, " you")
    window.writing.toggle_running()
    assert window.panel.toPlainText() == "I see you"

    window.messages.clear_text()
    assert c.text == "" and window.messages.undo_bar.offered
    window.messages.undo_bar.undo_action.trigger()
    assert window.panel.toPlainText() == "I see you\n"
    window.messages.clear_text()
    window.messages.undo_bar.expire()  # the few seconds passed
    assert not window.messages.undo_bar.undo() and c.text == ""


def test_new_message_is_not_beside_copy_all(qtbot, settings_path, documents):
    window = open_window(qtbot)
    for bar in window.findChildren(type(window.messages.undo_bar).__mro__[1]):  # every QToolBar
        actions = [a for a in bar.actions() if not a.isSeparator()]
        if window.messages.copy_action in actions:
            assert window.messages.new_message_action not in actions


def test_the_empty_text_panel_says_what_it_is(qtbot, settings_path, documents):
    window = open_window(qtbot)
    assert window.panel.placeholderText() == PLACEHOLDER and "appears here" in PLACEHOLDER


def test_tooltips_are_narrow_enough_never_to_be_cut_off(qtbot, settings_path, documents):
    long = "No speech available: install the PySide6 text-to-speech add-on (PySide6-Addons) or one of spd-say, x"
    assert all(len(line) <= TIP_WIDTH for line in wrap_tip(long).splitlines())
    window = open_window(qtbot)
    for action in window.actions():
        assert all(len(line) <= TIP_WIDTH for line in action.toolTip().splitlines()), action.text()
    for box in (window.learning.adapt_box, window.writing.auto_speed_box, window.writing.speed_box, window.input.preset_box):
        assert all(len(line) <= TIP_WIDTH for line in box.toolTip().splitlines()), box.toolTip()


def _script(tmp_path: Path, name: str, body: str) -> None:
    command = tmp_path / name
    command.write_text("#!/bin/sh\n" + body)
    command.chmod(0o755)


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True  # no such child any more: it was waited for
    return False


def test_a_finished_speech_command_is_reaped(tmp_path, monkeypatch):
    _script(tmp_path, "espeak", "exit 0\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    speaker = Speaker(commands=("espeak",), use_qt=False)
    assert speaker.speak("hello")
    pid = speaker._process.pid
    speaker.join(10)
    assert _reaped(pid)
    assert not Path(f"/proc/{pid}").exists() or "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_an_interrupted_speech_command_is_reaped(tmp_path, monkeypatch):
    _script(tmp_path, "espeak", "exec sleep 60\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    speaker = Speaker(commands=("espeak",), use_qt=False)
    assert speaker.speak("hello")
    first = speaker._process.pid
    assert speaker.speak("again")  # interrupts the first
    speaker.stop()
    speaker.join(10)
    assert _reaped(first) and not speaker.running


def test_pressing_the_preset_or_input_in_use_again_changes_nothing(qtbot, settings_path, documents):
    window = open_window(qtbot)
    dialog = window.preferences_dialog()
    qtbot.addWidget(dialog)
    dialog.speed.set_value(2.3, emit=True)
    window.status.set_notice("input", "kept")
    dialog.preset.buttons[window.controller.preset.name].click()  # a Choice button emits even when already chosen
    dialog.input.buttons["mouse"].click()
    assert window.controller.speed_bps == pytest.approx(2.3) == window.keeper.prefs.speed_bps
    assert "kept" in window.status.notice
