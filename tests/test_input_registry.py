"""Every input in one place: the registry lists them, opens them by name, and everything that offers a choice of
input (settings, the command line, the toolbar, Preferences) offers exactly its list; a source says why it gives
no pointer."""

from __future__ import annotations

import importlib
import time

import pytest

from dasher_rnn.input.gaze import GazeSource
from dasher_rnn.input.presets import PRESETS
from dasher_rnn.input.registry import INPUT_NAMES, INPUTS, input_kind, open_source
from dasher_rnn.settings import Preferences


@pytest.mark.parametrize("name", INPUT_NAMES)
def test_every_input_names_a_preset_and_an_opener_that_exists(name):
    kind = INPUTS[name]
    assert kind.preset in PRESETS and kind.label and kind.about
    if kind.opener is not None:
        module, function = kind.opener.split(":")
        assert callable(getattr(importlib.import_module(module), function))


def test_an_unknown_input_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="known inputs: mouse, "):
        input_kind("telepathy")
    with pytest.raises(ValueError, match="no source"):
        open_source("mouse", Preferences().model_dump(), PRESETS["mouse"])
    assert Preferences.from_dict({"input": "telepathy"})[0].input == "mouse"


def test_the_command_line_settings_toolbar_and_preferences_list_the_registry(qapp):
    from dasher_rnn.cli import build_parser
    from dasher_rnn.ui.preferences_dialog import INPUT_CHOICES

    app_parser = build_parser()._subparsers._group_actions[0].choices["app"]
    input_option = next(a for a in app_parser._actions if a.dest == "input")
    assert tuple(input_option.choices) == INPUT_NAMES
    assert tuple(name for name, _ in INPUT_CHOICES) == INPUT_NAMES
    for name in INPUT_NAMES:
        assert Preferences(input=name).input == name


class Source(GazeSource):
    label = "Test tracker"

    @property
    def description(self) -> str:
        return "Listening on port 9"


def test_a_source_says_why_it_gives_no_pointer():
    source = Source(stale_after=0.05)
    assert source.lost_reason() == "Test tracker: no data yet (Listening on port 9)"
    source._push(0.5, 0.5, 1.0)
    assert source.lost_reason() == ""
    source._lost()
    assert source.lost_reason() == ""  # a sample is still fresh
    time.sleep(0.06)
    assert source.lost_reason() == "Test tracker lost: no data for 0 s"
    source._lost()
    assert source.lost_reason() == "Test tracker lost: the tracker cannot see the eyes"
