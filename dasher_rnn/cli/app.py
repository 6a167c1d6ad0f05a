"""`dasher-rnn app`: the writing window (what `dasher-rnn` with no command opens)."""

from __future__ import annotations

import argparse
import os
import sys

from dasher_rnn.cli.options import (
    add_model_choice,
    input_token,
    input_token_file,
    port,
    socket_label,
    warn_secret_on_command_line,
)

INPUT_TOKEN_ENV = "DASHER_RNN_INPUT_TOKEN"  # the input token, kept out of the command line


def add_parser(sub: argparse._SubParsersAction) -> None:
    from dasher_rnn.input.presets import PRESETS
    from dasher_rnn.input.registry import INPUTS
    from dasher_rnn.input.switches import SWITCH_SOURCES
    from dasher_rnn.settings import OUTPUTS

    p = sub.add_parser("app", help="the writing window (also what `dasher-rnn` with no command opens)")
    add_model_choice(p)
    p.add_argument("--settings", default=None, help="settings file (default: the user config folder)")
    inputs = p.add_argument_group("input", "what moves the pointer; these set the preferences of the same names, "
                                           "which are remembered as if chosen in the window")
    inputs.add_argument("--input", choices=INPUTS,
                        help="; ".join(f"{name}: {kind.about}" for name, kind in INPUTS.items()))
    inputs.add_argument("--preset", choices=PRESETS,
                        help="the input preset (speeds, dwell or click to start, the control box, full screen), kept "
                             "for this input; by default each input brings its own: "
                             + ", ".join(f"{name}: {kind.preset}" for name, kind in INPUTS.items()))
    inputs.add_argument("--gaze-port", type=port, help="UDP port of the gaze-udp input (default 5577)")
    inputs.add_argument("--socket-port", type=port, help="UDP port of the dasher-socket input (default 20320)")
    inputs.add_argument("--socket-x-label", type=socket_label, metavar="LABEL",
                        help="dasher-socket: label of the lines carrying x (default: x)")
    inputs.add_argument("--socket-y-label", type=socket_label, metavar="LABEL",
                        help="dasher-socket: label of the lines carrying y (default: y)")
    inputs.add_argument("--socket-x-range", type=float, nargs=2, metavar=("MIN", "MAX"),
                        help="dasher-socket: x values at the left and right edges of the writing area (default: 0 1)")
    inputs.add_argument("--socket-y-range", type=float, nargs=2, metavar=("MIN", "MAX"),
                        help="dasher-socket: y values at the top and bottom edges of the writing area (default: 0 1)")
    secret = inputs.add_mutually_exclusive_group()
    secret.add_argument("--input-token-file", type=input_token_file, metavar="PATH",
                        help="gaze-udp and dasher-socket: count only datagrams that carry this shared secret, the "
                             'first line of this file (a "token" key in gaze JSON, a line "token TOKEN" in socket '
                             "input), so that no other program on this machine can steer or type (chmod 600 it; "
                             f"default: ${INPUT_TOKEN_ENV}, else the preference)")
    secret.add_argument("--input-token", type=input_token, metavar="TOKEN",
                        help='the input token itself; "" accepts every local sender again (the default, as Dasher '
                             "does). Every local user can read it in the process list: prefer --input-token-file or "
                             f"${INPUT_TOKEN_ENV}")
    inputs.add_argument("--gazepoint-host", metavar="HOST", help="gazepoint: where Gazepoint Control runs (default 127.0.0.1)")
    inputs.add_argument("--gazepoint-port", type=port, help="gazepoint: its Open Gaze API port (default 4242)")
    inputs.add_argument("--optikey-port", type=port, help="optikey: UDP port of OptiKey-format gaze (default 6666)")
    inputs.add_argument("--pupil-host", metavar="HOST", help="pupil: where Pupil Capture runs (default 127.0.0.1)")
    inputs.add_argument("--pupil-port", type=port, help="pupil: Pupil Remote's port (default 50020)")
    inputs.add_argument("--pupil-surface", metavar="NAME", help="pupil: the Surface Tracker's surface on the screen "
                                                                "(default: screen)")
    inputs.add_argument("--webcam-camera", metavar="CAMERA", help="head-pointer: the camera, an index or a device "
                                                                  "path (default 0)")
    inputs.add_argument("--switch-source", choices=SWITCH_SOURCES,
                        help="the switch inputs: where presses come from besides Space, Enter and the mouse buttons "
                             "(keys: nothing else; controller: a game controller; socket: the switch socket)")
    inputs.add_argument("--switch-device", metavar="PATH", help="switch-source controller: its device (default "
                                                                 "/dev/input/js0)")
    inputs.add_argument("--switch-port", type=port, help="switch-source socket: its UDP port (default 5578)")
    inputs.add_argument("--scan-time", dest="scan_s", type=float, metavar="SECONDS",
                        help="scanning: how long each box is highlighted (default 1)")
    p.add_argument("--output", choices=OUTPUTS,
                   help="direct: also type what you write into the program that has the keyboard focus (this window "
                        "stays on top without taking the focus); panel: only this window. Remembered, as the Output menu")
    p.add_argument("--exit-after-first-frame", action="store_true",
                   help='a check that the app works: print "first frame" once the window has painted its first boxes '
                        "of predictions, then close it (the tutorial of a first start is not opened)")
    p.set_defaults(func=run)


