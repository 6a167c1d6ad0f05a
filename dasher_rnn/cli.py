"""`dasher-rnn` command line: the app (default) and the tools around it."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import sys
from pathlib import Path
from typing import Any

from dasher_rnn.paths import ASSETS_DIR, DEFAULT_MODEL_DIR

TRAIN = "dasher_rnn.lm.train:TrainConfig"
RNN = "dasher_rnn.lm.rnn:RNNConfig"
DYNAMIC_EVAL = "dasher_rnn.adapt.dynamic_eval:AdaptConfig"
CORPUS_ADAPT = "dasher_rnn.adapt.corpus_adapt:CorpusAdaptConfig"
LIMITS = "dasher_rnn.api.sessions:Limits"
SERVER = "dasher_rnn.api.server:ServerConfig"
CONTROLLER = "dasher_rnn.zoom.controller:ControllerConfig"


class ConfigDefault:
    """An option's default read from a field of the config dataclass that the command fills, so that the two
    cannot disagree. Looked up only when needed (the help, or the command runs): several of those dataclasses
    live in modules that import torch, which most commands never need."""

    def __init__(self, config: str, name: str) -> None:
        self.config, self.name = config, name

    @functools.cached_property
    def value(self) -> Any:
        module, cls = self.config.split(":")
        field = {f.name: f for f in dataclasses.fields(getattr(importlib.import_module(module), cls))}[self.name]
        return field.default_factory() if field.default is dataclasses.MISSING else field.default

    def __str__(self) -> str:  # the help's "(default: ...)"
        return str(self.value)

    def __repr__(self) -> str:
        return f"ConfigDefault({self.config!r}, {self.name!r})"


def _default(config: str, name: str) -> ConfigDefault:
    return ConfigDefault(config, name)


class _HelpFormatter(argparse.HelpFormatter):
    """Each option's help ends with its default, unless the help already speaks of it or there is none to show."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("default" in text.lower() or default is None or default == [] or default is argparse.SUPPRESS or
                action.nargs == 0 or not (action.option_strings or action.nargs in ("?", "*"))):  # nargs 0: a flag
            return text
        return text + " (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


def _add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train a character RNN on text files or a training mix")
    p.add_argument("paths", nargs="*", help="text files or folders (one equally weighted source each)")
    p.add_argument("--mix", help="training-mix JSON (default: dasher_rnn/assets/training_mix.json when no paths are given)")
    p.add_argument("--corpus-root", default="../shared/corpora/train", help="folder the mix's paths are relative to")
    p.add_argument("--out", required=True, help="run folder: checkpoints, log and the finished model")
    p.add_argument("--alphabet", default="english", help="alphabet the model writes (a name or a file)")
    p.add_argument("--cell", default=_default(RNN, "cell"), help="lstm, mlstm, mogrifier, or an attention cell: "
                   "attention, kv-attention, kvp-attention, rnn-ngram")
    p.add_argument("--mog-rounds", type=int, default=_default(RNN, "mog_rounds"), help="Mogrifier: rounds of mutual gating")
    p.add_argument("--mog-rank", type=int, default=_default(RNN, "mog_rank"),
                   help="Mogrifier: rank of the factorised gating matrices")
    p.add_argument("--attn-window", type=int, default=_default(RNN, "attn_window"),
                   help="attention cells: how many recent outputs each step reads")
    p.add_argument("--embed", type=int, default=_default(RNN, "embed_size"), help="character embedding size")
    p.add_argument("--hidden", type=int, default=_default(RNN, "hidden_size"), help="hidden units per layer")
    p.add_argument("--layers", type=int, default=_default(RNN, "layers"), help="recurrent layers")
    p.add_argument("--steps", type=int, default=_default(TRAIN, "steps"), help="optimiser steps in all (a resumed run "
                   "may extend them)")
    p.add_argument("--batch-size", type=int, default=_default(TRAIN, "batch_size"), help="sequences per step")
    p.add_argument("--seq-len", type=int, default=_default(TRAIN, "seq_len"), help="characters per sequence")
    p.add_argument("--lr", type=float, default=_default(TRAIN, "lr"), help="peak learning rate")
    p.add_argument("--warmup", type=int, default=_default(TRAIN, "warmup"), help="steps of linear learning-rate warmup")
    p.add_argument("--decay-frac", type=float, default=_default(TRAIN, "decay_frac"),
                   help="final fraction of the steps over which the learning rate decays linearly")
    p.add_argument("--weight-decay", type=float, default=_default(TRAIN, "weight_decay"), help="AdamW weight decay")
    p.add_argument("--clip", type=float, default=_default(TRAIN, "clip"), help="gradient norm clipping")
    p.add_argument("--eval-every", type=int, default=_default(TRAIN, "eval_every"), help="steps between validations")
    p.add_argument("--checkpoint-every", type=int, default=_default(TRAIN, "checkpoint_every"),
                   help="steps between checkpoints (a stopped run resumes from the last)")
    p.add_argument("--val-fraction", type=float, default=0.01, help="fraction of each source held out for validation")
    p.add_argument("--val-chars", type=int, default=_default(TRAIN, "val_chars"),
                   help="validation characters scored per source")
    p.add_argument("--seed", type=int, default=_default(TRAIN, "seed"), help="random seed (initial weights, batches)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: all cores)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--model-out", help="where to write the finished model (default: OUT/model)")
    p.add_argument("--init-from", metavar="PATH",
                   help="start a new run from this model directory or run folder (when OUT has no checkpoint yet); "
                        "a larger --hidden widens it function-preservingly (LSTM)")
    p.add_argument("--resume-warmup", type=int, default=20,
                   help="steps over which the rate warms up again when a run resumes with a fresh optimizer")
    p.add_argument("--lowercase-frac", type=float, default=0.0,
                   help="case augmentation: share of lines (messages) lower-cased in training batches")
    p.add_argument("--corpus-cache", help="folder of the encoded corpus (default: OUT/corpus)")
    p.set_defaults(func=_cmd_train)


