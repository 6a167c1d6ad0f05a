"""`dasher-rnn simulate`: a simulated user writes phrases with the real zoom model, offscreen."""

from __future__ import annotations

import argparse

from dasher_rnn.cli.options import CONTROLLER, add_model_choice, config_default


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="a simulated user writes phrases with the real zoom model, offscreen")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--text", action="append", help="a phrase to write (repeatable)")
    src.add_argument("--file", help="phrases, one per line")
    p.add_argument("--lines", type=int, default=0, help="only the first N phrases of --file")
    add_model_choice(p)
    p.add_argument("--speed", type=float, default=config_default(CONTROLLER, "speed_bps"), help="maximum speed, bits/s")
    p.add_argument("--fps", type=float, default=60.0, help="simulated frames per second")
    p.add_argument("--max-seconds", type=float, default=120.0, help="give up on a phrase after this long")
    p.add_argument("--render", action="store_true", help="also paint every frame offscreen (Qt) and time it")
    p.add_argument("--control", action="store_true",
                   help="control mode: a control box after the letters of every box (on by itself when a phrase names "
                        "an action in braces, e.g. 'I want tea{delete-word}coffee'); the summary gives its cost")
    p.add_argument("--backend", default="auto", help="RNN predictor backend: auto, onnx, torch, cuda")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
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
    writer = build_writer(WriterConfig(model=args.model, model_dir=args.model_dir, ppm_train=tuple(args.ppm_train),
                                       language=args.language, adapt=not args.no_adapt, profile=args.profile,
                                       backend=args.backend))
    source = WriterSource(writer)
    try:
        phrases = [normalise(p, writer.alphabet) for p in phrases][: args.lines or None]
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
