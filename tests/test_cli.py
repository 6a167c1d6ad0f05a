"""The command line's options: every one explained, defaults taken from the config dataclasses the commands fill."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from dasher_rnn.adapt.corpus_adapt import CorpusAdaptConfig
from dasher_rnn.adapt.dynamic_eval import AdaptConfig
from dasher_rnn.api.limits import Limits
from dasher_rnn.api.server import ServerConfig
from dasher_rnn.cli import ConfigDefault, build_parser, parse_args
from dasher_rnn.lm.train import TrainConfig
from dasher_rnn.zoom.controller import ControllerConfig


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_option_of_every_command_has_a_help_text(name):
    parser = subcommands()[name]
    missing = [a.option_strings[0] if a.option_strings else a.dest for a in parser._actions if not (a.help or "").strip()]
    assert not missing, f"dasher-rnn {name}: no help for {', '.join(missing)}"
    text = parser.format_help()  # the lazy defaults are looked up and shown
    assert "ConfigDefault(" not in text


def test_the_help_shows_the_defaults_of_the_config_dataclasses():
    commands = subcommands()
    train, serve = commands["train"].format_help(), commands["serve"].format_help()
    assert f"(default: {TrainConfig().warmup})" in train and f"(default: {TrainConfig().lr})" in train
    assert f"(default: {Limits().max_body_bytes})" in " ".join(serve.split())
    evaluate = commands["eval"].format_help()
    for text in (train, serve, evaluate):  # flags and unset options say nothing
        assert "(default: False)" not in text and "(default: True)" not in text and "(default: None)" not in text


def test_defaults_come_from_the_config_dataclasses():
    train = parse_args(["train", "--out", "run"])
    tc = TrainConfig()
    for name in ("steps", "batch_size", "seq_len", "lr", "warmup", "decay_frac", "weight_decay", "clip", "eval_every",
                 "checkpoint_every", "val_chars", "seed"):
        assert getattr(train, name) == getattr(tc, name), name
    evaluate = parse_args(["eval", "phrases.txt"])
    ac = AdaptConfig()
    assert (evaluate.rule, evaluate.lam, evaluate.segment, evaluate.units, evaluate.method) == \
        (ac.rule, ac.lam, ac.segment, ac.units, ac.method)
    adapt = parse_args(["adapt", "mail", "--profile", "me"])
    cc = CorpusAdaptConfig()
    assert (adapt.epochs, adapt.lr, adapt.lam, adapt.max_bits) == (cc.epochs, cc.lr, cc.lam, cc.max_bits)
    serve = parse_args(["serve"])
    limits = Limits(**{name: getattr(serve, name) for name in Limits().to_json()})
    assert limits == Limits()
    sc = ServerConfig("unused")
    assert (serve.host, serve.port, serve.backend, serve.budget, serve.log_level) == \
        (sc.host, sc.port, sc.backend, sc.budget, sc.log_level)
    assert parse_args(["simulate", "--text", "hi"]).speed == ControllerConfig().speed_bps
    assert not any(isinstance(v, ConfigDefault) for args in (train, evaluate, adapt, serve) for v in vars(args).values())


def test_given_values_still_win_and_are_converted():
    args = parse_args(["train", "--out", "run", "--steps", "12", "--lr", "0.5"])
    assert (args.steps, args.lr) == (12, 0.5)
    assert parse_args(["serve", "--max-sessions", "3"]).max_sessions == 3


def test_the_cli_imports_no_torch_until_a_command_needs_it():
    code = ("import sys; from dasher_rnn.cli import build_parser, parse_args; build_parser(); "
            "parse_args(['profile', 'list']); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_version_prints_the_package_version(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_:
        parse_args(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"dasher-rnn {version('dasher-rnn')}\n"