def _cmd_train(args: argparse.Namespace) -> int:
    import os

    import torch

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


def _train(args: argparse.Namespace, device) -> int:
    import shlex

    import torch

    from dasher_rnn.alphabet import load_alphabet
    from dasher_rnn.lm.corpus import build_corpus, load_mix, sources_from_paths
    from dasher_rnn.lm.train import (
        CHECKPOINT_META,
        TrainConfig,
        Trainer,
        finish_model,
        load_start_model,
        new_model,
        widen_model,
    )

    main = not torch.distributed.is_initialized() or torch.distributed.get_rank() == 0
    say = print if main else (lambda *_a, **_k: None)
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
    tc = TrainConfig(
        steps=args.steps, batch_size=args.batch_size, seq_len=args.seq_len, lr=args.lr, warmup=args.warmup,
        decay_frac=args.decay_frac, weight_decay=args.weight_decay, clip=args.clip, eval_every=args.eval_every,
        checkpoint_every=args.checkpoint_every, val_chars=args.val_chars, seed=args.seed,
        resume_warmup=args.resume_warmup, lowercase_frac=args.lowercase_frac,
    )
    resuming = (out / CHECKPOINT_META).is_file()
    origin = None
    if args.init_from and not resuming:
        start, origin = load_start_model(args.init_from)
        if start.config.vocab_size != len(alphabet):
            raise ValueError(f"{args.init_from}: {start.config.vocab_size} symbols, alphabet {alphabet.name!r} has "
                             f"{len(alphabet)}")
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
        # every process leaves the group together once the last checkpoint is written: rank 0 then finishes the
        # model alone, with no connection open to a peer that has exited
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
    if trainer.is_main:
        finish_model(trainer, args.model_out or out / "model")
    return 0


