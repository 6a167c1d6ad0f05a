"""Start-up of the app: seconds from starting the process to the first painted frame, offscreen. Prints JSON.

    python bench/startup_bench.py [--runs 5] [--model hybrid] [--model-dir DIR] [--without-torch] [--side-by-side]
        [--python PYTHON]
    python bench/startup_bench.py --program dist/dasher-rnn/dasher-rnn --program .bundle-venv/bin/dasher-rnn ...

Each run starts a fresh Python process that runs ``dasher-rnn app`` as the command line does (the same
``cli.main``), with one addition: an event filter that notices the zoom view's paint events. The child prints
a line after the view's first paint (a blank view: the window is up) and after its first paint of a zoom frame
(boxes drawn from the model's predictions: the app is usable), then quits. The parent times both lines from
just before starting the process, so interpreter start-up and every import count. Settings and profiles live
in a throwaway folder (a first start: profile ``default`` empty). The JSON has every run, the medians and the
load average before the runs (what ran beside).

``--without-torch`` starts the app as an installation without PyTorch does: the child makes ``import torch`` fail
before anything else (``sys.modules["torch"] = None``), so the app adapts with the numpy engine and never loads
torch, and the child says whether torch was loaded. ``--side-by-side`` alternates runs with and without torch in one
run of the script (the figures to compare). ``--python``: the interpreter of the child (another environment, e.g.
one where torch is not installed at all).

``--program PATH`` (repeatable) times installed programs instead, as a person starts them: ``PATH app
--exit-after-first-frame``, which prints "first frame" after the first paint of boxes and closes the window (the
self-contained build of ``make bundle``, an installed ``dasher-rnn``); runs alternate between the programs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import sys

if "--without-torch" in sys.argv:
    sys.argv.remove("--without-torch")
    sys.modules["torch"] = None  # as an installation without PyTorch: import torch raises ImportError

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication

import dasher_rnn.ui.app as ui_app
from dasher_rnn.cli import main


class Watch(QObject):
    def __init__(self):
        super().__init__()
        self.seen = set()

    def report(self, what):
        if what not in self.seen:
            self.seen.add(what)
            print(what, flush=True)
            if what == "frame":
                print("torch loaded" if sys.modules.get("torch") is not None else "torch not loaded", flush=True)
                QApplication.instance().quit()

    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint and type(obj).__name__ == "DasherView":
            what = "paint" if obj.frame is None else "frame"
            QTimer.singleShot(0, lambda: self.report(what))  # after this paint event has been handled
        return False


watch = Watch()
make_application = ui_app._application


def _application():
    app = make_application()
    app.installEventFilter(watch)
    return app


ui_app._application = _application
sys.exit(main(["app", *sys.argv[1:]]))
"""


