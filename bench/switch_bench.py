"""Switch access: the first 50 MacKenzie phrases written by the simulated switch users (``zoom/switch_user.py``), in
each of Dasher's button modes, with the app's default model (the hybrid) and with Dasher's PPM, at 30 fps.

    python bench/switch_bench.py                         # all four modes, both models: prints JSON
    python bench/switch_bench.py --lines 3 --modes scanning --models ppm     # a quick look
    python bench/switch_bench.py --results bench/results/switch.json         # also store the table for report.py

Each run is one ``dasher-rnn simulate --input MODE`` in a process of its own (the exact commands are printed and
stored), with one thread for numpy, torch and onnxruntime. The simulated runs are lockstep (``simulate``), so the
figures do not depend on the machine's load; only the wall time does. Then ``python bench/report.py`` renders the
table into docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from dasher_rnn.input.presets import preset

ROOT = Path(__file__).resolve().parents[1]
PHRASES = [root / "shared" / "corpora" / "eval" / "mackenzie_phrases.txt" for root in (ROOT, ROOT.parent)]
PPM_TRAIN = [root / "shared" / "corpora" / "dasher" / "training_english_GB.txt" for root in (ROOT, ROOT.parent)]
MODES = ("one-button", "two-button", "scanning", "step-scan")
MODELS = ("hybrid", "ppm")
LABELS = {"one-button": "one switch, dynamic (Dasher's one-button)", "two-button": "two switches, dynamic (two-button)",
          "scanning": "one switch, scanning (menu mode, 1 s a box)", "step-scan": "two switches, step and select"}
SHOWN = {"hybrid": "the hybrid", "ppm": "Dasher's PPM"}


def first(paths: list[Path]) -> Path:
    found = next((p for p in paths if p.exists()), None)
    if found is None:
        raise SystemExit(f"not found: {paths[0]}")
    return found


def command(mode: str, model: str, lines: int, fps: float, speed: float) -> list[str]:
    """The ``dasher-rnn simulate`` arguments of one run (paths as the table prints them, relative to the repo)."""
    args = ["simulate", "--input", mode, "--model", model]
    if model == "ppm":
        args += ["--ppm-train", "../shared/corpora/dasher/training_english_GB.txt"]
    return args + ["--file", "../shared/corpora/eval/mackenzie_phrases.txt", "--lines", str(lines), "--fps", f"{fps:g}",
                   "--speed", f"{speed:g}", "--json"]


def run(mode: str, model: str, lines: int, fps: float, speed: float) -> dict:
    args = command(mode, model, lines, fps, speed)
    phrases, train = first(PHRASES), first(PPM_TRAIN)
    real = [str(phrases) if a.endswith("mackenzie_phrases.txt") else str(train) if a.endswith("english_GB.txt") else a
            for a in args]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "dasher_rnn", *real, "--no-progress"], capture_output=True, text=True,
                          env=env, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr}")
    summary = json.loads(done.stdout)
    summary["wall_s"] = round(time.perf_counter() - start, 1)
    summary["command"] = "dasher-rnn " + " ".join(args)
    return summary


def table(results: list[dict], lines: int, beside: str) -> dict:
    """The ``switch`` table for bench/results/switch.json."""
    chars = results[0]["characters"] if results else 0
    rows = []
    for r in results:
        s = r["switch"]
        rows.append({"key": f"{r['input']}-{r['model']}", "mode": LABELS[r["input"]], "model": SHOWN[r["model"]],
                     "cpm": r["chars_per_minute"], "presses": s["presses_per_char"], "corrections": s["corrections"],
                     "reversed": r["reversals"], "failed": r["failed"]})
    return {
        "id": "switch",
        "columns": [{"key": "mode", "label": f"first {lines} MacKenzie phrases ({chars:,} characters)"},
                    {"key": "model", "label": "model"},
                    {"key": "cpm", "label": "chars/min", "align": "right", "format": ".2f"},
                    {"key": "presses", "label": "presses/char", "align": "right", "format": ".2f"},
                    {"key": "corrections", "label": "corrections", "align": "right"},
                    {"key": "reversed", "label": "reversed characters", "align": "right"},
                    {"key": "failed", "label": "phrases failed", "align": "right"}],
        "rows": rows,
        "commands": sorted({r["command"] for r in results}, key=lambda c: [r["command"] for r in results].index(c)),
        "date": datetime.date.today().isoformat(),
        "machine": platform.node() or "this machine",
        "beside": beside,
        "model": "v2, adapting",
        "source": "python bench/switch_bench.py --results bench/results/switch.json",
        "note": "Simulated user: reaction 250 ms (sd 50 ms), presses held 120 ms; Dasher's defaults otherwise "
                "(long press and multi-press gap 1 s, 4 scanning boxes).",
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lines", type=int, default=50, help="the first N phrases")
    p.add_argument("--fps", type=float, default=30.0)
    p.add_argument("--speed", type=float, default=preset("switch").speed_bps,
                   help="the dynamic modes' speed, bits/s (default: the switch preset's, what the app starts with)")
    p.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    p.add_argument("--results", type=Path, default=None, help="also write the table to this results file")
    p.add_argument("--beside", default="other engineers' tests", help="what ran beside it, for the table")
    args = p.parse_args(argv)
    results = []
    for model in args.models:
        for mode in args.modes:
            results.append(run(mode, model, args.lines, args.fps, args.speed))
            print(f"{model} {mode}: {results[-1]['chars_per_minute']} chars/min, {results[-1]['wall_s']} s",
                  file=sys.stderr, flush=True)
    out = {"lines": args.lines, "fps": args.fps, "speed_bps": args.speed, "runs": results}
    print(json.dumps(out, indent=1))
    if args.results is not None:
        area = {"area": "switch", "tables": [table(results, args.lines, args.beside)]}
        args.results.write_text(json.dumps(area, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