INPUT_PREFS = ("input", "preset", "gaze_port", "socket_port", "socket_x_label", "socket_y_label", "input_token",
               "gazepoint_host", "gazepoint_port", "optikey_port", "pupil_host", "pupil_port", "pupil_surface",
               "webcam_camera", "switch_source", "switch_device", "switch_port", "scan_s")


def _app_input_prefs(args: argparse.Namespace) -> dict[str, object]:
    """The input preferences given on the command line, checked as the preferences check them (ValueError saying
    which is unusable)."""
    from pydantic import ValidationError

    from dasher_rnn.input.dasher_socket import check_range
    from dasher_rnn.settings import Preferences

    prefs: dict[str, object] = {name: getattr(args, name) for name in INPUT_PREFS if getattr(args, name) is not None}
    if args.input_token:
        warn_secret_on_command_line("--input-token", f"--input-token-file or ${INPUT_TOKEN_ENV}")
    if args.input_token_file is not None:
        prefs["input_token"] = args.input_token_file
    elif args.input_token is None and os.environ.get(INPUT_TOKEN_ENV):
        prefs["input_token"] = os.environ[INPUT_TOKEN_ENV]  # checked with the rest below
    for axis in ("x", "y"):
        given = getattr(args, f"socket_{axis}_range")
        if given is not None:
            prefs[f"socket_{axis}_min"], prefs[f"socket_{axis}_max"] = check_range(*given, axis=axis)
    try:
        Preferences().updated(**prefs)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else "a preference"
        flag = "scan-time" if name == "scan_s" else name.replace("_", "-")
        raise ValueError(f"--{flag}: {error['msg'].removeprefix('Value error, ')}") from None
    return prefs


def run(args: argparse.Namespace) -> int:
    from dasher_rnn.ui.preflight import app_problem

    overrides = _app_input_prefs(args)  # a bad option is said first, display or not
    problem = app_problem()  # before Qt, which would abort (exit 134) without a display or its libraries
    if problem is not None:
        print(f"dasher-rnn: {problem}", file=sys.stderr)
        return 1
    if args.output is not None:
        overrides["output"] = args.output
    if args.language is not None:
        overrides["language"] = args.language
    from dasher_rnn.ui.app import run_app

    return run_app(args.model, args.model_dir, args.profile, not args.no_adapt, args.ppm_train, args.settings,
                   prefs_overrides=overrides, exit_after_first_frame=args.exit_after_first_frame)
