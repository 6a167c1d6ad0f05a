"""The predictor's work after the network's step: turning a batch of log-probabilities into Dasher's integers
(``quantise``) and into the service's ``Distribution`` objects (``make_distributions``). Prints JSON (ms).

    python bench/history/distributions_bench.py [--batch 64] [--symbols 96] [--repeats 2000]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from dasher_rnn.lm.protocol import DASHER_FLOOR, quantise
from dasher_rnn.predictor.service import make_distributions


def timed(fn, repeats: int) -> dict:
    for _ in range(100):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return {"p50_ms": round(float(np.percentile(times, 50)), 3), "p99_ms": round(float(np.percentile(times, 99)), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--symbols", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=2000)
    args = parser.parse_args()
    logits = np.random.default_rng(0).standard_normal((args.batch, args.symbols)) * 3
    log_probs = (logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))).astype(np.float32)
    rows, probs = list(log_probs), np.exp(log_probs.astype(np.float64))
    print(json.dumps({"batch": args.batch, "symbols": args.symbols,
                      "quantise": timed(lambda: quantise(probs, DASHER_FLOOR), args.repeats),
                      "make_distributions": timed(lambda: make_distributions(rows, DASHER_FLOOR), args.repeats)},
                     indent=1))


if __name__ == "__main__":
    main()
