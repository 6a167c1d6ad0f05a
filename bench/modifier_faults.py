"""Does direct output type through the user's modifiers? Prints JSON.

    python bench/modifier_faults.py

Starts its own Xvfb and, for each case, a receiving program (tests/x_receiver.py: a Qt text field that has the
keyboard focus and writes what it holds to a file). It types the draft "Dear Sam, " with no modifier, puts the
user's modifier on from another X connection (Caps Lock pressed; Shift held down; Ctrl latched as sticky keys
latch it), then types the case's text through ``DirectOutput`` and ``XTestTyper``, as the window does. Each case
reports the text sent, what the program received after the draft (``arrived``, or its whole text when the draft
is gone), whether that is exact, the status-bar problem (empty when none) and whether the user's modifier was in
effect again afterwards. Needs Xvfb and PySide6; bounded: each wait gives up after 20 s, the whole about 10 s.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from Xlib import XK, X, display
from Xlib.ext import xtest

from dasher_rnn.output import DirectOutput
from dasher_rnn.output.typers import XTestTyper
from dasher_rnn.output.xkb import Xkb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.helpers import wait_until  # noqa: E402  (the one polling helper, shared with the tests)

RECEIVER = Path(__file__).resolve().parents[1] / "tests" / "x_receiver.py"
READY = "\x00READY\x00"
DRAFT = "Dear Sam, "
WAIT = 20.0


def start_xvfb() -> tuple[subprocess.Popen, str]:
    read, write = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as f:
        number = f.readline().strip()
    if not number:
        raise SystemExit("Xvfb did not start")
    return proc, f":{number}"


class User:
    """The user's side of the keyboard, through its own X connection."""

    def __init__(self, name: str) -> None:
        self.d = display.Display(name)
        self.xkb = Xkb(self.d)

    def key(self, name: str, *events: int) -> None:
        code = self.d.keysym_to_keycode(XK.string_to_keysym(name))
        for event in events:
            xtest.fake_input(self.d, event, code)
        self.d.sync()

    def latch(self, mask: int) -> None:
        self.xkb.latch_lock(affect_latches=0b100, latches=mask)  # Ctrl, as sticky keys latch it
        self.d.sync()


CASES: dict[str, tuple[str, Callable[[User], None], Callable[[User], None]]] = {
    "none": ("Hello world 1! see you at 5. ax", lambda u: None, lambda u: None),
    "caps lock on": ("Hello world 1!", lambda u: u.key("Caps_Lock", X.KeyPress, X.KeyRelease),
                     lambda u: u.key("Caps_Lock", X.KeyPress, X.KeyRelease)),
    "shift held": ("see you at 5.", lambda u: u.key("Shift_L", X.KeyPress), lambda u: u.key("Shift_L", X.KeyRelease)),
    "ctrl latched (sticky keys)": ("ax", lambda u: u.latch(0b100), lambda u: u.latch(0)),
}


def run_case(name: str, screen: str, folder: Path) -> dict[str, object]:
    text, on, off = CASES[name]
    out = folder / f"{len(list(folder.iterdir()))}.txt"
    env = {**os.environ, "DISPLAY": screen, "QT_QPA_PLATFORM": "xcb"}
    env.pop("WAYLAND_DISPLAY", None)
    receiver = subprocess.Popen([sys.executable, str(RECEIVER), str(out)], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    user = User(screen)
    direct = DirectOutput(XTestTyper(screen))

    def received() -> str:
        held = out.read_text(encoding="utf-8") if out.exists() else ""
        return "" if held == READY else held

    try:
        if not wait_until(lambda: out.exists() and out.read_text(encoding="utf-8") == READY, WAIT):
            raise SystemExit("the receiving program did not start on Xvfb")
        direct.track(DRAFT, 0)
        direct.sync()
        wait_until(lambda: received() == DRAFT, WAIT)
        on(user)
        before = user.xkb.state()
        direct.track(text, 0)
        problem = direct.sync()
        wait_until(lambda: received() == DRAFT + text, seconds=3.0)  # a wrong text never becomes right: give up soon
        time.sleep(0.2)  # anything still on its way
        held = received()
        after = user.xkb.state()
        off(user)
    finally:
        direct.close()
        user.d.close()
        receiver.terminate()
        receiver.wait(timeout=30)
    arrived = held[len(DRAFT):] if held.startswith(DRAFT) else held
    return {"case": name, "sent": text, "arrived": arrived, "draft_kept": held.startswith(DRAFT),
            "exact": held == DRAFT + text, "problem": problem, "modifiers_before": before.mods,
            "modifier_put_back": after == before}


def main() -> int:
    if shutil.which("Xvfb") is None:
        raise SystemExit("Xvfb is not installed (Debian: apt-get install xvfb)")
    started = time.monotonic()
    xvfb, screen = start_xvfb()
    try:
        with tempfile.TemporaryDirectory() as folder:
            results = [run_case(name, screen, Path(folder)) for name in CASES]
    finally:
        xvfb.terminate()
        xvfb.wait(timeout=30)
    print(json.dumps({"date": time.strftime("%Y-%m-%d"), "machine": platform.platform(),
                      "seconds": round(time.monotonic() - started, 1), "cases": results}, indent=2))
    return 0 if all(r["exact"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
