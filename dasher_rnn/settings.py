"""Persistent user preferences in a small JSON file, tolerant of hand edits and crashes.

``Preferences`` is one typed, validated (pydantic) model of everything the app remembers; ``SettingsStore`` is
the one place that loads and saves it. The file lives in the platformdirs user config folder
(``settings.json``), or where ``DASHER_RNN_CONFIG`` (a file path) or an explicit path says. Loading never
fails: a missing file gives the defaults, a corrupt or oversized one (over ``MAX_BYTES``; it is read with
``files.read_bounded``) is moved aside (``files.set_aside``: ``settings.json.broken-<time>``), one that is not
a regular file (a FIFO, a link to a device) is ignored and replaced at the next save, and a bad value falls
back to its default (the speed is clamped into range instead); ``notice`` then says what happened, for the UI
to show. Saving is atomic (temporary file, fsync, rename), so a crash mid-write leaves
the previous file intact.

The engine never sees these preferences: the UI turns them into the plain values the writing controller
takes (``controller_config``) and keeps them up to date as the user changes things.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
)

from dasher_rnn.files import UnreadableFile, parse_json, read_bounded, set_aside
from dasher_rnn.input.dasher_socket import RANGE_LIMIT, check_label
from dasher_rnn.input.presets import PRESETS
from dasher_rnn.input.registry import INPUT_NAMES, INPUTS
from dasher_rnn.input.switches import DEFAULT_JOYSTICK, DEFAULT_SWITCH_PORT, SWITCH_SOURCES
from dasher_rnn.zoom.controller import REST_STOP_RANGE, REVERSE_SPEED_RANGE, SPEED_RANGE, TURBO_RANGE, ControllerConfig
from dasher_rnn.zoom.switching import SwitchConfig

log = logging.getLogger(__name__)

ENV_VAR = "DASHER_RNN_CONFIG"
FILE_NAME = "settings.json"
MAX_BYTES = 1 << 20  # a few kilobytes are written: a larger file is not settings
COLOUR_SCHEMES = ("default", "high-contrast")
OUTPUTS = ("panel", "direct")  # direct: also typed into the program that has the keyboard focus
FONT_SIZE_RANGE = (6, 96)
LABEL_PX_RANGE = (6, 64)
# direct output's docked layout (ui/parts/dock.py): the edge the strip docks at, its share of the screen's available
# height (top, bottom) or width (left, right), and the smallest size and the farthest place a geometry the user left
# it at may have
DOCK_EDGES = ("bottom", "top", "left", "right")
DOCK_SHARE_RANGE = (0.2, 0.8)
DOCK_MIN_PX = 100
DOCK_MAX_PX = 100_000
_PROBLEMS = "problems"  # validation context key: a list that collects what was repaired (lenient loading)
_ENGINE = ControllerConfig()  # the controller's defaults are the preferences' defaults


class SettingsError(OSError):
    """The settings file cannot be written."""


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _problems(info: ValidationInfo) -> list[str] | None:
    return info.context.get(_PROBLEMS) if isinstance(info.context, dict) else None


def _reason(exc: ValidationError) -> str:
    """Why a value was refused, in a few lower-case words ("input should be a valid integer")."""
    errors = exc.errors()
    if not errors:
        return "invalid"
    error = errors[0].get("ctx", {}).get("error") if errors[0]["type"] == "value_error" else None
    reason = str(error) if error is not None else errors[0]["msg"]
    return reason[:1].lower() + reason[1:]


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("a name cannot be blank")
    return value


def _infinite_if_huge(value: Any) -> Any:
    """An integer too large for a float (a hand edit: 1 followed by 400 zeros) is an infinite number."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2 ** 1023:
        return math.inf if value > 0 else -math.inf
    return value


