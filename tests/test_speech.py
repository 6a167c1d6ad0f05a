"""Speech from the start: each system's own engine found in a clear order, the one command that adds a voice where
there is none, the language's voice, messages that are never cut off, and the real espeak-ng saying what the app's
Speak action asks under a real X server (Xvfb)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from dasher_rnn.settings import SettingsStore
from dasher_rnn.ui import speech
from dasher_rnn.ui.speech import Speaker, engine_commands, no_voice_reason, voice_command
from dasher_rnn.ui.window import MainWindow
from dasher_rnn.zoom.controller import WritingController
from tests.conftest import writer_source, xvfb_display

REPO = Path(__file__).resolve().parent.parent
ESPEAK_NG = shutil.which("espeak-ng")
needs_espeak_ng = pytest.mark.skipif(ESPEAK_NG is None or not sys.platform.startswith("linux"),
                                     reason="espeak-ng is not installed (Debian: apt-get install espeak-ng)")


def _script(folder: Path, name: str, body: str) -> Path:
    command = folder / name
    command.write_text("#!/bin/sh\n" + body)
    command.chmod(0o755)
    return command


# -- which engine, and what adds a voice -------------------------------------------------------------------------

def test_each_system_tries_its_own_speech_first():
    assert engine_commands("linux") == ("spd-say", "espeak-ng", "espeak")  # the user's chosen voice first
    assert engine_commands("freebsd14") == engine_commands("linux")
    assert engine_commands("darwin") == ("say",)
    assert engine_commands("win32") == ("powershell",)


def test_no_voice_is_one_short_sentence_naming_the_one_command_that_adds_one(monkeypatch):
    def only(*programs: str):
        return lambda name: f"/usr/bin/{name}" if name in programs else None

    sudo = "" if os.geteuid() == 0 else "sudo "
    assert voice_command("linux", only("apt-get", "dnf")) == f"{sudo}apt-get install espeak-ng"
    assert voice_command("linux", only("dnf")) == f"{sudo}dnf install espeak-ng"
    assert voice_command("linux", only("pacman")) == f"{sudo}pacman -S espeak-ng"
    assert voice_command("freebsd14", only("pkg", "apt-get")) == f"{sudo}pkg install espeak-ng"
    assert "espeak-ng" in voice_command("linux", only())
    reason = no_voice_reason("linux", only("apt-get"))
    assert reason == f"No speech available: add a voice with {sudo}apt-get install espeak-ng"
    assert reason.count(".") == 0 and len(reason) <= 75  # one sentence, one status bar line
    assert "Settings > Time & language > Speech" in no_voice_reason("win32")
    assert "Spoken Content" in no_voice_reason("darwin")

    monkeypatch.setenv("PATH", "")
    nothing = Speaker(commands=("espeak-ng",), use_qt=False, platform="linux")
    assert not nothing.available and not nothing.speak("hello")
    assert nothing.reason == no_voice_reason("linux") and "espeak-ng" in nothing.reason


def test_qts_test_engine_is_never_taken_for_a_voice(monkeypatch):
    """PySide6-Addons ships Qt's "mock" engine, which speaks nothing; an engine in error is no voice either."""
    class FakeTextToSpeech:
        class State:
            Ready, Error = "ready", "error"

        engine_name, engine_state = "mock", "ready"

        def state(self):
            return self.engine_state

        def engine(self):
            return self.engine_name

    module = types.ModuleType("PySide6.QtTextToSpeech")
    module.QTextToSpeech = FakeTextToSpeech  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "PySide6.QtTextToSpeech", module)
    assert speech._qt_engine() is None
    FakeTextToSpeech.engine_name, FakeTextToSpeech.engine_state = "speechd", "error"
    assert speech._qt_engine() is None
    FakeTextToSpeech.engine_state = "ready"
    assert speech._qt_engine() is not None


# -- each engine's command ---------------------------------------------------------------------------------------

