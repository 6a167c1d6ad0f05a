"""Reading the text aloud with whatever the system offers, never blocking the frame loop.

Qt's text-to-speech module when this PySide6 has it (PySide6-Essentials does not); otherwise a speech
command found on PATH, started without waiting for it; otherwise nothing, and ``reason`` says why.
Each command started is waited for on a small thread of its own, so that neither a finished nor an
interrupted one is left behind as a zombie process.

``set_language`` picks a voice for the alphabet's language where the system has one (Qt's locales, espeak's
voices, speech-dispatcher's language option) and says in ``language_note`` when it has none.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import threading

log = logging.getLogger(__name__)

COMMANDS = ("spd-say", "espeak-ng", "espeak", "say")  # speech-dispatcher first: it uses the user's chosen voice
MAX_CHARS = 100_000  # far beyond a message; keeps the command line within the system's limit


class Speaker:
    """``speak(text)`` interrupts what is being said and says ``text``; ``available`` is False when it cannot."""

    def __init__(self, commands: tuple[str, ...] = COMMANDS, use_qt: bool = True, language: str = "") -> None:
        """``language``: a BCP-47 code ("de", "pt-BR"); empty for the system's default voice."""
        self._engine = None
        self._command: list[str] | None = None
        self._language_option: list[str] = []  # the command's arguments that choose the language
        self.language = ""
        self.language_note = ""  # why the language's voice is not used ("" when it is, or none was asked for)
        self._process: subprocess.Popen | None = None
        self._reapers: list[threading.Thread] = []  # one per command started, waiting for it to end
        self.backend = ""
        if use_qt:
            self._engine = _qt_engine()
            if self._engine is not None:
                self.backend = "Qt text to speech"
        if self._engine is None:
            for name in commands:
                path = shutil.which(name)
                if path:
                    self._command = [path] if name == "say" else [path, "--"]
                    self.backend = name
                    break
        self.reason = "" if self.available else (
            "No speech available: install the PySide6 text-to-speech add-on (PySide6-Addons) "
            f"or one of {', '.join(commands)}")
        self.set_language(language)

    @property
    def available(self) -> bool:
        return self._engine is not None or self._command is not None

    def set_language(self, language: str) -> bool:
        """Speak ``language`` from now on; False (and ``language_note`` says why) when no voice for it was found,
        in which case the default voice goes on speaking."""
        self.language, self.language_note, self._language_option = language, "", []
        if not language or not self.available:
            return not language
        primary = language.replace("_", "-").split("-")[0].lower()
        if self._engine is not None:
            locales = [loc for loc in self._engine.availableLocales() if loc.name().split("_")[0] == primary]
            if locales:
                self._engine.setLocale(locales[0])
                return True
            self.language_note = f"{self.backend} has no voice for {language!r}: the default voice speaks"
            return False
        assert self._command is not None
        name = self.backend
        if name in ("espeak-ng", "espeak"):
            if _espeak_has_voice(self._command[0], primary):
                self._language_option = ["-v", primary]
                return True
        elif name == "spd-say":
            self._language_option = ["-l", primary]  # speech-dispatcher picks the voice: none to check here
            return True
        self.language_note = f"{name} has no voice for {language!r}: the default voice speaks"
        return False

    def speak(self, text: str) -> bool:
        """Start saying ``text`` (returns at once); False when nothing could say it."""
        text = text[:MAX_CHARS]
        if not text.strip():
            return False
        if self._engine is not None:
            self._engine.stop()
            self._engine.say(text)
            return True
        if self._command is None:
            return False
        self.stop()
        if self._command[-1] != "--" and text.startswith("-"):
            text = " " + text  # never read as an option
        command = [*self._command[:1], *self._language_option, *self._command[1:]]
        try:
            process = subprocess.Popen([*command, text], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except OSError as exc:
            log.warning("cannot start %s: %s", self._command[0], exc)
            return False
        self._process = process
        reaper = threading.Thread(target=process.wait, name="speech-reaper", daemon=True)
        reaper.start()
        self._reapers = [t for t in self._reapers if t.is_alive()] + [reaper]
        return True

    @property
    def running(self) -> bool:
        """A speech command is still saying something."""
        process = self._process
        return process is not None and process.poll() is None

    def join(self, timeout: float | None = None) -> None:
        """Wait until every command started has ended and been reaped (tests; closing)."""
        for reaper in list(self._reapers):
            reaper.join(timeout)
        self._reapers = [t for t in self._reapers if t.is_alive()]

    def stop(self) -> None:
        """Interrupt speech still running (a new message replaces the old one)."""
        if self._engine is not None:
            self._engine.stop()
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()  # its reaper thread waits for it


def _espeak_has_voice(command: str, language: str) -> bool:
    """Whether espeak lists a voice for ``language`` (its ``--voices=`` table has a row after the heading)."""
    try:
        listed = subprocess.run([command, f"--voices={language}"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return False
    rows = [line.split() for line in listed.stdout.splitlines()[1:]]
    return any(len(row) > 1 and row[1].split("-")[0] == language for row in rows)


def _qt_engine():
    try:
        from PySide6.QtTextToSpeech import QTextToSpeech
    except ImportError:
        return None
    engine = QTextToSpeech()
    return None if engine.state() == QTextToSpeech.State.Error else engine
