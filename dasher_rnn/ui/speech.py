"""Reading the text aloud with the voice the system already has, never blocking the frame loop.

The engines, in order (the first one found speaks):

1. Qt's text to speech, where this PySide6 has it (PySide6-Addons; the light install's PySide6-Essentials does not).
   On Linux it is only a client of speech-dispatcher, so it adds nothing that ``spd-say`` does not.
2. The system's own speech program, started without waiting for it:

   - Linux and the BSDs: ``spd-say`` (speech-dispatcher: the voice the user chose, the one Orca speaks with), then
     ``espeak-ng``, then ``espeak``;
   - macOS: ``say``;
   - Windows: Windows PowerShell's System.Speech (the SAPI voices every Windows has), the text passed in an
     environment variable so that no quoting or code page can change it.

When none is found, ``reason`` is one sentence naming the one thing that adds a voice
(``voice_command``: ``sudo apt-get install espeak-ng`` on Debian and Ubuntu). ``make run``'s system check prints the
same sentence (``ui/preflight.py``), so this module imports nothing but the standard library at its top.

Each command started is waited for on a small thread of its own, so that neither a finished nor an interrupted one
is left behind as a zombie process.

``set_language`` picks a voice for the alphabet's language where the system has one (Qt's locales, espeak's voices,
speech-dispatcher's language option, macOS's and Windows's voice lists) and says in ``language_note`` when it has
none.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

LINUX_COMMANDS = ("spd-say", "espeak-ng", "espeak")  # speech-dispatcher first: it uses the user's chosen voice
MAX_BYTES = 100_000  # far beyond a message; one argument stays within Linux's limit (128 KiB) whatever the script
MAX_WINDOWS_CHARS = 30_000  # an environment variable holds at most 32,767 UTF-16 units
LIST_TIMEOUT_S = 20.0  # listing the voices (Windows PowerShell can take a few seconds on a cold start)

# Windows PowerShell's scripts: no double quotes in them, so that the command line passes them unchanged
_WINDOWS_VOICES = ("Add-Type -AssemblyName System.Speech; "
                   "(New-Object System.Speech.Synthesis.SpeechSynthesizer).GetInstalledVoices() | "
                   "Where-Object { $_.Enabled } | ForEach-Object { $_.VoiceInfo.Culture.Name }")
_WINDOWS_SAY = ("Add-Type -AssemblyName System.Speech; "
                "$s = New-Object System.Speech.Synthesis.SpeechSynthesizer; "
                "$l = $env:DASHER_RNN_LANGUAGE; "
                "if ($l) { $v = $s.GetInstalledVoices() | Where-Object { $_.Enabled -and "
                "$_.VoiceInfo.Culture.TwoLetterISOLanguageName -eq $l } | Select-Object -First 1; "
                "if ($v) { $s.SelectVoice($v.VoiceInfo.Name) } }; "
                "$s.Speak($env:DASHER_RNN_SAY)")
_POWERSHELL_OPTIONS = ["-NoLogo", "-NoProfile", "-NonInteractive", "-Command"]

# what each platform's engine is called in messages ("... has no voice for 'sw'")
_NAMES = {"powershell": "Windows speech", "say": "macOS speech"}


def engine_commands(platform: str | None = None) -> tuple[str, ...]:
    """The speech programs tried on ``platform`` (``sys.platform``'s names), best first."""
    platform = sys.platform if platform is None else platform
    if platform == "win32":
        return ("powershell",)  # Windows PowerShell 5.1, part of every Windows since 10; it has System.Speech
    if platform == "darwin":
        return ("say",)
    return LINUX_COMMANDS


def voice_command(platform: str | None = None, which: Callable[[str], str | None] = shutil.which) -> str:
    """The one command (or, on Windows and macOS, the one setting) that adds a voice on ``platform``."""
    platform = sys.platform if platform is None else platform
    if platform == "win32":
        return "Settings > Time & language > Speech > Add voices"
    if platform == "darwin":
        return "System Settings > Accessibility > Spoken Content"
    sudo = "sudo " if hasattr(os, "geteuid") and os.geteuid() != 0 else ""
    managers = [("apt-get", "apt-get install"), ("dnf", "dnf install"), ("zypper", "zypper install"),
                ("pacman", "pacman -S")]
    if platform.startswith("freebsd"):
        managers = [("pkg", "pkg install")]
    for program, install in managers:
        if which(program):
            return f"{sudo}{install} espeak-ng"
    return "your system's package manager (the package espeak-ng)"


def no_voice_reason(platform: str | None = None, which: Callable[[str], str | None] = shutil.which) -> str:
    """The one short sentence saying that nothing speaks here and what adds a voice (short enough for a status
    bar's line in a narrow window on Linux: "No speech available: add a voice with sudo apt-get install espeak-ng")."""
    platform = sys.platform if platform is None else platform
    where = "in" if platform in ("win32", "darwin") else "with"
    return f"No speech available: add a voice {where} {voice_command(platform, which)}"


class Speaker:
    """``speak(text)`` interrupts what is being said and says ``text``; ``available`` is False when it cannot."""

    def __init__(self, commands: tuple[str, ...] | None = None, use_qt: bool = True, language: str = "",
                 platform: str | None = None) -> None:
        """``commands``: the speech programs to try (``engine_commands``: this platform's); ``use_qt``: try Qt's
        text to speech first; ``language``: a BCP-47 code ("de", "pt-BR"), empty for the system's default voice;
        ``platform``: ``sys.platform``'s name, for the reason given when nothing speaks."""
        commands = engine_commands(platform) if commands is None else commands
        self._engine = None
        self._command: list[str] | None = None  # the program, and the arguments before the text
        self._kind = ""  # which program it is: "spd-say", "espeak-ng", "espeak", "say" or "powershell"
        self._voices: list[tuple[str, str]] | None = None  # (name, language) of each voice; None: not listed
        self._language_option: list[str] = []  # the command's arguments that choose the language
        self._voice_language = ""  # Windows: the language whose voice the script picks ("" the default voice)
        self.language = ""
        self.language_note = ""  # why the language's voice is not used ("" when it is, or none was asked for)
        self._process: subprocess.Popen | None = None
        self._reapers: list[threading.Thread] = []  # one per command started, waiting for it to end
        self.backend = ""
        self.reason = ""
        if use_qt:
            self._engine = _qt_engine()
            if self._engine is not None:
                self.backend = "Qt text to speech"
        if self._engine is None:
            for name in commands:
                path = shutil.which(name)
                if path:
                    self._use_command(name, path)
                    break
        if not self.available and not self.reason:
            self.reason = no_voice_reason(platform)
        self.set_language(language)

    def _use_command(self, name: str, path: str) -> None:
        kind = os.path.splitext(os.path.basename(name))[0].lower()
        if kind == "powershell":
            self._voices = _windows_voices(path)
            if self._voices == []:  # listed, and there is none (every Windows has one, unless removed)
                self.reason = no_voice_reason("win32")
                return
        elif kind == "say":
            self._voices = _mac_voices(path) or None  # none parsed: macOS has voices, the list's form changed
        self._kind, self.backend = kind, _NAMES.get(kind, name)
        if kind == "powershell":
            self._command = [path, *_POWERSHELL_OPTIONS, _WINDOWS_SAY]
        elif kind == "say":
            self._command = [path]
        else:
            self._command = [path, "--"]

    @property
    def available(self) -> bool:
        return self._engine is not None or self._command is not None

    def set_language(self, language: str) -> bool:
        """Speak ``language`` from now on; False (and ``language_note`` says why) when no voice for it was found,
        in which case the default voice goes on speaking."""
        self.language, self.language_note, self._language_option = language, "", []
        self._voice_language = ""
        if not language or not self.available:
            return not language
        primary = language.replace("_", "-").split("-")[0].lower()
        if self._engine is not None:
            locales = [loc for loc in self._engine.availableLocales() if loc.name().split("_")[0] == primary]
            if locales:
                self._engine.setLocale(locales[0])
                return True
        elif self._kind in ("espeak-ng", "espeak"):
            assert self._command is not None
            if _espeak_has_voice(self._command[0], primary):
                self._language_option = ["-v", primary]
                return True
        elif self._kind == "spd-say":
            self._language_option = ["-l", primary]  # speech-dispatcher picks the voice: none to check here
            return True
        elif self._kind == "powershell" and (self._voices is None or any(lang == primary for _, lang in self._voices)):
            self._voice_language = primary  # the script picks that language's voice, the default one if none
            return True
        elif self._kind == "say" and self._voices is not None:
            voice = next((name for name, lang in self._voices if lang == primary), None)
            if voice is not None:
                self._language_option = ["-v", voice]
                return True
        self.language_note = f"{self.backend} has no voice for {language!r}: the default voice speaks"
        return False

    def speak(self, text: str) -> bool:
        """Start saying ``text`` (returns at once); False when nothing could say it."""
        text = text.replace("\0", "")
        if not text.strip():
            return False
        if self._engine is not None:
            self._engine.stop()
            self._engine.say(text)
            return True
        if self._command is None:
            return False
        self.stop()
        env = None
        if self._kind == "powershell":  # the text and the language travel in the environment, never parsed
            text = text.encode("utf-16-le")[:2 * MAX_WINDOWS_CHARS].decode("utf-16-le", errors="ignore")
            env = {**os.environ, "DASHER_RNN_SAY": text, "DASHER_RNN_LANGUAGE": self._voice_language}
            command = list(self._command)
        else:
            text = text.encode("utf-8")[:MAX_BYTES].decode("utf-8", errors="ignore")
            if self._command[-1] != "--" and text.startswith("-"):
                text = " " + text  # never read as an option
            command = [*self._command[:1], *self._language_option, *self._command[1:], text]
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, env=env,
                                       creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0))
        except (OSError, ValueError) as exc:
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


