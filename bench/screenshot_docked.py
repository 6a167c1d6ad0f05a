"""The documentation's picture of direct output's docked layout: the window docked as a strip at the bottom of the
screen, typing into another program (xterm) that has the rest of it, on a screen a window manager manages.

    xvfb-run -a -s "-screen 0 1600x900x24" python bench/screenshot_docked.py docs/direct-output-docked.png

starts openbox (the window manager; Debian: apt-get install openbox) and xterm on that display, gives xterm the
keyboard focus and the screen above the strip (--edge and --share dock it elsewhere), opens the window as the app
does with direct output on (here with the eye-tracker preset, which opened full screen before the dock), and has
the simulated user write the text with the shipped RNN; each character is typed into xterm through XTEST once it
is committed. It stops part way (at --at characters, default all but the last two), so the committed text is in
xterm and the tail that is not typed yet only in our panel, and saves a capture of the whole screen.
Settings, profiles and documents are throwaway folders.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.helpers import wait_for  # noqa: E402  (the one polling helper, shared with the tests)

BANNER = "Another program (here xterm) receives the keys:"


def _client(d, title: str):
    """The top-level window titled ``title`` that the window manager lists."""
    from Xlib import Xatom

    clients = d.screen().root.get_full_property(d.intern_atom("_NET_CLIENT_LIST"), Xatom.WINDOW)
    for window_id in clients.value if clients is not None else ():
        window = d.create_resource_object("window", window_id)
        name = window.get_wm_name()
        if (name.decode("utf-8", "replace") if isinstance(name, bytes) else name) == title:
            return window
    return None


def start_desktop(edge: str, share: float) -> list[subprocess.Popen]:
    """openbox, and xterm with the keyboard focus, filling what a strip along ``edge`` taking ``share`` of the
    screen leaves."""
    from Xlib import X, Xatom, display

    for tool in ("openbox", "xterm"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (Debian: apt-get install {tool})")
    d = display.Display()
    procs = [subprocess.Popen(["openbox"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    wait_for(lambda: d.get_selection_owner(d.intern_atom("WM_S0")) != 0, "openbox", 30.0, interval=0.05)
    title = "xterm (the program written into)"
    procs.append(subprocess.Popen(["xterm", "-T", title, "-fa", "DejaVu Sans Mono", "-fs", "15", "-e", "sh", "-c",
                                   f"printf '{BANNER}\\n\\n'; exec cat"]))
    xterm = wait_for(lambda: _client(d, title), "xterm's window", 30.0, interval=0.05)
    extents = wait_for(lambda: xterm.get_full_property(d.intern_atom("_NET_FRAME_EXTENTS"), Xatom.CARDINAL),
                       "its frame", 30.0, interval=0.05)
    left, right, top, bottom = extents.value
    from PySide6.QtCore import QRect

    from dasher_rnn.ui.parts.dock import dock_rect

    screen = QRect(0, 0, d.screen().width_in_pixels, d.screen().height_in_pixels)
    strip = dock_rect(screen, edge, share)
    free = QRect(screen)
    if edge == "bottom":
        free.setBottom(strip.top() - 1)
    elif edge == "top":
        free.setTop(strip.bottom() + 1)
    elif edge == "left":
        free.setLeft(strip.right() + 1)
    else:
        free.setRight(strip.left() - 1)
    xterm.configure(x=free.x(), y=free.y(), width=free.width() - left - right, height=free.height() - top - bottom)
    xterm.set_input_focus(X.RevertToParent, X.CurrentTime)
    d.sync()
    d.close()
    return procs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", help="the PNG file to write")
    parser.add_argument("text", nargs="?", default="See you at six tomorrow", help="what the simulated user writes")
    parser.add_argument("--at", type=int, default=None, help="stop after this many characters (default: all but 2)")
    parser.add_argument("--preset", default="eye-tracker", help="the input preset (its docked layout: the default)")
    parser.add_argument("--speed", type=float, default=3.0, help="bits per second")
    parser.add_argument("--edge", choices=("bottom", "top", "left", "right"), default="bottom", help="where it docks")
    parser.add_argument("--share", type=float, default=0.4, help="the strip's share of the screen")
    args = parser.parse_args()
    if not os.environ.get("DISPLAY"):
        raise SystemExit("no X display: run it under xvfb-run (see the docstring)")
    os.environ["QT_QPA_PLATFORM"] = "xcb"

    procs = start_desktop(args.edge, args.share)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["DASHER_RNN_PROFILES"] = str(Path(tmp) / "profiles")
            os.environ["DASHER_RNN_DOCUMENTS"] = str(Path(tmp) / "documents")
            print(write_docked(args, Path(tmp) / "settings.json"))
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(timeout=30)


def write_docked(args: argparse.Namespace, settings: Path) -> Path:
    from PySide6.QtGui import QGuiApplication

    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.settings import DockLayout, SettingsStore
    from dasher_rnn.ui.app import _application
    from dasher_rnn.ui.window import MainWindow
    from dasher_rnn.zoom.controller import WritingController
    from dasher_rnn.zoom.simulate import target_pointer, wait_for_answers
    from dasher_rnn.zoom.sources import WriterSource

    app = _application()

    def pump(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.01)

    store = SettingsStore(settings)
    # the scripted user holds its aim still while a box grows, which the rest stop would take for a resting pointer
    prefs = store.load().updated(preset=args.preset, output="direct", speed_bps=args.speed, auto_speed=False,
                                 rest_stop_seconds=0.0, tutorial_done=True,
                                 dock={args.preset: DockLayout(edge=args.edge, share=args.share)})
    controller = WritingController(WriterSource(build_writer(WriterConfig(model="rnn")), prefs.start_lower_share),
                                   prefs.controller_config())
    window = MainWindow(controller, store, prefs, start_timer=False)
    try:
        window.show_sized_to_screen()  # docked: direct output is on
        pump(1.5)
        if window.output.direct is None:
            raise SystemExit(f"direct output did not start: {window.status.notice}")
        at = args.at if args.at is not None else len(args.text) - 2
        zoom, view = controller.zoom, window.view
        controller.start()
        target = zoom.context + args.text
        for _ in range(int(120 * 30)):
            wait_for_answers(zoom)  # the same picture however busy this machine is
            x, y = target_pointer(zoom, target)
            view.set_pointer_override(view.viewport().to_screen(x, y))
            window.writing.tick(1 / 30)
            app.processEvents()
            if len(zoom.output) >= at and args.text.startswith(zoom.output):
                break
        else:
            raise SystemExit(f"did not write {args.text[:at]!r}: {zoom.output!r}")
        window.update_status()
        pump(1.5)  # xterm draws what arrived
        if QGuiApplication.focusWindow() is not None:
            raise SystemExit("our window has the keyboard focus: the keys did not go to xterm")
        path = Path(args.path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not app.primaryScreen().grabWindow(0).save(str(path)):  # the whole screen: both programs
            raise OSError(f"could not save {path}")
        print(f"written {zoom.output!r}; committed (typed into xterm): {window.output.direct.sent!r}; "
              f"window frame {window.frameGeometry().getRect()}, canvas {view.width()} x {view.height()}")
        return path
    finally:
        window.close()


if __name__ == "__main__":
    main()
