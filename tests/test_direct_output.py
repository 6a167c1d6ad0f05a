"""Direct output: committed text typed into another program, deletions as Backspace, failures kept in the panel.

The engine and the window are driven with a fake typer (a list of keys that a pretend program applies); the
last tests start their own Xvfb with a real second X program (tests/x_receiver.py, a Qt text field in its own
process) and check that what the window writes arrives there through XTEST.
"""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from dasher_rnn.output import DirectOutput, OutputUnavailable, TypingError
from dasher_rnn.output.typers import XTestTyper, char_to_keysym, open_typer, wayland_only
from dasher_rnn.settings import SettingsStore
from dasher_rnn.ui.window import MainWindow
from dasher_rnn.zoom.controller import WritingController
from dasher_rnn.zoom.geometry import ORIGIN_Y
from dasher_rnn.zoom.simulate import REVERSE_X
from tests.conftest import xvfb_display
from tests.helpers import wait_for
from tests.test_ui import DT, point_at, ppm_source, steer

RECEIVER = Path(__file__).with_name("x_receiver.py")
READY = "\x00READY\x00"


class FakeTyper:
    """A pretend focused program: ``screen`` is its text field. ``fail`` (a reason) makes every key fail;
    ``modifier`` (a reason) is a modifier that cannot be set aside, so a run of keys cannot start."""

    name = "fake"

    def __init__(self) -> None:
        self.screen = ""
        self.keys: list[str] = []
        self.fail = ""
        self.modifier = ""
        self.runs: list[list[str]] = []  # the keys of each run (Typer.typing)
        self.target: object = 1
        self.closed = False

    @contextlib.contextmanager
    def typing(self):
        if self.modifier:
            raise TypingError(self.modifier)
        start = len(self.keys)
        yield
        self.runs.append(self.keys[start:])

    def focus(self) -> object:
        if self.fail == "no focus":
            raise TypingError("no window has the keyboard focus")
        return self.target

    def type_char(self, char: str) -> None:
        if self.fail:
            raise TypingError(self.fail)
        self.keys.append(char)
        self.screen += char

    def backspace(self) -> None:
        if self.fail:
            raise TypingError(self.fail)
        self.keys.append("BS")
        self.screen = self.screen[:-1]

    def close(self) -> None:
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


# -- the engine --------------------------------------------------------------------------------------------

def test_committed_characters_are_typed_and_uncommitted_ones_are_backspaced():
    typer = FakeTyper()
    out = DirectOutput(typer)
    out.track("he", 0)
    assert out.sync() == "" and typer.screen == "he"
    out.track("l", 0)
    out.sync()
    out.track("", 2)  # reversing took back two committed characters
    out.sync()
    assert typer.screen == "h" and typer.keys == ["h", "e", "l", "BS", "BS"]
    out.track("ello", 0)
    out.sync()
    assert typer.screen == "hello" and out.typed == 7 and out.backspaces == 2


def test_output_not_yet_committed_is_typed_when_stopped_and_taken_back_if_backed_out_of():
    typer = FakeTyper()
    out = DirectOutput(typer)
    out.track("wa", 0)
    out.sync()  # running: only the committed part
    assert typer.screen == "wa"
    out.sync(output="water")  # stopped: the whole message so far
    assert typer.screen == "water"
    out.sync()  # running again, the zoom still past "wa" only: Backspace for what is no longer there
    assert typer.screen == "wa" and typer.keys[-3:] == ["BS"] * 3


def test_a_finished_message_is_never_backspaced_over():
    typer = FakeTyper()
    out = DirectOutput(typer)
    out.track("Hi", 0)
    out.sync()
    out.finish_message("Hi there")  # New message: all the output is final
    assert typer.screen == "Hi there" and out.sent == "" and out.base == ""
    out.track("ok", 0)
    out.sync()
    out.track("", 2)
    out.sync()
    assert typer.screen == "Hi there"


def test_a_failing_target_keeps_the_text_waiting_and_gets_it_later():
    typer, clock = FakeTyper(), Clock()
    out = DirectOutput(typer, clock=clock)
    out.track("ab", 0)
    out.sync()
    typer.fail = "the focused window refused the key"
    out.track("cd", 0)
    problem = out.sync()
    assert "refused the key" in problem and "2 characters waiting" in problem and "kept in the panel" in problem
    assert typer.screen == "ab" and out.sent == "ab"
    typer.fail = ""
    assert out.sync() == problem  # the same keys failed a moment ago: not tried again at once
    clock.now += 2
    assert out.sync() == "" and typer.screen == "abcd" and out.problem == ""


