"""Reading the text aloud with whatever the system offers, never blocking the frame loop.

Qt's text-to-speech module when this PySide6 has it (PySide6-Essentials does not); otherwise a speech
command found on PATH, started without waiting for it; otherwise nothing, and ``reason`` says why.
Each command started is waited for on a small thread of its own, so that neither a finished nor an
interrupted one is left behind as a zombie process.
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

    def __init__(self, commands: tuple[str, ...] = COMMANDS, use_qt: bool = True) -> None:
        self._engine = None
        self._command: list[str] | None = None
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

    @property
    def available(self) -> bool:
        return self._engine is not None or self._command is not None

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
        try:
            process = subprocess.Popen([*self._command, text], stdin=subprocess.DEVNULL,
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


def _qt_engine():
    try:
        from PySide6.QtTextToSpeech import QTextToSpeech
    except ImportError:
        return None
    engine = QTextToSpeech()
    return None if engine.state() == QTextToSpeech.State.Error else engine