def _add_export_onnx(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export-onnx", help="export a model's one-step function to ONNX and verify it against torch")
    # no default: the export rewrites the folder's model.onnx and config.json, and the shipped model's folder is
    # part of the package (tracked in git, installed in site-packages); it changes only when named
    p.add_argument("model_dir", help="model folder (e.g. a `train` run's OUT/model); model.onnx is written into it "
                   "and its config.json records the export")
    p.add_argument("--int8", action="store_true",
                   help="also write model.int8.onnx, int8 weights (onnxruntime serves it when present, adapting too "
                        "for a plain LSTM)")
    p.add_argument("--check", nargs="*", default=None, metavar="FILE",
                   help="--int8: phrase files on which it may lose at most 0.005 bits/char "
                        "(default: ../shared/corpora/eval/*.txt when present)")
    p.set_defaults(func=_cmd_export_onnx)


def _cmd_export_onnx(args: argparse.Namespace) -> int:
    import json

    from dasher_rnn.lm.onnx_export import export_int8, export_onnx

    diff = export_onnx(args.model_dir)
    print(f"wrote {Path(args.model_dir) / 'model.onnx'}: max abs difference vs torch {diff:.2e}")
    if args.int8:
        check = args.check if args.check is not None else sorted(Path("../shared/corpora/eval").glob("*.txt"))
        report = export_int8(args.model_dir, check_files=check)
        print(f"wrote {Path(args.model_dir) / report['file']}:")
        print(json.dumps(report, indent=1))
    return 0


def _add_eval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="bits per character of a model on phrase files (one message per line)")
    p.add_argument("files", nargs="+", help="phrase files, one message per line")
    p.add_argument("--model", default="rnn", choices=["rnn", "ppm", "hybrid", "uniform"], help="which model to score")
    p.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR), help="RNN model directory (default: shipped)")
    p.add_argument("--train", action="append", default=[], metavar="PATH",
                   help="PPM (or the hybrid's PPM) training text file or folder (repeatable)")
    p.add_argument("--alphabet", default=None, help="alphabet (PPM; default english; the RNN uses its own)")
    p.add_argument("--floor", type=float, default=0.05, help="uniform floor mass (Dasher: 0.05; 0: exact probabilities)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--adaptive", dest="adaptive", action="store_true", default=None, help="learn each message after scoring")
    mode.add_argument("--static", dest="adaptive", action="store_false", help="never learn")
    p.add_argument("--zero-state", action="store_true", help="RNN: start messages from a zero state, not the learned one")
    p.add_argument("--rule", default=_default(DYNAMIC_EVAL, "rule"), choices=["sgd", "rms", "rms-rms"],
                   help="RNN adaptive: dynamic-evaluation rule")
    p.add_argument("--eta", type=float, default=None, help="RNN adaptive: step size (default: the rule's tuned default)")
    p.add_argument("--lam", type=float, default=_default(DYNAMIC_EVAL, "lam"), help="RNN adaptive: decay toward the "
                   "base weights")
    p.add_argument("--segment", type=int, default=_default(DYNAMIC_EVAL, "segment"),
                   help="RNN adaptive: characters per update")
    p.add_argument("--method", default=_default(DYNAMIC_EVAL, "method"), choices=["full", "sparse", "lhuc"],
                   help="RNN adaptive: adapt every weight, or only a sparse / LHUC adapter on the hidden state")
    p.add_argument("--no-feed", dest="feed", action="store_false",
                   help="RNN adaptive, sparse or lhuc: the modified state reaches only the head, not the recurrence")
    p.add_argument("--units", type=int, default=_default(DYNAMIC_EVAL, "units"),
                   help="RNN adaptive, sparse: hidden units the adapter mixes")
    p.add_argument("--profile", default=None, help="score what this user's profile predicts (RNN weights, PPM and "
                                                   "mixing weights, as the app loads them; never saved)")
    p.add_argument("--profiles-dir", default=None, help="profiles folder (default: $DASHER_RNN_PROFILES or the user "
                   "data folder)")
    p.add_argument("--backend", default="auto", help="RNN predictor backend: auto, onnx, torch, cuda")
    p.add_argument("--threads", type=int, default=1, help="CPU threads of the predictor")
    p.add_argument("--replace-errors", action="store_true", help="decode invalid UTF-8 with replacement characters")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--symbols", default=None, metavar="SET",
                   help="score over this symbol set with renormalised distributions: 'peer' (a-z, apostrophe, "
                        "space, as TextSlinger scores COMM-letter; use with --floor 0) or the characters themselves")
    p.set_defaults(func=_cmd_eval)


def _cmd_eval(args: argparse.Namespace) -> int:
    import json

    import torch

    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.adapt.dynamic_eval import AdaptConfig, default_eta
    from dasher_rnn.adapt.profiles import ProfileStore
    from dasher_rnn.evaluate import evaluate_files, format_report

    torch.set_num_threads(args.threads)  # more threads than cores fight whatever else the machine runs
    if args.profile is not None and not ProfileStore(args.profiles_dir).exists(args.profile):
        raise ValueError(f"no profile named {args.profile!r} (`dasher-rnn profile list` shows them)")
    adaptive = args.adaptive if args.adaptive is not None else args.model in ("ppm", "hybrid")
    eta = args.eta if args.eta is not None else default_eta(args.rule)
    config = WriterConfig(
        model=args.model, model_dir=args.model_dir, profile=args.profile, profiles_dir=args.profiles_dir,
        adapt=adaptive, adaptation=AdaptConfig(rule=args.rule, eta=eta, lam=args.lam, segment=args.segment,
                                               method=args.method, feed=args.feed, units=args.units),
        ppm_train=tuple(args.train), alphabet=args.alphabet, backend=args.backend, threads=args.threads,
        zero_state=args.zero_state, floor=args.floor, replace_errors=args.replace_errors, read_only=True)
    first = build_writer(config)  # the model folder and PPM's training text are read once
    description = first.description
    trained_ppm = first.mixer.ppm.fork() if first.mixer is not None and not args.profile else None
    writers = iter([first])
    report = evaluate_files(lambda: next(writers, None) or build_writer(config, trained_ppm=trained_ppm), args.files,
                            adaptive=adaptive, floor=args.floor, replace_errors=args.replace_errors,
                            progress=False if args.json else None, symbols=args.symbols)
    report["settings"] = {"model": description, "adaptive": adaptive, "floor": args.floor, "symbols": args.symbols}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{description}, {'adaptive' if adaptive else 'static'}, floor {args.floor}"
              + (f", symbols {args.symbols!r}" if args.symbols else ""))
        print(format_report(report))
    return 0


