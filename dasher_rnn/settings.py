"""Persistent user preferences in a small JSON file, tolerant of hand edits and crashes.

The file lives in the platformdirs user config folder (``settings.json``), or where ``DASHER_RNN_CONFIG``
(a file path) or an explicit path says. Loading never fails: a missing file gives the defaults, a corrupt
one is moved aside (``settings.json.bad-<timestamp>``) and a bad value falls back to its default; ``notice``
then says what happened, for the UI to show. Saving is atomic (temporary file, fsync, rename), so a crash
mid-write leaves the previous file intact.
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import platformdirs

from dasher_rnn.input.dasher_socket import RANGE_LIMIT, check_label
from dasher_rnn.input.presets import PRESETS

log = logging.getLogger(__name__)

ENV_VAR = "DASHER_RNN_CONFIG"
FILE_NAME = "settings.json"
INPUTS = ("mouse", "gaze-udp", "tobii", "dasher-socket")
COLOUR_SCHEMES = ("default", "high-contrast")
SPEED_RANGE = (0.1, 8.0)  # bits per second; out-of-range speeds are clamped, not reset


class SettingsError(OSError):
    """The settings file cannot be written."""


# Each rule returns the value to use (speeds clamped into range) or raises ValueError saying what was expected.

def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _choice(*allowed: str):
    def check(value):
        if value not in allowed:
            raise ValueError(f"not one of {', '.join(allowed)}")
        return value
    return check


def _name(value):
    if not (isinstance(value, str) and value.strip() and len(value) <= 200):
        raise ValueError("not a non-empty name")
    return value


def _label(value):
    return check_label(value)  # Dasher's socket input: non-empty, no control characters, at most 128 bytes


def _flag(value):
    if not isinstance(value, bool):
        raise ValueError("not true or false")
    return value


def _number(low: float, high: float, integer: bool = False, clamp: bool = False):
    def check(value):
        if isinstance(value, bool) or not isinstance(value, int if integer else int | float) or math.isnan(value):
            raise ValueError(f"not {'an integer' if integer else 'a number'}")
        if clamp:
            return min(max(float(value), low), high)
        if not low <= value <= high:
            raise ValueError(f"not from {low} to {high}")
        return value if integer else float(value)
    return check


@dataclass
class Preferences:
    alphabet: str = field(default="english", metadata={"check": _name})
    model: str = field(default="rnn", metadata={"check": _name})  # "rnn"; "ppm" and "hybrid" may come later
    speed_bps: float = field(default=1.5, metadata={"check": _number(*SPEED_RANGE, clamp=True)})
    auto_speed: bool = field(default=True, metadata={"check": _flag})
    input: str = field(default="mouse", metadata={"check": _choice(*INPUTS)})
    gaze_port: int = field(default=5577, metadata={"check": _number(1, 65535, integer=True)})
    # Dasher's socket input (see dasher_rnn/input/dasher_socket.py): its port, the labels of the x and y lines, and
    # the values that map to the writing area's left and right (x) and top and bottom (y) edges; min = max is
    # refused when the input starts
    socket_port: int = field(default=20320, metadata={"check": _number(1, 65535, integer=True)})
    socket_x_label: str = field(default="x", metadata={"check": _label})
    socket_y_label: str = field(default="y", metadata={"check": _label})
    socket_x_min: float = field(default=0.0, metadata={"check": _number(-RANGE_LIMIT, RANGE_LIMIT)})
    socket_x_max: float = field(default=1.0, metadata={"check": _number(-RANGE_LIMIT, RANGE_LIMIT)})
    socket_y_min: float = field(default=0.0, metadata={"check": _number(-RANGE_LIMIT, RANGE_LIMIT)})
    socket_y_max: float = field(default=1.0, metadata={"check": _number(-RANGE_LIMIT, RANGE_LIMIT)})
    preset: str = field(default="mouse", metadata={"check": _choice(*PRESETS)})
    profile: str = field(default="default", metadata={"check": _name})
    adaptation: bool = field(default=True, metadata={"check": _flag})
    font_size: int = field(default=14, metadata={"check": _number(6, 96, integer=True)})
    colour_scheme: str = field(default="default", metadata={"check": _choice(*COLOUR_SCHEMES)})
    reverse_speed: float = field(default=1.0, metadata={"check": _number(0.1, 4.0)})
    turbo_factor: float = field(default=2.0, metadata={"check": _number(1.0, 8.0)})

    def validated(self) -> tuple[Preferences, list[str]]:
        """A copy with every bad value replaced by its default (speed clamped), and what was changed."""
        values, problems = {}, []
        for f in fields(self):
            value = getattr(self, f.name)
            try:
                values[f.name] = f.metadata["check"](value)
            except ValueError as exc:
                problems.append(f"{f.name} = {_short(value)} is {exc}, using the default {f.default!r}")
                values[f.name] = f.default
            else:
                if values[f.name] != value:
                    problems.append(f"{f.name} = {_short(value)} is out of range, using {values[f.name]!r}")
        return Preferences(**values), problems

    @classmethod
    def from_dict(cls, data: dict) -> tuple[Preferences, list[str]]:
        """Preferences from parsed JSON: unknown keys ignored, missing ones default, bad ones reset (see validated)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known}).validated()


def default_path() -> Path:
    """Where the settings live: ``$DASHER_RNN_CONFIG`` if set, else the user config folder."""
    override = os.environ.get(ENV_VAR)
    return Path(override).expanduser() if override else platformdirs.user_config_path("dasher-rnn") / FILE_NAME


class SettingsStore:
    """Loads and saves Preferences at one path; ``notice`` holds a message for the user after a repair."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.notice: str | None = None

    def load(self) -> Preferences:
        """The saved preferences, or defaults (never raises for a bad file; see ``notice``)."""
        self.notice = None
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return Preferences()
        except OSError as exc:
            self.notice = f"Could not read the settings file {self.path} ({exc}); using the default settings."
            log.warning("%s", self.notice)
            return Preferences()
        try:
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
        except (ValueError, RecursionError) as exc:  # ValueError covers UnicodeDecodeError and JSONDecodeError
            self.notice = self._move_aside(str(exc) or type(exc).__name__)
            log.warning("%s", self.notice)
            return Preferences()
        prefs, problems = Preferences.from_dict(data)
        if problems:
            self.notice = f"Some settings in {self.path} were invalid and were reset: " + "; ".join(problems) + "."
            log.warning("%s", self.notice)
        return prefs

    def _move_aside(self, reason: str) -> str:
        bad = self.path.with_name(f"{self.path.name}.bad-{time.strftime('%Y%m%d-%H%M%S')}")
        try:
            os.replace(self.path, bad)
        except OSError as exc:
            return f"The settings file {self.path} is corrupt ({reason}) and could not be moved aside ({exc}); " \
                   "using the default settings."
        return f"The settings file was corrupt ({reason}); it was kept as {bad} and the default settings are used."

    def save(self, prefs: Preferences) -> None:
        """Write prefs atomically, creating the folder; bad values are saved as their defaults.

        Raises SettingsError if the file cannot be written (the previous file is then untouched).
        """
        prefs, problems = prefs.validated()
        for problem in problems:
            log.warning("saving settings: %s", problem)
        text = json.dumps(asdict(prefs), indent=2) + "\n"
        tmp = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            raise SettingsError(f"cannot save the settings to {self.path}: {exc}") from exc
