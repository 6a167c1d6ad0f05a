"""Preferences' Input page: every input listed in columns that fit the page, the switch settings shown while a
switch input is chosen (where presses come from, the scan time, long and double press), remembered and applied
to the switch mode at once, and the Ports text naming every input's port, host and camera."""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import socket

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest

from dasher_rnn.input.registry import INPUTS
from dasher_rnn.settings import SettingsStore
from dasher_rnn.ui.preferences_dialog import (
    LONG_PRESS_RANGE,
    MULTI_PRESS_RANGE,
    SCAN_RANGE,
    PreferencesDialog,
    columns_that_fit,
    ports_text,
)
from dasher_rnn.zoom.switching import SwitchConfig
from tests.test_ui import DT, open_window

INPUT_PAGE = 1


def input_page(qtbot, window) -> PreferencesDialog:
    dialog = window.preferences_dialog()
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.tabs.setCurrentIndex(INPUT_PAGE)
    qtbot.waitExposed(dialog)
    return dialog


def shown(dialog: PreferencesDialog) -> set[str]:
    rows = {"switches": dialog.switch_source_row, "scan time": dialog.scan_time_row,
            "backing out": dialog.presses_row, "ports": dialog.ports_row}
    return {name for name, row in rows.items() if not row.isHidden()}


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_every_input_is_listed_in_columns_that_fit_the_page(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot)
    dialog = input_page(qtbot, window)
    assert list(dialog.input.buttons) == list(INPUTS) and len(INPUTS) == 12
    page = dialog.tabs.currentWidget()
    assert not page.horizontalScrollBar().isVisible()  # nothing to scroll sideways
    viewport = page.viewport()
    for name, button in dialog.input.buttons.items():
        left = button.mapTo(viewport, QPoint(0, 0))
        assert left.x() >= 0 and left.x() + button.width() <= viewport.width(), name  # wholly on the page
        assert button.height() >= 56  # a large target, for gaze and dwell too
    assert dialog.input.value() == "mouse"
    rows = {button.mapTo(viewport, QPoint(0, 0)).y() for button in dialog.input.buttons.values()}
    assert 3 <= len(rows) <= 6  # in columns: two to four of them on this 800-pixel screen


def test_columns_follow_the_room(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot)
    dialog = input_page(qtbot, window)
    labels = [button.text() for button in dialog.input.buttons.values()]
    assert columns_that_fit(dialog, labels, 4000) == 4
    assert columns_that_fit(dialog, labels, 10) == 1
    widest = max(button.sizeHint().width() for button in dialog.input.buttons.values())
    assert columns_that_fit(dialog, labels, widest + 20) == 1 < columns_that_fit(dialog, labels, 3 * widest)


def test_switch_settings_are_shown_for_the_switch_input_chosen(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot)
    dialog = input_page(qtbot, window)
    assert shown(dialog) == {"ports"}  # the mouse: no switch settings
    qtbot.mouseClick(dialog.input.buttons["one-button"], Qt.MouseButton.LeftButton)
    assert window.input.name == "one-button" and window.controller.preset.name == "switch"
    assert dialog.preset.value() == "switch"
    assert shown(dialog) == {"switches", "backing out"}  # its port is in the Switches row
    dialog.input.buttons["scanning"].click()
    assert shown(dialog) == {"switches", "scan time"}
    dialog.input.buttons["step-scan"].click()
    assert shown(dialog) == {"switches"}  # no timing: one switch steps, the other selects
    dialog.input.buttons["gaze-udp"].click()
    assert "ports" in shown(dialog) and "switches" not in shown(dialog)


