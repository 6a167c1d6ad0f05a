"""Direct output's docked layout (ui/parts/dock.py): with direct output on, the window is a strip at an edge of the
screen and the rest of the screen is the receiving program's; it goes back when direct output goes off; each input
preset keeps its own edge, size or place, and the choice is there again at the next start.

The window tests run offscreen (its screen is 800 x 800, all of it available); the last test runs the app on Xvfb
with a window manager (openbox), where the window's frame and a user's move through the window manager are real.
"""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import json
import shutil
import subprocess
import sys
import time

import pytest
from PySide6.QtCore import QRect, Qt

from dasher_rnn.settings import DockLayout, Preferences, SettingsStore
from dasher_rnn.ui.parts.dock import SETTLE_MS, dock_rect
from dasher_rnn.ui.window import MainWindow
from dasher_rnn.zoom.controller import WritingController
from tests.test_direct_output import FakeTyper, _wait_for, open_direct_window, xvfb  # noqa: F401
from tests.test_ui import steer


def settle(qtbot) -> None:
    """Long enough for a move or resize to count as settled (the dock tells ours from the user's by it)."""
    qtbot.wait(SETTLE_MS + 150)


def available(window: MainWindow) -> QRect:
    return window.screen().availableGeometry()


def docked_at(window: MainWindow, edge: str, share: float) -> bool:
    return window.frameGeometry() == dock_rect(available(window), edge, share)


def the_rest(window: MainWindow) -> QRect:
    """The part of the available area the strip leaves (the receiving program's): the larger side of it."""
    room, frame = available(window), window.frameGeometry()
    sides = (QRect(room.left(), room.top(), room.width(), frame.top() - room.top()),
             QRect(room.left(), frame.bottom() + 1, room.width(), room.bottom() - frame.bottom()),
             QRect(room.left(), room.top(), frame.left() - room.left(), room.height()),
             QRect(frame.right() + 1, room.top(), room.right() - frame.right(), room.height()))
    return max(sides, key=lambda r: r.width() * r.height() if r.isValid() else 0)


def test_the_strip_along_each_edge():
    room = QRect(0, 30, 1600, 870)  # a panel takes the top 30 pixels
    assert dock_rect(room, "bottom", 0.4) == QRect(0, 900 - 348, 1600, 348)
    assert dock_rect(room, "top", 0.4) == QRect(0, 30, 1600, 348)
    assert dock_rect(room, "left", 0.3) == QRect(0, 30, 480, 870)
    assert dock_rect(room, "right", 0.5) == QRect(800, 30, 800, 870)
    assert dock_rect(room, "right", 5.0) == QRect(320, 30, 1280, 870)  # a share past the range: its end (0.8)


def test_direct_output_docks_the_window_at_the_bottom_and_puts_it_back(qtbot, settings_path):
    window = open_direct_window(qtbot, FakeTyper, output="panel")
    window.move(10, 20)
    before, panel_height = window.geometry(), window.panel.height()
    assert window.text_bar.isVisible()

    window.output.direct_action.trigger()
    assert window.keeper.prefs.output == "direct" and window.dock.docked
    frame, room = window.frameGeometry(), available(window)
    assert docked_at(window, "bottom", 0.4)  # the default: a strip at the bottom, 40% of the height
    assert room.contains(frame) and frame.width() == room.width() and frame.height() == round(room.height() * 0.4)
    rest = the_rest(window)  # the receiving program's: everything above the strip
    assert rest == QRect(room.left(), room.top(), room.width(), room.height() - frame.height())
    assert not rest.intersects(frame)
    flags = window.windowFlags()
    assert flags & Qt.WindowType.WindowStaysOnTopHint and flags & Qt.WindowType.WindowDoesNotAcceptFocus
    # the canvas gets the strip: the text panel is one line, the second toolbar is hidden (all of it is in the menus)
    assert not window.text_bar.isVisible() and window.panel.height() < panel_height / 2
    assert window.splitter.sizes()[0] <= window.panel.maximumHeight()  # no gap left where the panel was
    assert window.view.height() > 2 * window.panel.height()
    window.writing.toggle_running()
    steer(window, "I see")  # the canvas is usable
    window.writing.toggle_running()
    settle(qtbot)
    assert window.keeper.prefs.dock == {}  # our own placing is not taken for the user's

    window.output.direct_action.trigger()
    assert not window.dock.docked and window.geometry() == before  # back where it was
    assert window.text_bar.isVisible() and abs(window.panel.height() - panel_height) <= 2
    assert not window.windowFlags() & Qt.WindowType.WindowStaysOnTopHint


