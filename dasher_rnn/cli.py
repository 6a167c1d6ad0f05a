"""`dasher-rnn` command line: the app (default) and the tools around it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dasher_rnn.paths import ASSETS_DIR, DEFAULT_MODEL_DIR


def _add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train a character RNN on text files or a training mix")
    p.add_argument("paths", nargs="*", help="text files or folders (one equally weighted source each)")
    p.add_argument("--mix", help="training-mix JSON (default: assets/training_mix.json when no paths are given)")
    p.add_argument("--corpus-root", default="../shared/corpora/train", help="folder the mix's paths are relative to")
    p.add_argument("--out", required=True, help="run folder: checkpoints, log and the finished model")
    p.add_argument("--alphabet", default="english")
    p.add_argument("--cell", default="lstm", help="lstm (default), mlstm, mogrifier, or an attention cell: attention, "
                   "kv-attention, kvp-attention, rnn-ngram")
    p.add_argument("--mog-rounds", type=int, default=5, help="Mogrifier: rounds of mutual gating")
    p.add_argument("--mog-rank", type=int, default=64, help="Mogrifier: rank of the factorised gating matrices")
    p.add_argument("--attn-window", type=int, default=5, help="attention cells: how many recent outputs each step reads")
    p.add_argument("--embed", type=int, default=64)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--steps", type=int, default=7000)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--decay-frac", type=float, default=0.25)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--eval-every", type=int, default=500)
    p.add_argument("--checkpoint-every", type=int, default=100)
    p.add_argument("--val-fraction", type=float, default=0.01)
    p.add_argument("--val-chars", type=int, default=20000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", help="auto, cpu, cuda")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: all cores)")
    p.add_argument("--no-progress", action="store_true")
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
        if distributed:
            torch.distributed.destroy_process_group()


def _train(args: argparse.Namespace, device) -> int:
    import shlex

    import torch

    from dasher_rnn.alphabet import load_alphabet
    from dasher_rnn.lm.corpus import build_corpus, load_mix, sources_from_paths
    from dasher_rnn.lm.train import TrainConfig, Trainer, finish_model, load_start_model, new_model, widen_model

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
    resuming = (out / "checkpoint.json").is_file()
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
    if trainer.is_main:
        finish_model(trainer, args.model_out or out / "model")
    return 0


def _add_export_onnx(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export-onnx", help="export a model's one-step function to ONNX and verify it against torch")
    p.add_argument("model_dir", nargs="?", default=str(DEFAULT_MODEL_DIR))
    p.add_argument("--int8", action="store_true",
                   help="also write model.int8.onnx, dynamically quantised to int8 (onnxruntime uses it when present)")
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
    p.add_argument("--model", default="rnn", choices=["rnn", "ppm", "hybrid"], help="which language model to score")
    p.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR), help="RNN model directory (default: shipped)")
    p.add_argument("--train", action="append", default=[], metavar="PATH",
                   help="PPM (or the hybrid's PPM) training text file or folder (repeatable)")
    p.add_argument("--alphabet", default=None, help="alphabet (PPM; default english; the RNN uses its own)")
    p.add_argument("--floor", type=float, default=0.05, help="uniform floor mass (Dasher: 0.05; 0: exact probabilities)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--adaptive", dest="adaptive", action="store_true", default=None, help="learn each message after scoring")
    mode.add_argument("--static", dest="adaptive", action="store_false", help="never learn")
    p.add_argument("--zero-state", action="store_true", help="RNN: start messages from a zero state, not the learned one")
    p.add_argument("--rule", default="sgd", choices=["sgd", "rms", "rms-rms"], help="RNN adaptive: dynamic-evaluation rule")
    p.add_argument("--eta", type=float, default=None, help="RNN adaptive: step size (default: the rule's tuned default)")
    p.add_argument("--lam", type=float, default=0.0, help="RNN adaptive: decay toward the base weights")
    p.add_argument("--segment", type=int, default=20, help="RNN adaptive: characters per update")
    p.add_argument("--method", default="full", choices=["full", "sparse", "lhuc"],
                   help="RNN adaptive: adapt every weight, or only a sparse / LHUC adapter on the hidden state")
    p.add_argument("--no-feed", dest="feed", action="store_false",
                   help="RNN adaptive, sparse or lhuc: the modified state reaches only the head, not the recurrence")
    p.add_argument("--units", type=int, default=100, help="RNN adaptive, sparse: hidden units the adapter mixes")
    p.add_argument("--profile", default=None, help="RNN: start from this user profile's adapted weights")
    p.add_argument("--profiles-dir", default=None)
    p.add_argument("--replace-errors", action="store_true", help="decode invalid UTF-8 with replacement characters")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--symbols", default=None, metavar="SET",
                   help="score over this symbol set with renormalised distributions: 'peer' (a-z, apostrophe, "
                        "space, as TextSlinger scores COMM-letter; use with --floor 0) or the characters themselves")
    p.set_defaults(func=_cmd_eval)


def _cmd_eval(args: argparse.Namespace) -> int:
    import json

    from dasher_rnn.adapt.dynamic_eval import AdaptConfig, default_eta
    from dasher_rnn.evaluate import evaluate_files, format_report
    from dasher_rnn.factory import build_language_model

    adaptive = args.adaptive if args.adaptive is not None else args.model in ("ppm", "hybrid")
    adapt = None
    if adaptive and args.model in ("rnn", "hybrid"):
        eta = args.eta if args.eta is not None else default_eta(args.rule)
        adapt = AdaptConfig(rule=args.rule, eta=eta, lam=args.lam, segment=args.segment, method=args.method,
                            feed=args.feed, units=args.units)
    model, description = build_language_model(
        args.model, model_dir=args.model_dir, train=args.train, alphabet=args.alphabet,
        replace_errors=args.replace_errors, zero_state=args.zero_state, adapt=adapt,
        profile=args.profile, profiles_dir=args.profiles_dir,
    )
    report = evaluate_files(model, args.files, adaptive=adaptive, floor=args.floor, replace_errors=args.replace_errors,
                            symbols=args.symbols)
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
    p.add_argument("action", choices=["list", "reset", "export", "import"])
    p.add_argument("args", nargs="*", help="reset NAME | export NAME FOLDER | import FOLDER NAME")
    p.add_argument("--profiles-dir", default=None, help="profiles folder (default: $DASHER_RNN_PROFILES or the user data folder)")
    p.set_defaults(func=_cmd_profile)


def _cmd_profile(args: argparse.Namespace) -> int:
    from dasher_rnn.adapt.profiles import ProfileStore

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
        store.reset(args.args[0])
        print(f"profile {args.args[0]!r} removed")
    elif args.action == "export":
        print(f"exported to {store.export(args.args[0], args.args[1])}")
    else:
        print(f"imported as {store.import_(args.args[0], args.args[1])}")
    return 0


def _add_adapt(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("adapt", help="adapt a profile to your own writing (text, Markdown, mbox, .eml)")
    p.add_argument("paths", nargs="+", help="files or folders of your writing")
    p.add_argument("--profile", required=True)
    p.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    p.add_argument("--profiles-dir", default=None)
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--lam", type=float, default=0.02, help="decay toward the starting weights per step")
    p.add_argument("--max-bits", type=float, default=6.0, help="drop messages above this many bits/char")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run")
    p.add_argument("--dry-run", action="store_true", help="read, filter and score only; change nothing")
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--no-ppm", action="store_true", help="leave the hybrid's PPM (ppm.safetensors) as it is")
    p.add_argument("--ppm-train", action="append", default=[], metavar="PATH",
                   help="PPM training text, when the profile has no PPM state yet (repeatable)")
    p.set_defaults(func=_cmd_adapt)


def _cmd_adapt(args: argparse.Namespace) -> int:
    import json
    import os

    import torch

    from dasher_rnn.adapt.corpus_adapt import CorpusAdaptConfig, Interrupted, adapt_to_corpus
    from dasher_rnn.adapt.profiles import ProfileError, ProfileStore
    from dasher_rnn.adapt.user_corpus import read_user_corpus
    from dasher_rnn.lm.model_io import WEIGHTS_FILE, load_model
    from dasher_rnn.lm.train import pick_device

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
    model, alphabet, config = load_model(args.model_dir)
    base_hash = config["files"][WEIGHTS_FILE]
    store = ProfileStore(args.profiles_dir)
    try:
        existing = store.load_into(args.profile, model, base_hash)
    except ProfileError as exc:
        raise ValueError(f"{exc}; `dasher-rnn profile reset {args.profile}` starts it afresh") from None
    if existing is not None:
        print(f"continuing profile {args.profile!r} ({existing.get('characters_adapted', 0):,} characters adapted)")
    cfg = CorpusAdaptConfig(epochs=args.epochs, lr=args.lr, lam=args.lam, max_bits=args.max_bits)
    try:
        report = adapt_to_corpus(model, alphabet, documents, store, args.profile, base_hash, cfg,
                                 pick_device(args.device), resume=args.resume, dry_run=args.dry_run,
                                 progress=not args.no_progress)
    except Interrupted as exc:
        print(str(exc), file=sys.stderr)
        return 130
    report["read"] = read_report.to_json()
    if not args.dry_run and not args.no_ppm:
        from dasher_rnn.adapt.hybrid_corpus import adapt_profile_ppm
        from dasher_rnn.factory import HYBRID_STATE_FILE, build_ppm
        from dasher_rnn.lm.hybrid import HYBRID_PPM_ORDER

        model.cpu().eval()
        chars, notice = adapt_profile_ppm(store.path(args.profile) / HYBRID_STATE_FILE,
                                          build_ppm(args.ppm_train, alphabet.name, max_order=HYBRID_PPM_ORDER)[0],
                                          model, alphabet, documents,
                                          progress=not args.no_progress)
        report["ppm"] = {"characters_learned": chars, "notice": notice}
    print(json.dumps(report, indent=1))
    if not args.dry_run and "held_out_bpc_after" in report:
        b, a = report["held_out_bpc_before"]["overall"], report["held_out_bpc_after"]["overall"]
        print(f"profile {args.profile!r}: held-out {b:.3f} -> {a:.3f} bits/char")
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


def _add_app(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("app", help="the writing window (also what `dasher-rnn` with no command opens)")
    _add_model_choice(p)
    p.add_argument("--settings", default=None, help="settings file (default: the user config folder)")
    p.set_defaults(func=_cmd_app)


def _cmd_app(args: argparse.Namespace) -> int:
    from dasher_rnn.ui.app import run_app

    return run_app(args.model, args.model_dir, args.profile, not args.no_adapt, args.ppm_train, args.settings)


def _add_simulate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="a simulated user writes phrases with the real zoom model, offscreen")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--text", action="append", help="a phrase to write (repeatable)")
    src.add_argument("--file", help="phrases, one per line")
    p.add_argument("--lines", type=int, default=0, help="only the first N phrases of --file")
    _add_model_choice(p)
    p.add_argument("--speed", type=float, default=1.5, help="maximum speed, bits/s")
    p.add_argument("--fps", type=float, default=60.0)
    p.add_argument("--max-seconds", type=float, default=120.0, help="give up on a phrase after this long")
    p.add_argument("--render", action="store_true", help="also paint every frame offscreen (Qt) and time it")
    p.add_argument("--backend", default="auto", help="RNN predictor backend: auto, onnx, torch, cuda")
    p.add_argument("--json", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cmd_simulate)


def _cmd_simulate(args: argparse.Namespace) -> int:
    import json

    from tqdm import tqdm

    from dasher_rnn.factory import build_source
    from dasher_rnn.normalise import normalise
    from dasher_rnn.textio import read_text
    from dasher_rnn.zoom.model import ZoomModel, ZoomSettings
    from dasher_rnn.zoom.simulate import simulate

    phrases = args.text or [line for line in read_text(args.file).splitlines() if line.strip()]
    phrases = [normalise(p) for p in phrases][: args.lines or None]
    source = build_source(args.model, model_dir=args.model_dir, ppm_train=args.ppm_train, adapt=not args.no_adapt,
                          profile=args.profile, backend=args.backend)
    try:
        outside = [p for p in phrases if any(ch not in source.alphabet for ch in p)]
        if outside:
            raise ValueError(f"{len(outside)} phrases have characters outside alphabet {source.alphabet.name!r}, "
                             f"e.g. {outside[0]!r}")
        zoom = ZoomModel(source, ZoomSettings(speed_bps=args.speed))
        render = None
        if args.render:
            from dasher_rnn.ui.offscreen import offscreen_renderer

            render = offscreen_renderer(source.alphabet)
        with tqdm(total=len(phrases), unit="phrase", disable=args.no_progress or args.json) as bar:
            result = simulate(zoom, phrases, fps=args.fps, max_seconds=args.max_seconds, render=render,
                              progress=bar.update)
        adaptation = source.session.stats() if getattr(source, "session", None) is not None else None
    finally:
        source.close()
    summary = {"model": args.model, "speed_bps": args.speed, "fps": args.fps, "rendered": args.render, **result.summary()}
    if adaptation is not None:
        summary["adaptation"] = {k: adaptation[k] for k in ("updates", "rollbacks", "committed")}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        for key, value in summary.items():
            print(f"{key:>16}: {value}")
    return 0


def _add_serve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="the predictor as a local HTTP JSON + WebSocket API for other frontends")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (anything but loopback needs a token)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--token", default=None, help="clients must send 'Authorization: Bearer TOKEN' "
                                                 "(default: $DASHER_RNN_TOKEN; required off loopback)")
    p.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    p.add_argument("--profiles-dir", default=None, help="profiles folder (default: $DASHER_RNN_PROFILES or the user data folder)")
    p.add_argument("--backend", default="auto", help="predictor backend of stateless requests and non-adapting "
                                                     "sessions: auto, onnx, torch, cuda (adapting sessions use torch)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads of the predictors")
    p.add_argument("--budget", type=int, default=3000, help="cached context states per session")
    p.add_argument("--ppm-train", action="append", default=[], metavar="PATH",
                   help="training text of hybrid sessions' PPM (repeatable; default: none, PPM learns the user's text)")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="a web origin (e.g. https://example.org) whose pages may use the API (repeatable); "
                        "loopback origins always may")
    p.add_argument("--max-body-bytes", type=int, default=256 * 1024, help="largest request body or WebSocket message")
    p.add_argument("--max-contexts", type=int, default=256, help="contexts in one request")
    p.add_argument("--max-sessions", type=int, default=8)
    p.add_argument("--max-handles", type=int, default=10_000, help="context handles one session holds")
    p.add_argument("--max-nodes", type=int, default=100_000, help="context-tree nodes one session holds")
    p.add_argument("--max-text", type=int, default=10_000, help="characters of a context text or a commit")
    p.add_argument("--max-symbols", type=int, default=64, help="symbols appended below a parent in one request")
    p.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"])
    p.set_defaults(func=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    import torch

    from dasher_rnn.api.server import ServerConfig, run_server
    from dasher_rnn.api.sessions import Limits

    limits = Limits(max_body_bytes=args.max_body_bytes, max_contexts=args.max_contexts, max_sessions=args.max_sessions,
                    max_handles=args.max_handles, max_nodes=args.max_nodes, max_text=args.max_text,
                    max_symbols=args.max_symbols)
    config = ServerConfig(args.model_dir, host=args.host, port=args.port, token=args.token,
                          profiles_dir=args.profiles_dir, backend=args.backend, threads=args.threads,
                          budget=args.budget, limits=limits, allow_origins=args.allow_origin,
                          log_level=args.log_level, ppm_train=args.ppm_train).checked()
    torch.set_num_threads(args.threads)
    print(f"dasher-rnn serve: http://{args.host}:{args.port}/v1 (schema at /docs), model {args.model_dir}", flush=True)
    run_server(config)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dasher-rnn", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    _add_train(sub)
    _add_eval(sub)
    _add_export_onnx(sub)
    _add_profile(sub)
    _add_adapt(sub)
    _add_app(sub)
    _add_simulate(sub)
    _add_serve(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from dasher_rnn.alphabet import AlphabetError
    from dasher_rnn.lm.model_io import ModelFileError
    from dasher_rnn.textio import TextFileError

    parser = build_parser()
    argv = list(argv if argv is not None else sys.argv[1:] or ["app"])
    args = parser.parse_args(argv)
    args.argv = argv
    try:
        return args.func(args)
    except (AlphabetError, ModelFileError, TextFileError, ValueError, OSError) as exc:  # ProfileError is a ValueError
        print(f"dasher-rnn {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