def _add_profile(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("profile", help="list, reset, export or import per-user adapted profiles")
    p.add_argument("action", choices=["list", "reset", "export", "import"], help="what to do with the profiles")
    p.add_argument("args", nargs="*", help="reset NAME | export NAME FOLDER | import FOLDER NAME")
    p.add_argument("--profiles-dir", default=None, help="profiles folder (default: $DASHER_RNN_PROFILES or the user data folder)")
    p.add_argument("--yes", action="store_true", help="reset: delete without asking (what the model learned about "
                   "the person cannot be got back; `profile export` keeps a copy first)")
    p.set_defaults(func=_cmd_profile)


def _confirm_reset(store, name: str, yes: bool) -> bool:
    """Whether to go on deleting profile ``name``: ``--yes``, or the user says so at the terminal. What it holds
    is said first, with how to keep a copy; without a terminal and without ``--yes`` nothing is deleted."""
    row = next((r for r in store.list() if r["name"] == name), None)
    if row is None:
        return True  # nothing to lose: reset says there is no such profile
    held = row.get("error") or f"{row['characters_adapted']:,} characters learned, last saved {row['updated'] or '?'}"
    print(f"profile {name!r} in {store.folder}: {held}")
    if yes:
        return True
    print(f"Deleting it forgets what the model learned about this person; `dasher-rnn profile export {name} FOLDER` "
          "keeps a copy first.")
    if not sys.stdin.isatty():
        print("not deleted: add --yes to delete without a question", file=sys.stderr)
        return False
    try:
        answer = input(f"Delete profile {name!r}? [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        print("not deleted")
        return False
    return True


def _cmd_profile(args: argparse.Namespace) -> int:
    from dasher_rnn.adapt.profiles import ProfileStore, check_name

    store = ProfileStore(args.profiles_dir)
    needed = {"list": 0, "reset": 1, "export": 2, "import": 2}[args.action]
    if len(args.args) != needed:
        raise ValueError(f"profile {args.action} takes {needed} argument(s)")
    if args.action == "list":
        rows = store.list()
        print(f"profiles in {store.folder}:" if rows else f"no profiles in {store.folder}")
        for row in rows:
            print(f"  {row['name']}: " + ", ".join(f"{k} {v}" for k, v in row.items() if k != "name"))
    elif args.action == "reset":
        name = check_name(args.args[0])
        if not _confirm_reset(store, name, args.yes):
            return 1
        lock = store.lock(name)  # not while the app, the server or adapt has it open (it would save it back)
        try:
            removed = store.reset(name)
        finally:
            lock.release()
        print(f"profile {name!r} deleted" if removed else f"no profile named {name!r} in {store.folder}")
    elif args.action == "export":
        print(f"exported to {store.export(args.args[0], args.args[1])}")
    else:
        print(f"imported as {store.import_(args.args[0], args.args[1])}")
    return 0


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not WIDTHxHEIGHT (e.g. 1200x800)") from None
    if not (200 <= width <= 8000 and 150 <= height <= 8000):
        raise argparse.ArgumentTypeError(f"{text!r}: width 200 to 8000, height 150 to 8000 pixels")
    return width, height


def _add_stats(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stats", help="a picture of progress: characters per minute and bits per character per "
                                     "message, from a profile's record (nothing leaves this machine)")
    p.add_argument("--profile", required=True, help="the profile whose messages to draw")
    p.add_argument("--out", default=None, help="the PNG file to write (default: progress-PROFILE.png here)")
    p.add_argument("--size", type=_size, default="1200x800", help="the picture's WIDTHxHEIGHT in pixels")
    p.add_argument("--profiles-dir", default=None, help="profiles folder (default: $DASHER_RNN_PROFILES or the user data folder)")
    p.set_defaults(func=_cmd_stats)


def _cmd_stats(args: argparse.Namespace) -> int:
    from dasher_rnn.adapt.profiles import ProfileError, ProfileStore
    from dasher_rnn.adapt.progress import ProgressLog

    store = ProfileStore(args.profiles_dir)
    log = ProgressLog.for_profile(store, args.profile)
    if not log.folder.is_dir():
        raise ProfileError(f"no profile named {args.profile!r} in {store.folder}")
    records = log.read()
    if not records:
        print(f"dasher-rnn stats: profile {args.profile!r} has no recorded messages yet: the app records each "
              "message when it is finished (New message, Clear or closing the window). No picture written.",
              file=sys.stderr)
        return 1
    from dasher_rnn.ui.offscreen import _ensure_application
    from dasher_rnn.ui.stats_view import progress_title, render_progress, summary

    _ensure_application()  # offscreen: no display needed
    out = Path(args.out or f"progress-{args.profile}.png")
    width, height = args.size
    if not render_progress(records, width, height, progress_title(args.profile)).save(str(out), "PNG"):
        raise OSError(f"could not write {out}")
    print(summary(records))
    print(f"wrote {out} ({width}x{height})")
    return 0


def _add_adapt(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("adapt", help="adapt a profile to your own writing (text, Markdown, mbox, .eml)")
    p.add_argument("paths", nargs="+", help="files or folders of your writing")
    p.add_argument("--profile", required=True, help="profile to adapt (created if new, continued if not)")
    p.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR), help="RNN model folder")
    p.add_argument("--profiles-dir", default=None, help="profiles folder (default: $DASHER_RNN_PROFILES or the user "
                   "data folder)")
    p.add_argument("--epochs", type=int, default=_default(CORPUS_ADAPT, "epochs"), help="passes over your writing")
    p.add_argument("--lr", type=float, default=_default(CORPUS_ADAPT, "lr"), help="learning rate")
    p.add_argument("--lam", type=float, default=_default(CORPUS_ADAPT, "lam"),
                   help="decay toward the starting weights per step")
    p.add_argument("--max-bits", type=float, default=_default(CORPUS_ADAPT, "max_bits"),
                   help="drop messages above this many bits/char")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run")
    p.add_argument("--dry-run", action="store_true", help="read, filter and score only; change nothing")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: all cores)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--no-ppm", action="store_true", help="leave the profile's PPM and mixing weights as they are")
    p.add_argument("--ppm-train", action="append", default=[], metavar="PATH",
                   help="PPM training text, when the profile has no PPM state yet (repeatable)")
    p.set_defaults(func=_cmd_adapt)