def test_each_preset_keeps_its_own_edge_and_size_and_they_are_there_at_the_next_start(qtbot, settings_path):
    window = open_direct_window(qtbot, FakeTyper)  # direct output from the start
    window.show_sized_to_screen()  # as the app opens it: docked
    assert docked_at(window, "bottom", 0.4)
    window.dock.set_edge("right")
    window.dock.set_share(0.3)
    assert docked_at(window, "right", 0.3) and window.dock.edge_actions["right"].isChecked()
    assert window.dock.share_actions[0.3].isChecked()
    window.input.select_preset("eye-tracker")  # its own layout: the default
    assert docked_at(window, "bottom", 0.4) and window.dock.edge_actions["bottom"].isChecked()
    assert not window.isFullScreen()  # the dock wins over the eye tracker's full screen
    window.dock.set_edge("top")
    assert docked_at(window, "top", 0.4)
    window.input.select_preset("mouse")
    assert docked_at(window, "right", 0.3)
    window.close()

    saved = SettingsStore().load()
    assert saved.dock == {"mouse": DockLayout(edge="right", share=0.3), "eye-tracker": DockLayout(edge="top")}
    again = MainWindow(WritingController(writer_source_uniform(), saved.controller_config()), SettingsStore(), saved,
                       start_timer=False)
    qtbot.addWidget(again)
    again.show_sized_to_screen()
    qtbot.waitExposed(again)
    assert again.dock.docked and docked_at(again, "right", 0.3)
    again.close()


def writer_source_uniform():
    from tests.conftest import writer_source

    return writer_source("uniform")


def open_preset_window(qtbot, **prefs) -> MainWindow:
    """The window as the app opens it (sized to the screen), with these preferences."""
    store = SettingsStore()
    loaded = store.load().updated(**prefs)
    window = MainWindow(WritingController(writer_source_uniform(), loaded.controller_config()), store, loaded,
                        start_timer=False)
    qtbot.addWidget(window)
    window.show_sized_to_screen()
    qtbot.waitExposed(window)
    return window


def test_the_eye_tracker_preset_is_docked_with_direct_output_and_full_screen_without(qtbot, settings_path, monkeypatch):
    import dasher_rnn.ui.parts.output as output_part

    monkeypatch.setattr(output_part, "open_typer", FakeTyper)
    window = open_preset_window(qtbot, preset="eye-tracker", output="direct")
    assert not window.isFullScreen() and docked_at(window, "bottom", 0.4)
    window.output.set_output("panel")  # docked from the start: back to the size it opens at, full screen
    assert window.isFullScreen() and window.looks.full_screen_action.isChecked()
    window.output.set_output("direct")  # from full screen: docked, and back to full screen afterwards
    assert not window.isFullScreen() and not window.looks.full_screen_action.isChecked()
    assert docked_at(window, "bottom", 0.4)
    window.looks.set_full_screen(True)  # the user's F11 while docked: full screen, and leaving it docks again
    assert window.isFullScreen()
    window.looks.set_full_screen(False)
    assert docked_at(window, "bottom", 0.4)
    window.output.set_output("panel")
    assert window.isFullScreen()


