#!/usr/bin/env python3
"""A turnkey training run on a lent GPU (issue 39), prepared and tested on the CPU.

The GPU machine gets a copy of the working tree (64 MiB in all, ``../shared`` stays behind) and has torch,
safetensors, numpy and tqdm, but not dasher-rnn: this script runs from the tree and imports the package from it.

    python tools/gpu_run.py budget                      # what travels now, and how much room a shard has
    python tools/gpu_run.py pack --mix assets/training_mix_v3.json --name english --budget-mb auto
    python tools/gpu_run.py train --shard gpu_job/english --out "$OUT" --hidden 1024 --layers 2 --minutes 8.5
    python tools/gpu_run.py join /work/.device/.../run runs/english-2x1024-gpu
    python tools/gpu_run.py probe --archs 2x1024,1x768 --batches 256,1024,2048   # chars/s, no shard needed
    python tools/gpu_run.py smoke                       # the whole chain on the CPU, a tiny model, seconds

``pack`` (here) encodes the sources exactly as ``dasher-rnn train`` does (``lm.corpus.build_corpus``: normalised
onto the alphabet, documents hashed into train/validation), keeps each source's first ``--val-chars`` validation
characters whole (so validation figures are the CPU runs' own) and, where the budget does not hold a source's
training text, a weighted share of it in line-aligned pieces spread through the source. Each part is compressed
with bz2 (on this text 2.1 bits/char against xz's 2.2, and it decompresses with Python's stdlib everywhere) into
``gpu_job/NAME.bin``, described by ``gpu_job/NAME.json``.

``train`` (there) reads the shard, builds the repo's ``Trainer`` (lm/train.py: the model, the schedule, the float16
checkpoint without optimizer state, resume), trains under autocast with cuDNN's LSTM for a fixed wall time, fits the
schedule's length to that time after timing the first steps, prints the validation curve, and keeps a copy of the
checkpoint in ``--out`` (``$OUT``) after every save: the run's folder with ``checkpoint.safetensors`` cut into parts
of at most ``--part-mb`` where it is larger (files come back from the machine 16 MiB at most). ``join`` (here) puts
such a folder together again as a run folder that ``dasher-rnn train --out`` continues.

This file is the command line and the run; the shard and what travels are ``gpu_shard.py``'s, the trainer made for
the accelerator and the checkpoint that travels back ``gpu_trainer.py``'s (both beside it, imported from the tree).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

_T0 = time.monotonic()  # the command's start (as near as the script sees it): --minutes count from here

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the GPU machine runs this from the tree, dasher-rnn uninstalled
    sys.path.insert(0, str(ROOT))


sys.path.insert(0, str(Path(__file__).resolve().parent))  # its own parts: gpu_shard.py, gpu_trainer.py
from gpu_shard import CODECS, JOB_DIR, TREE_LIMIT, headroom, load_shard, log, mib, pack, reweigh  # noqa: E402
from gpu_trainer import join_run, make_gpu_trainer, print_curve, probe_throughput  # noqa: E402

_STARTED: float | None = None  # set when run as a script (train's wall time then includes Python's start-up)

if TYPE_CHECKING:
    import torch

    from dasher_rnn.lm.corpus import SourceSpec


def cmd_budget(args: argparse.Namespace) -> int:
    room = headroom()
    if args.json:
        print(json.dumps(room, indent=1))
        return 0
    log(f"travels without carry: {room['files']} files, {room['tree']:,} bytes ({mib(room['tree'])}) of {mib(TREE_LIMIT)}")
    log(f"{JOB_DIR.name}/ now: {room['job_dir_other']:,} bytes; left for it: {room['left']:,} bytes ({mib(room['left'])})")
    log("largest files that travel:")
    for name, size in room["largest"]:
        log(f"  {size:>12,}  {name}")
    return 0


def pack_specs(args: argparse.Namespace) -> list[SourceSpec]:
    from dasher_rnn.lm.corpus import load_mix, sources_from_paths
    from dasher_rnn.paths import ASSETS_DIR

    if args.paths:
        return sources_from_paths(args.paths)
    return load_mix(args.mix or ASSETS_DIR / "training_mix_v3.json", root=args.corpus_root)


def cmd_pack(args: argparse.Namespace) -> int:
    from dasher_rnn.alphabet import load_alphabet

    job_dir = Path(args.job_dir)
    mine = {f"{args.name}.bin", f"{args.name}.json"}
    if args.budget_mb == "auto":
        room = headroom(ROOT, job_dir, skip=lambda p: p.name in mine)
        budget = room["left"] - int(args.margin_mb * 2**20)
        log(f"budget: the tree sends {room['tree']:,} bytes ({room['files']} files), {job_dir.name}/ holds "
            f"{room['job_dir_other']:,} more; {room['left']:,} left under {mib(TREE_LIMIT)}, less a margin of "
            f"{args.margin_mb} MiB: {budget:,} bytes")
    else:
        budget = int(float(args.budget_mb) * 2**20)
    if budget <= 0:
        raise SystemExit("pack: no room left in the 64 MiB the device call sends (see `budget`)")
    pack(pack_specs(args), load_alphabet(args.alphabet), Path(args.corpus_cache), job_dir, args.name, budget,
         val_fraction=args.val_fraction, val_chars=args.val_chars, codec=args.codec, piece_chars=args.piece_chars)
    return 0


def cmd_join(args: argparse.Namespace) -> int:
    from dasher_rnn.lm.start_models import load_start_model

    dest = join_run(Path(args.src), Path(args.dest), force=args.force)
    model, alphabet, origin = load_start_model(dest)
    meta = json.loads((dest / "checkpoint.json").read_text())
    log(f"{dest}: {origin['architecture']} ({model.num_parameters():,} parameters, alphabet {alphabet.name}), step "
        f"{meta['step']:,}, {meta['chars']:,} characters; continue it with `dasher-rnn train --out {dest}` and the same "
        f"--embed/--hidden/--layers/--alphabet (the command in {dest / 'README.md'} is the GPU run's)")
    return 0


def train(args: argparse.Namespace, argv: list[str]) -> Path:
    """The run of ``train``: returns the exported run folder."""
    t_start = _STARTED if _STARTED is not None else time.monotonic()
    import torch

    from dasher_rnn.lm.start_models import load_start_model, new_model, remap_alphabet, widen_model
    from dasher_rnn.lm.train import CHECKPOINT_META, TrainConfig, Trainer, pick_device

    budget_s = args.minutes * 60.0
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    log(f"python {sys.version.split()[0]}, torch {torch.__version__}, device {device}"
        + (f" ({torch.cuda.get_device_name(device)}, cuDNN {torch.backends.cudnn.version()}, "
           f"{torch.cuda.get_device_properties(device).total_memory / 2**30:.0f} GiB)" if device.type == "cuda" else "")
        + f", {os.cpu_count()} CPUs")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    corpus, manifest = load_shard(args.shard)
    alphabet = corpus.alphabet
    reweigh(corpus, args.weight)
    for row in corpus.summary():
        log(f"source {row['name']}: weight {row['weight']}, {row['train_chars']:,} train / {row['val_chars']:,} val chars")
    if args.val_chars > manifest["val_chars"]:
        raise SystemExit(f"--val-chars {args.val_chars} is more than the shard holds ({manifest['val_chars']})")

    out = Path(args.out or os.environ.get("OUT") or ROOT / "runs" / "gpu-run")
    export_dir = out / args.run_name
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="gpu_run."))
    run_dir = work / args.run_name
    if run_dir.resolve() == export_dir.resolve():
        raise SystemExit("--work and --out must differ: the copy in --out holds the checkpoint in parts")
    resume = Path(args.resume) if args.resume else None
    if resume is not None and not (run_dir / CHECKPOINT_META).is_file():
        join_run(resume, run_dir)
    fit = args.steps == "auto"
    tc = TrainConfig(
        steps=10**9 if fit else int(args.steps), batch_size=args.batch_size, seq_len=args.seq_len, lr=args.lr,
        warmup=args.warmup, decay_frac=args.decay_frac, weight_decay=args.weight_decay, clip=args.clip,
        eval_every=10**9 if fit else args.eval_every, checkpoint_every=10**9 if fit else args.eval_every,
        val_chars=args.val_chars, seed=args.seed, resume_warmup=args.resume_warmup, lowercase_frac=args.lowercase_frac,
        dropout=args.dropout,
    )
    origin = None
    if (run_dir / CHECKPOINT_META).is_file():
        meta = json.loads((run_dir / CHECKPOINT_META).read_text())
        from dasher_rnn.lm.rnn import CharRNN, RNNConfig

        model = CharRNN(RNNConfig(**meta["model_config"]))  # its weights come with load_checkpoint below
    elif args.init_from:
        model, start_alphabet, origin = load_start_model(args.init_from)
        if start_alphabet.symbols != alphabet.symbols:
            model = remap_alphabet(model, start_alphabet, alphabet)
        if (args.embed, args.layers, "lstm") != (model.config.embed_size, model.config.layers, model.config.cell):
            raise SystemExit(f"--init-from {args.init_from} is {origin['architecture']} with embedding "
                             f"{model.config.embed_size}: give the same --layers and --embed (only --hidden may grow)")
        if args.hidden != model.config.hidden_size:
            model = widen_model(model, args.hidden, seed=args.seed)
            origin["widened"] = True
    else:
        model = new_model(alphabet, args.embed, args.hidden, args.layers, "lstm", args.seed)
    trainer_class = make_gpu_trainer(Trainer)
    command = shlex.join(["python", "tools/gpu_run.py", *argv])
    trainer: Any = trainer_class(model, corpus, tc, run_dir, device, command=command)
    trainer.origin = origin
    dtypes: dict[str, torch.dtype | None] = {"bf16": torch.bfloat16, "fp16": torch.float16, "off": None}
    amp = dtypes[args.amp]
    trainer.use_amp(amp, scale_grads={"auto": None, "on": True, "off": False}[args.scale_grads])
    if trainer.load_checkpoint():  # this run's TrainConfig stays: with --steps auto the total is fitted below
        log(f"resumed at step {trainer.step:,} ({trainer.chars:,} characters), fresh AdamW warming up over "
            f"{tc.resume_warmup} steps")
    trainer.workers = args.workers if args.workers >= 0 else (min(12, (os.cpu_count() or 2) - 2)
                                                              if device.type == "cuda" else 0)
    trainer.export_dir = export_dir
    trainer.best_by = tuple(name for name in args.best_by.split(",") if name)
    unknown = set(trainer.best_by) - {src.name for src in corpus.sources} - {"overall"}
    if unknown:
        raise SystemExit(f"--best-by: the shard has no source {', '.join(sorted(unknown))}")
    trainer.part_bytes = int(args.part_mb * 2**20)
    trainer.fit_steps, trainer.eval_seconds, trainer.print_seconds = fit, args.eval_seconds, args.print_seconds
    log(f"model: lstm {model.config.layers}x{model.config.hidden_size} (embedding {model.config.embed_size}), "
        f"{model.num_parameters():,} parameters; batch {tc.batch_size}x{tc.seq_len}; autocast {args.amp}"
        f"{', gradient scaling' if trainer.scaler is not None else ''}; {trainer.workers} batch workers")
    rnn = model.rnn
    if device.type == "cuda" and amp is not None and isinstance(rnn, torch.nn.LSTM):
        with torch.no_grad(), torch.autocast("cuda", dtype=amp):
            probe, _ = rnn(model.embed(torch.zeros(2, 4, dtype=torch.long, device=device)))
        log(f"under autocast {args.amp} the LSTM computes in {probe.dtype} (cuDNN's RNN autocasts to float16)")
    if args.probe:
        for row in probe_throughput(model, len(alphabet), [int(b) for b in args.probe.split(",")], tc.seq_len, device,
                                    amp):
            log(f"probe: batch {row['batch']}x{tc.seq_len}: {row['ms']} ms forward+backward, {row['chars_s']} chars/s")
    # first record and checkpoint before the long part: a broken output folder shows in seconds, and their times
    # are kept back from the training time
    t0 = time.monotonic()
    if not trainer.history or trainer.history[-1]["step"] != trainer.step:
        record = trainer.validate()
        trainer.history.append(record)
        log(json.dumps(record))
    t_val = time.monotonic() - t0
    t0 = time.monotonic()
    trainer.save_checkpoint()
    t_save = time.monotonic() - t0
    log(f"validation {t_val:.1f} s, checkpoint and its export {t_save:.1f} s, to {export_dir}")
    reserve = 2 * (t_val + t_save) + args.reserve_seconds
    train_s = budget_s - (time.monotonic() - t_start) - reserve
    if train_s <= 0:
        raise SystemExit(f"no time left to train in --minutes {args.minutes} (setup took {time.monotonic() - t_start:.0f} s)")
    trainer.train_seconds = train_s
    trainer.start()
    log(f"training for {train_s:.0f} s of wall time (--minutes {args.minutes:g}, {reserve:.0f} s kept for the end)")
    trainer.run(progress=False, max_seconds=train_s)
    print_curve(trainer.history)
    log(f"done: step {trainer.step:,}, {trainer.chars:,} characters in this run folder, {trainer.elapsed:.0f} s of steps, "
        f"{time.monotonic() - t_start:.0f} s in all; checkpoint in {export_dir}")
    return export_dir


def cmd_train(args: argparse.Namespace) -> int:
    train(args, args.argv)
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    """Throughput without a shard (random symbols): forward+backward of each architecture at each batch size."""
    import torch

    from dasher_rnn.alphabet import load_alphabet
    from dasher_rnn.lm.start_models import new_model
    from dasher_rnn.lm.train import pick_device

    device = pick_device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    log(f"python {sys.version.split()[0]}, torch {torch.__version__}, device {device}"
        + (f" ({torch.cuda.get_device_name(device)}, cuDNN {torch.backends.cudnn.version()})" if device.type == "cuda"
           else ""))
    alphabet = load_alphabet(args.alphabet)
    dtypes: dict[str, torch.dtype | None] = {"bf16": torch.bfloat16, "fp16": torch.float16, "off": None}
    rows = []
    for arch in args.archs.split(","):
        layers, hidden = (int(v) for v in arch.lower().split("x"))
        model = new_model(alphabet, args.embed, hidden, layers, "lstm", 0)
        for row in probe_throughput(model, len(alphabet), [int(b) for b in args.batches.split(",")], args.seq_len,
                                    device, dtypes[args.amp], repeats=args.repeats):
            rows.append({"arch": arch, "params": model.num_parameters(), **row})
            log(json.dumps(rows[-1]))
    log(f"{'arch':>8} {'params':>12} {'batch':>6} {'ms':>9} {'chars/s':>12}   (forward+backward, seq {args.seq_len}, "
        f"autocast {args.amp})")
    for r in rows:
        log(f"{r['arch']:>8} {r['params']:>12,} {r['batch']:>6} {r['ms'] or float('nan'):>9.2f} "
            f"{r['chars_s'] or 0:>12,}")
    return 0


# -- smoke -----------------------------------------------------------------------------------------------------------
def cmd_smoke(args: argparse.Namespace) -> int:
    """pack -> train (tiny model, a few seconds) -> join -> resume with the repo's Trainer -> load as a model."""
    import torch

    from dasher_rnn.alphabet import load_alphabet
    from dasher_rnn.lm.start_models import load_start_model
    from dasher_rnn.lm.train import TrainConfig, Trainer

    global _STARTED
    _STARTED = None  # the training's --minutes count from its own start, not the pack's
    torch.set_num_threads(1)
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gpu_run_smoke."))
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    pack(pack_specs(args), load_alphabet(args.alphabet), Path(args.corpus_cache), folder / "job", "smoke",
         int(args.budget_mb * 2**20), val_chars=2000, piece_chars=1 << 14)
    log(f"pack: {time.monotonic() - t0:.1f} s")
    argv = ["train", "--shard", str(folder / "job" / "smoke"), "--out", str(folder / "out"), "--work", str(folder / "work"),
            "--embed", "16", "--hidden", "48", "--layers", "2", "--batch-size", "16", "--seq-len", "32", "--lr", "3e-3",
            "--warmup", "5", "--val-chars", "2000", "--minutes", f"{args.seconds / 60:.4g}", "--eval-seconds", "1",
            "--print-seconds", "2", "--reserve-seconds", "0.5", "--device", "cpu", "--threads", "1", "--amp", "bf16",
            "--scale-grads", "on", "--part-mb", "0.05", "--workers", "1"]
    log("$ python tools/gpu_run.py " + shlex.join(argv))
    assert main(argv) == 0
    exported = folder / "out" / "run"
    log(f"exported: {sorted(p.name for p in exported.iterdir())}")
    home = join_run(exported, folder / "home")
    model, alphabet, origin = load_start_model(home)
    log(f"joined into {home}: loads as {origin['architecture']} ({model.num_parameters():,} parameters)")
    corpus, _ = load_shard(folder / "job" / "smoke")
    meta = json.loads((home / "checkpoint.json").read_text())
    tc = TrainConfig(**{**meta["train_config"], "steps": meta["step"] + 3})
    trainer = Trainer(model, corpus, tc, home, torch.device("cpu"))
    assert trainer.load_checkpoint(), "the joined checkpoint does not resume"
    trainer.run(progress=False)
    log(f"resumed with lm.train.Trainer from step {meta['step']} to {trainer.step}: OK ({folder})")
    return 0


