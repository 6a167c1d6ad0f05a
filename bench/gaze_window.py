"""The real window, written to and rested on by gaze alone: "I am thirsty", then a minute of rest, the message after.

    python bench/gaze_window.py                       # on a virtual X screen of its own (Xvfb, openbox); JSON
    python bench/gaze_window.py --grade poor --rest 60 --shots docs/gaze-window   # and screenshots

The app's window (the default hybrid model, a new configuration in a temporary folder: the eye-tracker preset with
the gaze input over UDP) runs on its own timer, in real time. Its gaze comes only from a separate process,
``tools/gaze_sender.py``, which simulates a tracker grade's noise, losses, blinks, drift, microsaccades and saccades
and sends datagrams at the tracker's rate. This script is the person: it looks at the screen (the window's boxes, as
the simulated gaze user of ``zoom/gaze_user.py`` chooses them) and tells the sender where the eyes want to look;
it never touches the window's pointer, keys or state. It dwells on the crosshair to start, writes the phrase, then
rests, looking at each of ``REST_SPOTS`` in turn (the writing area, the control box's corner, the edges, the
history, the crosshair, the text panel) without stopping. It prints the message before and after the rest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class RemoteEyes:
    """The eyes of ``GazeUser``, in the sender process: where they want to look goes down its standard input."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc

    def look(self, point: tuple[float, float], t: float) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"look {point[0]:.1f} {point[1]:.1f}\n")
        self.proc.stdin.flush()


def virtual_screen() -> list[subprocess.Popen]:
    """Xvfb (1280x800) and openbox, where DISPLAY is not set; the processes to stop after."""
    if os.environ.get("DISPLAY"):
        return []
    if shutil.which("Xvfb") is None:
        raise SystemExit("no DISPLAY and no Xvfb (Debian: apt-get install xvfb openbox)")
    read, write = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as f:
        os.environ["DISPLAY"] = f":{f.readline().strip()}"
    procs = [xvfb]
    if shutil.which("openbox"):
        procs.append(subprocess.Popen(["openbox"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(0.5)
    return procs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--phrase", default="I am thirsty")
    p.add_argument("--grade", default="consumer", help="the sender's tracker grade (zoom/gaze_noise.py)")
    p.add_argument("--rest", type=float, default=60.0, help="seconds of rest after the phrase")
    p.add_argument("--model", default="hybrid", choices=["hybrid", "rnn", "ppm"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=float, default=300.0, help="seconds allowed to write the phrase")
    p.add_argument("--shots", type=Path, default=None, help="save screenshots with this path prefix")
    args = p.parse_args(argv)
    procs = virtual_screen()
    home = Path(tempfile.mkdtemp(prefix="gaze-window-"))
    for name, sub in (("DASHER_RNN_CONFIG", "settings.json"), ("DASHER_RNN_PROFILES", "profiles"),
                      ("DASHER_RNN_DOCUMENTS", "Documents"), ("DASHER_RNN_JOURNAL", "journal.json")):
        os.environ[name] = str(home / sub)  # a new user: none of this machine's user's files are read or written
    try:
        return run(args, home)
    finally:
        for proc in reversed(procs):
            proc.terminate()
        shutil.rmtree(home, ignore_errors=True)


def run(args: argparse.Namespace, home: Path) -> int:
    from PySide6.QtCore import QPoint, QTimer
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.journal import Journal
    from dasher_rnn.normalise import normalise
    from dasher_rnn.settings import SettingsStore
    from dasher_rnn.ui.window import MainWindow
    from dasher_rnn.zoom.controller import WritingController
    from dasher_rnn.zoom.gaze_noise import Screen
    from dasher_rnn.zoom.gaze_user import REST_SPOTS, GazeUser, GazeUserConfig
    from dasher_rnn.zoom.sources import WriterSource

    app = QApplication.instance() or QApplication(sys.argv[:1])
    store = SettingsStore(home / "settings.json")
    from dasher_rnn.input.presets import preset

    gaze = preset("eye-tracker")  # its speeds too (a new config's --input does not bring them yet: issue 46)
    prefs = store.load().updated(input="gaze-udp", gaze_port=free_port(), preset=gaze.name, tutorial_done=True,
                                 speed_bps=gaze.speed_bps, auto_speed=gaze.auto_speed, control_mode=gaze.control_mode)
    writer = build_writer(WriterConfig(model=args.model, profile="default", profiles_dir=home / "profiles"))
    window = MainWindow(WritingController(WriterSource(writer), prefs.controller_config()), store, prefs,
                        journal=Journal(home / "journal.json"))
    window.showMaximized()
    for _ in range(40):
        app.processEvents()
        time.sleep(0.05)
    geometry = (window.screen() or QGuiApplication.primaryScreen()).geometry()
    sender = subprocess.Popen([sys.executable, str(ROOT / "tools" / "gaze_sender.py"), "--port", str(prefs.gaze_port),
                               "--grade", args.grade, "--screen", f"{geometry.width()}x{geometry.height()}",
                               "--seed", str(args.seed)], stdin=subprocess.PIPE, text=True)
    view = window.view
    corner = view.mapToGlobal(QPoint(0, 0))
    screen = Screen(geometry.width(), geometry.height(), 29.9 * geometry.width() / geometry.height(), 29.9)
    config = GazeUserConfig(grade=args.grade, seed=args.seed, screen=screen,
                            view=(corner.x() - geometry.x(), corner.y() - geometry.y(), view.width(), view.height()))
    person = GazeUser(window.controller, config, eyes=RemoteEyes(sender))
    phrase = normalise(args.phrase, writer.alphabet)
    start = time.monotonic()
    state: dict = {"phase": "write", "rest_start": None, "spot": -1, "before": None, "written_s": None}
    spots = list(REST_SPOTS.values())

    def shot(name: str) -> None:
        if args.shots is not None:
            args.shots.parent.mkdir(parents=True, exist_ok=True)
            window.grab().save(f"{args.shots}-{name}.png")

    def step() -> None:
        now = time.monotonic() - start
        zoom = window.controller.zoom
        pointer = view.pointer_screen
        person.sees(view.viewport().to_dasher(*pointer) if pointer is not None else None, now)
        if state["phase"] == "write":
            if zoom.output == phrase:
                state.update(phase="rest", rest_start=now, before=window.controller.text, written_s=now)
                shot("written")
            elif now > args.limit:
                state["phase"] = "failed"
                app.quit()
            else:
                person.look(zoom.context + phrase, None, now)
            return
        spot = min(int((now - state["rest_start"]) / (args.rest / len(spots))), len(spots) - 1)
        if spot != state["spot"]:
            state["spot"] = spot
            person.rest_at(spots[spot], now)
            if spot == len(spots) // 2:
                shot("resting")
        if now - state["rest_start"] >= args.rest:
            state["phase"] = "done"
            shot("after-rest")
            app.quit()

    timer = QTimer()
    timer.timeout.connect(step)
    timer.start(33)
    app.exec()
    timer.stop()
    assert sender.stdin is not None
    sender.stdin.write("quit\n")
    sender.stdin.flush()
    sender.wait(5)
    after = window.controller.text
    result = {"phrase": phrase, "grade": args.grade, "model": args.model, "rest_s": args.rest,
              "written": state["phase"] != "failed", "seconds_to_write": state["written_s"],
              "before_rest": state["before"], "after_rest": after,
              "unchanged": state["before"] == after and state["phase"] == "done",
              "speed_bps": window.controller.speed_bps}
    window.close()
    print(json.dumps(result, indent=1))
    return 0 if result["unchanged"] else 1


def free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    raise SystemExit(main())