def test_a_place_the_user_moves_the_strip_to_is_kept(qtbot, settings_path):
    window = open_direct_window(qtbot, FakeTyper)
    window.show_sized_to_screen()
    settle(qtbot)
    window.setGeometry(100, 150, 500, 400)  # the user drags and resizes the strip (through the window manager)
    settle(qtbot)
    placed = window.frameGeometry()
    assert window.keeper.prefs.dock_layout("mouse").geometry == (placed.x(), placed.y(), placed.width(), placed.height())
    assert window.dock.own_action.isChecked()
    window.output.set_output("panel")
    window.output.set_output("direct")
    assert window.frameGeometry() == placed  # docked where the user put it
    window.dock.set_edge("top")  # an edge chosen: docked there again
    assert docked_at(window, "top", 0.4) and window.keeper.prefs.dock_layout("mouse").geometry is None
    assert window.dock.edge_actions["top"].isChecked()


def test_a_place_off_every_screen_falls_back_to_the_edge(qtbot, settings_path):
    window = open_direct_window(qtbot, FakeTyper, dock={"mouse": DockLayout(edge="left", geometry=(5000, 5000, 400, 300))})
    window.show_sized_to_screen()  # the monitor it was on is gone
    assert docked_at(window, "left", 0.4)


def test_bad_stored_dock_values_fall_back_with_a_notice(qtbot, settings_path):
    settings_path.write_text(json.dumps({"output": "panel", "dock": {
        "mouse": {"edge": "middle", "share": 0.3}, "eye-tracker": {"share": 3, "geometry": [0, 0, 10, 10]},
        "switch": "left", "pen": {"edge": "top"}}}))
    store = SettingsStore()
    prefs = store.load()
    assert prefs.dock == {"mouse": DockLayout(share=0.3), "eye-tracker": DockLayout()}  # each bad value its default
    notice = store.notice
    assert "dock['mouse'].edge = 'middle' is invalid" in notice and "using the default 'bottom'" in notice
    assert "dock['eye-tracker'].share = 3 is invalid" in notice and "dock['eye-tracker'].geometry" in notice
    assert "dock['switch'] = 'left' is invalid" in notice and "dock['pen'] is not an input preset's layout" in notice
    window = MainWindow(WritingController(writer_source_uniform(), prefs.controller_config()), store, prefs,
                        start_timer=False)
    qtbot.addWidget(window)
    assert "dock['mouse'].edge" in window.status.notice  # the status bar says what was reset
    assert window.dock.layout() == DockLayout(share=0.3)
    settings_path.write_text(json.dumps({"dock": ["bottom"]}))
    assert store.load().dock == {} and "dock = ['bottom'] is invalid" in store.notice
    with pytest.raises(ValueError):  # the window's own changes are checked
        Preferences().updated(dock={"mouse": {"share": 0.9}})


def test_the_output_menu_and_the_preferences_choose_the_edge_and_the_size(qtbot, settings_path):
    window = open_direct_window(qtbot, FakeTyper)
    window.show_sized_to_screen()
    output_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Output")
    assert window.dock.menu_action in output_menu.actions()
    window.dock.edge_actions["left"].trigger()
    window.dock.share_actions[0.5].trigger()
    assert docked_at(window, "left", 0.5)

    dialog = window.preferences_dialog()
    qtbot.addWidget(dialog)
    assert dialog.dock_edge.value() == "left" and dialog.dock_share.value() == 50
    assert "Mouse or touchpad" in dialog.dock_note.text()
    dialog.dock_edge.buttons["top"].click()
    dialog.dock_share.minus.click()
    assert docked_at(window, "top", 0.45) and window.keeper.prefs.dock_layout("mouse") == DockLayout(edge="top", share=0.45)
    assert window.dock.edge_actions["top"].isChecked() and not any(a.isChecked() for a in window.dock.share_actions.values())
    dialog._on_preset("head-mouse")  # another preset: its layout shows
    assert dialog.dock_edge.value() == "bottom" and dialog.dock_share.value() == 40 and "Head mouse" in dialog.dock_note.text()
    assert docked_at(window, "bottom", 0.4)
    dialog.close()


# -- on a real X server, with a window manager -----------------------------------------------------------------

