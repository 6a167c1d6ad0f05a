"""What an idle window costs: the CPU seconds `dasher-rnn app` spends in 10 s while stopped, nothing moving, no input.

    python bench/idle_cpu.py                       # offscreen (no display needed)
    xvfb-run -a -s "-screen 0 1600x900x24" python bench/idle_cpu.py --platform xcb
    python bench/idle_cpu.py --source /tmp/before   # another checkout's code (e.g. `git archive REV | tar -x -C DIR`)

starts the app as a person does (new settings with the tutorial done, the mouse input, the given model) in a process
of its own, waits ``--settle`` seconds for it to load and open, then reads the process's CPU time (user + system,
from /proc) over ``--seconds`` seconds, ``--runs`` times; prints one JSON object: each run's CPU seconds per 10 s, the
median, and that as a share of one core. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu_seconds(pid: int) -> float:
    """The process's user + system CPU time so far (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_run(source: Path, model: str, platform: str, settle: float, seconds: float, extra: list[str]) -> float:
    """One app's CPU seconds per 10 s of idling."""
    with tempfile.TemporaryDirectory() as tmp:
        settings = Path(tmp) / "settings.json"
        settings.write_text(json.dumps({"tutorial_done": True}))
        env = {**os.environ, "QT_QPA_PLATFORM": platform, "DASHER_RNN_CONFIG": str(settings),
               "DASHER_RNN_JOURNAL": str(Path(tmp) / "journal.json"), "XDG_DATA_HOME": str(Path(tmp) / "data"),
               "PYTHONPATH": os.pathsep.join([str(source), str(source / "clients" / "python" / "src")])}
        app = subprocess.Popen([sys.executable, "-m", "dasher_rnn", "app", "--model", model, *extra], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp)
        try:
            time.sleep(settle)
            if app.poll() is not None:
                raise RuntimeError(f"the app exited with {app.returncode}: {app.stderr.read()[-2000:]}")
            before, start = cpu_seconds(app.pid), time.monotonic()
            time.sleep(seconds)
            used, took = cpu_seconds(app.pid) - before, time.monotonic() - start
        finally:
            app.terminate()
            try:
                app.wait(timeout=30)
            except subprocess.TimeoutExpired:
                app.kill()
                app.wait()
        return used * 10.0 / took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, default=ROOT, help="the checkout whose code runs (default: this one)")
    parser.add_argument("--model", default="uniform", help="the model (default uniform: idling does not predict)")
    parser.add_argument("--platform", default="offscreen", help="QT_QPA_PLATFORM (default offscreen)")
    parser.add_argument("--settle", type=float, default=8.0, help="seconds to let it load and open (default 8)")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds measured per run (default 10)")
    parser.add_argument("--runs", type=int, default=3, help="runs (default 3)")
    parser.add_argument("app_args", nargs="*", help="more `dasher-rnn app` options (after --)")
    args = parser.parse_args()
    runs = [idle_run(args.source.resolve(), args.model, args.platform, args.settle, args.seconds, args.app_args)
            for _ in range(args.runs)]
    median = statistics.median(runs)
    print(json.dumps({"source": str(args.source), "model": args.model, "platform": args.platform,
                      "cpu_seconds_per_10s": [round(r, 3) for r in runs], "median_cpu_seconds_per_10s": round(median, 3),
                      "share_of_a_core": round(median / 10.0, 4)}))


if __name__ == "__main__":
    main()
