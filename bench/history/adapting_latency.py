"""Latency of the path the app serves while it adapts: a Writer built as the app builds one (RNN, adapting),
asked for 64 fresh contexts at a time while another thread commits text, so that adaptation updates and weight
swaps happen during the measurement. Prints JSON, one entry per backend.

    python bench/history/adapting_latency.py [--model-dir DIR] [--backends torch auto] [--repeats 400] [--threads 2]

``auto`` is what the app picks: CUDA when there is a GPU, else onnxruntime on the fused int8 step when the
model folder has it (``dasher-rnn export-onnx --int8``), else torch. The committing thread writes 20 characters (one update) every
``--commit-every`` seconds, faster than anyone writes with Dasher, so most measured requests share the machine
with an update or a swap. Each request's 64 contexts are new children of a few parents, as when boxes open.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import threading
import time

import numpy as np

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.paths import DEFAULT_MODEL_DIR

TEXT = ("I would like a cup of tea please. Can you call my sister and tell her I am home? "
        "The doctor is coming at three, so please open the door. Thank you for the flowers. ")


def measure(model_dir: str, backend: str, repeats: int, nodes: int, threads: int | None, commit_every: float) -> dict:
    writer = build_writer(WriterConfig(model="rnn", model_dir=model_dir, backend=backend, threads=threads,
                                       read_only=True))
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.wait(commit_every):
            writer.commit("".join(TEXT[(i + k) % len(TEXT)] for k in range(20)))
            i += 20

    rng = np.random.default_rng(0)
    alphabet = writer.alphabet
    times = []
    # an RNN Writer's commit only enqueues for the writing session, so a second thread may call it (not so the hybrid)
    committer = threading.Thread(target=write, daemon=True)
    try:
        parents = [writer.root(TEXT[:k]) for k in (5, 18, 33, 47)]
        writer.request(parents).result()
        committer.start()
        for i in range(repeats + 10):
            contexts, seen = [], set()
            while len(contexts) < nodes:
                p, s = int(rng.integers(len(parents))), int(rng.integers(len(alphabet)))
                if (p, s) not in seen:
                    seen.add((p, s))
                    contexts.append(writer.child(parents[p], s))
            start = time.perf_counter()
            writer.request(contexts).result()
            if i >= 10:  # warm-up excluded
                times.append(time.perf_counter() - start)
            for context in contexts:
                writer.release(context)
        stop.set()
        committer.join()
        writer.flush()
        writer.request(parents).result()  # queued behind the last swap
        status = writer.status()
    finally:
        stop.set()
        writer.close(save=False)
    t = np.array(times) * 1e3
    return {"backend": status.backend, "nodes": nodes, "requests": len(t),
            "p50_ms": round(float(np.median(t)), 2), "p99_ms": round(float(np.percentile(t, 99)), 2),
            "max_ms": round(float(t.max()), 2), "updates_during": status.updates,
            "weight_swaps_during": status.weights_version}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    parser.add_argument("--backends", nargs="+", default=["torch", "auto"])
    parser.add_argument("--repeats", type=int, default=400)
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--threads", type=int, default=None, help="predictor threads (default: the library's)")
    parser.add_argument("--commit-every", type=float, default=0.25, help="seconds between 20-character commits")
    args = parser.parse_args()
    report = {"machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
              "model_dir": args.model_dir, "threads": args.threads, "commit_every_s": args.commit_every,
              "backends": [measure(args.model_dir, b, args.repeats, args.nodes, args.threads, args.commit_every)
                           for b in args.backends]}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