def _cmd_adapt(args: argparse.Namespace) -> int:
    import json
    import os

    import torch

    from dasher_rnn.adapt.corpus_adapt import CorpusAdaptConfig, Interrupted, adapt_to_corpus
    from dasher_rnn.adapt.profiles import ProfileError, ProfileStore, check_name, decode_weights
    from dasher_rnn.adapt.user_corpus import read_user_corpus
    from dasher_rnn.lm.model_io import open_model
    from dasher_rnn.lm.train import pick_device

    check_name(args.profile)  # a name that cannot be a profile is said at once, and no reset is suggested for it
    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    documents, read_report = read_user_corpus(args.paths)
    for path, reason in read_report.unreadable.items():
        print(f"dasher-rnn adapt: error: {path}: {reason}", file=sys.stderr)
    if read_report.unreadable:
        return 2
    for path in read_report.skipped_binary:
        print(f"warning: {path}: binary file skipped", file=sys.stderr)
    for path, count in read_report.replaced_bytes.items():
        print(f"warning: {path}: not valid UTF-8, {count} bytes replaced", file=sys.stderr)
    if read_report.duplicates:
        print(f"dropped {read_report.duplicates} duplicate documents")
    if not documents:
        raise ValueError("the corpus is empty: no readable text in " + ", ".join(args.paths))
    folder = open_model(args.model_dir)
    model, alphabet = folder.network(), folder.alphabet
    store = ProfileStore(args.profiles_dir)
    lock = None if args.dry_run else store.lock(args.profile)  # no other program saves over this run
    try:
        try:
            existing = store.load(args.profile)
            if existing is not None and "rnn" in existing.parts:
                params = model.network_parameters()
                shapes = {n: tuple(p.shape) for n, p in params.items()}
                with torch.no_grad():
                    for name, tensor in decode_weights(existing, shapes, folder.base_hash).items():
                        params[name].copy_(tensor)
        except ProfileError as exc:
            raise ValueError(f"{exc}; `dasher-rnn profile reset {args.profile}` starts it afresh") from None
        if existing is not None:
            print(f"continuing profile {args.profile!r} ({existing.characters_adapted:,} characters adapted)")
        cfg = CorpusAdaptConfig(epochs=args.epochs, lr=args.lr, lam=args.lam, max_bits=args.max_bits)
        try:
            report = adapt_to_corpus(model, alphabet, documents, store, args.profile, folder.base_hash, cfg,
                                     pick_device(args.device), resume=args.resume, dry_run=args.dry_run,
                                     progress=not args.no_progress)
        except Interrupted as exc:
            print(str(exc), file=sys.stderr)
            return 130
        report["read"] = read_report.to_json()
        if not args.dry_run and not args.no_ppm:
            from tqdm import tqdm

            from dasher_rnn.adapt.compose import WriterConfig, build_writer
            from dasher_rnn.adapt.corpus_adapt import split_messages

            # PPM and the mixing weights learn the corpus as if it had been written in the app, beside the RNN's
            # new weights (their probabilities teach the mixing weights)
            messages, _ = split_messages(documents, alphabet, CorpusAdaptConfig().max_unknown)
            writer = build_writer(WriterConfig(model="hybrid", model_dir=args.model_dir, profile=args.profile,
                                               profiles_dir=args.profiles_dir, ppm_train=tuple(args.ppm_train),
                                               backend="torch", threads=args.threads or None))
            try:
                with tqdm(total=len(messages), unit="message", desc="PPM", disable=args.no_progress) as bar:
                    chars = writer.learn_history([m.text for m in messages], progress=bar.update)
            finally:
                writer.close(save=True)
            report["ppm"] = {"characters_learned": chars, "notice": writer.notice}
        print(json.dumps(report, indent=1))
        if not args.dry_run and "held_out_bpc_after" in report:
            b, a = report["held_out_bpc_before"]["overall"], report["held_out_bpc_after"]["overall"]
            print(f"profile {args.profile!r}: held-out {b:.3f} -> {a:.3f} bits/char")
    finally:
        if lock is not None:
            lock.release()
    return 0