def _clamp_speed(value: float, info: ValidationInfo) -> float:
    if math.isnan(value):
        raise ValueError("not a number")
    clamped = min(max(value, SPEED_RANGE[0]), SPEED_RANGE[1])
    problems = _problems(info)
    if clamped != value and problems is not None:
        problems.append(f"{info.field_name} = {_short(value)} is out of range, using {clamped!r}")
    return clamped


_HOST = re.compile(r"[A-Za-z0-9.:-]{1,253}")


def _host(value: str) -> str:
    """A host name or an IP address (v4 or v6), where a tracker's server runs."""
    if not _HOST.fullmatch(value):
        raise ValueError(f"{value[:40]!r} is not a host name or an IP address")
    return value


def _switch_timing(name: str) -> AfterValidator:
    """A switch mode's timing, in the range ``SwitchConfig`` (zoom/switching.py) gives it."""
    def check(value: float) -> float:
        SwitchConfig(**{name: value})
        return value
    return AfterValidator(check)


Name = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_non_blank)]
Speed = Annotated[float, BeforeValidator(_infinite_if_huge), AfterValidator(_clamp_speed)]
Host = Annotated[str, AfterValidator(_host)]
Label = Annotated[str, AfterValidator(check_label)]  # Dasher's socket input: non-empty, no control characters
SocketValue = Annotated[float, BeforeValidator(_infinite_if_huge), Field(ge=-RANGE_LIMIT, le=RANGE_LIMIT,
                                                                         allow_inf_nan=False)]


def _bounded(bounds: tuple[float, float]) -> Any:
    return Field(ge=bounds[0], le=bounds[1], allow_inf_nan=False)