def test_switch_timings_are_remembered_and_apply_to_the_mode_at_once(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot, input="scanning")
    c = window.controller
    dialog = input_page(qtbot, window)
    assert dialog.scan_time.value() == 1.0 and c.switch is not None
    for _ in range(3):
        qtbot.mouseClick(dialog.scan_time.minus, Qt.MouseButton.LeftButton)
    assert window.keeper.prefs.scan_s == pytest.approx(0.7)
    assert c.switch.name == "scanning" and c.switch.config.scan_s == pytest.approx(0.7)  # started again with it
    dialog.close()
    QTest.keyClick(window, Qt.Key.Key_Space)  # the window's switches work with the new mode
    assert c.running and c.switch.running

    window.input.set_input("two-button")
    dialog = input_page(qtbot, window)
    dialog.long_press.plus.click()
    dialog.multi_press.minus.click()
    assert window.keeper.prefs.long_press_s == pytest.approx(1.1)
    assert window.keeper.prefs.multi_press_s == pytest.approx(0.9)
    assert c.switch.name == "two-button" and c.switch.config.long_press_s == pytest.approx(1.1)
    assert c.switch.config.multi_press_s == pytest.approx(0.9) and c.switch.config.scan_s == pytest.approx(0.7)
    window.keeper.save()
    saved = SettingsStore().load()
    assert (saved.scan_s, saved.long_press_s, saved.multi_press_s) == pytest.approx((0.7, 1.1, 0.9))


def test_the_timings_ranges_are_the_switch_modes(qtbot, settings_path):  # noqa: F811
    for name, (low, high) in (("scan_s", SCAN_RANGE), ("long_press_s", LONG_PRESS_RANGE),
                              ("multi_press_s", MULTI_PRESS_RANGE)):
        SwitchConfig(**{name: low})
        SwitchConfig(**{name: high})
        with pytest.raises(ValueError):
            SwitchConfig(**{name: low - 0.05})
        with pytest.raises(ValueError):
            SwitchConfig(**{name: high + 0.05})
    window = open_window(qtbot, input="scanning", scan_s=0.2)
    dialog = input_page(qtbot, window)
    assert not dialog.scan_time.minus.isEnabled()  # at its end of the range


def test_presses_come_from_the_switch_socket_or_the_controller_chosen(qtbot, settings_path, tmp_path):  # noqa: F811
    port = free_udp_port()
    window = open_window(qtbot, input="one-button", switch_port=port, switch_device=str(tmp_path / "js7"))
    c = window.controller
    dialog = input_page(qtbot, window)
    about = dialog.switch_source_about.text()
    assert f"UDP port {port}" in about and str(tmp_path / "js7") in about  # the device and the port are stated
    assert dialog.switch_source.value() == "keys" and dialog.switch_source_problem.isHidden()

    qtbot.mouseClick(dialog.switch_source.buttons["socket"], Qt.MouseButton.LeftButton)
    assert window.keeper.prefs.switch_source == "socket"
    source = window.input.switches.source
    assert source is not None and source.port == port and dialog.switch_source_problem.isHidden()
    assert f"UDP port {port}" in window.status.notice
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"press 1", ("127.0.0.1", port))
        qtbot.waitUntil(lambda: source.received > 0, timeout=5000)
    window.writing.tick(DT)
    assert c.running and c.switch is not None and c.switch.presses == 1  # a press from the socket started writing

    dialog.switch_source.buttons["controller"].click()  # no controller at that path: said, and the keys still work
    assert window.keeper.prefs.switch_source == "controller" and window.input.switches.source is None
    assert not dialog.switch_source_problem.isHidden()
    assert "could not start" in dialog.switch_source_problem.text()
    assert "no game controller" in window.status.notice and not c.running  # the input started again: stopped
    window.keeper.save()
    assert SettingsStore().load().switch_source == "controller"


def test_the_ports_text_names_every_input(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot, gazepoint_host="10.0.0.7", gazepoint_port=4243, optikey_port=6667,
                         pupil_host="10.0.0.8", pupil_port=50021, pupil_surface="desk", switch_port=5579,
                         webcam_camera="/dev/video2", gaze_port=5599, socket_port=20321)
    text = ports_text(window.keeper.prefs)
    for part in ("5599", "20321", "10.0.0.7:4243", "6667", "10.0.0.8:50021", "'desk'", "5579", "camera /dev/video2",
                 "--switch-port", "--webcam-camera", "--pupil-surface", "--optikey-port", "--gazepoint-host"):
        assert part in text, part
    dialog = input_page(qtbot, window)
    assert dialog.ports.text() == text
