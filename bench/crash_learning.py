"""Crashes while learning: a Writer built as the app builds it learns text and is SIGKILLed at random moments; after
each kill the profile must load, whole, and the learning lost is measured. Prints JSON.

    python bench/crash_learning.py [--kills 20] [--interval 30] [--rate 10] [--min-run 2] [--max-run 90]
                                   [--model-dir DIR] [--no-autosave] [--seed 0]

Each run starts a writer process on the same profile (it goes on from what the profile holds, as the app does at
each start). The writer commits one character at a time at ``--rate`` characters a second with no new message
(the worst case: only the interval saves) and prints, after each, how many characters the profile has learned in
all and when (the system's monotonic clock, which both processes share). The profile is saved in the background
every ``--interval`` seconds (the app's ``AUTOSAVE_S``); ``--no-autosave`` builds the Writer as before background
saves existed, saving only when closed. After the kill the profile is loaded as the app loads it (strictly: any
unusable part is an error) and compared with what the writer had printed:

- ``lost_chars``: characters committed that the profile does not hold;
- ``lost_s``: how old the learning on disk was at the kill (from the commit of the first character it lacks, or of
  the run's first character when it holds nothing of this run); at most the interval plus the time a save takes.

The run is bounded: ``--kills`` runs of at most ``--max-run`` seconds each, plus the writer's start.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WRITER = """
import sys, time
from dasher_rnn.adapt.compose import WriterConfig, build_writer
model_dir, profiles, interval = sys.argv[1], sys.argv[2], float(sys.argv[3])
rate = float(sys.argv[4])
w = build_writer(WriterConfig(model="hybrid", model_dir=model_dir or None, profile="crash", profiles_dir=profiles,
                              autosave_s=interval if interval > 0 else None))
learned = w.status().characters_adapted
print("start", learned, w.status().notice or "", flush=True)
text = "the quick brown fox jumps over the lazy dog while grandma zofia brings kefir on thursday "
i = 0
next_at = time.monotonic()
while True:
    w.commit_symbol(w.alphabet.index(text[i % len(text)]))
    i += 1
    learned += 1
    print(learned, time.monotonic(), flush=True)
    next_at += 1.0 / rate
    time.sleep(max(0.0, next_at - time.monotonic()))
"""


def run_once(args: argparse.Namespace, profiles: Path, rng: random.Random) -> dict:
    from dasher_rnn.adapt.profile_files import ProfileError
    from dasher_rnn.adapt.profiles import ProfileStore

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    interval = 0.0 if args.no_autosave else args.interval
    proc = subprocess.Popen([sys.executable, "-c", WRITER, args.model_dir or "", str(profiles), str(interval),
                             str(args.rate)], stdout=subprocess.PIPE, env=env, text=True)
    first = proc.stdout.readline().split(maxsplit=2)
    if not first or first[0] != "start":
        proc.kill()
        raise RuntimeError(f"the writer did not start: {first}")
    start, start_notice = int(first[1]), (first[2].strip() if len(first) > 2 else "")
    time.sleep(rng.uniform(args.min_run, args.max_run))
    proc.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    rest = proc.stdout.read()  # whatever it printed before it died; a line cut by the kill has no newline
    proc.wait()
    proc.stdout.close()
    commits = [(int(n), float(t)) for n, t in (line.split() for line in rest.split("\n")[:-1] if line.strip())]
    try:
        loaded = ProfileStore(profiles).load("crash")  # strict: any unusable part is an error
        kept, error = (loaded.characters_adapted if loaded is not None else 0), None
    except ProfileError as exc:
        kept, error = 0, str(exc)
    committed = commits[-1][0] if commits else start
    after = [t for n, t in commits if n > max(kept, start)]  # commits the profile lacks
    return {"ran_s": round(killed_at - commits[0][1], 2) if commits else 0.0, "committed": committed - start,
            "kept": kept - start, "lost_chars": committed - max(kept, start),
            "lost_s": round(killed_at - after[0], 2) if after else 0.0,
            "loads": error is None, "error": error, "start_notice": start_notice or None}


def main() -> None:
    from dasher_rnn.adapt.writer import AUTOSAVE_S

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--interval", type=float, default=AUTOSAVE_S, help="background save interval (s)")
    parser.add_argument("--rate", type=float, default=10.0, help="characters committed a second")
    parser.add_argument("--min-run", type=float, default=2.0, help="shortest run before the kill (s)")
    parser.add_argument("--max-run", type=float, default=90.0, help="longest run before the kill (s)")
    parser.add_argument("--model-dir", default=None, help="the RNN (default: the shipped one)")
    parser.add_argument("--no-autosave", action="store_true", help="as before: saved only when closed")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    runs = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.kills):
            runs.append(run_once(args, Path(tmp), rng))
            print(json.dumps({"kill": i + 1, **runs[-1]}), file=sys.stderr, flush=True)
        from dasher_rnn.adapt.compose import WriterConfig, build_writer

        writer = build_writer(WriterConfig(model="hybrid", model_dir=args.model_dir, profile="crash",
                                           profiles_dir=tmp))  # as the app opens it after the last kill
        final_notice = writer.status().notice
        writer.close(save=False)
    lost_s = [r["lost_s"] for r in runs]
    print(json.dumps({
        "kills": args.kills, "autosave_s": None if args.no_autosave else args.interval, "rate_cps": args.rate,
        "runs_s": [args.min_run, args.max_run], "seconds": round(time.monotonic() - t0, 1),
        "profile_loads": sum(r["loads"] for r in runs), "notices_at_start": sum(bool(r["start_notice"]) for r in runs),
        "notice_after_last_kill": final_notice,
        "committed": sum(r["committed"] for r in runs), "kept": sum(max(0, r["kept"]) for r in runs),
        "kills_losing_everything_since_start": sum(r["committed"] > 0 and r["kept"] <= 0 for r in runs),
        "lost_chars_max": max(r["lost_chars"] for r in runs),
        "lost_s_median": round(statistics.median(lost_s), 2), "lost_s_max": max(lost_s),
        "lost_s_max_over_interval": None if args.no_autosave else round(max(lost_s) / args.interval, 2),
    }, indent=1))


if __name__ == "__main__":
    main()
