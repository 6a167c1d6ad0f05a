"""Issue 35, part 7, "Clear words": what the commands and the window say is what happened, each thing said once
and by one name: `adapt`'s summary per learner, `eval`'s model and mode, the settings' model, where `stats` writes,
`profile import` over an existing profile, Help, and the Profile dialog after writing."""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import io
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
    """The lines above the table of `eval`'s report, below its summary (the first line)."""
    lines = out.splitlines()
    assert " bits/char over " in lines[0]
    return lines[1: next(i for i, line in enumerate(lines) if line.startswith("file"))]


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


def _summary(out: str) -> list[str]:
    """`adapt`'s summary: all it prints on stdout without --json."""
    return [line.strip() for line in out.strip().splitlines()]


def test_adapt_says_what_each_learner_learned(tiny_model_dir, tmp_path, capsys):
    from tests.test_corpus_adapt import USER_LINES

    writing = tmp_path / "notes.txt"
    writing.write_text("\n".join(USER_LINES))
    common = ["adapt", str(writing), "--profile", "me", "--model-dir", str(tiny_model_dir),
              "--profiles-dir", str(tmp_path / "p"), "--threads", "1", "--no-progress"]
    assert main([*common, "--epochs", "2"]) == 0
    head, rnn, ppm = _summary(capsys.readouterr().out)
    assert head == "profile 'me':"
    assert rnn.startswith("RNN: adapted, trained on ") and " -> " in rnn and "% better" in rnn
    assert ppm.startswith("PPM and the mixing weights: learned ") and "characters of your writing" in ppm

    # nothing moves the RNN (a zero learning rate): it says so, rather than "held-out 1.912 -> 1.912"
    assert main([*common, "--epochs", "1", "--lr", "0", "--no-ppm"]) == 0
    _, rnn, ppm = _summary(capsys.readouterr().out)
    assert "no better than before: its weights are left as they were" in rnn and "unchanged" in rnn
    assert " -> " not in rnn
    assert ppm == "PPM and the mixing weights: left as they were (--no-ppm)"

    assert main([*common, "--dry-run"]) == 0
    head, rnn, ppm = _summary(capsys.readouterr().out)
    assert head == "profile 'me': (dry run: nothing was changed)"
    assert rnn.startswith("RNN: not adapted (--dry-run)") and "nothing learned (--dry-run)" in ppm


def test_adapt_says_why_the_rnn_did_not_adapt():
    from dasher_rnn.cli.adapt import summary

    report = {"messages": 3, "dropped": {"mostly_outside_alphabet": 1, "improbable": 1}, "train_messages": 0,
              "held_out_messages": 1, "train_chars": 0, "held_out_bpc_before": {"overall": 2.5},
              "ppm": {"characters_learned": 120, "notice": None}}
    rnn, ppm = summary(report)
    assert rnn.startswith("RNN: not adapted: no messages were left to train on (3 read, 1 kept aside to measure, "
                          "2 dropped")
    assert ppm.startswith("PPM and the mixing weights: learned 120 characters")


def test_stats_writes_into_the_documents_folder_unless_told_where(qapp, tmp_path, monkeypatch, capsys):
    # qapp: the widgets' application exists before the command makes its own (a QGuiApplication), which would
    # leave later widget tests of this run without one
    from dasher_rnn.adapt.progress import ProgressLog
    from tests.test_progress import record

    documents = tmp_path / "Documents" / "dasher-rnn"
    monkeypatch.setenv("DASHER_RNN_DOCUMENTS", str(documents))
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)  # where the command was started: nothing is written here
    profiles = tmp_path / "profiles"
    log = ProgressLog(profiles / "me")
    for i in range(3):
        log.record(record(i))
    where = ["--profile", "me", "--profiles-dir", str(profiles), "--size", "400x300"]
    assert main(["stats", *where]) == 0
    assert main(["stats", *where]) == 0  # a second picture is a new file, not the first one overwritten
    pictures = sorted(documents.glob("dasher-rnn-progress-me-*.png"))
    assert len(pictures) == 2 and list(here.iterdir()) == []
    printed = capsys.readouterr().out
    assert all(f"wrote {p} (400x300)" in printed for p in pictures)
    assert main(["stats", *where, "--out", "mine.png"]) == 0  # --out: exactly there
    assert (here / "mine.png").is_file() and f"wrote {here / 'mine.png'} (400x300)" in capsys.readouterr().out
    assert len(list(documents.iterdir())) == 2


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def exported(tmp_path):
    """Profile "me" (4,242 characters learned, one message recorded) and an export of another one, "away"."""
    from dasher_rnn.adapt.profiles import ProfileStore
    from dasher_rnn.adapt.progress import ProgressLog
    from tests.test_progress import record

    store = ProfileStore(tmp_path / "profiles")
    store.save("me", {}, {"characters_adapted": 4242})
    ProgressLog.for_profile(store, "me").record(record(0))
    store.save("away", {}, {"characters_adapted": 17})
    return store, store.export("away", tmp_path / "usb"), ["--profiles-dir", str(store.folder)]


def _unchanged(store) -> bool:
    from dasher_rnn.adapt.progress import ProgressLog
    from tests.test_progress import record

    return store.load("me").characters_adapted == 4242 and ProgressLog.for_profile(store, "me").read() == [record(0)]


