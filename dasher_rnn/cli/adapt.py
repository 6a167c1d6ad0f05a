"""`dasher-rnn adapt`: adapt a profile to a corpus of the user's own writing."""

from __future__ import annotations

import argparse
import sys

from dasher_rnn.cli.options import CORPUS_ADAPT, add_profiles_dir, config_default, positive_int
from dasher_rnn.paths import DEFAULT_MODEL_DIR


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("adapt", help="adapt a profile to your own writing (text, Markdown, mbox, .eml)")
    p.add_argument("paths", nargs="+", help="files or folders of your writing")
    p.add_argument("--profile", required=True, help="profile to adapt (created if new, continued if not)")
    p.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR), help="RNN model folder")
    add_profiles_dir(p)
    p.add_argument("--epochs", type=int, default=config_default(CORPUS_ADAPT, "epochs"), help="passes over your writing")
    p.add_argument("--lr", type=float, default=config_default(CORPUS_ADAPT, "lr"), help="learning rate")
    p.add_argument("--lam", type=float, default=config_default(CORPUS_ADAPT, "lam"),
                   help="decay toward the starting weights per step")
    p.add_argument("--max-bits", type=float, default=config_default(CORPUS_ADAPT, "max_bits"),
                   help="drop messages above this many bits/char")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run")
    p.add_argument("--dry-run", action="store_true", help="read, filter and score only; change nothing")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda (cuda: the torch engine)")
    p.add_argument("--engine", default="auto", choices=["auto", "torch", "numpy"],
                   help="what adapts: torch, or numpy (a plain LSTM, without PyTorch); auto: torch where it is "
                        "installed")
    p.add_argument("--threads", type=int, default=0, help="CPU threads of torch or numpy's BLAS (0: all cores)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--max-chars", type=positive_int, default=config_default(CORPUS_ADAPT, "max_chars"),
                   help="use at most this many characters of your writing (the files after are left out, and said)")
    p.add_argument("--no-ppm", action="store_true", help="leave the profile's PPM and mixing weights as they are")
    p.add_argument("--ppm-train", action="append", default=[], metavar="PATH",
                   help="PPM training text, when the profile has no PPM state yet (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    import os

    from dasher_rnn.adapt.corpus_adapt import CorpusAdaptConfig, Interrupted, adapt_to_corpus, corpus_engine
    from dasher_rnn.adapt.profiles import ProfileError, ProfileStore, check_name, decode_weights
    from dasher_rnn.adapt.user_corpus import read_user_corpus
    from dasher_rnn.extras import set_torch_threads
    from dasher_rnn.lm.model_io import open_model

    check_name(args.profile)  # a name that cannot be a profile is said at once, and no reset is suggested for it
    threads = args.threads or os.cpu_count() or 1
    documents, read_report = read_user_corpus(args.paths, max_chars=args.max_chars, progress=not args.no_progress)
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
    if read_report.left_out:
        shown = ", ".join(read_report.left_out[:3]) + (", ..." if len(read_report.left_out) > 3 else "")
        print(f"warning: your writing is longer than --max-chars ({args.max_chars:,} characters): the first "
              f"{read_report.characters:,} characters are used, {len(read_report.left_out):,} files or messages are "
              f"left out ({shown}); --max-chars reads more, and adapting to more takes longer", file=sys.stderr)
    print(f"read {read_report.files:,} files: {read_report.characters:,} characters of writing", file=sys.stderr)
    if not documents:
        raise ValueError("the corpus is empty: no readable text in " + ", ".join(args.paths))
    folder = open_model(args.model_dir)
    alphabet = folder.alphabet
    cfg = CorpusAdaptConfig(epochs=args.epochs, lr=args.lr, lam=args.lam, max_bits=args.max_bits)
    engine = corpus_engine(folder, cfg, args.engine, args.device, threads)
    set_torch_threads(threads)  # where the engine is torch's
    store = ProfileStore(args.profiles_dir)
    lock = None if args.dry_run else store.lock(args.profile)  # no other program saves over this run
    try:
        try:
            existing = store.load(args.profile)
            if existing is not None and "rnn" in existing.parts:
                shapes = {n: tuple(w.shape) for n, w in engine.weights().items()}
                engine.set_weights({**engine.weights(), **decode_weights(existing, shapes, folder.base_hash)})
        except ProfileError as exc:
            raise ValueError(f"{exc}; `dasher-rnn profile reset {args.profile}` starts it afresh") from None
        if existing is not None:
            print(f"continuing profile {args.profile!r} ({existing.characters_adapted:,} characters adapted)")
        try:
            report = adapt_to_corpus(engine, alphabet, documents, store, args.profile, folder.base_hash, cfg,
                                     resume=args.resume, dry_run=args.dry_run, progress=not args.no_progress)
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
                                               backend="torch" if engine.name == "torch" else "auto",
                                               adapt_engine=engine.name, threads=args.threads or None))
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