def _tuple_if_list(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value  # JSON has no tuples


def _dock_geometry(value: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    x, y, width, height = value
    if min(width, height) < DOCK_MIN_PX:
        raise ValueError(f"a window smaller than {DOCK_MIN_PX} pixels")
    if max(abs(x), abs(y), width, height) > DOCK_MAX_PX:
        raise ValueError("not on any screen")
    return value


class _Repaired(BaseModel):
    """Strict settings: constructing one with a bad value raises ValidationError; loading (a problems list in the
    validation context, ``Preferences.from_dict``) instead gives each bad value its default and reports it."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")

    @field_validator("*", mode="wrap")
    @classmethod
    def _default_if_bad(cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        try:
            return handler(value)
        except ValidationError as exc:
            problems = _problems(info)
            if problems is None:
                raise
            default = cls.model_fields[info.field_name].default
            problems.append(f"{info.field_name} = {_short(value)} is invalid ({_reason(exc)}), using the default {default!r}")
            return default


class DockLayout(_Repaired):
    """Where the window goes while direct output is on, for one input preset: a strip along ``edge`` that takes
    ``share`` of the screen's available height (top, bottom) or width (left, right); or, once the user moved or
    resized that strip, the ``geometry`` they left it at (its frame's x, y, width, height in screen pixels).
    Loading repairs each bad value as ``Preferences.from_dict`` does."""

    edge: Literal[DOCK_EDGES] = "bottom"
    share: Annotated[float, BeforeValidator(_infinite_if_huge), _bounded(DOCK_SHARE_RANGE)] = 0.4
    geometry: Annotated[tuple[int, int, int, int], BeforeValidator(_tuple_if_list), AfterValidator(_dock_geometry)] \
        | None = None



def _dock_layouts(value: Any, info: ValidationInfo) -> Any:
    """When loading, each preset's dock layout is repaired on its own: a bad value in it becomes its default, a
    layout that is not an object becomes the default layout, a preset that does not exist is dropped; each said."""
    problems = _problems(info)
    if problems is None or not isinstance(value, dict):
        return value  # the field's type checks it (not a mapping: the whole field is reset, and said)
    layouts = {}
    for name, layout in value.items():
        if name not in PRESETS:
            problems.append(f"dock[{_short(name)}] is not an input preset's layout, dropped")
            continue
        found: list[str] = []
        try:
            layouts[name] = layout if isinstance(layout, DockLayout) else \
                DockLayout.model_validate(layout, context={_PROBLEMS: found})
        except ValidationError as exc:
            problems.append(f"dock[{name!r}] = {_short(layout)} is invalid ({_reason(exc)}), using the default layout")
            continue
        problems.extend(f"dock[{name!r}].{problem}" for problem in found)
    return layouts


class Preferences(_Repaired):
    """What the app remembers between runs. Strict: constructing one with a bad value raises ValidationError;
    ``from_dict`` (what loading uses) instead repairs each bad value and says what it repaired."""

    alphabet: Name = "english"
    # what predicted when the settings were saved, by the name the window's title and `--model` use (hybrid, rnn,
    # ppm, uniform); the window writes it (ui/window.py), and `--model` chooses. Earlier versions wrote "rnn"
    # whatever predicted: they load as they are, and the window's next save says what predicts
    model: Name = "hybrid"
    language: Annotated[str, Field(pattern=r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$")] = "en"  # what is written
    speed_bps: Speed = _ENGINE.speed_bps  # clamped into SPEED_RANGE, not reset
    auto_speed: bool = _ENGINE.auto_speed
    input: Literal[INPUT_NAMES] = "mouse"  # input/registry.py
    gaze_port: Annotated[int, Field(ge=1, le=65535)] = 5577
    # Dasher's socket input (see dasher_rnn/input/dasher_socket.py): its port, the labels of the x and y lines, and
    # the values that map to the writing area's left and right (x) and top and bottom (y) edges; min = max is
    # refused when the input starts
    socket_port: Annotated[int, Field(ge=1, le=65535)] = 20320
    socket_x_label: Label = "x"
    socket_y_label: Label = "y"
    socket_x_min: SocketValue = 0.0
    socket_x_max: SocketValue = 1.0
    socket_y_min: SocketValue = 0.0
    socket_y_max: SocketValue = 1.0
    preset: Literal[tuple(PRESETS)] = _ENGINE.preset
    # the input for which the user chose the preset by hand (the Preset box, Preferences, `app --preset`): with that
    # input the preset is kept; with any other (or None) the input brings its own preset (input/registry.py)
    preset_chosen_for: Literal[INPUT_NAMES] | None = None
    profile: Name = "default"
    adaptation: bool = True
    font_size: Annotated[int, Field(ge=FONT_SIZE_RANGE[0], le=FONT_SIZE_RANGE[1])] = 14
    colour_scheme: Literal[COLOUR_SCHEMES] = "default"
    text_panel: bool = True  # the text panel above the canvas is shown
    label_min_px: Annotated[int, Field(ge=LABEL_PX_RANGE[0], le=LABEL_PX_RANGE[1])] = 12  # smaller boxes: no label
    # the share of each capital's box that goes to its lower-case letter at a message start
    # (docs/history/writing-and-app.md, "Lower case at a message start")
    start_lower_share: Annotated[float, BeforeValidator(_infinite_if_huge), _bounded((0.0, 1.0))] = 0.25
    reverse_speed: Annotated[float, BeforeValidator(_infinite_if_huge), _bounded(REVERSE_SPEED_RANGE)] = \
        _ENGINE.reverse_speed
    turbo_factor: Annotated[float, BeforeValidator(_infinite_if_huge), _bounded(TURBO_RANGE)] = _ENGINE.turbo_factor
    output: Literal[OUTPUTS] = "panel"
    copy_on_stop: bool = False  # Dasher's "copy all on stop"
    speak_on_stop: bool = False  # Dasher's "speak on stop": the current message
    # direct output's docked layout per input preset (ui/parts/dock.py; a preset not here: DockLayout's defaults)
    dock: Annotated[dict[Literal[tuple(PRESETS)], DockLayout], BeforeValidator(_dock_layouts)] = {}
    pause_outside: bool = _ENGINE.pause_outside  # the pointer leaving the canvas pauses writing
    rest_stop_seconds: Annotated[float, BeforeValidator(_infinite_if_huge), _bounded(REST_STOP_RANGE)] = \
        _ENGINE.rest_stop_seconds  # a pointer resting this long stops writing (0: never)
    # Dasher's control mode: a control box after the letters (stop, delete, speak, copy, new message without a
    # click); None: as the input preset says (on for the eye tracker and the head mouse)
    control_mode: bool | None = None
    tutorial_done: bool = False  # a practice phrase was written or the tutorial skipped: it no longer opens by itself
    # gaze over UDP and Dasher's socket input count only datagrams that carry this shared secret ("": any local
    # program's; see dasher_rnn/input/udp.py and docs/ARCHITECTURE.md, "Who may send input")
    input_token: Annotated[str, Field(max_length=128, pattern=r"^[!-~]*$")] = ""
    # the open gaze protocols (input/gazepoint.py, optikey_udp.py, pupil_core.py): where their servers are, or where
    # their datagrams arrive
    gazepoint_host: Host = "127.0.0.1"  # Gazepoint Control's Open Gaze API server
    gazepoint_port: Annotated[int, Field(ge=1, le=65535)] = 4242
    optikey_port: Annotated[int, Field(ge=1, le=65535)] = 6666  # OptiKey's gaze datagrams (STREAM_DATA)
    pupil_host: Host = "127.0.0.1"  # Pupil Capture's Pupil Remote
    pupil_port: Annotated[int, Field(ge=1, le=65535)] = 50020
    pupil_surface: Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")] = "screen"
    # the webcam head pointer (input/webcam.py): the camera (an index or a device path), the gain (1: about 15
    # degrees of turning reach the screen's edge), the dead zone in degrees, and a camera that mirrors its image
    webcam_camera: Annotated[str, Field(min_length=1, max_length=200)] = "0"
    webcam_gain: Annotated[float, BeforeValidator(_infinite_if_huge), _bounded((0.2, 5.0))] = 1.0
    webcam_dead_zone: Annotated[float, BeforeValidator(_infinite_if_huge), _bounded((0.0, 10.0))] = 1.5
    webcam_mirrored: bool = False
    # switch access (the switch inputs: zoom/switch_modes.py): where presses come from besides the keyboard (Space, Enter)
    # and the mouse buttons (input/switches.py), and the modes' timing, in seconds
    switch_source: Literal[SWITCH_SOURCES] = "keys"
    switch_device: Annotated[str, Field(min_length=1, max_length=200)] = DEFAULT_JOYSTICK  # the game controller
    switch_port: Annotated[int, Field(ge=1, le=65535)] = DEFAULT_SWITCH_PORT  # the switch socket's UDP port
    scan_s: Annotated[float, _switch_timing("scan_s")] = SwitchConfig.scan_s  # scanning: each box's turn
    long_press_s: Annotated[float, _switch_timing("long_press_s")] = SwitchConfig.long_press_s  # held: backs out
    multi_press_s: Annotated[float, _switch_timing("multi_press_s")] = SwitchConfig.multi_press_s  # double press
    idle_stop_s: Annotated[float, _switch_timing("idle_stop_s")] = SwitchConfig.idle_stop_s  # no press: stop


    @classmethod
    def from_dict(cls, data: dict) -> tuple[Preferences, list[str]]:
        """Preferences from parsed JSON: unknown keys ignored, missing ones default, each bad one reset to its
        default (the speed clamped into range); and what was repaired."""
        problems: list[str] = []
        return cls.model_validate(data, context={_PROBLEMS: problems}), problems

    def validated(self) -> tuple[Preferences, list[str]]:
        """A copy with every bad value repaired as ``from_dict`` does (for one built without validation, e.g.
        by ``model_copy(update=...)``), and what was repaired."""
        return self.from_dict(dict(self.__dict__))

    def updated(self, **changes: Any) -> Preferences:
        """A copy with ``changes``, each validated (a bad value raises ValidationError, an unknown name TypeError)."""
        unknown = set(changes) - set(type(self).model_fields)
        if unknown:
            raise TypeError(f"no such preference: {', '.join(sorted(unknown))}")
        checked = self.model_validate(changes)
        return self.model_copy(update={name: getattr(checked, name) for name in changes})

    def preset_for_input(self) -> str:
        """The input preset these preferences' input works with: the one the user chose by hand for it, else the
        input's own (``--input gaze-udp`` with new settings: the eye tracker's). The mouse input keeps any preset
        but the switches' (nothing would steer): a head mouse or an eye tracker may move the system pointer, and
        the preset says which."""
        kind = INPUTS[self.input]
        if self.preset_chosen_for == self.input or (kind.family == "mouse" and self.preset != "switch"):
            return self.preset
        return kind.preset

    def with_preset(self, name: str, by_hand: bool = True) -> Preferences:
        """A copy with the input preset ``name`` and what it brings (its speed, reverse speed, auto speed, and its
        control mode), as picking it in the window does; ``by_hand``: the user chose it for the input in use, which
        then keeps it. The same preset again changes nothing but who chose it (the user's speeds stay)."""
        chosen_for = self.input if by_hand else None
        if name == self.preset:
            return self.updated(preset_chosen_for=chosen_for)
        p = PRESETS[name]
        return self.updated(preset=name, preset_chosen_for=chosen_for, speed_bps=p.speed_bps,
                            reverse_speed=p.reverse_speed, auto_speed=p.auto_speed, control_mode=None)

    def dock_layout(self, preset: str) -> DockLayout:
        """Where the window docks while direct output is on with ``preset``."""
        return self.dock.get(preset) or DockLayout()

    def switch_config(self) -> SwitchConfig:
        """The switch modes' values from these preferences."""
        return SwitchConfig(scan_s=self.scan_s, long_press_s=self.long_press_s, multi_press_s=self.multi_press_s,
                            idle_stop_s=self.idle_stop_s)

    def controller_config(self) -> ControllerConfig:
        """The writing controller's values from these preferences."""
        return ControllerConfig(speed_bps=self.speed_bps, reverse_speed=self.reverse_speed,
                                auto_speed=self.auto_speed, preset=self.preset, turbo_factor=self.turbo_factor,
                                pause_outside=self.pause_outside, rest_stop_seconds=self.rest_stop_seconds,
                                control_mode=PRESETS[self.preset].control_mode if self.control_mode is None
                                else self.control_mode)


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
            raw = read_bounded(self.path, MAX_BYTES)
        except FileNotFoundError:
            return Preferences()
        except UnreadableFile as exc:  # not a regular file (ignored; the next save replaces it), or too large
            self.notice = self._move_aside(str(exc)) if self.path.is_file() else \
                f"The settings file is unusable ({exc}); it is ignored and the default settings are used."
            log.warning("%s", self.notice)
            return Preferences()
        except OSError as exc:
            self.notice = f"Could not read the settings file {self.path} ({exc}); using the default settings."
            log.warning("%s", self.notice)
            return Preferences()
        try:
            data = parse_json(raw, str(self.path))  # BadFile: not UTF-8, not JSON, nested too deeply
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            self.notice = self._move_aside(str(exc) or type(exc).__name__)
            log.warning("%s", self.notice)
            return Preferences()
        prefs, problems = Preferences.from_dict(data)
        if problems:
            self.notice = f"Some settings in {self.path} were invalid and were reset: " + "; ".join(problems) + "."
            log.warning("%s", self.notice)
        return prefs

    def _move_aside(self, reason: str) -> str:
        try:
            bad = set_aside(self.path)
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
        text = json.dumps(prefs.model_dump(), indent=2) + "\n"
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