# -- command line ----------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tools/gpu_run.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("budget", help="what a device call sends now, and the room left for gpu_job/")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_budget)

    def sources(p: argparse.ArgumentParser) -> None:
        p.add_argument("paths", nargs="*", help="text files or folders (one equally weighted source each)")
        p.add_argument("--mix", help="training-mix JSON (default: assets/training_mix_v3.json)")
        # as dasher-rnn train's and the runbook's commands give them (from the repository root), so that the
        # encoded corpus cache is the same folder
        p.add_argument("--corpus-root", default="../shared/corpora/train")
        p.add_argument("--alphabet", default="english", help="a name or a file, as for dasher-rnn train")
        p.add_argument("--corpus-cache", default="runs/corpus-cache")

    p = sub.add_parser("pack", help="encode and compress training text into gpu_job/NAME.{bin,json}")
    sources(p)
    p.add_argument("--name", default="english")
    p.add_argument("--job-dir", default=str(JOB_DIR))
    p.add_argument("--budget-mb", default="auto", help="MiB for this shard, or auto: what is left under the 64 MiB "
                   "a device call sends, less --margin-mb")
    p.add_argument("--margin-mb", type=float, default=0.125)
    p.add_argument("--val-fraction", type=float, default=0.01)
    p.add_argument("--val-chars", type=int, default=20_000, help="validation characters kept per source")
    p.add_argument("--codec", choices=sorted(CODECS), default="bz2")
    p.add_argument("--piece-chars", type=int, default=1 << 18, help="size of the pieces a subsampled source is cut in")
    p.set_defaults(func=cmd_pack)

    p = sub.add_parser("train", help="train from a shard for a fixed wall time (the GPU machine's part)")
    p.add_argument("--shard", default=str(JOB_DIR / "english"))
    p.add_argument("--out", help="where the run folder is copied after each checkpoint (default: $OUT)")
    p.add_argument("--run-name", default="run")
    p.add_argument("--work", help="the run folder's parent (default: a temporary folder)")
    p.add_argument("--resume", help="a run folder (exported or joined) to continue")
    p.add_argument("--init-from", help="a model folder or run folder to start from (widened to --hidden)")
    p.add_argument("--embed", type=int, default=64)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--decay-frac", type=float, default=0.3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--lowercase-frac", type=float, default=0.2)
    p.add_argument("--resume-warmup", type=int, default=20)
    p.add_argument("--dropout", type=float, default=0.0, help="on the embedding and the top layer's output, training only")
    p.add_argument("--best-by", default="", help="comma-separated validation sources (or overall): export a checkpoint "
                   "only when their mean bits/char is the best so far, so the copy (and a --resume of it) is at the best "
                   "step, not the last (default: every checkpoint)")
    p.add_argument("--weight", action="append", default=[], metavar="SOURCE=W",
                   help="another weight in the mix for a source of the shard (repeatable)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", default="auto", help="optimizer steps in all, or auto: as many as --minutes holds "
                   "(timed on the first steps)")
    p.add_argument("--eval-every", type=int, default=200, help="steps between validations (with a fixed --steps)")
    p.add_argument("--eval-seconds", type=float, default=45.0, help="time between validations (--steps auto)")
    p.add_argument("--print-seconds", type=float, default=30.0)
    p.add_argument("--val-chars", type=int, default=20_000)
    p.add_argument("--minutes", type=float, default=8.5, help="wall time of the whole command, start to last checkpoint")
    p.add_argument("--reserve-seconds", type=float, default=10.0, help="kept back at the end beyond the measured "
                   "time of one validation and one checkpoint (twice each)")
    p.add_argument("--amp", choices=("bf16", "fp16", "off"), default="bf16")
    p.add_argument("--scale-grads", choices=("auto", "on", "off"), default="auto")
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--workers", type=int, default=-1, help="batch worker processes (-1: 12 on CUDA, none on the CPU)")
    p.add_argument("--part-mb", type=float, default=15.0, help="largest file copied to --out (16 MiB come back)")
    p.add_argument("--probe", default="", help="batch sizes to time forward+backward at first, e.g. 256,1024,4096")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("probe", help="forward+backward throughput of LSTM sizes at several batch sizes (no shard)")
    p.add_argument("--archs", default="2x1024,1x768", help="LAYERSxHIDDEN, comma-separated")
    p.add_argument("--batches", default="256,1024,2048")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--embed", type=int, default=64)
    p.add_argument("--alphabet", default="english")
    p.add_argument("--amp", choices=("bf16", "fp16", "off"), default="bf16")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=0)
    p.set_defaults(func=cmd_probe)

    p = sub.add_parser("join", help="put an exported run folder (checkpoint in parts) together as a run folder")
    p.add_argument("src")
    p.add_argument("dest")
    p.add_argument("--force", action="store_true")
    p.set_defaults(func=cmd_join)

    p = sub.add_parser("smoke", help="the whole chain on the CPU: a tiny model, a seconds-long budget")
    sources(p)
    p.add_argument("--budget-mb", type=float, default=0.25)
    p.add_argument("--seconds", type=float, default=12.0)
    p.add_argument("--keep", help="folder to work in (default: a temporary one, kept)")
    p.set_defaults(func=cmd_smoke)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    return int(args.func(args))


if __name__ == "__main__":
    _STARTED = _T0
    sys.exit(main())