@pytest.fixture
def window_manager(xvfb):  # noqa: F811  (the module fixture imported above)
    if shutil.which("openbox") is None:
        pytest.skip("openbox is not installed (Debian: apt-get install openbox)")
    proc = subprocess.Popen(["openbox"], env={**os.environ, "DISPLAY": xvfb}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    from Xlib import display

    d = display.Display(xvfb)
    _wait_for(lambda: d.get_selection_owner(d.intern_atom("WM_S0")) != 0, "openbox to manage the screen", 30)
    yield d
    d.close()
    proc.terminate()
    proc.wait(timeout=30)


def _client_named(d, prefix: str):
    """The viewable top-level window whose title starts with ``prefix`` (the window manager lists them; each is
    reparented into its frame)."""
    from Xlib import Xatom

    clients = d.screen().root.get_full_property(d.intern_atom("_NET_CLIENT_LIST"), Xatom.WINDOW)
    for window_id in clients.value if clients is not None else ():
        window = d.create_resource_object("window", window_id)
        name = window.get_wm_name()
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        if name and name.startswith(prefix) and window.get_attributes().map_state == 2:  # IsViewable
            return window
    return None


def _frame(d, window) -> QRect:
    """The window's frame (title bar and borders) on the screen, as the window manager drew it."""
    from Xlib import Xatom

    geometry = window.get_geometry()
    origin = window.translate_coords(d.screen().root, 0, 0)
    extents = window.get_full_property(d.intern_atom("_NET_FRAME_EXTENTS"), Xatom.CARDINAL)
    left, right, top, bottom = extents.value if extents is not None else (0, 0, 0, 0)
    return QRect(-origin.x - left, -origin.y - top, geometry.width + left + right, geometry.height + top + bottom)


def test_xvfb_with_a_window_manager_the_app_docks_and_keeps_where_the_user_moved_it(xvfb, window_manager, tmp_path):  # noqa: F811
    """`dasher-rnn app --output direct` on a screen a window manager manages: the frame is the bottom strip; the user
    moves it (a move asked of the window manager, as a drag is); the next start opens it there."""
    d = window_manager
    settings = tmp_path / "s.json"
    env = {**os.environ, "DISPLAY": xvfb, "QT_QPA_PLATFORM": "xcb", "DASHER_RNN_CONFIG": str(settings)}
    env.pop("WAYLAND_DISPLAY", None)
    settings.write_text(json.dumps({"tutorial_done": True}))
    width, height = d.screen().width_in_pixels, d.screen().height_in_pixels

    def run_app():
        app = subprocess.Popen([sys.executable, "-m", "dasher_rnn", "app", "--model", "uniform", "--output", "direct"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

        def shown():
            if app.poll() is not None:
                raise AssertionError(f"the app exited with {app.returncode}: {app.stdout.read()[-2000:]}")
            return _client_named(d, "dasher-rnn")
        return app, _wait_for(shown, "the app's window")

    def stop(app) -> None:
        app.terminate()  # closes the window properly (settings saved)
        app.wait(timeout=60)
        assert app.returncode == 0

    app, window = run_app()
    try:
        strip = QRect(0, height - round(height * 0.4), width, round(height * 0.4))  # nothing else reserves room here
        _wait_for(lambda: _frame(d, window) == strip, f"the frame at {strip}", 30)
        time.sleep(3 * SETTLE_MS / 1000)  # settled where it was put (a move before that is the window manager's)
        window.configure(x=200, y=100, width=700, height=450)  # the user drags and resizes it
        d.sync()
        _wait_for(lambda: _frame(d, window).size() != strip.size(), "the move", 30)
        time.sleep(3 * SETTLE_MS / 1000)
        moved = _frame(d, window)
    finally:
        stop(app)
    kept = json.loads(settings.read_text())["dock"]["mouse"]
    assert kept["geometry"] == [moved.x(), moved.y(), moved.width(), moved.height()]

    app, window = run_app()
    try:
        _wait_for(lambda: _frame(d, window) == moved, f"the frame where the user put it, {moved}", 30)
    finally:
        stop(app)
