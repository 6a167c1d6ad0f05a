"""PPM trained on the RNN's training mix (a weighted sample), scored on phrase files. Prints JSON.

    python bench/history/ppm_same_data.py --chars 20000000 ../shared/corpora/eval/*.txt
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.evaluate import evaluate_files
from dasher_rnn.lm.corpus import Corpus, build_corpus, load_mix
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.paths import ASSETS_DIR


def weighted_sample(corpus: Corpus, chars: int, chunk: int = 100_000, seed: int = 0) -> np.ndarray:
    """``chars`` training characters, each source contributing by weight, in chunks at random offsets."""
    rng = np.random.default_rng(seed)
    weights = np.array([s.weight for s in corpus.sources])
    parts = []
    for src, share in zip(corpus.sources, weights / weights.sum(), strict=True):
        want = min(int(chars * share), len(src.train))
        starts = np.sort(rng.choice(max(1, len(src.train) - chunk), size=max(1, -(-want // chunk)), replace=False))
        parts.extend(np.asarray(src.train[s : s + chunk]) for s in starts)
    return np.concatenate(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--chars", type=int, default=20_000_000)
    parser.add_argument("--mix", default=str(ASSETS_DIR / "training_mix.json"))
    parser.add_argument("--corpus-root", default="../shared/corpora/train")
    parser.add_argument("--cache", default="runs/corpus-cache")
    parser.add_argument("--floor", type=float, default=0.05)
    args = parser.parse_args()

    alphabet = load_alphabet("english")
    corpus = build_corpus(load_mix(args.mix, root=args.corpus_root), alphabet, args.cache)
    sample = weighted_sample(corpus, args.chars)
    t0 = time.perf_counter()
    model = PPMModel(alphabet)
    model.train_ids(sample)
    train_s = time.perf_counter() - t0
    report = evaluate_files(lambda: build_writer(WriterConfig(model="ppm", floor=args.floor), trained_ppm=model),
                            args.files, adaptive=True, floor=args.floor)
    report["settings"] = {"model": "PPM order 5 trained on a weighted sample of the training mix", "alphabet": "english",
                          "train_chars": int(len(sample)), "train_seconds": round(train_s, 1),
                          "train_chars_per_s": round(len(sample) / train_s), "contexts": model.num_contexts,
                          "adaptive": True, "floor": args.floor}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