def test_a_change_of_text_tries_again_at_once():
    typer, clock = FakeTyper(), Clock()
    out = DirectOutput(typer, clock=clock)
    typer.fail = "no focus"
    out.track("x", 0)
    assert "no window has the keyboard focus" in out.sync()
    typer.fail = ""
    out.track("y", 0)
    assert out.sync() == "" and typer.screen == "xy"


def test_a_finished_message_that_could_not_be_delivered_is_delivered_before_the_next():
    typer = FakeTyper()
    out = DirectOutput(typer)
    typer.fail = "no focus"
    out.finish_message("One.")
    assert out.problem and out.base == "One."
    typer.fail = ""
    out.track("Two", 0)
    out.sync()
    assert typer.screen == "One.Two"


def test_blocked_sends_nothing():
    typer = FakeTyper()
    out = DirectOutput(typer)
    out.track("abc", 0)
    assert out.sync(blocked="this window has the keyboard focus") == "this window has the keyboard focus"
    assert typer.keys == []
    assert out.sync() == "" and typer.screen == "abc"


def test_backspace_never_reaches_into_a_window_that_lost_the_focus():
    typer = FakeTyper()
    out = DirectOutput(typer)
    out.track("mail", 0)
    out.sync()
    typer.target = 2  # the user clicked another program
    typer.screen = ""
    out.track("", 2)
    out.track("x", 0)
    out.sync()
    assert typer.keys.count("BS") == 0 and typer.screen == "x"


def test_clear_throws_away_what_was_not_delivered():
    typer = FakeTyper()
    out = DirectOutput(typer)
    typer.fail = "no focus"
    out.track("lost", 0)
    out.sync()
    out.discard()
    typer.fail = ""
    out.track("new", 0)
    out.sync()
    assert typer.screen == "new" and out.problem == ""


def test_each_sync_is_one_run_of_keys_with_the_modifiers_set_aside():
    typer = FakeTyper()
    out = DirectOutput(typer)
    out.track("hey", 0)
    out.sync()
    out.track("", 1)
    out.track("llo", 0)
    out.sync()
    assert typer.runs == [["h", "e", "y"], ["BS", "l", "l", "o"]] and typer.screen == "hello"


def test_a_modifier_that_stays_in_effect_holds_the_keys_and_says_which():
    typer, clock = FakeTyper(), Clock()
    out = DirectOutput(typer, clock=clock)
    typer.modifier = "Ctrl held down (by a key this program cannot release): typing waits until that is off"
    out.track("ax", 0)
    problem = out.sync()
    assert "Ctrl held down" in problem and "2 characters waiting" in problem and typer.keys == []
    typer.modifier = ""  # the user let go of Ctrl
    clock.now += 2
    assert out.sync() == "" and typer.screen == "ax"


def test_keysyms():
    pytest.importorskip("Xlib")
    assert char_to_keysym("a") == ord("a") and char_to_keysym(" ") == 0x20
    assert char_to_keysym("\n") == 0xFF0D  # Return
    assert char_to_keysym("é") == 0xE9 and char_to_keysym("€") == 0x010020AC
    with pytest.raises(TypingError):
        char_to_keysym("\x01")


def test_no_display_and_wayland_only_are_reported(monkeypatch):
    pytest.importorskip("Xlib")
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    assert wayland_only()
    with pytest.raises(OutputUnavailable, match="Wayland"):
        open_typer()
    monkeypatch.delenv("WAYLAND_DISPLAY")
    with pytest.raises(OutputUnavailable, match="DISPLAY is not set"):
        open_typer()
    with pytest.raises(OutputUnavailable, match="cannot connect"):
        XTestTyper(":9173")


# -- the window ------------------------------------------------------------------------------------------

@pytest.fixture
def offscreen_focus(monkeypatch) -> list:
    """The offscreen platform activates every window it shows (it ignores WindowDoesNotAcceptFocus, which a real
    X server's window manager honours: see test_xvfb_the_app_never_takes_the_focus): which window Qt believes
    has the focus is set by the test instead (the list's one item; None: another program)."""
    focus: list = [None]
    monkeypatch.setattr(QGuiApplication, "focusWindow", staticmethod(lambda: focus[0]))
    return focus


