"""`dasher-rnn simulate`: a simulated user writes phrases with the real zoom model, offscreen."""

from __future__ import annotations

import argparse

from dasher_rnn.cli.options import CONTROLLER, add_model_choice, config_default

# the switch modes' names, listed here so that the parser needs no import (dasher_rnn.zoom.switch_modes.SWITCH_MODES;
# a test checks that they agree)
SWITCH_MODE_NAMES = ("one-button", "two-button", "scanning", "step-scan")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="a simulated user writes phrases with the real zoom model, offscreen")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--text", action="append", help="a phrase to write (repeatable)")
    src.add_argument("--file", help="phrases, one per line")
    p.add_argument("--lines", type=int, default=0, help="only the first N phrases of --file")
    add_model_choice(p)
    p.add_argument("--speed", type=float, default=config_default(CONTROLLER, "speed_bps"), help="maximum speed, bits/s")
    p.add_argument("--fps", type=float, default=60.0, help="simulated frames per second")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="give up on a phrase after this long (default: 120, or 600 with a switch --input)")
    p.add_argument("--input", default="pointer", choices=["pointer", "gaze", *SWITCH_MODE_NAMES],
                   help="how the simulated user steers: a pointer; a gaze, through the eye-tracker preset (it looks at "
                        "and pursues the boxes it wants; a dwell starts it); or switches through one of Dasher's button "
                        "modes (one-button, two-button: dynamic; scanning, step-scan: boxes highlighted in turn)")
    p.add_argument("--reaction-ms", type=float, default=250.0, help="switch user: mean reaction time, ms")
    p.add_argument("--reaction-sd-ms", type=float, default=50.0, help="switch user: its standard deviation, ms")
    p.add_argument("--scan-time", type=float, default=1.0, help="scanning: seconds each box is highlighted")
    p.add_argument("--pause", type=float, default=0.0, metavar="SECONDS",
                   help="switch user: after each phrase, press nothing this long without stopping first; the summary "
                        "says what the pauses changed (nothing, if writing stops by itself)")
    p.add_argument("--grade", default="consumer", choices=["research", "consumer", "poor", "perfect"],
                   help="gaze user: the tracker's grade (zoom/gaze_noise.py: accuracy, precision, rate, losses)")
    p.add_argument("--seed", type=int, default=0, help="switch and gaze users: seed of their timing and tracker noise")
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

    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.normalise import normalise
    from dasher_rnn.progress_bar import progress_bar
    from dasher_rnn.textio import read_text
    from dasher_rnn.zoom.boxes import ZoomSettings
    from dasher_rnn.zoom.control import Action
    from dasher_rnn.zoom.model import ZoomModel
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
        render = None
        if args.render:
            from dasher_rnn.ui.offscreen import offscreen_renderer

            render = offscreen_renderer(source.alphabet)
        switch = args.input not in ("pointer", "gaze")
        max_seconds = args.max_seconds if args.max_seconds is not None else 600.0 if switch else 120.0
        # the bar goes to stderr, --json or not (a line every few seconds where stderr is no terminal), so that
        # `simulate --file ... --json` is not silent for minutes; stdout holds the summary alone
        with progress_bar(not args.no_progress, total=len(phrases), unit="phrase") as bar:
            if switch:
                from dasher_rnn.zoom.controller import ControllerConfig, WritingController
                from dasher_rnn.zoom.switch_modes import switch_mode
                from dasher_rnn.zoom.switch_user import SwitchUserConfig, simulate_switch
                from dasher_rnn.zoom.switching import SwitchConfig

                controller = WritingController(source, ControllerConfig(speed_bps=args.speed, auto_speed=False,
                                                                        control_mode=control))
                controller.set_switch_mode(switch_mode(args.input, SwitchConfig(scan_s=args.scan_time)))
                user = SwitchUserConfig(reaction_s=args.reaction_ms / 1000, reaction_sd=args.reaction_sd_ms / 1000,
                                        pause_s=args.pause, seed=args.seed)
                result = simulate_switch(controller, phrases, fps=args.fps, max_seconds=max_seconds, user=user,
                                         render=render, progress=bar.update)
            elif args.input == "gaze":
                from dasher_rnn.zoom.controller import ControllerConfig, WritingController
                from dasher_rnn.zoom.gaze_user import GazeUserConfig, simulate_gaze

                controller = WritingController(source, ControllerConfig(speed_bps=args.speed, auto_speed=False,
                                                                        preset="eye-tracker", control_mode=control))
                result, _ = simulate_gaze(controller, phrases, fps=args.fps, max_seconds=max_seconds,
                                          user=GazeUserConfig(grade=args.grade, seed=args.seed), render=render,
                                          progress=bar.update)
            else:
                zoom = ZoomModel(source, ZoomSettings(speed_bps=args.speed, control=control))
                result = simulate(zoom, phrases, fps=args.fps, max_seconds=max_seconds, render=render,
                                  progress=bar.update)
        status = writer.status()
    finally:
        source.close()
    summary = {"model": args.model, "input": args.input, "speed_bps": args.speed, "fps": args.fps,
               "rendered": args.render, "control_mode": control, **result.summary()}
    if "rnn" in status.learns:
        summary["adaptation"] = {"updates": status.updates, "rollbacks": status.rollbacks, "committed": status.committed}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        for key, value in summary.items():
            print(f"{key:>16}: {value}")
    return 0
