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


def _free_port(kind: int) -> int:
    import socket

    with socket.socket(socket.AF_INET, kind) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_open_protocols_open_from_their_preferences():
    """Each protocol's opener reads its own preferences (host, port, surface, screen) and starts its source; a
    server that is not there yet is waited for, not an error."""
    import socket

    pytest.importorskip("zmq")
    tcp = _free_port(socket.SOCK_STREAM)
    prefs = Preferences(gazepoint_host="127.0.0.1", gazepoint_port=tcp, optikey_port=_free_port(socket.SOCK_DGRAM),
                        pupil_port=tcp, pupil_surface="monitor", input_token="k3y")
    options = prefs.model_dump() | {"screen_size": (2560, 1440), "screen_origin": (1920, 0)}
    opened = {name: open_source(name, options, PRESETS["eye-tracker"]) for name in ("gazepoint", "optikey", "pupil")}
    try:
        assert (opened["gazepoint"].host, opened["gazepoint"].port) == ("127.0.0.1", tcp)
        optikey = opened["optikey"]
        assert optikey.port == prefs.optikey_port and optikey.screen_size == (2560, 1440)
        assert optikey.screen_origin == (1920, 0) and optikey._token is not None
        assert opened["pupil"].surface == "monitor" and opened["pupil"].port == tcp
        for source in opened.values():
            assert source.latest() is None and source.lost_reason()  # nothing yet, and it says so
    finally:
        for source in opened.values():
            source.close()


def test_the_input_preferences_are_options_of_the_app_checked_before_it_starts(monkeypatch, capsys):
    import dasher_rnn.ui.app as app
    from dasher_rnn.cli import main

    calls = []
    monkeypatch.setattr(app, "run_app", lambda *args, **kwargs: calls.append(kwargs) or 0)
    monkeypatch.setattr("dasher_rnn.ui.preflight.app_problem", lambda: None)
    args = ["app", "--input", "gazepoint", "--gazepoint-host", "192.168.1.20", "--gazepoint-port", "4243",
            "--optikey-port", "6667", "--pupil-host", "::1", "--pupil-surface", "screen 2", "--webcam-camera",
            "/dev/video2", "--switch-source", "socket", "--switch-port", "5600", "--scan-time", "1.5"]
    assert main(args) == 0
    assert calls[-1]["prefs_overrides"] == {
        "input": "gazepoint", "gazepoint_host": "192.168.1.20", "gazepoint_port": 4243, "optikey_port": 6667,
        "pupil_host": "::1", "pupil_surface": "screen 2", "webcam_camera": "/dev/video2", "switch_source": "socket",
        "switch_port": 5600, "scan_s": 1.5}
    for bad, said in ((["--gazepoint-host", "two words"], "--gazepoint-host: "),
                      (["--scan-time", "0.01"], "--scan-time: "), (["--pupil-surface", ""], "--pupil-surface: ")):
        assert main(["app", *bad]) == 2
        err = capsys.readouterr().err
        assert said in err and "Value error" not in err
    assert len(calls) == 1