def _add_model_choice(p: argparse.ArgumentParser) -> None:
    """The predictor options shared by the app and the simulator."""
    p.add_argument("--model", default="hybrid", choices=["hybrid", "rnn", "ppm", "uniform"],
                   help="hybrid (default): the adapting RNN mixed with an adaptive PPM; rnn or ppm alone; uniform")
    p.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR), help="RNN model folder")
    p.add_argument("--ppm-train", action="append", default=[], metavar="PATH",
                   help="PPM training text file or folder (repeatable)")
    p.add_argument("--profile", default=None, help="adaptation profile to load and save")
    p.add_argument("--no-adapt", action="store_true", help="do not learn from committed text")


def _port(text: str) -> int:
    port = int(text)
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a UDP port is from 1 to 65535, not {port}")
    return port


def _socket_label(text: str) -> str:
    from dasher_rnn.input.dasher_socket import check_label

    try:
        return check_label(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_app(sub: argparse._SubParsersAction) -> None:
    from dasher_rnn.settings import INPUTS, OUTPUTS

    p = sub.add_parser("app", help="the writing window (also what `dasher-rnn` with no command opens)")
    _add_model_choice(p)
    p.add_argument("--settings", default=None, help="settings file (default: the user config folder)")
    inputs = p.add_argument_group("input", "what moves the pointer; these set the preferences of the same names, "
                                           "which are remembered as if chosen in the window")
    inputs.add_argument("--input", choices=INPUTS,
                        help="mouse; gaze over UDP (a bridge sends gaze points); a Tobii eye tracker; or Dasher's "
                             "socket input (trackers and bridges written for Dasher)")
    inputs.add_argument("--gaze-port", type=_port, help="UDP port of the gaze-udp input (default 5577)")
    inputs.add_argument("--socket-port", type=_port, help="UDP port of the dasher-socket input (default 20320)")
    inputs.add_argument("--socket-x-label", type=_socket_label, metavar="LABEL",
                        help="dasher-socket: label of the lines carrying x (default: x)")
    inputs.add_argument("--socket-y-label", type=_socket_label, metavar="LABEL",
                        help="dasher-socket: label of the lines carrying y (default: y)")
    inputs.add_argument("--socket-x-range", type=float, nargs=2, metavar=("MIN", "MAX"),
                        help="dasher-socket: x values at the left and right edges of the writing area (default: 0 1)")
    inputs.add_argument("--socket-y-range", type=float, nargs=2, metavar=("MIN", "MAX"),
                        help="dasher-socket: y values at the top and bottom edges of the writing area (default: 0 1)")
    p.add_argument("--output", choices=OUTPUTS,
                   help="direct: also type what you write into the program that has the keyboard focus (this window "
                        "stays on top without taking the focus); panel: only this window. Remembered, as the Output menu")
    p.set_defaults(func=_cmd_app)


def _app_input_prefs(args: argparse.Namespace) -> dict[str, object]:
    """The input preferences given on the command line (ValueError for an unusable range)."""
    from dasher_rnn.input.dasher_socket import check_range

    prefs: dict[str, object] = {name: getattr(args, name) for name in
                                ("input", "gaze_port", "socket_port", "socket_x_label", "socket_y_label")
                                if getattr(args, name) is not None}
    for axis in ("x", "y"):
        given = getattr(args, f"socket_{axis}_range")
        if given is not None:
            prefs[f"socket_{axis}_min"], prefs[f"socket_{axis}_max"] = check_range(*given, axis=axis)
    return prefs


def _cmd_app(args: argparse.Namespace) -> int:
    from dasher_rnn.ui.preflight import app_problem

    problem = app_problem()  # before Qt, which would abort (exit 134) without a display or its libraries
    if problem is not None:
        print(f"dasher-rnn: {problem}", file=sys.stderr)
        return 1
    overrides = _app_input_prefs(args)
    if args.output is not None:
        overrides["output"] = args.output
    from dasher_rnn.ui.app import run_app

    return run_app(args.model, args.model_dir, args.profile, not args.no_adapt, args.ppm_train, args.settings,
                   prefs_overrides=overrides)


def _add_simulate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="a simulated user writes phrases with the real zoom model, offscreen")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--text", action="append", help="a phrase to write (repeatable)")
    src.add_argument("--file", help="phrases, one per line")
    p.add_argument("--lines", type=int, default=0, help="only the first N phrases of --file")
    _add_model_choice(p)
    p.add_argument("--speed", type=float, default=_default(CONTROLLER, "speed_bps"), help="maximum speed, bits/s")
    p.add_argument("--fps", type=float, default=60.0, help="simulated frames per second")
    p.add_argument("--max-seconds", type=float, default=120.0, help="give up on a phrase after this long")
    p.add_argument("--render", action="store_true", help="also paint every frame offscreen (Qt) and time it")
    p.add_argument("--control", action="store_true",
                   help="control mode: a control box after the letters of every box (on by itself when a phrase names "
                        "an action in braces, e.g. 'I want tea{delete-word}coffee'); the summary gives its cost")
    p.add_argument("--backend", default="auto", help="RNN predictor backend: auto, onnx, torch, cuda")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_simulate)