def test_windows_speaks_through_powershell_with_the_text_untouched_and_the_languages_voice(tmp_path, monkeypatch):
    said = tmp_path / "said.txt"
    _script(tmp_path, "powershell",
            "case \"$*\" in\n"
            f"  *'$s.Speak('*) printf '%s|%s' \"$DASHER_RNN_LANGUAGE\" \"$DASHER_RNN_SAY\" > {said};;\n"
            "  *GetInstalledVoices*) printf 'en-US\\r\\nde-DE\\r\\n';;\n"
            "esac\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    speaker = Speaker(commands=("powershell",), use_qt=False, language="de-AT")
    assert speaker.available and speaker.backend == "Windows speech" and speaker.language_note == ""
    text = 'Grüße, "du" -x $HOME; `n \'ok\' ünd 漢字'
    assert speaker.speak(text)
    speaker.join(10)
    assert said.read_text(encoding="utf-8") == f"de|{text}"  # no quoting, no code page, no option
    assert not speaker.set_language("sw") and "Windows speech has no voice for 'sw'" in speaker.language_note
    assert speaker.speak("Habari")
    speaker.join(10)
    assert said.read_text(encoding="utf-8") == "|Habari"  # the default voice

    _script(tmp_path, "powershell", "exit 0\n")  # listed, and no voice at all
    none = Speaker(commands=("powershell",), use_qt=False)
    assert not none.available and none.reason == no_voice_reason("win32")


def test_macos_says_it_with_the_languages_voice(tmp_path, monkeypatch):
    said = tmp_path / "said.txt"
    _script(tmp_path, "say",
            'if [ "$1" = -v ] && [ "$2" = "?" ]; then\n'
            "  echo 'Albert              en_US    # Hello! My name is Albert.'\n"
            "  echo 'Eddy (German (Germany)) de_DE    # Hallo! Ich heiße Eddy.'\n"
            "  echo 'Anna                de_DE    # Hallo! Ich heiße Anna.'\n"
            "  exit 0\n"
            "fi\n"
            f"printf '%s|' \"$@\" > {said}\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    speaker = Speaker(commands=("say",), use_qt=False, language="de")
    assert speaker.backend == "macOS speech" and speaker.language_note == ""
    assert speaker.speak("-Guten Tag")
    speaker.join(10)
    assert said.read_text(encoding="utf-8") == "-v|Eddy (German (Germany))| -Guten Tag|"  # never read as an option
    assert not speaker.set_language("sw") and "no voice for 'sw'" in speaker.language_note
    assert speaker.speak("Habari")
    speaker.join(10)
    assert said.read_text(encoding="utf-8") == "Habari|"


def test_a_long_message_in_any_script_is_said_not_refused(tmp_path, monkeypatch):
    """Linux takes at most 128 KiB in one argument: the text is cut to fit (in bytes, not characters), and a NUL
    the command line cannot carry is left out."""
    said = tmp_path / "said.txt"
    _script(tmp_path, "espeak-ng", f"shift\nprintf '%s' \"$1\" > {said}\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    speaker = Speaker(commands=("espeak-ng",), use_qt=False)
    assert speaker.speak("ß" * 100_000 + "\0")
    speaker.join(10)
    written = said.read_text(encoding="utf-8")
    assert written == "ß" * (speech.MAX_BYTES // 2)


@needs_espeak_ng
def test_the_real_espeak_ng_speaks_the_alphabets_language_or_says_it_has_no_voice(tmp_path, monkeypatch):
    wav = tmp_path / "said.wav"
    _script(tmp_path, "espeak-ng", f'case "$1" in --voices*) exec {ESPEAK_NG} "$@";; esac\n'
                                   f'exec {ESPEAK_NG} -w {wav} "$@"\n')
    monkeypatch.setenv("PATH", str(tmp_path))
    speaker = Speaker(commands=("espeak-ng",), use_qt=False, language="de-DE")
    assert speaker.backend == "espeak-ng" and speaker.language_note == ""
    assert speaker.speak("Guten Tag")
    speaker.join(30)
    reference = tmp_path / "reference.wav"
    subprocess.run([ESPEAK_NG, "-v", "de", "-w", str(reference), "--", "Guten Tag"], check=True, timeout=30)
    assert wav.read_bytes() == reference.read_bytes()  # the German voice said exactly that
    assert not speaker.set_language("yo") and "espeak-ng has no voice for 'yo'" in speaker.language_note


# -- messages never cut off --------------------------------------------------------------------------------------

def test_a_long_message_wraps_whole_in_a_window_800_px_wide(qtbot, settings_path):
    store = SettingsStore()
    prefs = store.load()
    window = MainWindow(WritingController(writer_source("uniform"), prefs.controller_config()), store, prefs,
                        start_timer=False)
    qtbot.addWidget(window)
    window.resize(800, 600)
    window.show()
    qtbot.waitExposed(window)
    window.speech.speaker = Speaker(commands=(), use_qt=False, platform="linux")
    assert not window.speech.say_why_not("Speak on stop")
    long = "Could not keep this message's figures (the disk is full: " + "every word of a long reason, " * 12 + ")"
    window.status.set_notice("progress", long)
    label = window.status.notice_label

    def whole() -> bool:
        QApplication.processEvents()
        return label.isVisible() and label.height() >= label.heightForWidth(label.width())

    qtbot.waitUntil(whole)
    assert window.width() == 800 and window.minimumSizeHint().width() <= 800  # never pushed past the screen
    left = label.mapTo(window, label.rect().topLeft())
    assert left.x() >= 0 and left.x() + label.width() <= window.width()
    assert label.height() >= 3 * label.fontMetrics().height()  # wrapped onto several lines, all of them shown
    assert "Speak on stop: No speech available: add a voice with" in label.text() and long in label.text()

    # the Speak action unavailable: its status tip, shown on the status bar's one line, fits there whole
    bar = window.statusBar()
    assert bar.fontMetrics().horizontalAdvance(no_voice_reason("linux")) < bar.width() - 40

    window.status.set_notice("progress", "")
    window.status.set_notice("speech", "")
    qtbot.waitUntil(lambda: not label.isVisible())


# -- the app under a real X server -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def xvfb():
    """A private X server (``:N``) for this module; skipped where Xvfb is not installed."""
    with xvfb_display() as display:
        yield display


# The app's window on the X display: write "Hi" by steering, stop, press Ctrl+R (the Speak action), wait for the
# speech command to end; what it found and did, as JSON.
APP_SPEAKS = r"""
import json, sys
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

app = QApplication(sys.argv[:1])
from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.settings import SettingsStore
from dasher_rnn.ui.window import MainWindow
from dasher_rnn.zoom.controller import WritingController
from dasher_rnn.zoom.simulate import target_pointer, wait_for_answers
from dasher_rnn.zoom.sources import WriterSource

store = SettingsStore()
prefs = store.load().updated(speed_bps=4.0, auto_speed=False)
controller = WritingController(WriterSource(build_writer(WriterConfig(model="uniform"))), prefs.controller_config())
window = MainWindow(controller, store, prefs, start_timer=False)
window.resize(800, 600)
window.show()
QTest.qWaitForWindowExposed(window)
speaker = window.speech.speaker
found = {"platform": app.platformName(), "backend": speaker.backend, "available": speaker.available,
         "reason": speaker.reason, "language": speaker.language, "note": speaker.language_note}
zoom = controller.zoom
window.writing.toggle_running()
for _ in range(4000):
    wait_for_answers(zoom)
    window.view.set_pointer_override(window.view.viewport().to_screen(*target_pointer(zoom, zoom.context + "Hi")))
    window.writing.tick(1 / 30)
    if zoom.output == "Hi":
        break
window.writing.toggle_running()
window.activateWindow()
found["active"] = QTest.qWaitForWindowActive(window, 10000)
QTest.keyClick(window, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
found["started"] = speaker._process is not None
speaker.join(60)
found["output"] = zoom.output
window.close()
print(json.dumps(found))
"""


@needs_espeak_ng
def test_xvfb_the_apps_speak_action_makes_the_real_espeak_ng_say_the_message(xvfb, tmp_path):
    """As on a fresh Debian install after `apt-get install espeak-ng`: nothing but espeak-ng on PATH (no
    speech-dispatcher, no Qt text to speech in the light install); the app finds it, and Ctrl+R makes it say the
    message, proven by the sound it made: the same bytes as espeak-ng saying "Hi" itself."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls, wav = tmp_path / "calls.txt", tmp_path / "said.wav"
    _script(bin_dir, "espeak-ng", f'case "$1" in --voices*) exec {ESPEAK_NG} "$@";; esac\n'
                                  f'printf "%s|" "$@" >> {calls}\nexec {ESPEAK_NG} -w {wav} "$@"\n')
    env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "PYTHONPATH")}
    env.update(DISPLAY=xvfb, QT_QPA_PLATFORM="xcb", PATH=str(bin_dir), PYTHONPATH=str(REPO),
               DASHER_RNN_CONFIG=str(tmp_path / "settings.json"), DASHER_RNN_PROFILES=str(tmp_path / "profiles"),
               DASHER_RNN_JOURNAL=str(tmp_path / "journal.json"), HOME=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", APP_SPEAKS], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0 and "could not connect to display" in done.stderr + done.stdout:
        pytest.skip(f"Qt cannot open a window on Xvfb: {done.stderr[-800:]}")
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["platform"] == "xcb" and found["output"] == "Hi"
    assert found["available"] and found["backend"] == "espeak-ng" and found["reason"] == ""
    assert found["language"] == "en" and found["note"] == ""  # the alphabet's language, and espeak-ng has it
    assert found["started"], found  # Ctrl+R reached the Speak action
    assert calls.read_text(encoding="utf-8") == "-v|en|--|Hi|"
    reference = tmp_path / "reference.wav"
    subprocess.run([ESPEAK_NG, "-v", "en", "-w", str(reference), "--", "Hi"], check=True, timeout=30)
    assert wav.read_bytes()[:4] == b"RIFF" and wav.read_bytes() == reference.read_bytes()


def test_the_status_tip_of_a_disabled_speak_is_the_reason(qtbot, settings_path, monkeypatch):
    monkeypatch.setattr(speech.Speaker, "__init__", _unavailable_init)
    store = SettingsStore()
    prefs = store.load()
    window = MainWindow(WritingController(writer_source("uniform"), prefs.controller_config()), store, prefs,
                        start_timer=False)
    qtbot.addWidget(window)
    speak = window.speech.speak_action
    assert not speak.isEnabled() and speak.statusTip() == no_voice_reason()
    assert re.fullmatch(r"No speech available: add a voice (with|in) .+", speak.toolTip().replace("\n", " "))


_real_init = speech.Speaker.__init__


def _unavailable_init(self, commands=None, use_qt=True, language="", platform=None):
    _real_init(self, commands=(), use_qt=False, language=language, platform=platform)
