"""The BciPy adapter's cost per call as the evidence grows, and of evidence it has not seen. Prints JSON.

    python bench/bcipy_bench.py [--model-dir models/english-lstm] [--lengths 100 400 1600] [--window 20]
                                [--fresh-lengths 100 1600] [--repeats 15]

Fresh evidence (``fresh_ms``): at each of ``--fresh-lengths``, evidence the adapter has not seen (BciPy's
copy-phrase task starting from pre-filled text: each repeat starts the fixed text at another place, so nothing of
it was read before), then a backspace after it; the median of ``--repeats`` of each.

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


def fresh_ms(lm: DasherRNNLanguageModel, lengths: list[int], repeats: int) -> dict[str, dict[str, float]]:
    """The median milliseconds of a call with evidence the adapter has not seen, and of a backspace right after it."""
    lm.set_symbol_set(SYMBOL_SET)
    long_text = evidence_symbols(max(lengths) + repeats * 7 + 1)
    out: dict[str, dict[str, float]] = {"fresh": {}, "backspace_after": {}}
    for n in lengths:
        fresh, back = [], []
        for r in range(repeats):
            evidence = long_text[r * 7 + 1: r * 7 + 1 + n]  # another start each time: read afresh
            start = time.perf_counter()
            lm.predict_character(evidence)
            fresh.append(time.perf_counter() - start)
            evidence = evidence + ["<"]
            start = time.perf_counter()
            lm.predict_character(evidence)
            back.append(time.perf_counter() - start)
        out["fresh"][str(n)] = round(statistics.median(fresh) * 1e3, 3)
        out["backspace_after"][str(n)] = round(statistics.median(back) * 1e3, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    parser.add_argument("--lengths", type=int, nargs="+", default=[100, 400, 1600])
    parser.add_argument("--window", type=int, default=20, help="calls timed at each length")
    parser.add_argument("--fresh-lengths", type=int, nargs="+", default=[100, 1600])
    parser.add_argument("--repeats", type=int, default=15, help="fresh reads timed at each length")
    args = parser.parse_args()
    if not Path(args.model_dir).is_dir():
        raise SystemExit(f"no model at {args.model_dir}")
    results = {}
    with DasherRNNLanguageModel.in_process(args.model_dir) as lm:
        per_call_ms(lm, [50], 10)  # warm-up
        results["in_process"] = per_call_ms(lm, args.lengths, args.window)
        fresh = {"in_process": fresh_ms(lm, args.fresh_lengths, args.repeats)}
    port = free_port()
    proc, url = launch([sys.executable, "-m", "dasher_rnn", "serve", "--port", str(port), "--model-dir", args.model_dir,
                        "--threads", "1"], port)
    try:
        with DasherRNNLanguageModel.from_server(url) as lm:
            per_call_ms(lm, [50], 10)
            results["http"] = per_call_ms(lm, args.lengths, args.window)
            fresh["http"] = fresh_ms(lm, args.fresh_lengths, args.repeats)
    finally:
        proc.terminate()
        proc.wait(60)
    longest, shortest = str(max(args.lengths)), str(min(args.lengths))
    print(json.dumps({
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                    "python": platform.python_version(), "load_average_after": [round(x, 2) for x in os.getloadavg()]},
        "model_dir": args.model_dir, "window": args.window, "per_call_ms": results,
        "repeats": args.repeats, "fresh_ms": fresh,
        "growth": {name: round(ms[longest] / ms[shortest], 2) for name, ms in results.items()},
    }, indent=1))


if __name__ == "__main__":
    main()
