"""`dasher-rnn train`: train a character RNN, alone or one process per device under torchrun."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from dasher_rnn.cli.options import RNN, TRAIN, config_default
from dasher_rnn.paths import ASSETS_DIR

if TYPE_CHECKING:
    import torch


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train a character RNN on text files or a training mix")
    p.add_argument("paths", nargs="*", help="text files or folders (one equally weighted source each)")
    p.add_argument("--mix", help="training-mix JSON (default: assets/training_mix.json when no paths are given)")
    p.add_argument("--corpus-root", default="../shared/corpora/train", help="folder the mix's paths are relative to")
    p.add_argument("--out", required=True, help="run folder: checkpoints, log and the finished model")
    p.add_argument("--alphabet", default="english", help="alphabet the model writes (a name or a file)")
    p.add_argument("--cell", default=config_default(RNN, "cell"), help="lstm, mlstm, mogrifier, or an attention cell: "
                   "attention, kv-attention, kvp-attention, rnn-ngram")
    p.add_argument("--mog-rounds", type=int, default=config_default(RNN, "mog_rounds"), help="Mogrifier: rounds of mutual gating")
    p.add_argument("--mog-rank", type=int, default=config_default(RNN, "mog_rank"),
                   help="Mogrifier: rank of the factorised gating matrices")
    p.add_argument("--attn-window", type=int, default=config_default(RNN, "attn_window"),
                   help="attention cells: how many recent outputs each step reads")
    p.add_argument("--embed", type=int, default=config_default(RNN, "embed_size"), help="character embedding size")
    p.add_argument("--hidden", type=int, default=config_default(RNN, "hidden_size"), help="hidden units per layer")
    p.add_argument("--layers", type=int, default=config_default(RNN, "layers"), help="recurrent layers")
    p.add_argument("--steps", type=int, default=config_default(TRAIN, "steps"), help="optimiser steps in all (a resumed run "
                   "may extend them)")
    p.add_argument("--batch-size", type=int, default=config_default(TRAIN, "batch_size"), help="sequences per step")
    p.add_argument("--seq-len", type=int, default=config_default(TRAIN, "seq_len"), help="characters per sequence")
    p.add_argument("--lr", type=float, default=config_default(TRAIN, "lr"), help="peak learning rate")
    p.add_argument("--warmup", type=int, default=config_default(TRAIN, "warmup"), help="steps of linear learning-rate warmup")
    p.add_argument("--decay-frac", type=float, default=config_default(TRAIN, "decay_frac"),
                   help="final fraction of the steps over which the learning rate decays linearly")
    p.add_argument("--weight-decay", type=float, default=config_default(TRAIN, "weight_decay"), help="AdamW weight decay")
    p.add_argument("--clip", type=float, default=config_default(TRAIN, "clip"), help="gradient norm clipping")
    p.add_argument("--eval-every", type=int, default=config_default(TRAIN, "eval_every"), help="steps between validations")
    p.add_argument("--checkpoint-every", type=int, default=config_default(TRAIN, "checkpoint_every"),
                   help="steps between checkpoints (a stopped run resumes from the last)")
    p.add_argument("--val-fraction", type=float, default=0.01, help="fraction of each source held out for validation")
    p.add_argument("--val-chars", type=int, default=config_default(TRAIN, "val_chars"),
                   help="validation characters scored per source")
    p.add_argument("--seed", type=int, default=config_default(TRAIN, "seed"), help="random seed (initial weights, batches)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: all cores)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--model-out", help="where to write the finished model (default: OUT/model)")
    p.add_argument("--init-from", metavar="PATH",
                   help="start a new run from this model directory or run folder (when OUT has no checkpoint yet); "
                        "a larger --hidden widens it function-preservingly (LSTM); another --alphabet (a language) "
                        "keeps the weights of the symbols both have and starts the others from their base letter")
    p.add_argument("--resume-warmup", type=int, default=20,
                   help="steps over which the rate warms up again when a run resumes with a fresh optimizer")
    p.add_argument("--lowercase-frac", type=float, default=0.0,
                   help="case augmentation: share of lines (messages) lower-cased in training batches")
    p.add_argument("--dropout", type=float, default=0.0,
                   help="dropout on the embedding and the top layer's output while training (a small text memorises)")
    p.add_argument("--corpus-cache", help="folder of the encoded corpus (default: OUT/corpus)")
    p.add_argument("--language-state", action="append", default=[], metavar="CODE=SOURCE[,SOURCE...]",
                   help="a multilingual model: when finished, learn an initial state for language CODE on the starts "
                        "of these training sources (their names as printed), so that it writes CODE (repeatable)")
    p.set_defaults(func=run)


def language_states(specs: list[str]) -> dict[str, list[str]]:
    """``--language-state CODE=SOURCE,SOURCE`` options as ``{code: [source names]}``; a ``ValueError`` naming a bad
    one (no ``=``, no source, or a code that is not a language)."""
    from dasher_rnn.languages import find_language

    out: dict[str, list[str]] = {}
    for spec in specs:
        code, _, names = spec.partition("=")
        sources = [n.strip() for n in names.split(",") if n.strip()]
        found = find_language(code.strip())
        if not sources or found is None:
            raise ValueError(f"--language-state {spec!r}: give a language code and its sources, e.g. de=de_Latn")
        out[found] = sources
    return out


def run(args: argparse.Namespace) -> int:
    import os

    from dasher_rnn.extras import require_torch

    torch = require_torch("training")
    from dasher_rnn.lm.train import pick_device

    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    device = pick_device(args.device)
    distributed = "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1
    if distributed:  # under torchrun: one process per device (or per CPU share)
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        if device.type == "cuda":
            device = torch.device("cuda", local_rank)
            torch.cuda.set_device(device)
        torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo")
    try:
        return _train(args, device)
    finally:
        if torch.distributed.is_initialized():  # on an error; after training, _train has left the group
            torch.distributed.destroy_process_group()


def _train(args: argparse.Namespace, device: torch.device) -> int:
    import shlex

    import torch

    from dasher_rnn.alphabet import load_alphabet
    from dasher_rnn.lm.corpus import build_corpus, load_mix, sources_from_paths
    from dasher_rnn.lm.start_models import load_start_model, new_model, remap_alphabet, widen_model
    from dasher_rnn.lm.train import CHECKPOINT_META, TrainConfig, Trainer, finish_model

    main = not torch.distributed.is_initialized() or torch.distributed.get_rank() == 0
    say = print if main else (lambda *_a, **_k: None)
    states = language_states(args.language_state)
    alphabet = load_alphabet(args.alphabet)
    if args.paths:
        specs = sources_from_paths(args.paths)
    else:
        specs = load_mix(args.mix or ASSETS_DIR / "training_mix.json", root=args.corpus_root)
    out = Path(args.out)
    cache = Path(args.corpus_cache) if args.corpus_cache else out / "corpus"
    if torch.distributed.is_initialized():  # rank 0 encodes the corpus, the others then read its cache
        if main:
            build_corpus(specs, alphabet, cache, val_fraction=args.val_fraction)
        torch.distributed.barrier()
    corpus = build_corpus(specs, alphabet, cache, val_fraction=args.val_fraction)
    for row in corpus.summary():
        say(f"source {row['name']}: weight {row['weight']}, {row['train_chars']:,} train / {row['val_chars']:,} val chars")
    unknown = sorted({n for names in states.values() for n in names} - {s.name for s in corpus.sources})
    if unknown:
        raise ValueError(f"--language-state names sources this run does not have: {', '.join(unknown)}")
    tc = TrainConfig(
        steps=args.steps, batch_size=args.batch_size, seq_len=args.seq_len, lr=args.lr, warmup=args.warmup,
        decay_frac=args.decay_frac, weight_decay=args.weight_decay, clip=args.clip, eval_every=args.eval_every,
        checkpoint_every=args.checkpoint_every, val_chars=args.val_chars, seed=args.seed,
        resume_warmup=args.resume_warmup, lowercase_frac=args.lowercase_frac, dropout=args.dropout,
    )
    resuming = (out / CHECKPOINT_META).is_file()
    origin = None
    if args.init_from and not resuming:
        start, start_alphabet, origin = load_start_model(args.init_from)
        if start_alphabet.symbols != alphabet.symbols:  # another language: the shared symbols keep their weights
            start = remap_alphabet(start, start_alphabet, alphabet)
            say(f"alphabet {start_alphabet.name!r} -> {alphabet.name!r}: {sum(c in start_alphabet for c in alphabet.symbols)}"
                f" of {len(alphabet)} symbols shared")
        if (args.embed, args.layers, args.cell) != (start.config.embed_size, start.config.layers, start.config.cell):
            raise ValueError(f"--init-from {args.init_from} is {origin['architecture']} with embedding "
                             f"{start.config.embed_size}: give the same --cell, --layers and --embed")
        origin["widened"] = args.hidden != start.config.hidden_size
        model = widen_model(start, args.hidden, seed=args.seed) if origin["widened"] else start
    else:
        model = new_model(alphabet, args.embed, args.hidden, args.layers, args.cell, args.seed,
                          mog_rounds=args.mog_rounds, mog_rank=args.mog_rank, attn_window=args.attn_window)
    # the command that continues this run: the same options, without --init-from (the checkpoint has the weights)
    argv = [a for a in getattr(args, "argv", sys.argv[1:]) if not a.startswith("--init-from=")]
    if "--init-from" in argv:
        i = argv.index("--init-from")
        del argv[i : i + 2]
    command = shlex.join(["dasher-rnn", *argv]) if argv and argv[0] == "train" else None
    trainer = Trainer(model, corpus, tc, out, device, command=command)
    trainer.origin = origin
    if trainer.load_checkpoint():
        say(f"resumed from {out} at step {trainer.step} ({trainer.chars:,} characters)"
            + ("" if trainer.resumed_at is None else f", fresh optimizer warming up over {tc.resume_warmup} steps"))
    elif origin:
        say(f"starting from {args.init_from} ({origin['architecture']}"
            + (f", widened to {args.hidden}" if origin["widened"] else "") + ")")
    say(f"model: {model.num_parameters():,} parameters, {tc.steps} steps of "
        f"{tc.batch_size * trainer.world_size}x{tc.seq_len} characters")
    try:
        trainer.run(progress=not args.no_progress)
    except KeyboardInterrupt:
        return 130
    if torch.distributed.is_initialized():
        trainer.leave_group()
    if trainer.is_main:
        finish_model(trainer, args.model_out or out / "model", language_states=states)
    return 0
