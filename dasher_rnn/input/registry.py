"""Every input by name, in one place, as Dasher registers its input filters by ID.

An input is one module, registered here by one ``InputKind``: its name (what settings, ``app --input`` and the API
of the window use), the label people see, its family, the input preset chosen with it, and, for a pointer source
(gaze, a head pointer, Dasher's socket), the function that opens it: ``"module:function"``, imported only when the
input is started, so that listing the inputs imports no tracker's library. Adding an input touches its module and
its line here, not the window: the toolbar, Preferences' Input page, the command line and the settings all list
``INPUTS``.

An opener takes the options (the app's preferences as a mapping: ``gaze_port``, ``input_token``...; the input
modules are core and know nothing of the settings model) and the smoothing filter, and returns a running
``GazeSource``, or raises ``GazeSourceError`` with a message for the user (the extra to install, no tracker).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from dasher_rnn.input.one_euro import OneEuroFilter
from dasher_rnn.input.presets import Preset

if TYPE_CHECKING:
    from dasher_rnn.input.gaze import GazeSource

Family = Literal["mouse", "gaze", "head", "switch"]


@dataclass(frozen=True)
class InputKind:
    name: str
    label: str  # what the toolbar and Preferences show
    family: Family
    preset: str  # the input preset chosen with it when the user picks it (input/presets.py)
    opener: str | None = None  # "module:function" opening its source; None: the mouse
    # what it is, in one line for Preferences
    about: str = ""

    def open(self, options: Mapping[str, Any], smoothing: OneEuroFilter) -> GazeSource:
        """The running source (GazeSourceError with a message for the user when it cannot start)."""
        if self.opener is None:
            raise ValueError(f"the {self.name} input has no source to open")
        module, function = self.opener.split(":")
        opener: Callable[[Mapping[str, Any], OneEuroFilter], GazeSource] = getattr(importlib.import_module(module),
                                                                                     function)
        return opener(options, smoothing)


INPUTS: dict[str, InputKind] = {kind.name: kind for kind in (
    InputKind("mouse", "Mouse", "mouse", "mouse",
              about="a mouse, a touchpad, or a head mouse or eye tracker that moves the system pointer"),
    InputKind("gaze-udp", "Gaze over UDP", "gaze", "eye-tracker", "dasher_rnn.input.gaze_udp:open_source",
              about="gaze points from a bridge program over UDP (JSON or 'x y' text)"),
    InputKind("tobii", "Tobii eye tracker", "gaze", "eye-tracker", "dasher_rnn.input.tobii:open_source",
              about="a Tobii research tracker through the Tobii Pro SDK"),
    InputKind("dasher-socket", "Dasher socket", "gaze", "eye-tracker", "dasher_rnn.input.dasher_socket:open_source",
              about="Dasher's socket input: trackers and bridges written for Dasher"),
    InputKind("gazepoint", "Gazepoint", "gaze", "eye-tracker", "dasher_rnn.input.gazepoint:open_source",
              about="a Gazepoint tracker (GP3, GP3 HD) through Gazepoint Control's Open Gaze API (TCP, port 4242)"),
    InputKind("optikey", "OptiKey gaze (UDP)", "gaze", "eye-tracker", "dasher_rnn.input.optikey_udp:open_source",
              about="gaze datagrams in OptiKey's format (STREAM_DATA, screen pixels, UDP port 6666): trackers and "
                    "bridges written for OptiKey"),
    InputKind("pupil", "Pupil Core", "gaze", "eye-tracker", "dasher_rnn.input.pupil_core:open_source",
              about="a Pupil Core headset through Pupil Capture's network API, gaze on a screen surface (the pupil "
                    "extra)"),
    InputKind("head-pointer", "Head pointer (webcam)", "head", "head-mouse", "dasher_rnn.input.webcam:open_source",
              about="a webcam follows your head: turn or tilt it to steer, rest to start and stop (the webcam extra)"),
    # switch access: the mode of the same name in zoom/switch_modes.py steers; the presses come from the keyboard (Space,
    # Enter), the mouse buttons, and the switch source of the preferences (input/switches.py)
    InputKind("one-button", "One switch", "switch", "switch",
              about="one switch: a press turns the zoom up or down, a double or long press backs out"),
    InputKind("two-button", "Two switches", "switch", "switch",
              about="two switches: one moves the boxes up, the other down; a double or long press backs out"),
    InputKind("scanning", "Scanning (one switch)", "switch", "switch",
              about="one switch, no timing: boxes are highlighted in turn and a press zooms into the highlighted one"),
    InputKind("step-scan", "Step scanning (two switches)", "switch", "switch",
              about="two switches, no timing: one moves the highlight to the next box, the other zooms into it"),
)}
INPUT_NAMES = tuple(INPUTS)


def input_kind(name: str) -> InputKind:
    """The input called ``name``; ValueError naming the known ones otherwise."""
    try:
        return INPUTS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown input {name!r}; known inputs: {', '.join(INPUTS)}") from None


def open_source(name: str, options: Mapping[str, Any], preset: Preset) -> GazeSource:
    """The running source of the input ``name`` set up from ``options`` (the preferences, ``model_dump()``), smoothed
    as the preset says; GazeSourceError with a message for the user when it cannot start (ValueError for the mouse,
    which has none)."""
    return input_kind(name).open(options, OneEuroFilter(preset.smoothing_min_cutoff, preset.smoothing_beta))
