"""`dasher-rnn adapt` on a history with its defaults: the wall time of each phase and the held-out gain, and the
phase that changed (PPM and the mixing weights learning the history) timed old and new back to back.

    python bench/adapt_bench.py [HISTORY] [--threads 2] [--old-messages N] [--old-epochs 6]
                                [--results bench/results/adapt.json --beside TEXT] [--from-output RUN.json]

1. The adapt command itself (``dasher_rnn.cli.main``, default settings, a fresh profile in a temporary folder), its
   phases timed from inside: reading, the engine's speed on a sample (the plan's estimate), scoring the corpus with
   the starting weights, training (the epochs with their held-out checks), PPM and the mixing weights
   (``Writer.learn_history``), and the whole; the held-out bits/char before and after, and the plan's estimate.
2. ``learn_history`` as it was (the RNN asked per message through the context tree, as ``commit`` asks) and as it
   is (batched passes), back to back on the same history, each on a fresh Writer built as ``adapt`` builds it (the
   adapted profile, read only): seconds, and the largest difference in the mixing weights and whether PPM's counts
   are equal. ``--old-messages`` times the old path on the first N messages only (both paths on those N).
3. The old defaults' RNN phase (``--old-epochs`` 6, patience 1) is not re-run: it is given as that many times this
   run's epoch, labelled as extrapolated.

Prints one JSON object; ``--results`` also writes the tables for bench/report.py (docs/BENCHMARKS.md), ``--beside``
saying what ran beside it (check ``uptime`` and ``ps``; the load average and the busiest processes before and after are
recorded either way); ``--from-output`` writes them from a run's printed JSON without running again.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_HISTORY = ROOT.parent / "shared" / "corpora" / "adapt" / "sms_user_history.txt"


def others() -> list[str]:
    """The busiest processes on the machine, for the record of what ran beside."""
    out = subprocess.run(["ps", "-eo", "pcpu,args", "--sort=-pcpu"], capture_output=True, text=True).stdout
    return [" ".join(line.split())[:100] for line in out.splitlines()[1:6]]


def run_adapt(history: Path, profiles: Path, threads: int) -> dict:
    """The adapt command with its defaults, each phase timed."""
    from dasher_rnn.adapt import corpus_adapt
    from dasher_rnn.adapt.writer import Writer
    from dasher_rnn.cli import main

    times: dict[str, float] = {}
    cpu: dict[str, float] = {}  # this process's CPU seconds (all its threads): what the phase costs on an idle machine
    marks: dict[str, float] = {}
    passes: list[tuple[int, float]] = []
    estimate: dict[str, float] = {}
    real_bits, real_rate, real_learn = corpus_adapt.message_bits, corpus_adapt._scoring_rate, Writer.learn_history
    real_describe = corpus_adapt.Plan.describe

    def message_bits(engine, messages, *args, **kwargs):
        t, c = time.perf_counter(), time.process_time()
        try:
            return real_bits(engine, messages, *args, **kwargs)
        finally:
            passes.append((len(messages), time.perf_counter() - t, time.process_time() - c))

    def scoring_rate(engine, messages, *args, **kwargs):
        marks["plan"], marks["plan_cpu"] = time.perf_counter(), time.process_time()
        try:
            return real_rate(engine, messages, *args, **kwargs)
        finally:
            times["speed_sample_s"] = time.perf_counter() - marks["plan"]
            cpu["speed_sample_s"] = time.process_time() - marks["plan_cpu"]

    def describe(plan):
        estimate.update(total_s=plan.total_s, scoring_s=plan.scoring_s, epoch_s=plan.epoch_s, history_s=plan.history_s)
        return real_describe(plan)

    def learn_history(self, messages, *args, **kwargs):
        t, c = time.perf_counter(), time.process_time()
        try:
            return real_learn(self, messages, *args, **kwargs)
        finally:
            times["ppm_and_mixing_weights_s"] = time.perf_counter() - t
            cpu["ppm_and_mixing_weights_s"] = time.process_time() - c

    corpus_adapt.message_bits, corpus_adapt._scoring_rate = message_bits, scoring_rate
    corpus_adapt.Plan.describe, Writer.learn_history = describe, learn_history
    out = io.StringIO()
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        with contextlib.redirect_stdout(out):
            code = main(["adapt", str(history), "--profile", "bench", "--profiles-dir", str(profiles), "--json",
                         "--no-progress", "--threads", str(threads)])
    finally:
        corpus_adapt.message_bits, corpus_adapt._scoring_rate = real_bits, real_rate
        corpus_adapt.Plan.describe, Writer.learn_history = real_describe, real_learn
    total, total_cpu = time.perf_counter() - t0, time.process_time() - c0
    if code != 0:
        raise SystemExit(f"adapt exited with {code}")
    report = json.loads(out.getvalue())
    # the pass over every message (before it: the plan's sample; after it: the held-out checks)
    scoring, scoring_cpu = next((wall, c) for n, wall, c in passes if n == report["messages"])
    checks = [(wall, c) for n, wall, c in passes if n == report["held_out_messages"]]
    times["reading_and_loading_s"], cpu["reading_and_loading_s"] = marks["plan"] - t0, marks["plan_cpu"] - c0
    times["scoring_s"], cpu["scoring_s"] = scoring, scoring_cpu
    times["training_s"] = report["adapt_seconds"]  # the epochs, each with its held-out check
    times["total_s"], cpu["total_s"] = total, total_cpu
    times["other_s"] = total - sum(v for k, v in times.items() if k != "total_s")
    # the epochs' CPU: the rest of the run, less the checks' own share counted apart (saving and the writer's build are
    # in it: a second or two)
    cpu["training_s"] = total_cpu - sum(v for k, v in cpu.items() if k != "total_s")
    cpu["held_out_checks_s"] = sum(c for _, c in checks)
    before, after = report["held_out_bpc_before"]["overall"], report["held_out_bpc_after"]["overall"]
    return {"seconds": {k: round(v, 1) for k, v in times.items()},
            "cpu_seconds": {k: round(v, 1) for k, v in cpu.items()}, "estimate_s": {k: round(v) for k, v in estimate.items()},
            "held_out_bpc_before": before, "held_out_bpc_after": after, "gain": round((before - after) / before, 4),
            "epochs": len(report["history"]), "history": report["history"], "messages": report["messages"],
            "train_chars": report["train_chars"], "training_chars_per_second": report["training_chars_per_second"],
            "ppm_characters_learned": report["ppm"]["characters_learned"]}


def compare_learn_history(history: Path, profiles: Path, threads: int, old_messages: int | None) -> dict:
    """Old (per message, through the context tree) and new (batched) ``learn_history``, back to back."""
    import numpy as np

    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.adapt.corpus_adapt import CorpusAdaptConfig, split_messages
    from dasher_rnn.adapt.user_corpus import read_user_corpus

    documents, _ = read_user_corpus([history], progress=False)
    config = WriterConfig(model="hybrid", profile="bench", profiles_dir=profiles, backend="torch", adapt_engine="torch",
                          threads=threads, read_only=True)
    writer = build_writer(config)
    messages, _ = split_messages(documents, writer.alphabet, CorpusAdaptConfig().max_unknown)
    texts = [m.text for m in messages][:old_messages]

    def old(w) -> None:  # learn_history before: each message's characters asked for as ``commit`` asks for them
        w._adapting = True
        for text in texts:
            w.mixer.new_message()
            w._mixer_learn([w.alphabet.index(ch) for ch in text if ch in w.alphabet])
        w.mixer.new_message()

    seconds = {}
    try:
        t, c = time.perf_counter(), time.process_time()
        old(writer)
        seconds["old"], seconds["old_cpu"] = time.perf_counter() - t, time.process_time() - c
        batched = build_writer(config)
        try:
            t, c = time.perf_counter(), time.process_time()
            batched.learn_history(texts)
            seconds["new"], seconds["new_cpu"] = time.perf_counter() - t, time.process_time() - c
            a, b = writer.mixer.ppm.snapshot(), batched.mixer.ppm.snapshot()
            same_counts = bool(np.array_equal(a["keys"], b["keys"]) and np.array_equal(a["counts"], b["counts"]))
            weights_diff = float(np.abs(writer.mixer.gate.w - batched.mixer.gate.w).max())
        finally:
            batched.close(save=False)
    finally:
        writer.close(save=False)
    return {"messages": len(texts), "characters": sum(len(t) for t in texts), "old_s": round(seconds["old"], 1),
            "new_s": round(seconds["new"], 1), "old_cpu_s": round(seconds["old_cpu"], 1),
            "new_cpu_s": round(seconds["new_cpu"], 1), "speedup": round(seconds["old"] / seconds["new"], 1),
            "ppm_counts_equal": same_counts, "mixing_weights_max_difference": weights_diff}


def tables(result: dict, beside: str, machine: str, command: str) -> list[dict]:
    """The ``adapt-phases`` table for bench/results/adapt.json (bench/report.py renders it into docs/BENCHMARKS.md)."""
    a, old = result["adapt"], result["learn_history"]
    s, c = a["seconds"], a["cpu_seconds"]
    scale = a["ppm_characters_learned"] / old["characters"]  # the old path timed on part of the history, or all
    epochs, old_epochs = max(1, a["epochs"]), result["old_epochs"]
    before = {"read": (s["reading_and_loading_s"], c["reading_and_loading_s"]), "sample": (None, None),
              "score": (s["scoring_s"], c["scoring_s"]),
              "train": (old_epochs * s["training_s"] / epochs, old_epochs * c["training_s"] / epochs),
              "ppm": (old["old_s"] * scale, old["old_cpu_s"] * scale)}
    after = {"read": (s["reading_and_loading_s"], c["reading_and_loading_s"]),
             "sample": (s["speed_sample_s"], c["speed_sample_s"]), "score": (s["scoring_s"], c["scoring_s"]),
             "train": (s["training_s"], c["training_s"]),
             "ppm": (s["ppm_and_mixing_weights_s"], c["ppm_and_mixing_weights_s"])}
    phases = {"read": "reading the history, loading the model",
              "sample": "the engine's speed on a sample (the plan's estimate)",
              "score": "scoring every message with the starting weights",
              "train": f"training the RNN: {old_epochs} epochs before (extrapolated from one), {a['epochs']} now; a "
                       "held-out check after each",
              "ppm": "PPM and the mixing weights learning the history"}
    rows = [{"key": key, "phase": phase, "before": before[key][0], "after": after[key][0],
             "before_cpu": before[key][1], "after_cpu": after[key][1]} for key, phase in phases.items()]
    rows.append({"key": "total", "phase": "the whole command",
                 "before": sum(v[0] or 0 for v in before.values()), "after": s["total_s"],
                 "before_cpu": sum(v[1] or 0 for v in before.values()), "after_cpu": c["total_s"]})
    timing = {
        "id": "adapt-phases",
        "columns": [{"key": "phase", "label": "phase of `adapt` on the SMS history"},
                    {"key": "before", "label": "before: wall s", "align": "right", "format": ",.0f"},
                    {"key": "after", "label": "after: wall s", "align": "right", "format": ",.0f"},
                    {"key": "before_cpu", "label": "before: CPU s", "align": "right", "format": ",.0f"},
                    {"key": "after_cpu", "label": "after: CPU s", "align": "right", "format": ",.0f"}],
        "rows": rows,
        "commands": [command],
        "date": time.strftime("%Y-%m-%d"), "machine": machine, "beside": beside,
        "model": "english-lstm (1x768 LSTM), torch engine on the CPU, 2 threads",
        "source": "Written by `python bench/adapt_bench.py --results bench/results/adapt.json`.",
        "note": (f"After: held-out {a['held_out_bpc_before']:.4f} -> {a['held_out_bpc_after']:.4f} bits/char "
                 f"({a['gain']:.1%} better; the plan said about {a['estimate_s']['total_s'] / 60:.0f} min). Before: "
                 f"{old_epochs} epochs extrapolated from this run's one; the old PPM path (the RNN asked per message) "
                 f"timed right after it on {old['messages']:,} messages: {old['old_s']:,.0f} s against "
                 f"{old['new_s']:,.0f} s batched back to back ({old['speedup']}x), PPM's counts "
                 f"{'equal' if old['ppm_counts_equal'] else 'NOT equal'}, the mixing weights within "
                 f"{old['mixing_weights_max_difference']:.0e}"
                 + ("" if scale == 1 else f"; scaled by {scale:.2f} to the whole history") + ". CPU s: all the "
                 "process's threads."),
    }
    return [timing]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("history", nargs="?", type=Path, default=DEFAULT_HISTORY)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--old-messages", type=int, default=None,
                        help="time the old learn_history path on the first N messages (default: all)")
    parser.add_argument("--old-epochs", type=int, default=6, help="the old default number of epochs")
    parser.add_argument("--results", type=Path, default=None, help="also write the adapt tables to this results file")
    parser.add_argument("--beside", default="not recorded", help="what ran beside it, for the tables")
    parser.add_argument("--machine", default="an AMD EPYC VM (2 cores, no GPU)", help="the machine, for the tables")
    parser.add_argument("--from-output", type=Path, default=None,
                        help="write --results from a run's printed JSON instead of running (to add --beside after it)")
    args = parser.parse_args()
    if args.from_output is not None:
        result = json.loads(args.from_output.read_text())
    else:
        load_before, busy_before = [round(v, 2) for v in os.getloadavg()], others()
        with tempfile.TemporaryDirectory() as tmp:
            adapt = run_adapt(args.history, Path(tmp), args.threads)
            learn = compare_learn_history(args.history, Path(tmp), args.threads, args.old_messages)
        result = {"history": str(args.history), "threads": args.threads, "adapt": adapt, "learn_history": learn,
                  "old_epochs": args.old_epochs, "load_average_before": load_before, "busiest_before": busy_before,
                  "load_average_after": [round(v, 2) for v in os.getloadavg()], "busiest_after": others()}
        print(json.dumps(result, indent=1))
    if args.results is not None:
        command = "python bench/adapt_bench.py" + (f" --old-messages {args.old_messages}" if args.old_messages else "")
        area = {"area": "adapt", "tables": tables(result, args.beside, args.machine, command)}
        args.results.write_text(json.dumps(area, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