def _cmd_simulate(args: argparse.Namespace) -> int:
    import json

    from tqdm import tqdm

    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.normalise import normalise
    from dasher_rnn.textio import read_text
    from dasher_rnn.zoom.control import Action
    from dasher_rnn.zoom.model import ZoomModel, ZoomSettings
    from dasher_rnn.zoom.simulate import parse_script, simulate
    from dasher_rnn.zoom.sources import WriterSource

    phrases = args.text or [line for line in read_text(args.file).splitlines() if line.strip()]
    phrases = [normalise(p) for p in phrases][: args.lines or None]
    writer = build_writer(WriterConfig(model=args.model, model_dir=args.model_dir, ppm_train=tuple(args.ppm_train),
                                       adapt=not args.no_adapt, profile=args.profile, backend=args.backend))
    source = WriterSource(writer)
    try:
        scripts = [parse_script(p) for p in phrases]
        control = args.control or any(isinstance(step, Action) for steps in scripts for step in steps)
        outside = [p for p, steps in zip(phrases, scripts, strict=True)
                   if any(ch not in source.alphabet for step in steps if isinstance(step, str) for ch in step)]
        if outside:
            raise ValueError(f"{len(outside)} phrases have characters outside alphabet {source.alphabet.name!r}, "
                             f"e.g. {outside[0]!r}")
        zoom = ZoomModel(source, ZoomSettings(speed_bps=args.speed, control=control))
        render = None
        if args.render:
            from dasher_rnn.ui.offscreen import offscreen_renderer

            render = offscreen_renderer(source.alphabet)
        # the bar goes to stderr: with --json it shows where stderr is a terminal (tqdm's None), so that
        # `simulate --file ... --json` is not silent for minutes, and stays out of a captured stream
        with tqdm(total=len(phrases), unit="phrase", disable=True if args.no_progress else None if args.json else False) as bar:
            result = simulate(zoom, phrases, fps=args.fps, max_seconds=args.max_seconds, render=render,
                              progress=bar.update)
        status = writer.status()
    finally:
        source.close()
    summary = {"model": args.model, "speed_bps": args.speed, "fps": args.fps, "rendered": args.render,
               "control_mode": control, **result.summary()}
    if "rnn" in status.learns:
        summary["adaptation"] = {"updates": status.updates, "rollbacks": status.rollbacks, "committed": status.committed}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        for key, value in summary.items():
            print(f"{key:>16}: {value}")
    return 0


