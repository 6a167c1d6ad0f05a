"""What the commands share: lazy defaults from the config dataclasses, the help formatter and parser, `--version`,
the converters of option values, and the options that several commands take."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
from typing import Any, NoReturn

# the config dataclasses that commands fill, as "module:class" (read only when a default is needed)
TRAIN = "dasher_rnn.lm.train:TrainConfig"
RNN = "dasher_rnn.lm.rnn_config:RNNConfig"
DYNAMIC_EVAL = "dasher_rnn.adapt.evaluation:AdaptConfig"
CORPUS_ADAPT = "dasher_rnn.adapt.corpus_adapt:CorpusAdaptConfig"
LIMITS = "dasher_rnn.api.limits:Limits"
SERVER = "dasher_rnn.api.server:ServerConfig"
CONTROLLER = "dasher_rnn.zoom.controller:ControllerConfig"

PROFILES_DIR_HELP = "profiles folder (default: $DASHER_RNN_PROFILES or the user data folder)"


class ConfigDefault:
    """An option's default read from a field of the config dataclass that the command fills, so that the two
    cannot disagree. Looked up only when needed (the help, or the command runs): several of those dataclasses
    live in modules that import torch, which most commands never need."""

    def __init__(self, config: str, name: str) -> None:
        self.config, self.name = config, name

    @functools.cached_property
    def value(self) -> Any:
        module, cls = self.config.split(":")
        try:
            found = importlib.import_module(module)
        except ImportError:  # a command of the ``train`` extra where PyTorch is not installed: say which extra
            from dasher_rnn.extras import require_torch

            require_torch("this command")
            raise
        field = {f.name: f for f in dataclasses.fields(getattr(found, cls))}[self.name]
        return field.default_factory() if field.default is dataclasses.MISSING else field.default

    def __str__(self) -> str:  # the help's "(default: ...)"
        return str(self.value)

    def __repr__(self) -> str:
        return f"ConfigDefault({self.config!r}, {self.name!r})"


def config_default(config: str, name: str) -> ConfigDefault:
    """The default of field ``name`` of ``config`` (one of the "module:class" names above), looked up when needed."""
    return ConfigDefault(config, name)


def resolve_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with every ConfigDefault replaced by its value."""
    for name, value in vars(args).items():
        if isinstance(value, ConfigDefault):
            setattr(args, name, value.value)
    return args


class HelpFormatter(argparse.HelpFormatter):
    """Each option's help ends with its default, unless the help already speaks of it or there is none to show."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("default" in text.lower() or default is None or default == [] or default is argparse.SUPPRESS or
                action.nargs == 0 or not (action.option_strings or action.nargs in ("?", "*"))):  # nargs 0: a flag
            return text
        return text + " (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """An argument parser with the help formatter above."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """A mistake on the command line in one line, and where the options are (not a screen of usage above it)."""
        self.exit(2, f"{self.prog}: error: {message}; --help lists the options\n")


def port(text: str) -> int:
    """A UDP port number."""
    value = int(text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a UDP port is from 1 to 65535, not {value}")
    return value


def positive_int(text: str) -> int:
    """A whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"at least 1, not {value}")
    return value


