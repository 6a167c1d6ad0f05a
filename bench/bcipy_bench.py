"""The BciPy adapter's cost per call as the evidence grows. Prints JSON.

    python bench/bcipy_bench.py [--model-dir dasher_rnn/models/english-lstm] [--lengths 100 400 1600] [--window 20]

A speller's evidence grows one symbol a call (capitals, ``_`` for a space, from a fixed English text). Each
backend types the text from empty evidence to the longest length; the figure at a length is the median of the
``--window`` calls ending there (``predict_character`` alone: the evidence list is built before the clock
starts). Backends: in this process (``DasherRNNLanguageModel.in_process``) and over HTTP (``from_server``, a
``dasher-rnn serve`` of its own on a free loopback port, one predictor thread, as the in-process one).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from api_bench import free_port, launch

from dasher_rnn.api.bcipy import DasherRNNLanguageModel
from dasher_rnn.paths import DEFAULT_MODEL_DIR

TEXT = ("I would like a cup of tea with milk please and then I want to go outside for a walk in the garden "
        "because the sun is out today and my sister is coming to visit us this afternoon with her children ")
SYMBOL_SET = list("ABCDEFGHIJKLMNOPQRSTUVWXYZ") + ["<", "_"]


def evidence_symbols(length: int) -> list[str]:
    text = (TEXT * (length // len(TEXT) + 1))[:length]
    return ["_" if ch == " " else ch.upper() for ch in text]


def per_call_ms(lm: DasherRNNLanguageModel, lengths: list[int], window: int) -> dict[str, float]:
    """The median milliseconds of the ``window`` calls ending at each length."""
    lm.set_symbol_set(SYMBOL_SET)
    symbols = evidence_symbols(max(lengths))
    wanted = {n: [] for n in lengths}
    evidence: list[str] = []
    for i, symbol in enumerate(symbols, start=1):
        evidence.append(symbol)
        start = time.perf_counter()
        lm.predict_character(evidence)
        elapsed = time.perf_counter() - start
        for n in lengths:
            if n - window < i <= n:
                wanted[n].append(elapsed)
    return {str(n): round(statistics.median(times) * 1e3, 3) for n, times in wanted.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    parser.add_argument("--lengths", type=int, nargs="+", default=[100, 400, 1600])
    parser.add_argument("--window", type=int, default=20, help="calls timed at each length")
    args = parser.parse_args()
    if not Path(args.model_dir).is_dir():
        raise SystemExit(f"no model at {args.model_dir}")
    results = {}
    with DasherRNNLanguageModel.in_process(args.model_dir) as lm:
        per_call_ms(lm, [50], 10)  # warm-up
        results["in_process"] = per_call_ms(lm, args.lengths, args.window)
    port = free_port()
    proc, url = launch([sys.executable, "-m", "dasher_rnn", "serve", "--port", str(port), "--model-dir", args.model_dir,
                        "--threads", "1"], port)
    try:
        with DasherRNNLanguageModel.from_server(url) as lm:
            per_call_ms(lm, [50], 10)
            results["http"] = per_call_ms(lm, args.lengths, args.window)
    finally:
        proc.terminate()
        proc.wait(60)
    longest, shortest = str(max(args.lengths)), str(min(args.lengths))
    print(json.dumps({
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                    "python": platform.python_version()},
        "model_dir": args.model_dir, "window": args.window, "per_call_ms": results,
        "growth": {name: round(ms[longest] / ms[shortest], 2) for name, ms in results.items()},
    }, indent=1))


if __name__ == "__main__":
    main()
