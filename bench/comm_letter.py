"""The COMM-letter figure: bits/char of a model on TextSlinger's COMM dev sentences, on their terms. Prints JSON.

    python bench/comm_letter.py [--fold-case] [--model-dir DIR] [--file ../shared/corpora/peer/comm_dev_letter.txt]

Protocol (TextSlinger, kdv123/textpredict ``examples/``): every line a fresh message (the RNN's learned initial
state), every character scored, no end-of-sentence symbol, exact probabilities (floor 0), each distribution
renormalised over a-z, apostrophe and space (``--symbols peer``: 28 symbols; BciPy's 29th, backspace, their models give no
probability), the model static. Published on this file: 12-gram 1.521 bits/char (lower case: its context and
symbols), distilgpt2 1.387 and their 0.8/0.2 mixture 1.355 (case folded: ``--case-simple --mixed-case-context``,
the context with a capital at the start and on "I", "I'm", ..., a letter's probability summed over both cases).
``--fold-case`` sums the cases too, after a context in sentence case (no capital "I" mid-sentence), as the BciPy
adapter's default fold mode predicts (``dasher-rnn eval --symbols peer --fold-case``); without it, strictly lower case.
"""

from __future__ import annotations

import argparse
import json
import time

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.evaluate import evaluate_files
from dasher_rnn.paths import DEFAULT_MODEL_DIR

PUBLISHED = {"textslinger_12gram_tiny": 1.521, "distilgpt2": 1.387, "mixture_0.8_0.2": 1.355}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    parser.add_argument("--model", default="rnn", choices=["rnn", "ppm", "hybrid"])
    parser.add_argument("--train", action="append", default=[], help="PPM training text (ppm, hybrid)")
    parser.add_argument("--file", default="../shared/corpora/peer/comm_dev_letter.txt")
    parser.add_argument("--fold-case", action="store_true", help="case folded, as their LLM figures (see above)")
    args = parser.parse_args()
    config = WriterConfig(model=args.model, model_dir=args.model_dir, ppm_train=tuple(args.train), adapt=False, floor=0.0)
    description = build_writer(config).description
    t0 = time.perf_counter()
    report = evaluate_files(lambda: build_writer(config), [args.file], adaptive=False, floor=0.0, symbols="peer",
                            fold_case=args.fold_case, progress=False)
    seconds = time.perf_counter() - t0
    overall = report["overall"]
    print(json.dumps({
        "model": description, "file": args.file, "fold_case": args.fold_case,
        "protocol": "static, floor 0, symbols peer (a-z ' space), " + ("case folded (sentence-case context, both "
                    "cases summed), " if args.fold_case else "") + "fresh message per line, no end symbol",
        "bits_per_char": overall["bits_per_char"], "perplexity": round(2 ** overall["bits_per_char"], 3),
        "chars": overall["chars"], "skipped": overall["skipped"], "messages": overall["messages"],
        "seconds": round(seconds, 2), "published_bits_per_char": PUBLISHED,
    }, indent=1))


if __name__ == "__main__":
    main()