def socket_label(text: str) -> str:
    """A label of Dasher's socket input."""
    from dasher_rnn.input.dasher_socket import check_label

    try:
        return check_label(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def input_token(text: str) -> str:
    """The input token that gaze and socket datagrams must carry ("" for none)."""
    from dasher_rnn.input.udp import check_token

    if text == "":
        return text
    try:
        return check_token(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


SECRET_FILE_BYTES = 4096  # a token file is read this far at most (a FIFO or /dev/zero is not waited for forever)


def secret_file(text: str) -> str:
    """The secret (a token) in the file at ``text``: its first line, without the white space around it. A token
    given on the command line can be read by every local user (``ps``, ``/proc/PID/cmdline``); a file that only its
    owner may read cannot. Says so on stderr when others may read the file."""
    import os
    import stat
    import sys

    try:
        fd = os.open(text, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise argparse.ArgumentTypeError(f"{text}: not a regular file")
            data = os.read(fd, SECRET_FILE_BYTES + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read the token file {text}: {exc.strerror or exc}") from None
    if len(data) > SECRET_FILE_BYTES:
        raise argparse.ArgumentTypeError(f"{text}: over {SECRET_FILE_BYTES} bytes; a token file holds one line")
    try:
        lines = data.decode("utf-8").strip().splitlines()
    except UnicodeDecodeError:
        raise argparse.ArgumentTypeError(f"{text}: not UTF-8 text") from None
    if not lines or not lines[0].strip():
        raise argparse.ArgumentTypeError(f"{text}: empty; write the token on its first line")
    if info.st_mode & 0o077 and os.name == "posix":
        print(f"dasher-rnn: warning: {text} may be read by other users (mode {stat.S_IMODE(info.st_mode):o}); "
              f"chmod 600 it", file=sys.stderr)
    return lines[0].strip()


def input_token_file(text: str) -> str:
    """The input token in the file at ``text`` (``secret_file``), checked as ``input_token`` checks one."""
    return input_token(secret_file(text)) or ""


def warn_secret_on_command_line(option: str, instead: str) -> None:
    """Say on stderr that ``option`` put a secret where every local user can read it, and what to use ``instead``."""
    import sys

    print(f"dasher-rnn: warning: {option} can be read by every local user in the process list (ps, "
          f"/proc/PID/cmdline); give it with {instead} instead", file=sys.stderr)


def size(text: str) -> tuple[int, int]:
    """A picture's WIDTHxHEIGHT in pixels."""
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not WIDTHxHEIGHT (e.g. 1200x800)") from None
    if not (200 <= width <= 8000 and 150 <= height <= 8000):
        raise argparse.ArgumentTypeError(f"{text!r}: width 200 to 8000, height 150 to 8000 pixels")
    return width, height


def add_profiles_dir(p: argparse.ArgumentParser) -> None:
    """``--profiles-dir``, for the commands that read or write profiles."""
    p.add_argument("--profiles-dir", default=None, help=PROFILES_DIR_HELP)


def nearest_languages(text: str, n: int = 5) -> list[str]:
    """The codes closest to ``text``: by the code's spelling, then by the language's English name ("German": de)."""
    import difflib

    from dasher_rnn.cldr import entries

    known = entries()
    want = text.strip().replace("_", "-").lower()
    by_name = {entry.name.lower(): code for code, entry in known.items()}
    codes = difflib.get_close_matches(want, [c.lower() for c in known], n=n, cutoff=0.5)
    names = difflib.get_close_matches(want, list(by_name), n=n, cutoff=0.6)
    lower = {c.lower(): c for c in known}
    by_code, by_names = [lower[c] for c in codes], [by_name[name] for name in names]
    found = by_names + by_code if len(want) > 3 else by_code + by_names  # a word is a name, not a code
    return list(dict.fromkeys(found))[:n]


def language_code(text: str) -> str:
    """A language ``--language`` takes (``de``, ``DE``, ``pt_BR``, ``sr-latn``): its code; otherwise one line that
    names the nearest codes, before any work starts."""
    from dasher_rnn.cldr import find_language

    found = find_language(text)
    if found is not None:
        return found
    near = nearest_languages(text)
    hint = f"; nearest: {', '.join(near)}" if near else ""
    raise argparse.ArgumentTypeError(f"unknown language {text!r}{hint} (`dasher-rnn languages` lists them all)")


def add_language(p: argparse.ArgumentParser) -> None:
    p.add_argument("--language", default=None, metavar="CODE", type=language_code,
                   help="the language written (de, fr, ar...: `dasher-rnn languages` lists them): its alphabet, and the "
                        "RNN that writes it where one ships, else PPM alone (default: English)")


def add_model_choice(p: argparse.ArgumentParser) -> None:
    """The predictor options shared by the app and the simulator."""
    p.add_argument("--model", default="hybrid", choices=["hybrid", "rnn", "ppm", "uniform"],
                   help="hybrid (default): the adapting RNN mixed with an adaptive PPM; rnn or ppm alone; uniform")
    p.add_argument("--model-dir", default=None, help="RNN model folder (default: the shipped one for the language)")
    add_language(p)
    p.add_argument("--ppm-train", action="append", default=[], metavar="PATH",
                   help="PPM training text file or folder (repeatable)")
    p.add_argument("--profile", default=None, help="adaptation profile to load and save")
    p.add_argument("--no-adapt", action="store_true", help="do not learn from committed text")