def _add_serve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="the predictor as a local HTTP JSON + WebSocket API for other frontends")
    p.add_argument("--host", default=_default(SERVER, "host"), help="address to bind (anything but loopback needs a token)")
    p.add_argument("--port", type=int, default=_default(SERVER, "port"), help="TCP port")
    p.add_argument("--token", default=None, help="clients must send 'Authorization: Bearer TOKEN' "
                                                 "(default: $DASHER_RNN_TOKEN; required off loopback)")
    p.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR), help="RNN model folder")
    p.add_argument("--profiles-dir", default=None, help="profiles folder (default: $DASHER_RNN_PROFILES or the user data folder)")
    p.add_argument("--backend", default=_default(SERVER, "backend"), help="predictor backend of stateless requests and "
                   "non-adapting sessions: auto, onnx, torch, cuda (adapting sessions use torch)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads of the predictors")
    p.add_argument("--budget", type=int, default=_default(SERVER, "budget"), help="cached context states per session")
    p.add_argument("--ppm-train", action="append", default=[], metavar="PATH",
                   help="training text of hybrid sessions' PPM (repeatable; default: none, PPM learns the user's text)")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="a web origin (e.g. https://example.org) whose pages may use the API (repeatable); "
                        "loopback origins always may")
    p.add_argument("--max-body-bytes", type=int, default=_default(LIMITS, "max_body_bytes"),
                   help="largest request body or WebSocket message")
    p.add_argument("--max-contexts", type=int, default=_default(LIMITS, "max_contexts"), help="contexts in one request")
    p.add_argument("--max-sessions", type=int, default=_default(LIMITS, "max_sessions"), help="sessions open at once")
    p.add_argument("--max-handles", type=int, default=_default(LIMITS, "max_handles"),
                   help="context handles one session holds")
    p.add_argument("--max-nodes", type=int, default=_default(LIMITS, "max_nodes"),
                   help="context-tree nodes one session holds")
    p.add_argument("--max-text", type=int, default=_default(LIMITS, "max_text"),
                   help="characters of a context text or a commit")
    p.add_argument("--max-symbols", type=int, default=_default(LIMITS, "max_symbols"),
                   help="symbols appended below a parent in one request")
    p.add_argument("--idle-timeout", dest="idle_timeout_s", type=float, default=_default(LIMITS, "idle_timeout_s"),
                   metavar="SECONDS",
                   help="close a session unused this long (no request, no open WebSocket), saving its profile and "
                        "freeing its slot (0: never)")
    p.add_argument("--request-timeout", dest="request_timeout_s", type=float,
                   default=_default(LIMITS, "request_timeout_s"), metavar="SECONDS",
                   help="stop a prediction request that runs longer, answering 503 timeout (0: never)")
    p.add_argument("--log-level", default=_default(SERVER, "log_level"),
                   choices=["critical", "error", "warning", "info", "debug"], help="server log level")
    p.set_defaults(func=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    import torch

    from dasher_rnn.api.server import ServerConfig, run_server
    from dasher_rnn.api.sessions import Limits

    limits = Limits(max_body_bytes=args.max_body_bytes, max_contexts=args.max_contexts, max_sessions=args.max_sessions,
                    max_handles=args.max_handles, max_nodes=args.max_nodes, max_text=args.max_text,
                    max_symbols=args.max_symbols, idle_timeout_s=args.idle_timeout_s,
                    request_timeout_s=args.request_timeout_s)
    config = ServerConfig(args.model_dir, host=args.host, port=args.port, token=args.token,
                          profiles_dir=args.profiles_dir, backend=args.backend, threads=args.threads,
                          budget=args.budget, limits=limits, allow_origins=args.allow_origin,
                          log_level=args.log_level, ppm_train=args.ppm_train).checked()
    torch.set_num_threads(args.threads)

    def ready(url: str) -> None:  # the port is bound and the model loaded
        print(f"dasher-rnn serve: {url}/v1 (schema at /docs), model {args.model_dir}", flush=True)

    try:
        run_server(config, ready)
    except KeyboardInterrupt:  # Ctrl+C: uvicorn has stopped gracefully (sessions closed, profiles saved) and re-raised it
        print("dasher-rnn serve: stopped", flush=True)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dasher-rnn", description=__doc__)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    _add_train(sub)
    _add_eval(sub)
    _add_export_onnx(sub)
    _add_profile(sub)
    _add_stats(sub)
    _add_adapt(sub)
    _add_app(sub)
    _add_simulate(sub)
    _add_serve(sub)
    from dasher_rnn.desktop import add_parser as add_install_desktop

    add_install_desktop(sub)
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line parsed, with every default taken from its config dataclass."""
    args = build_parser().parse_args(argv)
    for name, value in vars(args).items():
        if isinstance(value, ConfigDefault):
            setattr(args, name, value.value)
    return args


def main(argv: list[str] | None = None) -> int:
    from dasher_rnn.alphabet import AlphabetError
    from dasher_rnn.lm.model_io import ModelFileError
    from dasher_rnn.textio import TextFileError

    argv = list(argv if argv is not None else sys.argv[1:] or ["app"])
    args = parse_args(argv)
    args.argv = argv  # `train` writes the exact command into its checkpoint's README
    try:
        return args.func(args)
    except (AlphabetError, ModelFileError, TextFileError, ValueError, OSError) as exc:  # ProfileError is a ValueError
        print(f"dasher-rnn {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
