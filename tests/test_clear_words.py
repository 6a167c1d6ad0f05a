"""Issue 35, part 7, "Clear words": what the commands and the window say is what happened, each thing said once
and by one name: `adapt`'s summary per learner, `eval`'s model and mode, the settings' model, where `stats` writes,
`profile import` over an existing profile, Help, and the Profile dialog after writing."""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

from dasher_rnn.cli import main


@pytest.fixture
def phrases(tmp_path):
    path = tmp_path / "phrases.txt"
    path.write_text("I would like a cup of tea\nthank you very much\nsee you tomorrow\n", encoding="utf-8")
    return path


def _header(out: str) -> list[str]:
    """The lines above the table of `eval`'s report."""
    lines = out.splitlines()
    return lines[: next(i for i, line in enumerate(lines) if line.startswith("file"))]


@pytest.mark.parametrize(("options", "mode"), [
    ([], "static"),                                # the shipped RNN, static: it used to say "static, static"
    (["--model", "hybrid", "--static"], "static"),  # "..., static mixed with PPM ..., static"
    (["--model", "ppm"], "adaptive"),
    (["--model", "ppm", "--static"], "static"),
])
def test_eval_names_the_model_and_the_mode_once(options, mode, phrases, capsys):
    assert main(["eval", *options, str(phrases)]) == 0
    header = _header(capsys.readouterr().out)
    text = "\n".join(header)
    assert [line.split(":")[0] for line in header] == ["model", "mode"]
    assert header[1].startswith(f"mode: {mode} ") and "floor 0.05" in header[1]
    assert text.count("static") == (mode == "static") and text.count("adaptive") == (mode == "adaptive")
    assert "static" not in header[0] and "dynamic evaluation" not in header[0]
    if "--model" in options:
        assert header[0].startswith("model: " + ("RNN" if "hybrid" in options else "PPM"))


def test_eval_says_how_the_rnn_learns_in_the_mode_only(phrases, capsys):
    assert main(["eval", "--adaptive", str(phrases)]) == 0
    model, mode = _header(capsys.readouterr().out)
    assert model.startswith("model: RNN") and "dynamic evaluation" not in model
    assert mode.startswith("mode: adaptive (each message learned after it is scored: the RNN (dynamic evaluation")