def open_direct_window(qtbot, typer_factory, **prefs) -> MainWindow:
    """The window with direct output on; ``typer_factory`` stands in for the real typer."""
    import dasher_rnn.ui.parts.output as output_part

    store = SettingsStore()
    loaded = store.load().model_copy(update={"speed_bps": 4.0, "auto_speed": False, "output": "direct", **prefs})
    original = output_part.open_typer
    output_part.open_typer = typer_factory
    try:
        window = MainWindow(WritingController(ppm_source(), loaded.controller_config()), store, loaded,
                            start_timer=False)
    finally:
        output_part.open_typer = original
    qtbot.addWidget(window)
    window.resize(760, 700)
    window.show()
    qtbot.waitExposed(window)
    return window


def back_out(window: MainWindow, shorter_than: int) -> None:
    """Steer left of the crosshair until the message is shorter than ``shorter_than``."""
    point_at(window, REVERSE_X, ORIGIN_Y)
    for _ in range(900):
        window.writing.tick(DT)
        if len(window.controller.zoom.output) < shorter_than:
            return
    raise AssertionError("did not back out")


def test_the_window_types_committed_text_into_the_focused_program_and_keeps_off_the_focus(qtbot, settings_path, offscreen_focus):
    typer = FakeTyper()
    window = open_direct_window(qtbot, lambda: typer)
    flags = window.windowFlags()
    assert flags & Qt.WindowType.WindowDoesNotAcceptFocus and flags & Qt.WindowType.WindowStaysOnTopHint
    assert window.testAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
    assert window.output.direct_action.isChecked()

    window.writing.toggle_running()
    steer(window, "I want some water")
    assert window.panel.toPlainText() == "I want some water"
    assert typer.screen and "I want some water".startswith(typer.screen)
    assert len(typer.screen) < len("I want some water")  # the tail is not committed yet
    window.writing.toggle_running()  # stop: the whole message goes
    assert typer.screen == "I want some water"

    window.writing.toggle_running()
    back_out(window, len("I want some"))
    window.writing.toggle_running()
    assert typer.screen == window.controller.zoom.output and "BS" in typer.keys
    window.messages.new_message()
    assert typer.screen == window.controller.history.rstrip("\n")
    window.close()
    assert typer.closed


def test_undo_writing_takes_the_run_back_out_of_the_focused_program_too(qtbot, settings_path, offscreen_focus):
    typer = FakeTyper()
    window = open_direct_window(qtbot, lambda: typer)
    window.writing.toggle_running()
    steer(window, "I want")
    window.writing.toggle_running()
    kept = window.controller.zoom.output
    assert typer.screen == kept
    window.writing.toggle_running()
    steer(window, "I want some water, please")
    assert len(typer.screen) > len(kept)  # committed text of the run was typed
    window.writing.undo_writing()
    assert window.controller.zoom.output == kept and typer.screen == kept and "BS" in typer.keys
    window.writing.toggle_running()  # writing on after the undo: what is typed follows the message, no drift
    steer(window, "I want tea")
    assert window.controller.zoom.output.startswith(typer.screen)  # while writing, too
    window.writing.toggle_running()
    assert typer.screen == window.controller.zoom.output == window.panel.toPlainText()
    window.close()


def test_a_target_that_refuses_keys_gets_a_status_message_and_the_text_stays(qtbot, settings_path, offscreen_focus):
    typer = FakeTyper()
    typer.fail = "the focused window refused the key"
    window = open_direct_window(qtbot, lambda: typer)
    window.writing.toggle_running()
    steer(window, "We need")
    window.writing.toggle_running()
    notice = window.status.notice
    assert "Direct output: the focused window refused the key" in notice and "kept in the panel" in notice
    assert window.panel.toPlainText() == "We need" and typer.screen == ""
    typer.fail = ""
    window.output.direct._retry_at = 0.0  # a second later
    window.writing.tick(DT)
    assert typer.screen == "We need" and "Direct output" not in window.status.notice


def test_our_own_window_having_the_focus_holds_the_keys(qtbot, settings_path, offscreen_focus):
    typer = FakeTyper()
    window = open_direct_window(qtbot, lambda: typer)
    offscreen_focus[0] = window.windowHandle()  # e.g. the window manager gave it the focus all the same
    window.writing.toggle_running()
    steer(window, "Tom")
    window.writing.toggle_running()
    assert typer.keys == [] and "this window has the keyboard focus" in window.status.notice
    offscreen_focus[0] = None  # the user clicked the program to write into
    window.writing.tick(DT)
    assert typer.screen == "Tom"


