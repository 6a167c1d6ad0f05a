"""`dasher-rnn` command line: the app (default) and the tools around it."""

from __future__ import annotations

import argparse
import sys
import warnings

from dasher_rnn import __version__
from dasher_rnn.cli import adapt, app, evaluate, export_onnx, languages, profile, serve, simulate, stats, train
from dasher_rnn.cli.options import ConfigDefault, Parser, resolve_defaults

__all__ = ["ConfigDefault", "build_parser", "main", "parse_args"]


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command. Building it imports no torch, Qt or FastAPI: each command imports what it needs
    when it runs."""
    parser = Parser(prog="dasher-rnn", description=__doc__)
    parser.add_argument("--version", action="version", version=f"dasher-rnn {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    for command in (train, evaluate, export_onnx, profile, stats, adapt, app, simulate, serve, languages):
        command.add_parser(sub)
    from dasher_rnn.desktop import add_parser as add_install_desktop

    add_install_desktop(sub)
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line parsed, with every default taken from its config dataclass."""
    return resolve_defaults(build_parser().parse_args(argv))


def main(argv: list[str] | None = None) -> int:
    """Run the command in ``argv`` (default: the process's arguments, or the app when there are none)."""
    from dasher_rnn.alphabet import AlphabetError
    from dasher_rnn.extras import TorchMissing
    from dasher_rnn.lm.model_io import ModelFileError
    from dasher_rnn.textio import TextFileError, TextNotice

    argv = list(argv if argv is not None else sys.argv[1:] or ["app"])
    try:
        args = parse_args(argv)
    except TorchMissing as exc:  # the defaults of a command of the ``train`` extra, without PyTorch
        print(f"dasher-rnn {argv[0]}: error: {exc}", file=sys.stderr)
        return 2
    args.argv = argv  # `train` writes the exact command into its checkpoint's README
    plain = warnings.formatwarning

    def one_line(message, category, *rest, **kw) -> str:  # noqa: ANN001 - warnings.formatwarning's signature
        if issubclass(category, TextNotice):  # a file's dropped bytes: one line, as the command's own notice
            return f"dasher-rnn {args.command}: notice: {message}\n"
        return plain(message, category, *rest, **kw)

    warnings.formatwarning = one_line  # the format only: a test's recording of warnings still records them
    try:
        return args.func(args)
    except (AlphabetError, ModelFileError, TextFileError, ValueError, OSError) as exc:  # ProfileError is a ValueError
        print(f"dasher-rnn {args.command}: error: {exc}", file=sys.stderr)
        return 2
    finally:
        warnings.formatwarning = plain
