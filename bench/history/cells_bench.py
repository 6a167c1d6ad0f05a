"""Recurrent cells side by side: one row per trained model folder. Prints JSON lines, then a table.

    python bench/history/cells_bench.py runs/cells/*/model
    python bench/history/cells_bench.py --latency-at 512   # every cell untrained at the shipped size: latency only

Each row: parameters, training characters and time (from the model's config), validation bits/char
(the training split's held-out documents), bits/char on ``../shared/corpora/eval/*.txt`` static
with per-message reset and Dasher's 5% floor (``dasher-rnn eval``'s protocol), mean bits of the
first 10 characters of each message with the learned and a zero initial state, and the latency of
expanding 64 fresh nodes in the predictor service (torch and onnxruntime backends). ``--latency-at H``
times every cell at hidden size H with untrained weights instead: whether a cell could be shipped at
that size within the predictor's budget.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.evaluate import evaluate_files
from dasher_rnn.lm.model_io import load_model
from dasher_rnn.predictor import PredictorService

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/
from predictor_bench import measure  # noqa: E402  (the predictor benchmark's own measurement)

EVAL_FILES = sorted(Path("../shared/corpora/eval").glob("*.txt"))


def cell_row(model_dir: Path, repeats: int) -> dict:
    model, _, config = load_model(model_dir)
    arch, training = config["architecture"], config.get("training", {})
    row = {"model": str(model_dir), "cell": arch["cell"], "hidden": arch["hidden_size"],
           "options": {k: v for k, v in arch.items() if k.startswith(("mog_", "attn_"))},
           "parameters": model.num_parameters(), "train_characters": training.get("characters"),
           "train_seconds": training.get("train_seconds"),
           "validation_bpc": config.get("validation_bpc", {}).get("overall")}
    for state in ("learned", "zero"):
        config = WriterConfig(model="rnn", model_dir=model_dir, adapt=False, backend="torch", zero_state=state == "zero")
        report = evaluate_files(lambda c=config: build_writer(c), EVAL_FILES)
        if state == "learned":
            row["eval_bpc"] = report["overall"]["bits_per_char"]
        row[f"first10_bits_{state}_state"] = report["overall"]["start_bits"]["10"]
    row["first10_learned_vs_zero"] = round(row["first10_bits_learned_state"] / row["first10_bits_zero_state"], 3)
    return {**row, **expansion_latency(model_dir, repeats)}


def expansion_latency(model_dir: Path, repeats: int) -> dict:
    rng, row = np.random.default_rng(0), {}
    for backend in ("torch", "onnx"):
        with PredictorService.from_dir(model_dir, backend=backend) as service:
            timing = measure(service, 64, repeats, rng)
        row[f"expand64_{backend}_p50_ms"], row[f"expand64_{backend}_p99_ms"] = timing["p50_ms"], timing["p99_ms"]
    return row


def latency_at(hidden: int, repeats: int) -> None:
    from dasher_rnn.alphabet import load_alphabet
    from dasher_rnn.lm.model_io import save_model
    from dasher_rnn.lm.onnx_export import export_onnx
    from dasher_rnn.lm.rnn import CELLS
    from dasher_rnn.lm.start_models import new_model

    alphabet = load_alphabet("english")
    for cell in CELLS:
        with tempfile.TemporaryDirectory() as folder:
            size = hidden - hidden % 6 if cell == "rnn-ngram" else hidden  # n-gram: window 5 + 1 equal parts
            model = new_model(alphabet, 64, size, 1, cell, seed=0, attn_window=5)
            save_model(folder, model, alphabet)
            export_onnx(folder)
            row = {"cell": cell, "hidden": size, "parameters": model.num_parameters()}
            print(json.dumps({**row, **expansion_latency(Path(folder), repeats)}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("model_dirs", nargs="*")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--latency-at", type=int, metavar="HIDDEN", help="time untrained cells of this size instead")
    args = parser.parse_args()
    if args.latency_at:
        latency_at(args.latency_at, args.repeats)
        return
    if not args.model_dirs:
        parser.error("give one or more trained model folders, or --latency-at HIDDEN")
    rows = []
    for model_dir in args.model_dirs:
        rows.append(cell_row(Path(model_dir), args.repeats))
        print(json.dumps(rows[-1]), flush=True)
    print("| cell | hidden | parameters | train chars | train s | validation | eval/ | first 10 learned (zero) | "
          "64-node p99 ms torch / onnx |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['cell']} | {r['hidden']} | {r['parameters']:,} | {r['train_characters']:,} | {r['train_seconds']} | "
              f"{r['validation_bpc']:.3f} | {r['eval_bpc']:.3f} | {r['first10_bits_learned_state']:.2f} "
              f"({r['first10_bits_zero_state']:.2f}) | {r['expand64_torch_p99_ms']:.1f} / {r['expand64_onnx_p99_ms']:.1f} |")


if __name__ == "__main__":
    main()