def test_profile_import_over_an_existing_profile_needs_yes_without_a_terminal(exported, monkeypatch, capsys):
    store, usb, where = exported
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    monkeypatch.setattr("builtins.input", lambda prompt="": pytest.fail("no terminal: nothing to ask"))
    assert main(["profile", "import", str(usb), "me", *where]) == 1
    captured = capsys.readouterr()
    assert "4,242 characters learned" in captured.out and "--yes" in captured.err and "not imported" in captured.err
    assert _unchanged(store)
    assert main(["profile", "import", str(usb), "me", "--yes", *where]) == 0
    assert store.load("me").characters_adapted == 17 and "imported as" in capsys.readouterr().out


def test_profile_import_asks_at_a_terminal_and_not_for_a_new_name(exported, monkeypatch, capsys):
    store, usb, where = exported
    monkeypatch.setattr("sys.stdin", _Terminal())
    asked = []
    answers = iter(["n", "y"])
    monkeypatch.setattr("builtins.input", lambda prompt="": asked.append(prompt) or next(answers))
    assert main(["profile", "import", str(usb), "me", *where]) == 1
    assert "not imported" in capsys.readouterr().out and _unchanged(store)
    assert main(["profile", "import", str(usb), "me", *where]) == 0
    assert store.load("me").characters_adapted == 17 and len(asked) == 2 and "'me'" in asked[0]
    assert main(["profile", "import", str(usb), "someone-new", *where]) == 0  # nothing there to lose
    assert len(asked) == 2 and store.load("someone-new").characters_adapted == 17


def test_help_gives_the_version_support_and_the_control_box_direct_output_and_speech(qtbot, tmp_path, monkeypatch):
    import dasher_rnn
    from dasher_rnn.ui import help as help_page

    def dialog():
        shown = help_page.HelpDialog(None, tmp_path / "docs", tmp_path / "journal.json", tmp_path / "profiles",
                                     tmp_path / "settings.json")
        qtbot.addWidget(shown)
        return shown

    monkeypatch.setattr(help_page, "support_link", lambda: None)  # as now: pyproject.toml has no [project.urls]
    shown = dialog()
    text = shown.text()
    for words in ("The control box", "⌫ Word", "Speak sentence", "Writing > Control box",
                  "Writing into other programs (direct output)", "Type into the focused program", "Backspace",
                  "Speech", "Speak on stop", "Ctrl+R",
                  "Version and help", f"dasher-rnn version {dasher_rnn.__version__}", "dasher-rnn --help"):
        assert words in text, words
    assert dasher_rnn.__version__ in shown.windowTitle()
    assert "README" in text and "docs/" in text  # no link: the project's own docs
    assert "http" not in text  # no outside source

    monkeypatch.setattr(help_page, "support_link", lambda: "https://example.org/dasher-rnn/issues")
    linked = dialog()
    assert 'href="https://example.org/dasher-rnn/issues"' in linked.browser.toHtml()


def test_the_profile_dialog_does_not_call_a_profile_new_once_it_has_learned(qtbot, tmp_path, monkeypatch):
    from dasher_rnn.adapt.profiles import ProfileStore
    from dasher_rnn.lm.ppm import PPMModel
    from tests.conftest import make_sentences, writer_source
    from tests.test_ui import ALPHABET, open_window, steer

    monkeypatch.setenv("DASHER_RNN_CONFIG", str(tmp_path / "settings.json"))
    monkeypatch.setenv("DASHER_RNN_PROFILES", str(tmp_path / "profiles"))
    monkeypatch.setenv("DASHER_RNN_DOCUMENTS", str(tmp_path / "Documents"))
    monkeypatch.setenv("DASHER_RNN_JOURNAL", str(tmp_path / "journal.json"))
    model = PPMModel(ALPHABET)
    model.train_text("\n".join(make_sentences(300)) + "\n")
    window = open_window(qtbot, source=writer_source("ppm", trained_ppm=model, profile="me"), profile="me")
    window.writing.toggle_running()
    steer(window, "I see")
    window.messages.new_message()  # learned, not saved yet
    store = ProfileStore()
    dialog = window.profile_dialog(store)
    qtbot.addWidget(dialog)
    label = dialog.choice.buttons["me"].text()
    assert "(new)" not in label and "in use" in label and "learning" in label
    created = dialog.new_profile()  # what "me" learned is written before the switch
    assert store.exists("me")
    assert dialog.choice.buttons[created].text() == f"{created} (new)"  # a new one is new
    label = dialog.choice.buttons["me"].text()
    assert "(new)" not in label and "learned" in label and "in use" not in label


def test_the_settings_name_the_model_that_predicts_as_the_title_and_model_do(qtbot, tiny_model_dir, tmp_path,
                                                                              monkeypatch):
    import json

    from dasher_rnn.cli import parse_args
    from dasher_rnn.settings import Preferences, SettingsStore
    from tests.conftest import writer_source
    from tests.test_ui import open_window

    for name, where in (("DASHER_RNN_PROFILES", "profiles"), ("DASHER_RNN_DOCUMENTS", "Documents"),
                        ("DASHER_RNN_JOURNAL", "journal.json")):
        monkeypatch.setenv(name, str(tmp_path / where))
    assert Preferences().model == parse_args(["app"]).model == "hybrid"  # what the app writes with by default
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"model": "rnn"}))  # what every earlier version wrote, whatever predicted
    store = SettingsStore(path)
    assert store.load().model == "rnn"  # an old file loads as it is
    window = open_window(qtbot, source=writer_source("hybrid", model_dir=tiny_model_dir), store=store)
    assert window.windowTitle() == "dasher-rnn (hybrid)" and window.keeper.prefs.model == "hybrid"
    window.close()
    assert json.loads(path.read_text())["model"] == "hybrid"