def test_direct_output_unavailable_is_a_notice_and_writing_goes_on(qtbot, settings_path, offscreen_focus):
    def unavailable():
        raise OutputUnavailable("there is no X display to type into (DISPLAY is not set)")

    window = open_direct_window(qtbot, unavailable)
    assert "Direct output unavailable: there is no X display" in window.status.notice
    window.writing.toggle_running()
    steer(window, "I see")
    assert window.panel.toPlainText() == "I see"


def test_output_menu_switches_modes_and_copy_and_speak_on_stop(qtbot, settings_path, monkeypatch, offscreen_focus):
    typer = FakeTyper()
    import dasher_rnn.ui.parts.output as output_part

    monkeypatch.setattr(output_part, "open_typer", lambda: typer)
    window = open_direct_window(qtbot, lambda: typer, output="panel")
    assert not window.windowFlags() & Qt.WindowType.WindowDoesNotAcceptFocus and window.output.direct is None
    window.output.direct_action.trigger()
    assert window.output.direct is not None and window.windowFlags() & Qt.WindowType.WindowDoesNotAcceptFocus
    assert window.isVisible() and window.keeper.prefs.output == "direct"
    window.output.direct_action.trigger()
    assert window.output.direct is None and window.keeper.prefs.output == "panel"
    assert not window.windowFlags() & Qt.WindowType.WindowStaysOnTopHint

    said = []
    monkeypatch.setattr(window.speech.speaker, "speak", lambda text: said.append(text) or True)
    window.output.copy_on_stop_action.trigger()
    if window.output.speak_on_stop_action.isEnabled():
        window.output.speak_on_stop_action.trigger()
    assert window.keeper.prefs.copy_on_stop
    QGuiApplication.clipboard().setText("")
    window.writing.toggle_running()
    steer(window, "Go")
    assert QGuiApplication.clipboard().text() == ""
    window.writing.toggle_running()
    assert QGuiApplication.clipboard().text() == "Go"
    assert said == (["Go"] if window.keeper.prefs.speak_on_stop else [])
    window.keeper.save()
    saved = SettingsStore().load()
    assert saved.copy_on_stop and saved.output == "panel"


def test_the_command_line_sets_the_output(monkeypatch):
    import dasher_rnn.ui.app as app
    from dasher_rnn import cli

    seen = {}
    monkeypatch.setattr(app, "run_app", lambda *a, **k: seen.update(k) or 0)
    assert cli.main(["app", "--output", "direct"]) == 0
    assert seen["prefs_overrides"]["output"] == "direct"
    with pytest.raises(SystemExit):
        cli.main(["app", "--output", "keyboard"])


# -- a real second X program under Xvfb --------------------------------------------------------------------

def _wait_for(predicate, what: str, seconds: float = 60.0):
    """Wait for something another process does, the GUI's events handled meanwhile (tests/helpers.py)."""
    return wait_for(predicate, what, seconds, interval=0.02, between=QApplication.processEvents)


@pytest.fixture(scope="module")
def xvfb():
    """A private X server (``:N``) for this module; skipped where Xvfb is not installed."""
    pytest.importorskip("Xlib", reason="python-xlib is not installed")
    with xvfb_display() as display:
        yield display


