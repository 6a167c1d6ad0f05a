"""Intent for a gaze: what each rule for a resting gaze costs the simulated gaze user (``zoom/gaze_user.py``) while
writing, and what a gaze at rest writes under it.

    python bench/gaze_intent.py                                    # prints JSON
    python bench/gaze_intent.py --lines 3                          # a quick look
    python bench/gaze_intent.py --results bench/results/gaze_intent.json   # also store the table for report.py

For each rule, the eye-tracker preset (0.8 bits/s, its dwell and smoothing, control mode off) on Dasher's PPM
trained on Dasher's English text writes the first MacKenzie phrases; then, as many times as there are phrases, the
person rests for ``--rest`` seconds without stopping: once with the gaze still on a spot of the canvas's writing side,
once glancing at a new spot every 5 s (the spots are drawn from ``--seed``, the same for every rule). The rules:

- none: a still gaze goes on writing;
- the rest stop (the mouse's and head mouse's rule, the eye-tracker's before): a pointer still for 4 s stops writing,
  and the person dwells on the crosshair to go on;
- the hold (the eye-tracker's, ``rest_holds``): once the picture has streamed 512 units past a still gaze, what the
  zoom wrote since the gaze came to rest is taken back and the zoom holds until the gaze moves.

Simulated time, lockstep: the figures do not depend on the machine. Then ``python bench/report.py`` renders the
table into docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
from dataclasses import replace
from pathlib import Path

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.input.presets import preset
from dasher_rnn.normalise import normalise
from dasher_rnn.zoom.controller import ControllerConfig, WritingController
from dasher_rnn.zoom.gaze_user import GazeUserConfig, rest, rest_spots, simulate_gaze
from dasher_rnn.zoom.sources import WriterSource

ROOT = Path(__file__).resolve().parents[1]
PHRASES = [root / "shared" / "corpora" / "eval" / "mackenzie_phrases.txt" for root in (ROOT, ROOT.parent)]
PPM_TRAIN = [root / "shared" / "corpora" / "dasher" / "training_english_GB.txt" for root in (ROOT, ROOT.parent)]
GLANCE_S = 5.0  # a glancing person looks at a new spot this often
RULES = {"none": "none: a still gaze writes on", "stop": "rest stop after 4 s (then a dwell to go on)",
         "hold": "hold once the picture streamed past a still gaze, taking back what it wrote (the eye-tracker's)"}


def first(paths: list[Path]) -> Path:
    found = next((p for p in paths if p.exists()), None)
    if found is None:
        raise SystemExit(f"not found: {paths[0]}")
    return found


def run(rule: str, phrases: list[str], rest_s: float, fps: float, seed: int) -> dict:
    writer = build_writer(WriterConfig(model="ppm", ppm_train=(str(first(PPM_TRAIN)),)))
    source = WriterSource(writer)
    try:
        gaze = preset("eye-tracker")
        controller = WritingController(source, ControllerConfig(
            speed_bps=gaze.speed_bps, auto_speed=False, preset=gaze.name, control_mode=False,
            rest_stop_seconds=4.0 if rule == "stop" else 0.0))
        controller.preset = replace(gaze, rest_holds=rule == "hold")
        phrases = [normalise(p, writer.alphabet) for p in phrases]
        result, person = simulate_gaze(controller, phrases, fps=fps, user=GazeUserConfig(seed=seed))
        still = glancing = 0
        glances = max(1, round(rest_s / GLANCE_S))
        for i in range(len(phrases)):  # as many rests as phrases, at the same spots for every rule
            controller.new_message()
            if not controller.running:
                controller.start()
            still += max(0, rest(controller, person, rest_s, fps, rest_spots(1, seed + i)))
            glancing += max(0, rest(controller, person, rest_s, fps, rest_spots(glances, seed + 1000 + i)))
        minutes = len(phrases) * rest_s / 60
        return {"rule": rule, **result.summary(), "rest_s": rest_s, "rests": len(phrases),
                "rest_chars": still, "rest_chars_per_min": round(still / minutes, 2),
                "glancing_chars": glancing, "glancing_chars_per_min": round(glancing / minutes, 2)}
    finally:
        source.close()


def table(results: list[dict], lines: int, rest_s: float, beside: str) -> dict:
    chars = max(r["characters"] for r in results)
    rows = [{"key": r["rule"], "rule": RULES[r["rule"]], "cpm": r["chars_per_minute"], "bpc": r["bits_per_char"],
             "failed": r["failed"], "rest": r["rest_chars_per_min"], "glancing": r["glancing_chars_per_min"]}
            for r in results]
    return {
        "id": "gaze-intent",
        "columns": [{"key": "rule", "label": f"rule for a resting gaze (first {lines} MacKenzie phrases, "
                                             f"{chars:,} characters)"},
                    {"key": "cpm", "label": "chars/min writing", "align": "right", "format": ".2f"},
                    {"key": "bpc", "label": "bits/char zoomed", "align": "right", "format": ".3f"},
                    {"key": "failed", "label": "phrases failed", "align": "right"},
                    {"key": "rest", "label": "chars/min written at rest, gaze still", "align": "right",
                     "format": ".2f"},
                    {"key": "glancing", "label": "at rest, glancing every 5 s", "align": "right", "format": ".2f"}],
        "rows": rows,
        "commands": [f"python bench/gaze_intent.py --lines {lines} --rest {rest_s:g}"],
        "date": datetime.date.today().isoformat(),
        "machine": platform.node() or "this machine",
        "beside": beside,
        "model": "Dasher's PPM on Dasher's English text",
        "source": "python bench/gaze_intent.py --results bench/results/gaze_intent.json",
        "note": f"Simulated gaze (zoom/gaze_user.py): tracker noise sd 25 units (about 6 px of a 1000 px view), "
                f"saccades 0.2 s, the eye-tracker preset's smoothing, 30 fps; a rest of {rest_s:g} s after each "
                "phrase, without stopping.",
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lines", type=int, default=20, help="the first N phrases")
    p.add_argument("--rest", type=float, default=60.0, help="seconds of rest after each phrase")
    p.add_argument("--fps", type=float, default=30.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rules", nargs="+", default=list(RULES), choices=list(RULES))
    p.add_argument("--results", type=Path, default=None, help="also write the table to this results file")
    p.add_argument("--beside", default="a niced one-thread training run", help="what ran beside it, for the table")
    args = p.parse_args(argv)
    phrases = [line.strip() for line in first(PHRASES).read_text(encoding="utf-8").splitlines() if line.strip()]
    phrases = phrases[: args.lines]
    results = []
    for rule in args.rules:
        results.append(run(rule, phrases, args.rest, args.fps, args.seed))
        r = results[-1]
        print(f"{rule}: {r['chars_per_minute']} chars/min, {r['failed']} failed, at rest {r['rest_chars']} "
              f"(glancing {r['glancing_chars']})", file=sys.stderr, flush=True)
    print(json.dumps({"lines": args.lines, "rest_s": args.rest, "runs": results}, indent=1))
    if args.results is not None:
        area = {"area": "gaze-intent", "tables": [table(results, args.lines, args.rest, args.beside)]}
        args.results.write_text(json.dumps(area, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
