"""A static PPM over the training mix as a third component beside the RNN: what it adds, at what cost. Prints JSON.

    python bench/history/static_ppm_mix.py [--model-dir models/english-lstm] [--chars 20000000] [--order 5]

PPM (Dasher's estimator, order ``--order``) is trained on a weighted sample of the training mix (as
``bench/history/ppm_same_data.py``) and kept static; the RNN is static from its learned initial state. Each
character's distribution is ``w * p_rnn + (1 - w) * p_ppm`` with ``w`` one weight, or one weight per
order of PPM's deepest matching context; the weights are fitted on the dev files (aac_imagined_dev and
comm_dev) and applied to every eval file. Reports bits/char with Dasher's 5% floor and exact, PPM's
training time, its contexts and the process's peak memory.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np
from ppm_same_data import weighted_sample

from dasher_rnn.lm.corpus import build_corpus, load_mix
from dasher_rnn.lm.messages import read_messages, symbol_bits
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.lm.protocol import DASHER_FLOOR
from dasher_rnn.lm.rnn_lm import RNNLanguageModel
from dasher_rnn.normalise import normalise
from dasher_rnn.paths import ASSETS_DIR, DEFAULT_MODEL_DIR

DEV = ("aac_imagined_dev", "comm_dev")
GRID = np.round(np.arange(0.50, 1.0001, 0.025), 3)


def file_distributions(rnn: RNNLanguageModel, ppm: PPMModel, path: Path) -> dict:
    """Per character of the file's messages: the symbol, the RNN's and PPM's distributions, PPM's match order."""
    alphabet = rnn.alphabet
    syms, p_rnn, p_ppm, orders = [], [], [], []
    for raw in read_messages(path):
        line = normalise(raw)
        ids = [alphabet.index(ch) for ch in line if ch in alphabet]
        if not ids:
            continue
        rnn.reset()
        p_rnn.append(np.asarray(rnn.sequence_probs(ids), dtype=np.float64))
        ppm.reset()
        for s in ids:
            p_ppm.append(ppm.probs().astype(np.float64))
            orders.append(ppm.prediction_order)
            ppm.advance(s)
        syms.extend(ids)
    return {"syms": np.array(syms), "rnn": np.concatenate(p_rnn), "ppm": np.stack(p_ppm), "order": np.array(orders)}


def bits(d: dict, w: np.ndarray, floor: float) -> float:
    """Total bits of the file under the mixture with per-character RNN weights ``w``."""
    return float(np.sum(symbol_bits(w[:, None] * d["rnn"] + (1 - w[:, None]) * d["ppm"], d["syms"], floor)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    parser.add_argument("--mix", default=str(ASSETS_DIR / "training_mix_v2.json"))
    parser.add_argument("--corpus-root", default="../shared/corpora/train")
    parser.add_argument("--cache", default="runs/corpus-cache")
    parser.add_argument("--eval-dir", default="../shared/corpora/eval")
    parser.add_argument("--chars", type=int, default=20_000_000)
    parser.add_argument("--order", type=int, default=5)
    args = parser.parse_args()

    rnn = RNNLanguageModel.from_dir(args.model_dir)
    corpus = build_corpus(load_mix(args.mix, root=args.corpus_root), rnn.alphabet, args.cache)
    sample = weighted_sample(corpus, args.chars)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    ppm = PPMModel(rnn.alphabet, max_order=args.order)
    ppm.train_ids(sample)
    train_s = time.perf_counter() - t0
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    files = {p.stem: file_distributions(rnn, ppm, p) for p in sorted(Path(args.eval_dir).glob("*.txt"))}
    dev = [files[n] for n in DEV if n in files]

    def fit(weights_of) -> float:
        return min(GRID, key=lambda w: sum(bits(d, weights_of(d, w), 0.0) for d in dev))

    w_single = float(fit(lambda d, w: np.full(len(d["syms"]), w)))
    per_order = np.full(args.order + 1, w_single)
    for _ in range(2):  # coordinate descent over the orders
        for k in range(args.order + 1):
            def weights_of(d, w, k=k):
                table = per_order.copy()
                table[k] = w
                return table[d["order"]]
            per_order[k] = fit(weights_of)

    schemes = {"rnn": lambda d: np.ones(len(d["syms"])), "ppm": lambda d: np.zeros(len(d["syms"])),
               "mix_one_weight": lambda d: np.full(len(d["syms"]), w_single),
               "mix_per_order": lambda d: per_order[d["order"]]}
    chars = sum(len(d["syms"]) for d in files.values())
    report: dict = {}
    for name, weights_of in schemes.items():
        row = {}
        for floor, label in ((DASHER_FLOOR, "floor"), (0.0, "exact")):
            per_file = {f: bits(d, weights_of(d), floor) / len(d["syms"]) for f, d in files.items()}
            total = sum(bits(d, weights_of(d), floor) for d in files.values()) / chars
            row[label] = {"overall": round(total, 4), **{f: round(v, 4) for f, v in per_file.items()}}
        report[name] = row
    print(json.dumps({
        "model_dir": args.model_dir, "ppm": {"order": args.order, "train_chars": int(len(sample)),
                                             "train_seconds": round(train_s, 1), "contexts": ppm.num_contexts,
                                             "peak_rss_growth_mb": round((rss1 - rss0) / 1024)},
        "fitted_on": list(DEV), "rnn_weight": w_single, "rnn_weight_per_order": per_order.tolist(),
        "bits_per_char": report,
    }, indent=1))


if __name__ == "__main__":
    main()