@pytest.fixture
def receiver(xvfb, tmp_path):
    """A separate Qt program on the Xvfb display with a focused text field; its text is read from a file."""
    out = tmp_path / "received.txt"
    env = {**os.environ, "DISPLAY": xvfb, "QT_QPA_PLATFORM": "xcb"}
    env.pop("WAYLAND_DISPLAY", None)
    proc = subprocess.Popen([sys.executable, str(RECEIVER), str(out)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)

    def ready() -> bool:
        if proc.poll() is not None:
            pytest.skip(f"the receiving Qt program cannot run on Xvfb: {proc.stdout.read()[-800:]}")
        return out.exists() and out.read_text(encoding="utf-8") == READY

    _wait_for(ready, "the receiver's window")
    yield out
    proc.terminate()
    proc.wait(timeout=30)


def _received(out: Path) -> str:
    text = out.read_text(encoding="utf-8")
    return "" if text == READY else text


def test_xvfb_the_focused_program_receives_what_the_window_writes(qtbot, settings_path, offscreen_focus, xvfb, receiver):
    typer = XTestTyper(xvfb)
    assert typer.focus() == int(Path(str(receiver) + ".id").read_text())  # the receiver has the keyboard focus
    window = open_direct_window(qtbot, lambda: typer)
    window.writing.toggle_running()
    steer(window, "hello")
    window.writing.toggle_running()  # stop: all of it is typed
    _wait_for(lambda: _received(receiver) == "hello", "hello in the other program")

    window.writing.toggle_running()
    back_out(window, len("hel"))  # a deletion: Backspace in the other program
    window.writing.toggle_running()
    written = window.controller.zoom.output
    assert len(written) < 3 and window.output.direct.backspaces > 0
    _wait_for(lambda: _received(receiver) == written, f"{written!r} after the Backspaces")
    window.close()


def test_xvfb_no_focused_window_keeps_the_text_until_one_has_the_focus(qtbot, settings_path, offscreen_focus, xvfb, receiver):
    from Xlib import X, display

    d = display.Display(xvfb)
    d.set_input_focus(X.NONE, X.RevertToNone, X.CurrentTime)
    d.sync()
    window = open_direct_window(qtbot, lambda: XTestTyper(xvfb))
    window.writing.toggle_running()
    steer(window, "I see")
    window.writing.toggle_running()
    assert "no window has the keyboard focus" in window.status.notice and "kept in the panel" in window.status.notice
    assert window.panel.toPlainText() == "I see" and _received(receiver) == ""

    receiver_id = int(Path(str(receiver) + ".id").read_text())
    d.set_input_focus(receiver_id, X.RevertToParent, X.CurrentTime)
    d.sync()
    window.output.direct._retry_at = 0.0  # a second later
    window.writing.tick(DT)
    _wait_for(lambda: _received(receiver) == "I see", "the kept text in the other program")
    assert "Direct output" not in window.status.notice
    d.close()
    window.close()


def _arrived(out: Path, expected: str) -> str:
    """What the other program holds once it holds ``expected`` (or after 10 s: then the test shows what it got)."""
    with contextlib.suppress(AssertionError):
        _wait_for(lambda: _received(out) == expected, repr(expected), seconds=10.0)
    return _received(out)


class UserKeyboard:
    """The user's side of the keyboard on the Xvfb display, through another connection: Caps Lock pressed (a
    lock), Shift held down, Ctrl latched as sticky keys latch it (XKB's LatchLockState)."""

    def __init__(self, display_name: str) -> None:
        from Xlib import XK, X, display
        from Xlib.ext import xtest

        from dasher_rnn.output.xkb import Xkb

        self.d = display.Display(display_name)
        self.xkb = Xkb(self.d)
        self._X, self._fake = X, xtest.fake_input
        self._code = lambda name: self.d.keysym_to_keycode(XK.string_to_keysym(name))

    def caps_lock(self) -> None:  # a press and release toggles it
        for event in (self._X.KeyPress, self._X.KeyRelease):
            self._fake(self.d, event, self._code("Caps_Lock"))
        self.d.sync()

    def shift(self, down: bool) -> None:
        self._fake(self.d, self._X.KeyPress if down else self._X.KeyRelease, self._code("Shift_L"))
        self.d.sync()

    def latch_ctrl(self, on: bool) -> None:
        self.xkb.latch_lock(affect_latches=0b100, latches=0b100 if on else 0)
        self.d.sync()

    def state(self):
        return self.xkb.state()

    def close(self) -> None:
        self.d.close()


MODIFIER_CASES = {  # the user's modifier: (put it on, take it off, what the issue saw typed through it)
    "caps lock": (lambda k: k.caps_lock(), lambda k: k.caps_lock(), "Hello world 1!"),  # was "hELLO WORLD 1!"
    "shift held": (lambda k: k.shift(True), lambda k: k.shift(False), "see you at 5."),  # was "SEE YOU AT %>"
    "ctrl latched": (lambda k: k.latch_ctrl(True), lambda k: k.latch_ctrl(False), "ax"),  # Ctrl+A, x over it all
}


@pytest.mark.parametrize("case", MODIFIER_CASES)
def test_xvfb_the_users_modifiers_never_change_what_arrives(xvfb, receiver, case):
    """Caps Lock on, Shift held, Ctrl latched (sticky keys): the other program receives exactly the text, after
    the draft it already had, and the user's modifier is in effect again afterwards."""
    keyboard = UserKeyboard(xvfb)
    out = DirectOutput(XTestTyper(xvfb))
    on, off, text = MODIFIER_CASES[case]
    try:
        out.track("Dear Sam, ", 0)
        assert out.sync() == ""
        assert _arrived(receiver, "Dear Sam, ") == "Dear Sam, "
        on(keyboard)
        before = keyboard.state()
        assert before.mods
        out.track(text, 0)
        assert out.sync() == ""
        assert _arrived(receiver, "Dear Sam, " + text) == "Dear Sam, " + text
        assert keyboard.state() == before  # put back as it was: still locked, held or latched
    finally:
        off(keyboard)
        left = keyboard.state().mods
        keyboard.close()
        out.close()
    assert left == 0  # taken off again: nothing of ours stays pressed, latched or locked


def test_xvfb_a_modifier_that_cannot_be_set_aside_holds_the_keys_and_says_which(xvfb, receiver, monkeypatch):
    """A modifier key held on a real keyboard cannot be released through XTEST (the server ignores a release
    from a device that did not press it): Xvfb has no such keyboard, so the state the typer reads stands in for
    one. Nothing is typed, the reason names the key, and the text goes once it is let go."""
    import dataclasses

    typer = XTestTyper(xvfb)
    real_state = typer._xkb.state
    monkeypatch.setattr(typer._xkb, "state", lambda: dataclasses.replace(real_state(), mods=0b100, base=0b100))
    out = DirectOutput(typer, retry_seconds=0.0)
    out.track("ax", 0)
    problem = out.sync()
    assert "Ctrl held down" in problem and "2 characters waiting" in problem and out.sent == ""
    monkeypatch.setattr(typer._xkb, "state", real_state)  # let go
    assert out.sync() == ""
    assert _arrived(receiver, "ax") == "ax"
    assert real_state().mods == 0  # nothing was left pressed, latched or locked
    out.close()


def _top_level_named(d, prefix: str):
    for child in d.screen().root.query_tree().children:
        name = child.get_wm_name()
        if isinstance(name, bytes):
            name = name.decode("utf-8", "replace")
        if name and name.startswith(prefix) and child.get_attributes().map_state == 2:  # IsViewable
            return child
    return None


def test_xvfb_the_app_never_takes_the_focus(xvfb, receiver, tmp_path):
    """`dasher-rnn app --output direct` on a real X server: shown on top, and the focus stays where it was."""
    from Xlib import Xatom, display

    d = display.Display(xvfb)
    receiver_id = int(Path(str(receiver) + ".id").read_text())
    assert d.get_input_focus().focus.id == receiver_id
    env = {**os.environ, "DISPLAY": xvfb, "QT_QPA_PLATFORM": "xcb", "DASHER_RNN_CONFIG": str(tmp_path / "s.json")}
    env.pop("WAYLAND_DISPLAY", None)
    app = subprocess.Popen([sys.executable, "-m", "dasher_rnn", "app", "--model", "uniform", "--output", "direct"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        def shown():
            if app.poll() is not None:
                raise AssertionError(f"the app exited with {app.returncode}: {app.stdout.read()[-2000:]}")
            return _top_level_named(d, "dasher-rnn")

        window = _wait_for(shown, "the app's window")
        hints = window.get_wm_hints()
        assert hints is not None and hints.flags & 1 and not hints.input  # InputHint: never give it the focus
        state = window.get_full_property(d.intern_atom("_NET_WM_STATE"), Xatom.ATOM)
        assert state is not None and d.intern_atom("_NET_WM_STATE_ABOVE") in state.value  # stays on top
        assert d.get_input_focus().focus.id == receiver_id  # shown without taking the focus
    finally:
        app.terminate()  # closes the window properly (settings saved)
        app.wait(timeout=60)
        d.close()
    assert app.returncode == 0
    assert '"output": "direct"' in (tmp_path / "s.json").read_text()


def test_speak_on_stop_without_speech_says_so_in_the_status_bar(qtbot, settings_path, offscreen_focus):
    from dasher_rnn.ui.speech import Speaker

    window = open_direct_window(qtbot, FakeTyper, output="panel", speak_on_stop=True)
    window.speech.speaker = Speaker(commands=(), use_qt=False)
    window.writing.toggle_running()
    steer(window, "Hi")
    window.writing.toggle_running()
    assert "Speak on stop: No speech available" in window.status.notice and window.panel.toPlainText() == "Hi"


def test_xvfb_a_display_that_goes_away_is_a_typing_error(xvfb):
    """The X server ends while we type: TypingError (a status-bar message), not an exception out of the frame."""
    read, write = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-nolisten", "tcp"], pass_fds=(write,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as f:
        number = f.readline().strip()
    typer = XTestTyper(f":{number}")
    typer.type_char("a")
    proc.kill()
    proc.wait(timeout=30)
    with pytest.raises(TypingError):
        typer.type_char("b")
    with pytest.raises(TypingError):
        typer.focus()
    typer.close()
