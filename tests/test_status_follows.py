"""Issue 46: status that follows the input. The input's line says what its source does now, not what it did when it
opened (Gazepoint said "not reached, retrying" while records streamed); the rate never says "-0.0 bits/s now"."""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QStatusBar

from dasher_rnn.input.gaze import GazeSource
from dasher_rnn.ui.parts.status import StatusPart
from dasher_rnn.zoom.controller import Stats
from tests.test_ui import open_window


class ChangingSource(GazeSource):
    label = "Gazepoint"

    def __init__(self) -> None:
        super().__init__(stale_after=600.0)
        self.state = "Gazepoint Control at 127.0.0.1:4242: not reached, retrying (connection refused)"

    @property
    def description(self) -> str:
        return self.state


def test_the_input_line_follows_the_sources_state(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot)
    source = ChangingSource()
    window.input.gaze = source
    window.status.set_notice("input", f"{source.description}.")  # as the input part says it when the source opens
    window.update_status()
    assert "not reached, retrying" in window.status.notice
    source.state = "Receiving gaze from Gazepoint Control at 127.0.0.1:4242"  # records stream now
    source._push(0.5, 0.5, 1.0)
    window.update_status()
    assert "Receiving gaze" in window.status.notice and "retrying" not in window.status.notice
    window.input.gaze = None


def test_the_rate_is_never_minus_zero_and_nothing_while_stopped(qtbot):
    bar = QStatusBar()
    qtbot.addWidget(bar)
    status = StatusPart(bar)

    def shown(rate: float, running: bool) -> str:
        status.show_figures(Stats(speed_bps=1.0, bits_per_second=rate, chars_per_minute=0.0, characters=0,
                                  running=running), None)
        return status.rate_label.text()

    assert shown(-0.01, True) == "0.0 bits/s now"  # a pause's last frames backing out a hair
    assert shown(-0.04, False) == "0.0 bits/s now"
    assert shown(-1.3, False) == "0.0 bits/s now"  # stopped: nothing is written now
    assert shown(-1.26, True) == "-1.3 bits/s now"  # backing out while writing: said
    assert shown(2.04, True) == "2.0 bits/s now"


def test_a_gazepoint_reached_after_the_window_opened_is_said_to_stream(qtbot, settings_path):  # noqa: F811
    """The evidence's case with a real Gazepoint source: not there when the window opened, streaming later."""
    from tests.test_input_gazepoint import FakeGazepoint, free_port, rec

    port = free_port()
    window = open_window(qtbot, input="gazepoint", gazepoint_port=port)
    source = window.input.gaze
    qtbot.waitUntil(lambda: source.state == "retrying", timeout=15_000)
    window.update_status()
    assert "not reached, retrying" in window.status.notice
    server = FakeGazepoint(port)
    try:
        connection = server.accept(timeout=30.0)
        connection.read_commands()
        connection.send(rec(0.4, 0.5, t=1.0))
        qtbot.waitUntil(lambda: source.state == "receiving", timeout=15_000)
        window.update_status()
        assert "Receiving gaze from Gazepoint" in window.status.notice and "retrying" not in window.status.notice
    finally:
        window.input.close()
        server.close()
