"""Predictor service speed: latency and nodes/s per batch size and backend, batched vs one-at-a-time,
and memory of a 3000-node tree. Prints JSON.

    python bench/predictor_bench.py [--model-dir models/english-lstm] [--repeats 200]

Each measurement asks the service for the distributions of N fresh nodes (children not yet
expanded), as the interface does when boxes open, and times request -> result.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import tracemalloc

import numpy as np

from dasher_rnn.paths import DEFAULT_MODEL_DIR
from dasher_rnn.predictor import PredictorService

BATCHES = (1, 8, 32, 64, 256)


def fresh_nodes(svc: PredictorService, parents: list, count: int, rng: np.random.Generator) -> list:
    """``count`` unexpanded children spread over ``parents``."""
    nodes = []
    while len(nodes) < count:
        parent = parents[int(rng.integers(len(parents)))]
        symbol = int(rng.integers(len(svc.alphabet)))
        child = svc.child(parent, symbol)
        if child.log_probs is None and child not in nodes:
            nodes.append(child)
    return nodes


def measure(svc: PredictorService, batch: int, repeats: int, rng: np.random.Generator) -> dict:
    root = svc.root("Hello, how are you")
    parents = [root] + [svc.child(root, s) for s in " ,.!?eai"]
    svc.distributions(parents)
    times = []
    for i in range(repeats + 5):
        nodes = fresh_nodes(svc, parents, batch, rng)
        start = time.perf_counter()
        svc.distributions(nodes)
        if i >= 5:  # warm-up excluded
            times.append(time.perf_counter() - start)
        for n in nodes:
            svc.release(n)
    svc.release(root)
    t = np.array(times)
    return {"batch": batch, "p50_ms": round(float(np.median(t)) * 1e3, 3),
            "p99_ms": round(float(np.percentile(t, 99)) * 1e3, 3),
            "nodes_per_s": round(batch / float(np.median(t)))}


def tree_memory(model_dir: str, backend: str, nodes: int = 3000) -> dict:
    tracemalloc.start()
    svc = PredictorService.from_dir(model_dir, backend=backend, budget=nodes)
    base, _ = tracemalloc.get_traced_memory()
    root = svc.root("")
    frontier, made = [root], 1
    rng = np.random.default_rng(0)
    while made < nodes:
        parent = frontier[int(rng.integers(len(frontier)))]
        kids = [svc.child(parent, s) for s in range(min(len(svc.alphabet), nodes - made))]
        svc.distributions(kids)
        frontier.extend(kids)
        made += len(kids)
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    pool = svc.tree.h.nbytes + svc.tree.c.nbytes
    svc.close()
    return {"nodes": made, "cached": svc.tree.cached_nodes, "state_pool_mb": round(pool / 2**20, 2),
            "tree_total_mb": round((current - base) / 2**20, 2),
            "bytes_per_node": round((current - base) / made)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    parser.add_argument("--backends", nargs="+", default=None, help="default: torch, onnx, and cuda when present")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    backends = args.backends
    if backends is None:
        import torch

        backends = ["torch", "onnx"] + (["cuda"] if torch.cuda.is_available() else [])
    rng = np.random.default_rng(0)
    report = {"machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
              "model_dir": args.model_dir, "backends": {}}
    for backend in backends:
        with PredictorService.from_dir(args.model_dir, backend=backend, threads=args.threads) as svc:
            rows = [measure(svc, b, args.repeats, rng) for b in BATCHES]
        single = rows[0]["nodes_per_s"]
        report["backends"][backend] = {
            "batches": rows,
            "batched_speedup_vs_single": {str(r["batch"]): round(r["nodes_per_s"] / single, 1) for r in rows[1:]},
            "tree_memory": tree_memory(args.model_dir, backend),
        }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
