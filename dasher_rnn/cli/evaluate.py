"""`dasher-rnn eval`: bits per character of a model, or of a profile, on phrase files."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from dasher_rnn.cli.options import DYNAMIC_EVAL, add_language, add_profiles_dir, config_default

if TYPE_CHECKING:
    from dasher_rnn.adapt.compose import WriterConfig
    from dasher_rnn.adapt.writer import Writer


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="bits per character of a model on phrase files (one message per line)")
    p.add_argument("files", nargs="+", help="phrase files, one message per line")
    p.add_argument("--model", default="rnn", choices=["rnn", "ppm", "hybrid", "uniform"], help="which model to score")
    p.add_argument("--model-dir", default=None, help="RNN model directory (default: the shipped one for the language)")
    add_language(p)
    p.add_argument("--train", action="append", default=[], metavar="PATH",
                   help="PPM (or the hybrid's PPM) training text file or folder (repeatable)")
    p.add_argument("--alphabet", default=None, help="alphabet (PPM; default english; the RNN uses its own)")
    p.add_argument("--floor", type=float, default=0.05, help="uniform floor mass (Dasher: 0.05; 0: exact probabilities)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--adaptive", dest="adaptive", action="store_true", default=None, help="learn each message after scoring")
    mode.add_argument("--static", dest="adaptive", action="store_false", help="never learn")
    p.add_argument("--zero-state", action="store_true", help="RNN: start messages from a zero state, not the learned one")
    p.add_argument("--rule", default=config_default(DYNAMIC_EVAL, "rule"), choices=["sgd", "rms", "rms-rms"],
                   help="RNN adaptive: dynamic-evaluation rule")
    p.add_argument("--eta", type=float, default=None, help="RNN adaptive: step size (default: the rule's tuned default)")
    p.add_argument("--lam", type=float, default=config_default(DYNAMIC_EVAL, "lam"), help="RNN adaptive: decay toward the "
                   "base weights")
    p.add_argument("--segment", type=int, default=config_default(DYNAMIC_EVAL, "segment"),
                   help="RNN adaptive: characters per update")
    p.add_argument("--method", default=config_default(DYNAMIC_EVAL, "method"), choices=["full", "sparse", "lhuc"],
                   help="RNN adaptive: adapt every weight, or only a sparse / LHUC adapter on the hidden state")
    p.add_argument("--no-feed", dest="feed", action="store_false",
                   help="RNN adaptive, sparse or lhuc: the modified state reaches only the head, not the recurrence")
    p.add_argument("--units", type=int, default=config_default(DYNAMIC_EVAL, "units"),
                   help="RNN adaptive, sparse: hidden units the adapter mixes")
    p.add_argument("--profile", default=None, help="score what this user's profile predicts (RNN weights, PPM and "
                                                   "mixing weights, as the app loads them; never saved)")
    add_profiles_dir(p)
    p.add_argument("--backend", default="auto", help="RNN predictor backend: auto, onnx, torch, cuda")
    p.add_argument("--threads", type=int, default=1, help="CPU threads of the predictor")
    p.add_argument("--replace-errors", action="store_true", help="decode invalid UTF-8 with replacement characters")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress on stderr (a bar on a terminal, else a "
                                                              "line every few seconds)")
    p.add_argument("--symbols", default=None, metavar="SET",
                   help="score over this symbol set with renormalised distributions: 'peer' (a-z, apostrophe, "
                        "space, as TextSlinger scores COMM-letter; use with --floor 0) or the characters themselves")
    p.add_argument("--fold-case", action="store_true",
                   help="with --symbols: score as a speller with one case of letters (the BciPy adapter's fold mode, "
                        "TextSlinger's LLM figures): the context in sentence case, a letter's probability the sum of "
                        "both its cases")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    import sys
    import warnings

    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.adapt.evaluation import AdaptConfig, default_eta
    from dasher_rnn.adapt.profiles import ProfileStore
    from dasher_rnn.evaluate import evaluate_files, format_report
    from dasher_rnn.extras import set_torch_threads
    from dasher_rnn.textio import read_text

    if args.fold_case and args.symbols is None:
        raise ValueError("--fold-case needs --symbols (e.g. --symbols peer)")
    if args.profile is not None and not ProfileStore(args.profiles_dir).exists(args.profile):
        raise ValueError(f"no profile named {args.profile!r} (`dasher-rnn profile list` shows them)")
    with warnings.catch_warnings():  # the phrase files before the model loads: a missing one is said at once
        warnings.simplefilter("ignore")  # (replaced bytes are said when they are read for scoring)
        for path in args.files:
            read_text(path, replace_errors=args.replace_errors)
    if not args.no_progress:
        print(f"dasher-rnn eval: loading the {args.model} model...", file=sys.stderr, flush=True)
    adaptive = args.adaptive if args.adaptive is not None else args.model in ("ppm", "hybrid")
    eta = args.eta if args.eta is not None else default_eta(args.rule)
    config = WriterConfig(
        model=args.model, model_dir=args.model_dir, profile=args.profile, profiles_dir=args.profiles_dir,
        adapt=adaptive, adaptation=AdaptConfig(rule=args.rule, eta=eta, lam=args.lam, segment=args.segment,
                                               method=args.method, feed=args.feed, units=args.units),
        ppm_train=tuple(args.train), alphabet=args.alphabet, language=args.language, backend=args.backend,
        threads=args.threads,
        zero_state=args.zero_state, floor=args.floor, replace_errors=args.replace_errors, read_only=True)
    first = build_writer(config)  # the model folder and PPM's training text are read once
    set_torch_threads(args.threads)  # where torch serves or adapts (onnxruntime takes ``threads`` itself)
    description = first.description
    trained_ppm = first.mixer.ppm.fork() if first.mixer is not None and not args.profile else None
    writers = iter([first])
    report = evaluate_files(lambda: next(writers, None) or build_writer(config, trained_ppm=trained_ppm), args.files,
                            adaptive=adaptive, floor=args.floor, replace_errors=args.replace_errors,
                            progress=not args.no_progress, symbols=args.symbols,
                            fold_case=args.fold_case)
    model, mode = model_and_mode(first, config, adaptive)
    report["settings"] = {"model": description, "mode": mode, "adaptive": adaptive, "floor": args.floor,
                          "symbols": args.symbols, "fold_case": args.fold_case}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        overall = report["overall"]
        print(f"{overall['bits_per_char']:.3f} bits/char over {overall['chars']:,} characters of "
              f"{len(report['files'])} {'file' if len(report['files']) == 1 else 'files'}")
        print(f"model: {model}")
        print(f"mode: {mode}; floor {args.floor}" + (f"; symbols {args.symbols!r}" if args.symbols else "")
              + ("; case folded" if args.fold_case else ""))
        print(format_report(report))
    return 0


def model_and_mode(writer: Writer, config: WriterConfig, adaptive: bool) -> tuple[str, str]:
    """(what is scored, whether and how it learns while scored), each said once. The Writer's description names the
    RNN's learning inside the model's words ("..., static", "..., dynamic evaluation ..."); here that goes into the
    mode, which ``adaptive`` decides for every learner."""
    from dasher_rnn.adapt.compose import _describe_adaptation

    model = writer.description
    how = ""
    if writer.model in ("rnn", "hybrid"):
        session = writer.session
        rnn_part = ", static" if session is None else f", {_describe_adaptation(config.adaptation)}" + (
            " in numpy" if session.engine == "numpy" else "")
        if rnn_part in model:
            model = model.replace(rnn_part, "", 1)
            how = rnn_part[2:] if session is not None else ""
    if not adaptive:
        return model, "static (nothing is learned while scoring)"
    rnn = f"the RNN ({how})" if how else "the RNN"
    learners = {"rnn": [rnn], "ppm": ["PPM"], "hybrid": [rnn, "PPM and the mixing weights"]}.get(writer.model, [])
    if not learners:  # uniform: nothing to learn
        return model, "adaptive (nothing here learns)"
    return model, f"adaptive (each message learned after it is scored: {', '.join(learners)})"