def one_run(app_args: list[str], env: dict[str, str], timeout: float, python: str = sys.executable,
            without_torch: bool = False, cwd: str | Path | None = None) -> dict:
    """One start of the app in a fresh process (``python``, in ``cwd``): when it painted, whether it loaded torch."""
    start = time.perf_counter()
    proc = subprocess.Popen([python, "-c", CHILD, *app_args, *(["--without-torch"] if without_torch else [])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, cwd=cwd)
    seen: dict[str, float] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        seen.setdefault(line.strip(), time.perf_counter() - start)
        if line.startswith("torch "):
            break
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if "frame" not in seen:
        raise RuntimeError(f"the app painted no frame (exit {proc.returncode}): {proc.stderr.read()[-2000:]}")
    return {"first_paint_s": round(seen.get("paint", seen["frame"]), 3), "first_frame_s": round(seen["frame"], 3),
            "torch_loaded": "torch loaded" in seen, "exit_code": proc.returncode}


def program_run(program: str, app_args: list[str], env: dict[str, str], timeout: float, cwd: str) -> dict:
    """One start of an installed program to its first frame (its own ``--exit-after-first-frame``)."""
    start = time.perf_counter()
    done = subprocess.run([program, "app", "--exit-after-first-frame", *app_args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)
    if "first frame" not in done.stdout:
        raise RuntimeError(f"{program} painted no frame (exit {done.returncode}): {done.stderr[-2000:]}")
    # the time to the line is within a few ms of the time to exit: the window closes right after it
    return {"first_frame_s": round(time.perf_counter() - start, 3), "exit_code": done.returncode}


def summary(runs: list[dict]) -> dict:
    medians = {"median_first_frame_s": round(statistics.median(r["first_frame_s"] for r in runs), 3)}
    if all("first_paint_s" in r for r in runs):
        medians["median_first_paint_s"] = round(statistics.median(r["first_paint_s"] for r in runs), 3)
    return {"runs": runs, **medians}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--model", default="hybrid", help="the app's --model (default: hybrid, the app's default)")
    parser.add_argument("--model-dir", default=None, help="the app's --model-dir (default: the shipped model)")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--without-torch", action="store_true", help="the child cannot import torch")
    parser.add_argument("--side-by-side", action="store_true", help="alternate runs with torch and without")
    parser.add_argument("--python", default=sys.executable, help="the child's interpreter")
    parser.add_argument("--program", action="append", default=[],
                        help="time this installed program instead (repeatable): a bundle, a venv's dasher-rnn")
    args = parser.parse_args()
    if args.program:
        return programs(args)

    kinds = [False, True] if args.side_by_side else [args.without_torch]
    runs: dict[bool, list[dict]] = {kind: [] for kind in kinds}
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen", DASHER_RNN_PROFILES=str(Path(tmp) / "profiles"),
                   DASHER_RNN_CONFIG=str(Path(tmp) / "settings.json"), XDG_CONFIG_HOME=str(Path(tmp) / "config"),
                   XDG_DATA_HOME=str(Path(tmp) / "data"), XDG_CACHE_HOME=str(Path(tmp) / "cache"))
        app_args = ["--model", args.model, "--settings", str(Path(tmp) / "settings.json")]
        if args.model_dir:
            app_args += ["--model-dir", args.model_dir]
        for _ in range(args.runs):
            for kind in kinds:
                # from the throwaway folder, as a user starts it: another environment's dasher_rnn, not the checkout's
                runs[kind].append(one_run(app_args, env, args.timeout, args.python, kind, cwd=tmp))
    report: dict = {
        "what": "seconds from process start to the app's first painted frame, offscreen",
        "model": args.model,
        "python_executable": args.python,
    }
    if args.side_by_side:
        report["with_torch"], report["without_torch"] = summary(runs[False]), summary(runs[True])
        report["ratio_first_frame_without_to_with"] = round(report["without_torch"]["median_first_frame_s"]
                                                            / report["with_torch"]["median_first_frame_s"], 3)
    else:
        report.update(summary(runs[args.without_torch]), without_torch=args.without_torch)
    report.update({
        "load_average_before": [round(x, 2) for x in load_before] if load_before else None,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    })
    print(json.dumps(report, indent=1))
    return 0


def programs(args: argparse.Namespace) -> int:
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    programs = [str(Path(p).resolve()) for p in args.program]
    runs: dict[str, list[dict]] = {p: [] for p in programs}
    with tempfile.TemporaryDirectory() as tmp:
        # a clean environment (a first start of each), offscreen: what the program needs and nothing from this shell
        env = {"HOME": tmp, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "QT_QPA_PLATFORM": "offscreen",
               "DASHER_RNN_PROFILES": str(Path(tmp) / "profiles")}
        app_args = ["--model", args.model, "--settings", str(Path(tmp) / "settings.json")]
        if args.model_dir:
            app_args += ["--model-dir", args.model_dir]
        for _ in range(args.runs):
            for program in programs:
                runs[program].append(program_run(program, app_args, env, args.timeout, tmp))
    report = {"what": "seconds from process start to the app's first painted frame, offscreen",
              "model": args.model, "programs": {p: summary(r) for p, r in runs.items()},
              "load_average_before": [round(x, 2) for x in load_before] if load_before else None,
              "cpus": os.cpu_count()}
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
