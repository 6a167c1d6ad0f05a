"""Issue 22's small command-line faults: export-onnx never rewrites the shipped model unless named, profile
reset says what it deletes and asks, a bad profile name suggests no command that fails the same way, and the
long commands show progress."""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pytest

from dasher_rnn.adapt.profiles import ProfileStore
from dasher_rnn.cli import main, parse_args
from dasher_rnn.paths import DEFAULT_MODEL_DIR
from tests.test_corpus_adapt import USER_LINES


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_export_onnx_needs_the_folder_and_leaves_the_shipped_model_alone(capsys):
    before = _digest(DEFAULT_MODEL_DIR / "config.json")
    with pytest.raises(SystemExit):
        parse_args(["export-onnx"])
    assert "model_dir" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["export-onnx"])
    assert _digest(DEFAULT_MODEL_DIR / "config.json") == before


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def profiles(tmp_path) -> tuple[ProfileStore, list[str]]:
    store = ProfileStore(tmp_path / "profiles")
    store.save("me", {}, {"characters_adapted": 4242})
    return store, ["--profiles-dir", str(store.folder)]


def test_profile_reset_without_a_terminal_or_yes_deletes_nothing(profiles, monkeypatch, capsys):
    store, where = profiles
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["profile", "reset", "me", *where]) == 1
    captured = capsys.readouterr()
    assert store.exists("me") and "4,242 characters learned" in captured.out and "--yes" in captured.err


def test_profile_reset_asks_at_a_terminal(profiles, monkeypatch, capsys):
    store, where = profiles
    monkeypatch.setattr("sys.stdin", _Terminal())
    answers = iter(["n", "y"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    assert main(["profile", "reset", "me", *where]) == 1
    assert store.exists("me") and "not deleted" in capsys.readouterr().out
    assert main(["profile", "reset", "me", *where]) == 0
    out = capsys.readouterr().out
    assert not store.exists("me") and "profile export me" in out and "'me' deleted" in out


def test_profile_reset_yes_deletes_and_says_what_it_deleted(profiles, monkeypatch, capsys):
    store, where = profiles
    monkeypatch.setattr("builtins.input", lambda prompt="": pytest.fail("--yes must not ask"))
    assert main(["profile", "reset", "me", "--yes", *where]) == 0
    out = capsys.readouterr().out
    assert not store.exists("me") and "4,242 characters learned" in out and "'me' deleted" in out
    assert main(["profile", "reset", "me", "--yes", *where]) == 0
    assert "no profile named 'me'" in capsys.readouterr().out


@pytest.mark.parametrize("command", [["adapt", "--dry-run"], ["adapt"], ["profile", "reset"]])
def test_a_bad_profile_name_suggests_no_command_that_fails_the_same_way(command, tmp_path, capsys):
    text = tmp_path / "notes.txt"
    text.write_text("\n".join(USER_LINES))
    args = ([*command, "--profile", "bad/name", str(text)] if command[0] == "adapt"
            else [*command, "bad/name", "--yes"])
    assert main([*args, "--profiles-dir", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert "invalid profile name 'bad/name'" in err and "profile reset" not in err


def test_simulate_file_shows_progress(tmp_path, capsys):
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("hi\nno\n")
    common = ["simulate", "--file", str(phrases), "--model", "uniform", "--speed", "8", "--max-seconds", "2"]
    assert main(common) == 0
    assert "2/2" in capsys.readouterr().err  # tqdm's bar, on stderr
    assert main([*common, "--no-progress"]) == 0
    assert "2/2" not in capsys.readouterr().err


def test_simulate_json_shows_progress_and_keeps_stdout_clean(tmp_path, monkeypatch, capsys):
    import json

    phrases = tmp_path / "phrases.txt"
    phrases.write_text("hi\nno\n")
    common = ["simulate", "--file", str(phrases), "--model", "uniform", "--speed", "8", "--max-seconds", "2", "--json"]
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(common) == 0
    assert json.loads(capsys.readouterr().out)["phrases"] == 2 and "2/2" in terminal.getvalue()
    captured = io.StringIO()  # captured, not a terminal (a log): progress as plain lines, none redrawn in place
    monkeypatch.setattr("sys.stderr", captured)
    assert main(common) == 0
    assert json.loads(capsys.readouterr().out)["phrases"] == 2
    assert "\r" not in captured.getvalue() and "0/2" in captured.getvalue().splitlines()[0]


def test_adapt_shows_progress(tiny_model_dir, tmp_path, capsys):
    good = tmp_path / "good.txt"
    good.write_text("\n".join(USER_LINES))
    common = ["adapt", str(good), "--profile", "me", "--model-dir", str(tiny_model_dir),
              "--profiles-dir", str(tmp_path / "p"), "--epochs", "1", "--threads", "1"]
    assert main(common) == 0
    err = capsys.readouterr().err
    assert "step" in err and "PPM" in err and "message" in err  # training steps, then PPM's messages
    assert main([*common, "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "PPM and mixing weights" not in err and "step/s" not in err


def test_profile_import_checks_the_rnn_part_against_the_model_it_was_adapted_from(tiny_model_dir, tmp_path, capsys):
    """Issue 48: ``profile import`` accepted an RNN part of the wrong shape; the command finds the model (a shipped
    one, or ``--model-dir``) and refuses the part before it changes anything."""
    import json

    from safetensors.numpy import save

    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.adapt.profile_files import PROFILE_FILE
    from dasher_rnn.adapt.profiles import ProfileStore

    store = ProfileStore(tmp_path / "profiles")
    w = build_writer(WriterConfig(model="rnn", model_dir=tiny_model_dir, profile="ann", profiles_dir=store.folder,
                                  backend="torch"))
    w.commit("Grandma Zofia brings kefir on Thursday. " * 3)
    w.close()
    usb = store.export("ann", tmp_path / "usb")
    where = ["--profiles-dir", str(store.folder)]
    assert main(["profile", "import", str(usb), "bob", *where]) == 2  # no shipped model is the tiny one
    assert "--model-dir" in capsys.readouterr().err and not store.exists("bob")
    assert main(["profile", "import", str(usb), "bob", "--model-dir", str(tiny_model_dir), *where]) == 0
    info = json.loads((usb / PROFILE_FILE).read_text())
    data = save({"embed.weight": np.zeros((3, 3), np.float32)})
    (usb / info["files"]["rnn"]["file"]).write_bytes(data)
    info["files"]["rnn"]["sha256"] = hashlib.sha256(data).hexdigest()
    (usb / PROFILE_FILE).write_text(json.dumps(info))
    before = store.load("bob").parts
    assert main(["profile", "import", str(usb), "bob", "--yes", "--model-dir", str(tiny_model_dir), *where]) == 2
    assert "does not fit the model" in capsys.readouterr().err and store.load("bob").parts == before
