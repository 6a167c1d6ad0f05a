"""`dasher-rnn adapt`: adapt a profile to a corpus of the user's own writing."""

from __future__ import annotations

import argparse
import math
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
    p.add_argument("--resume", action="store_true",
                   help="go on with an interrupted run from what it saved (no second scoring of your writing)")
    p.add_argument("--dry-run", action="store_true", help="read, filter and score only; change nothing")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda (cuda: the torch engine)")
    p.add_argument("--engine", default="auto", choices=["auto", "torch", "numpy"],
                   help="what adapts: torch, or numpy (a plain LSTM, without PyTorch); auto: torch where it is "
                        "installed")
    p.add_argument("--threads", type=int, default=0, help="CPU threads of torch or numpy's BLAS (0: all cores)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the full report as JSON (the summary goes to stderr)")
    p.add_argument("--max-chars", type=positive_int, default=config_default(CORPUS_ADAPT, "max_chars"),
                   help="use at most this many characters of your writing (the files after are left out, and said)")
    p.add_argument("--no-ppm", action="store_true", help="leave the profile's PPM and mixing weights as they are")
    p.add_argument("--ppm-train", action="append", default=[], metavar="PATH",
                   help="PPM training text, when the profile has no PPM state yet (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    import os

    from dasher_rnn.adapt.corpus_adapt import CorpusAdaptConfig, Interrupted, Plan, adapt_to_corpus, corpus_engine
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
        print(f"dropped {read_report.duplicates} duplicate documents", file=sys.stderr)
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
            print(f"continuing profile {args.profile!r} ({existing.characters_adapted:,} characters adapted)",
                  file=sys.stderr)
        history = not args.dry_run and not args.no_ppm

        def plan(p: Plan) -> None:
            print(f"adapting profile {args.profile!r} on {engine.name}: {p.describe()}; Ctrl+C keeps what was "
                  "learned and `--resume` goes on from it", file=sys.stderr)

        try:
            report = adapt_to_corpus(engine, alphabet, documents, store, args.profile, folder.base_hash, cfg,
                                     resume=args.resume, dry_run=args.dry_run, progress=not args.no_progress,
                                     history=history, plan=plan, log=lambda line: print(line, file=sys.stderr))
        except Interrupted as exc:
            print(str(exc), file=sys.stderr)
            return 130
        report["read"] = read_report.to_json()
        if history:
            from tqdm import tqdm

            from dasher_rnn.adapt.compose import WriterConfig, build_writer
            from dasher_rnn.adapt.corpus_adapt import clear_resume, split_messages

            # PPM and the mixing weights learn the corpus as if it had been written in the app, beside the RNN's
            # new weights (their probabilities teach the mixing weights)
            messages, _ = split_messages(documents, alphabet, CorpusAdaptConfig().max_unknown)
            writer = build_writer(WriterConfig(model="hybrid", model_dir=args.model_dir, profile=args.profile,
                                               profiles_dir=args.profiles_dir, ppm_train=tuple(args.ppm_train),
                                               backend="torch" if engine.name == "torch" else "auto",
                                               adapt_engine=engine.name, threads=args.threads or None))
            try:
                with tqdm(total=len(messages), unit="message", desc="PPM and mixing weights",
                          disable=args.no_progress) as bar:
                    chars = writer.learn_history([m.text for m in messages], progress=bar.update)
            except KeyboardInterrupt:
                writer.close(save=False)
                print(f"interrupted: PPM and the mixing weights of profile {args.profile!r} are as they were (they had "
                      "not finished learning your writing); the RNN's adapted weights are saved in it; `--resume` "
                      "teaches PPM and the mixing weights without training the RNN again", file=sys.stderr)
                return 130
            writer.close(save=True)
            clear_resume(store, args.profile)
            report["ppm"] = {"characters_learned": chars, "notice": writer.notice}
        lines = [f"profile {args.profile!r}:" + (" (dry run: nothing was changed)" if args.dry_run else "")]
        lines += [f"  {line}" for line in summary(report, dry_run=args.dry_run, no_ppm=args.no_ppm)]
        print("\n".join(lines), file=sys.stderr if args.json else sys.stdout)
        if args.json:
            print(json.dumps(report, indent=1))
    finally:
        if lock is not None:
            lock.release()
    return 0


def _messages(n: int) -> str:
    return f"{n:,} message" + ("" if n == 1 else "s")


def _held_out(bpc: float, held: int) -> str:
    if not held or not math.isfinite(bpc):
        return "no messages could be kept aside to measure it"
    return f"held-out {bpc:.3f} bits/char on {_messages(held)} kept aside"


def summary(report: dict, dry_run: bool = False, no_ppm: bool = False) -> list[str]:
    """What each learner learned and what changed, in plain words: one line for the RNN, one for PPM (with the
    mixing weights). ``report`` is ``adapt_to_corpus``'s, with ``ppm`` added where PPM learned."""
    before = report.get("held_out_bpc_before", {}).get("overall", math.nan)
    after = report.get("held_out_bpc_after", {}).get("overall")
    dropped = sum(int(n) for n in report.get("dropped", {}).values())
    held = report.get("held_out_messages", 0)
    if dry_run:
        rnn = f"RNN: not adapted (--dry-run): it would train on {_messages(report.get('train_messages', 0))}; " \
              f"{_held_out(before, held)} as it predicts now"
        if "sample" in report:  # a large corpus: the figures are a sample's (corpus_adapt.DRY_RUN_CHARS)
            rnn += f" (a sample: one message in {report['sample']['every']} of {report['sample']['of_messages']:,})"
    elif after is None and report.get("train_messages", 0) and not held:
        rnn = f"RNN: not adapted: {_messages(report['train_messages'])} to train on and none to keep aside and check " \
              "that adapting helps; its weights are as they were (give two messages or more)"
    elif after is None:
        rnn = f"RNN: not adapted: no messages were left to train on ({report.get('messages', 0):,} read, " \
              f"{held:,} kept aside to measure, {dropped:,} dropped as mostly outside the alphabet or too " \
              "improbable); its weights are as they were"
    else:
        trained = f"trained on {_messages(report['train_messages'])} ({report['train_chars']:,} characters)"
        epochs = report.get("history", [])
        if not held or not math.isfinite(before) or not math.isfinite(after):
            rnn = f"RNN: {trained}; {_held_out(math.nan, 0)}"
        elif not any(h["held_out_bpc"] < before - 1e-4 for h in epochs):  # adapt_to_corpus kept the start
            passes = f"{len(epochs)} pass" + ("" if len(epochs) == 1 else "es")
            rnn = f"RNN: {trained}, but after {passes} over them it predicted the {_messages(held)} kept aside no " \
                  f"better than before: its weights are left as they were (held-out {before:.3f} bits/char, " \
                  "unchanged)"
        else:
            precision = 3 if round(before, 3) != round(after, 3) else 4
            change = (before - after) / before if before else 0.0
            rnn = f"RNN: adapted, {trained}: held-out {before:.{precision}f} -> {after:.{precision}f} bits/char " \
                  f"on {_messages(held)} kept aside ({change:.1%} better)"
    ppm = report.get("ppm")
    if dry_run:
        line = "PPM and the mixing weights: nothing learned (--dry-run)"
    elif no_ppm:
        line = "PPM and the mixing weights: left as they were (--no-ppm)"
    elif ppm is None:
        line = "PPM and the mixing weights: nothing learned"
    else:
        chars = int(ppm.get("characters_learned", 0))
        line = f"PPM and the mixing weights: learned {chars:,} characters of your writing" + (
            "; the app predicts with them from its next start" if chars else "")
        if ppm.get("notice"):
            line += f" ({ppm['notice']})"
    return [rnn, line]
