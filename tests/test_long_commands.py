"""Long commands are never silent and fail at once (issue 51): progress on stderr (a bar on a terminal, a line every
few seconds elsewhere), input files checked before any work, the summary before the detail."""

from __future__ import annotations

import io

import pytest

from dasher_rnn.cli import main
from dasher_rnn.progress_bar import progress_bar


def test_off_a_terminal_progress_is_a_line_of_its_own():
    stream = io.StringIO()  # a log file or a pipe: no terminal
    with progress_bar(stream=stream, total=3, unit="msg", desc="eval") as bar:
        bar.update(3)
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and lines and all(line.startswith("eval:") for line in lines)
    assert "0/3" in lines[0]
    quiet = io.StringIO()
    with progress_bar(False, stream=quiet, total=3) as bar:
        bar.update(3)
    assert quiet.getvalue() == ""


@pytest.fixture
def phrases(tmp_path):
    path = tmp_path / "phrases.txt"
    path.write_text("I want some tea.\nHello there.\nThank you.\n", encoding="utf-8")
    return path


def test_eval_says_a_missing_file_before_loading_any_model(phrases, tmp_path, monkeypatch, capsys):
    """A missing eval file was reported after the model loaded (21 s on a busy machine)."""
    import dasher_rnn.adapt.compose as compose

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded before the files were checked")

    monkeypatch.setattr(compose, "build_writer", no_model)
    assert main(["eval", "--model", "hybrid", "--adaptive", str(phrases), str(tmp_path / "missing.txt")]) == 2
    assert "missing.txt: cannot read" in capsys.readouterr().err


def test_eval_shows_progress_off_a_terminal_and_its_summary_first(phrases, capsys):
    """`eval --model hybrid --adaptive` printed nothing for 12 minutes where stderr was no terminal."""
    assert main(["eval", "--model", "ppm", str(phrases)]) == 0
    out, err = capsys.readouterr()
    assert "loading the ppm model" in err and "eval:" in err and "/4" in err
    first = out.splitlines()[0]
    assert first.endswith("bits/char over 38 characters of 1 file")  # the summary, then the model and the table


def test_languages_says_how_many_first_and_shows_progress_while_building_json(capsys):
    """`languages` took 13 to 19 s and printed everything at the end."""
    from dasher_rnn.languages import each_language, language_count

    first = next(each_language())  # one at a time: the first without building the rest
    assert first.code == "aa" and language_count() >= 100
    assert main(["languages", "--json"]) == 0
    out, err = capsys.readouterr()
    assert out.lstrip().startswith("[") and "languages:" in err and f"/{language_count()}" in err
