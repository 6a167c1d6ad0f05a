"""What a resume from a float16 checkpoint with a fresh AdamW costs, on a small model. Prints JSON.

    python bench/resume_cost.py [--hidden 128] [--steps 1200] [--resume-at 600] [--resume-warmup 100]

Runs the same training three ways on the default mix: uninterrupted; interrupted at ``--resume-at`` and resumed
from the float16 checkpoint with a fresh AdamW and a re-warmup; and resumed from a checkpoint of the earlier
format (float32 weights and AdamW moments, exact). Reports validation bits/char at checkpoints after the resume.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import torch

from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.lm.corpus import build_corpus, load_mix
from dasher_rnn.lm.start_models import new_model
from dasher_rnn.lm.train import TrainConfig, Trainer, evaluate_corpus, save_exact_checkpoint
from dasher_rnn.paths import ASSETS_DIR


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mix", default=str(ASSETS_DIR / "training_mix.json"))
    parser.add_argument("--corpus-root", default="../shared/corpora/train")
    parser.add_argument("--cache", default="runs/corpus-cache")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--resume-at", type=int, default=600)
    parser.add_argument("--resume-warmup", type=int, default=20)
    parser.add_argument("--probe", type=int, nargs="*", default=[50, 100, 200, 400])
    parser.add_argument("--val-chars", type=int, default=20000)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    alphabet = load_alphabet("english")
    corpus = build_corpus(load_mix(args.mix, root=args.corpus_root), alphabet, args.cache)
    tc = TrainConfig(steps=args.steps, batch_size=args.batch_size, seq_len=args.seq_len, lr=2e-3, warmup=100,
                     eval_every=10**9, checkpoint_every=10**9, val_chars=args.val_chars,
                     resume_warmup=args.resume_warmup)
    probes = sorted({args.resume_at + p for p in args.probe if args.resume_at + p <= args.steps} | {args.steps})
    work = Path(tempfile.mkdtemp(prefix="resume-cost-"))
    t0 = time.perf_counter()

    def trainer(name: str) -> Trainer:
        return Trainer(new_model(alphabet, 64, args.hidden, 1, "lstm", seed=0), corpus, tc, work / name,
                       torch.device("cpu"))

    def run_to(t: Trainer, stop: int, curve: dict) -> None:
        while t.step < stop:
            t.train_step()
            if t.step in probes:
                curve[t.step] = round(evaluate_corpus(t.model, corpus, args.val_chars, t.device)["overall"], 4)

    curves: dict[str, dict] = {"uninterrupted": {}, "fp16_fresh_adamw": {}, "fp32_with_adamw": {}}
    first = trainer("split")
    run_to(first, args.resume_at, {})
    first.save_checkpoint()
    save_exact_checkpoint(first, work / "legacy")
    run_to(first, args.steps, curves["uninterrupted"])  # the same object, never interrupted

    resumed = trainer("split")
    assert resumed.load_checkpoint() and resumed.resumed_at == args.resume_at
    run_to(resumed, args.steps, curves["fp16_fresh_adamw"])
    legacy = trainer("legacy")
    assert legacy.load_checkpoint() and legacy.resumed_at is None
    run_to(legacy, args.steps, curves["fp32_with_adamw"])
    shutil.rmtree(work)
    print(json.dumps({
        "model": f"lstm 1x{args.hidden}", "batch": f"{args.batch_size}x{args.seq_len}", "steps": args.steps,
        "resume_at": args.resume_at, "resume_warmup": args.resume_warmup, "val_bpc_overall_at_step": curves,
        "cost_bits_at_step": {s: round(curves["fp16_fresh_adamw"][s] - curves["uninterrupted"][s], 4) for s in probes},
        "seconds": round(time.perf_counter() - t0),
    }, indent=1))


if __name__ == "__main__":
    main()
