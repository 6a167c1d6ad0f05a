"""Soak: a simulated day of writing through the app's own Writer, with memory over time. Prints JSON lines, then
a summary.

    python bench/history/soak_bench.py [--phrases 3000] [--chunk 150] [--model hybrid] [--driver writer|zoom]

Phrases from the user-history and eval files are written one after another through a Writer built as the app
builds it (the shipped model, adapting, PPM learning, a profile saved at every chunk as the app saves on
closing). ``--driver writer`` (default) does what the zoom does to the Writer for each phrase: contexts from a
message start, one batched request for every character's distribution, the characters committed, every fifth
phrase's last word deleted and written again (a rollback), then a new message. ``--driver zoom`` runs the
simulated user (``zoom/simulate.py``) with the real zoom model, about 100 times slower. After every chunk it
prints the process's resident memory, the characters written and the Writer's status. The summary compares
the growth of the second half with the first: a leak keeps growing, a working set levels off.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from pathlib import Path

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.lm.messages import read_messages
from dasher_rnn.zoom.boxes import ZoomSettings
from dasher_rnn.zoom.model import ZoomModel
from dasher_rnn.zoom.simulate import simulate
from dasher_rnn.zoom.sources import WriterSource

CORPORA = Path(__file__).resolve().parents[3] / "shared" / "corpora"
SOURCES = ["adapt/sms_user_history.txt", "adapt/aac_user_history.txt", "eval/aac_imagined_dev.txt",
           "eval/mackenzie_phrases.txt"]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def write(writer, phrase: str, retype: bool) -> None:
    """What the zoom does to the Writer for one phrase."""
    contexts = [writer.root("")]
    for ch in phrase[:-1]:
        contexts.append(writer.child(contexts[-1], ch))
    writer.request(contexts).result()
    for ch, context in zip(phrase, contexts, strict=True):
        writer.commit_symbol(writer.alphabet.index(ch), context)
    if retype and " " in phrase:
        last = phrase[phrase.rindex(" ") + 1 :]
        writer.delete(len(last))
        writer.commit(last)
    writer.release(contexts[0])
    writer.new_message()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--phrases", type=int, default=3000, help="phrases to write in all")
    parser.add_argument("--chunk", type=int, default=150, help="phrases between measurements (and profile saves)")
    parser.add_argument("--driver", default="writer", choices=["writer", "zoom"])
    parser.add_argument("--model", default="hybrid", help="rnn, ppm, hybrid or uniform")
    parser.add_argument("--speed", type=float, default=2.5, help="the simulated user's speed, bits/s")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as profiles:
        writer = build_writer(WriterConfig(model=args.model, profile="soak", profiles_dir=profiles, threads=args.threads))
        pool = [line for name in SOURCES for line in read_messages(CORPORA / name)
                if 3 <= len(line) <= 80 and all(ch in writer.alphabet for ch in line)]
        phrases = [pool[i % len(pool)] for i in range(args.phrases)]
        source = WriterSource(writer)
        zoom = ZoomModel(source, ZoomSettings(speed_bps=args.speed))
        written = failed = 0
        seconds = 0.0
        start = time.perf_counter()
        rows.append({"phrases": 0, "rss_mb": round(rss_mb(), 1)})
        for i in range(0, len(phrases), args.chunk):
            chunk = phrases[i : i + args.chunk]
            if args.driver == "zoom":
                result = simulate(zoom, chunk, max_seconds=120.0).summary()
                written, failed, seconds = written + result["characters"], failed + result["failed"], seconds + result["seconds"]
            else:
                for n, phrase in enumerate(chunk):
                    write(writer, phrase, retype=(i + n) % 5 == 0)
                    written += len(phrase)
            writer.flush(None)  # the driver writes faster than anyone: let the adaptation catch up before measuring
            writer.save()
            gc.collect()
            status = writer.status()
            hours = round(seconds / 3600, 2) if args.driver == "zoom" else None
            row = {"phrases": i + len(chunk), "characters": written, "failed": failed, "simulated_hours": hours,
                   "wall_s": round(time.perf_counter() - start),
                   "rss_mb": round(rss_mb(), 1), "updates": status.updates, "rollbacks": status.rollbacks,
                   "guard_events": status.guard_events,
                   "ppm_contexts": writer.mixer.ppm.num_contexts if writer.mixer is not None else None}
            rows.append(row)
            print(json.dumps(row), flush=True)
        source.close()
    half = len(rows) // 2
    first, second = rows[half]["rss_mb"] - rows[1]["rss_mb"], rows[-1]["rss_mb"] - rows[half]["rss_mb"]
    print(json.dumps({"model": args.model, "phrases": args.phrases, "characters": written, "failed": failed,
                      "simulated_hours": rows[-1]["simulated_hours"], "rss_start_mb": rows[0]["rss_mb"],
                      "rss_after_first_chunk_mb": rows[1]["rss_mb"], "rss_end_mb": rows[-1]["rss_mb"],
                      "growth_first_half_mb": round(first, 1), "growth_second_half_mb": round(second, 1)}, indent=1))


if __name__ == "__main__":
    main()
