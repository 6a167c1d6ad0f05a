"""A day of writing by gaze with real trackers' noise: does a resting eye ever change the message or act?

    python bench/gaze_day.py                                    # prints JSON (several minutes)
    python bench/gaze_day.py --lines 3 --grades poor            # a quick look
    python bench/gaze_day.py --results bench/results/gaze_day.json   # also store the table for report.py
    python bench/gaze_day.py --resting-hour                     # an hour of a resting eye at the poor grade

For each tracker grade (``zoom/gaze_noise.py``: research, consumer, poor) the simulated gaze user
(``zoom/gaze_user.py``) writes the first MacKenzie phrases through the eye-tracker preset (its dwell, smoothing,
control box and confirmations) on the app's default model (``--model``, hybrid), each as a new message; after each
phrase, before finishing the message, the person rests ``--rest`` seconds without stopping, looking in turn at the 10
spots of ``REST_SPOTS`` (the crosshair, the writing area, the control box's corner, the edges, the text panel, the
history). Counted: characters of the message changed by the rest, characters in it that were never written, control
actions that happened at rest, and the writing speed. ``--rules off`` runs the same without the gaze's intent rules
(no hold, no confirmations, dwells that re-arm), to show what they cost and what they prevent.

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
from dasher_rnn.input.dwell import DwellDetector
from dasher_rnn.input.presets import preset
from dasher_rnn.normalise import normalise
from dasher_rnn.zoom.controller import ControllerConfig, WritingController
from dasher_rnn.zoom.gaze_noise import GRADES
from dasher_rnn.zoom.gaze_user import REST_SPOTS, GazeUser, GazeUserConfig, Rest, rest, simulate_gaze
from dasher_rnn.zoom.geometry import MAX_Y
from dasher_rnn.zoom.sources import WriterSource

ROOT = Path(__file__).resolve().parents[1]
PHRASES = [root / "shared" / "corpora" / "eval" / "mackenzie_phrases.txt" for root in (ROOT, ROOT.parent)]


def first(paths: list[Path]) -> Path:
    found = next((p for p in paths if p.exists()), None)
    if found is None:
        raise SystemExit(f"not found: {paths[0]}")
    return found


def gaze_controller(source: WriterSource, rules: bool) -> WritingController:
    """The eye-tracker preset as the app sets it up; without its rules for a resting gaze when ``rules`` is off."""
    gaze = preset("eye-tracker")
    controller = WritingController(source, ControllerConfig(speed_bps=gaze.speed_bps, auto_speed=False,
                                                            preset=gaze.name, control_mode=True))
    if not rules:
        controller.preset = replace(gaze, rest_holds=False, confirm_actions=False)
        controller.zoom.config.confirm = False
        controller.rest_stop_seconds = 0.0
        controller.dwell = DwellDetector(gaze.dwell_radius * MAX_Y, gaze.dwell_seconds, controller.dwell.centre,
                                         rearm=True)
    return controller


def run(grade: str, rules: bool, model: str, phrases: list[str], rest_s: float, fps: float, seed: int) -> dict:
    writer = build_writer(WriterConfig(model=model))
    source = WriterSource(writer)
    try:
        controller = gaze_controller(source, rules)
        phrases = [normalise(p, writer.alphabet) for p in phrases]
        rests = Rest()
        holds_writing = 0
        spots = list(REST_SPOTS.values())

        def after(person: GazeUser) -> None:
            rests.add(rest(controller, person, rest_s, fps, spots))

        held = [False]
        step = controller.frame

        def counted(pointer, dt):  # holds while writing: what the rules cost the writer
            nonlocal holds_writing
            frame = step(pointer, dt)
            if controller.held and not held[0]:
                holds_writing += 1
            held[0] = controller.held
            return frame

        controller.frame = counted  # type: ignore[method-assign]
        result, _ = simulate_gaze(controller, phrases, fps=fps, max_seconds=240.0,
                                  user=GazeUserConfig(grade=grade, seed=seed), after=after)
        summary = result.summary()
        return {"grade": grade, "rules": rules, "model": model, "chars_per_minute": summary["chars_per_minute"],
                "phrases": summary["phrases"], "failed": summary["failed"], "characters": summary["characters"],
                "wrong_actions_writing": result.wrong_actions, "holds_writing": holds_writing - rests.holds,
                "rest_s": rest_s * len(phrases), "rest_changed": rests.changed, "rest_added": rests.added,
                "rest_most_changed": rests.most_changed, "rest_actions": [a.value for a in rests.actions],
                "rest_holds": rests.holds}
    finally:
        source.close()


def resting_hour(grade: str, model: str, phrase: str, seconds: float, fps: float, seed: int) -> dict:
    """One phrase written, then ``seconds`` of a resting eye looking at each spot of ``REST_SPOTS`` in turn for 6 s,
    round and round (blinks, drift, microsaccades, the tracker's noise): what changed and what was done."""
    writer = build_writer(WriterConfig(model=model))
    source = WriterSource(writer)
    try:
        controller = gaze_controller(source, True)
        spots = list(REST_SPOTS.values()) * max(1, round(seconds / (6.0 * len(REST_SPOTS))))
        rests: list[Rest] = []
        result, _ = simulate_gaze(controller, [normalise(phrase, writer.alphabet)], fps=fps, max_seconds=240.0,
                                  user=GazeUserConfig(grade=grade, seed=seed),
                                  after=lambda person: rests.append(rest(controller, person, seconds, fps, spots)))
        r = rests[0] if rests else Rest()
        return {"grade": grade, "model": model, "phrase": phrase, "written": not result.failed, "rest_s": r.seconds,
                "changed": r.changed, "added": r.added, "most_changed": r.most_changed,
                "actions": [a.value for a in r.actions], "holds": r.holds}
    finally:
        source.close()


def table(results: list[dict], lines: int, rest_s: float, model: str, beside: str) -> dict:
    rows = []
    for r in results:
        g = GRADES[r["grade"]]
        rows.append({"key": f"{r['grade']}-{'on' if r['rules'] else 'off'}",
                     "grade": f"{r['grade']} ({g.accuracy_deg:g} deg, {g.precision_deg:g} RMS, {g.rate_hz:g} Hz, "
                              f"{100 * g.loss:g}% lost)",
                     "rules": "on" if r["rules"] else "off", "cpm": r["chars_per_minute"], "failed": r["failed"],
                     "changed": r["rest_changed"], "added": r["rest_added"], "actions": len(r["rest_actions"]),
                     "transient": r["rest_most_changed"]})
    return {
        "id": "gaze-day",
        "columns": [{"key": "grade", "label": "tracker grade"},
                    {"key": "rules", "label": "intent rules"},
                    {"key": "cpm", "label": "chars/min writing", "align": "right", "format": ".2f"},
                    {"key": "failed", "label": "phrases failed", "align": "right"},
                    {"key": "changed", "label": "chars changed at rest", "align": "right"},
                    {"key": "added", "label": "chars never written", "align": "right"},
                    {"key": "actions", "label": "actions at rest", "align": "right"},
                    {"key": "transient", "label": "most changed during a rest", "align": "right"}],
        "rows": rows,
        "commands": [f"python bench/gaze_day.py --lines {lines} --rest {rest_s:g} --model {model}"],
        "date": datetime.date.today().isoformat(),
        "machine": platform.node() or "this machine",
        "beside": beside,
        "model": model,
        "source": "python bench/gaze_day.py --results bench/results/gaze_day.json",
        "note": f"The first {lines} MacKenzie phrases, each followed by a rest of {rest_s:g} s at 10 spots; simulated "
                "time at 30 fps.",
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lines", type=int, default=20, help="the first N phrases")
    p.add_argument("--rest", type=float, default=60.0, help="seconds of rest after each phrase")
    p.add_argument("--fps", type=float, default=30.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", default="hybrid", choices=["hybrid", "rnn", "ppm"])
    p.add_argument("--grades", nargs="+", default=list(GRADES), choices=list(GRADES))
    p.add_argument("--rules", nargs="+", default=["on", "off"], choices=["on", "off"])
    p.add_argument("--results", type=Path, default=None, help="also write the table to this results file")
    p.add_argument("--beside", default="nothing", help="what ran beside it, for the table")
    p.add_argument("--resting-hour", action="store_true",
                   help="instead: write the first phrase, then rest an hour (--rest-seconds) at every spot in turn, "
                        "at each of --grades (default: poor)")
    p.add_argument("--rest-seconds", type=float, default=3600.0, help="how long --resting-hour rests")
    args = p.parse_args(argv)
    phrases = [line.strip() for line in first(PHRASES).read_text(encoding="utf-8").splitlines() if line.strip()]
    if args.resting_hour:
        grades = args.grades if args.grades != list(GRADES) else ["poor"]
        runs = [resting_hour(g, args.model, phrases[0], args.rest_seconds, args.fps, args.seed) for g in grades]
        print(json.dumps({"resting_hour": runs}, indent=1))
        return 0
    phrases = phrases[: args.lines]
    results = []
    for grade in args.grades:
        for rules in args.rules:
            r = run(grade, rules == "on", args.model, phrases, args.rest, args.fps, args.seed)
            results.append(r)
            print(f"{grade} rules {rules}: {r['chars_per_minute']} chars/min, {r['failed']} failed, at rest changed "
                  f"{r['rest_changed']} (never written {r['rest_added']}), actions {r['rest_actions']}, "
                  f"holds writing {r['holds_writing']}", file=sys.stderr, flush=True)
    print(json.dumps({"lines": args.lines, "rest_s": args.rest, "runs": results}, indent=1))
    if args.results is not None:
        area = {"area": "gaze-day", "tables": [table(results, args.lines, args.rest, args.model, args.beside)]}
        args.results.write_text(json.dumps(area, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
