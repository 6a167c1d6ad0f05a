"""The hybrid (adapted RNN + adaptive PPM) against each component alone, on the adaptation issue's user
streams and all eval files, scored message by message (each predicted, then learned). Prints JSON.

    python bench/history/hybrid_bench.py [--model-dir models/english-lstm] [--ppm-train FILE] [--floor 0]

PPM (Dasher's, at the hybrid's order 8) starts empty, as in the app, unless --ppm-train is given.
The two user streams are also measured after the user's history (learned online by every model,
message by message, unscored), as the corpora README pairs them.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from dasher_rnn.adapt.compose import HYBRID_PPM_ORDER, WriterConfig, build_ppm, build_writer
from dasher_rnn.evaluate import score_messages
from dasher_rnn.lm.messages import read_messages
from dasher_rnn.lm.model_io import read_checked_config
from dasher_rnn.paths import DEFAULT_MODEL_DIR

CORPORA = Path("../shared/corpora")
STREAMS = [(p.stem, p, None) for p in [CORPORA / "adapt/sms_user_future.txt", *sorted((CORPORA / "eval").glob("*.txt"))]]
STREAMS += [("sms_user_future_after_history", CORPORA / "adapt/sms_user_future.txt", CORPORA / "adapt/sms_user_history.txt"),
            ("aac_imagined_test_after_history", CORPORA / "eval/aac_imagined_test.txt", CORPORA / "adapt/aac_user_history.txt")]


def adaptive_bpc(writer, lines: list[str], history: list[str], floor: float) -> float:
    """Bits/char on ``lines`` scored message by message after ``writer`` learned ``history`` the same way."""
    try:
        score_messages(writer, history, floor=floor, adaptive=True)
        return score_messages(writer, lines, floor=floor, adaptive=True).bits_per_char
    finally:
        writer.close(save=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    parser.add_argument("--ppm-train", action="append", default=[])
    parser.add_argument("--floor", type=float, default=0.0)
    parser.add_argument("--ppm-order", type=int, default=HYBRID_PPM_ORDER)
    parser.add_argument("--only", nargs="*", help="stream names to run (default: all)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    _, alphabet = read_checked_config(Path(args.model_dir))
    ppm_base, _ = build_ppm(args.ppm_train, alphabet.name, max_order=args.ppm_order)
    results = {}
    for name, path, history_path in STREAMS:
        if args.only and name not in args.only:
            continue
        lines = read_messages(path)
        history = read_messages(history_path) if history_path else []
        start = time.perf_counter()
        writers = {kind: build_writer(WriterConfig(model=kind, model_dir=args.model_dir, threads=args.threads),
                                      trained_ppm=ppm_base) for kind in ("rnn", "ppm", "hybrid")}
        gate = writers["hybrid"].mixer.gate
        rnn_bpc, ppm_bpc, hybrid_bpc = (adaptive_bpc(writers[k], lines, history, args.floor) for k in ("rnn", "ppm", "hybrid"))
        results[name] = {
            "adapted_rnn": round(rnn_bpc, 4), "ppm": round(ppm_bpc, 4), "hybrid": round(hybrid_bpc, 4),
            "hybrid_vs_rnn": round(hybrid_bpc / rnn_bpc, 4),
            "hybrid_vs_best_component": round(hybrid_bpc / min(rnn_bpc, ppm_bpc), 4),
            "rnn_weight_by_ppm_order": [round(gate.weight(o), 3) for o in range(args.ppm_order + 1)],
            "seconds": round(time.perf_counter() - start, 1),
        }
        print(name, results[name], flush=True)
    print(json.dumps({"model_dir": args.model_dir, "ppm_train": args.ppm_train, "ppm_order": args.ppm_order,
                      "floor": args.floor,
                      "results": results}, indent=1))


if __name__ == "__main__":
    main()