def _listed(command: list[str]) -> str | None:
    """What ``command`` prints, or None when it cannot run, fails or takes too long."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=LIST_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0))
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _espeak_has_voice(command: str, language: str) -> bool:
    """Whether espeak lists a voice for ``language`` (its ``--voices=`` table has a row after the heading)."""
    listed = _listed([command, f"--voices={language}"]) or ""
    rows = [line.split() for line in listed.splitlines()[1:]]
    return any(len(row) > 1 and row[1].split("-")[0] == language for row in rows)


def _windows_voices(command: str) -> list[tuple[str, str]] | None:
    """The enabled SAPI voices' (culture, language) ("de-DE", "de"); None when PowerShell could not list them."""
    listed = _listed([command, *_POWERSHELL_OPTIONS, _WINDOWS_VOICES])
    if listed is None:
        return None
    return [(line.strip(), line.strip().split("-")[0].lower()) for line in listed.splitlines() if line.strip()]


_SAY_VOICE = re.compile(r"^(?P<name>\S.*?)\s+(?P<locale>[a-z]{2,3})(?:[_-][A-Za-z0-9_-]+)?\s+#")


def _mac_voices(command: str) -> list[tuple[str, str]] | None:
    """``say -v ?``'s voices as (name, language): "Anna  de_DE  # Hallo..." is ("Anna", "de")."""
    listed = _listed([command, "-v", "?"])
    if listed is None:
        return None
    voices = [_SAY_VOICE.match(line) for line in listed.splitlines()]
    return [(m["name"], m["locale"].lower()) for m in voices if m is not None]


def _qt_engine():
    try:
        from PySide6.QtTextToSpeech import QTextToSpeech
    except ImportError:  # PySide6-Essentials, or PySide6-Addons without the system libraries it loads (libpulse)
        return None
    engine = QTextToSpeech()
    # "mock" is Qt's test engine (shipped in the wheel): it speaks nothing
    if engine.state() == QTextToSpeech.State.Error or engine.engine() == "mock":
        return None
    return engine
