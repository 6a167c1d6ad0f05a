"""One language setting: it picks the alphabet, the RNN that writes the language (or PPM alone), and the profile."""

from __future__ import annotations

import json

import pytest

from dasher_rnn.adapt.compose import WriterConfig, build_writer, for_language
from dasher_rnn.alphabet import AlphabetError
from dasher_rnn.cli import main
from dasher_rnn.paths import MODELS_DIR


def test_a_language_without_an_rnn_is_written_by_ppm_alone_into_its_own_profile():
    config, notice = for_language(WriterConfig(model="hybrid", language="pl", profile="anna"))
    assert (config.model, config.alphabet, config.profile) == ("ppm", "pl", "anna.pl")
    assert "no RNN writes 'pl'" in notice
    with pytest.raises(ValueError, match="no RNN writes 'pl'"):
        for_language(WriterConfig(model="rnn", language="pl"))
    with pytest.raises(AlphabetError, match="unknown language"):
        for_language(WriterConfig(language="xx-nonsense"))


def test_english_keeps_its_rnn_and_its_profile_name():
    config, notice = for_language(WriterConfig(model="hybrid", language="en", profile="anna"))
    assert config.model == "hybrid" and config.model_dir == MODELS_DIR / "english-lstm" and config.profile == "anna"
    assert notice is None
    assert for_language(WriterConfig(model="hybrid"))[0] == WriterConfig(model="hybrid")  # no language: as before


def test_a_writer_in_polish_predicts_polish_letters_and_says_why_ppm_alone(tmp_path):
    writer = build_writer(WriterConfig(model="hybrid", language="pl", profile="anna", profiles_dir=tmp_path))
    try:
        assert writer.model == "ppm" and writer.alphabet.language == "pl" and "ł" in writer.alphabet
        status = writer.status()
        assert status.profile == "anna.pl" and "no RNN writes 'pl'" in status.notice
        writer.commit("Dzień dobry, jak się masz?\n")
        writer.save()
    finally:
        writer.close()
    assert (tmp_path / "anna.pl").is_dir() and not (tmp_path / "anna").exists()


def test_eval_and_simulate_take_a_language(tmp_path, capsys):
    phrases = tmp_path / "de.txt"
    phrases.write_text("Schöne Grüße\nWie geht es dir?\n", encoding="utf-8")
    assert main(["eval", "--model", "ppm", "--language", "de", str(phrases), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["overall"]["skipped"] == 0 and report["overall"]["chars"] == len("Schöne GrüßeWie geht es dir?")
    assert main(["simulate", "--model", "ppm", "--language", "de", "--text", "Grüße", "--fps", "30", "--json",
                 "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["phrases"], summary["failed"], summary["characters"]) == (1, 0, 5)  # ü and ß written


def test_the_app_takes_the_language_from_the_command_line_or_the_preferences(monkeypatch):
    import dasher_rnn.ui.app as app
    from dasher_rnn.settings import Preferences

    seen: dict = {}
    monkeypatch.setattr(app, "run_app", lambda *a, **k: seen.update(k) or 0)
    monkeypatch.setattr("dasher_rnn.ui.preflight.app_problem", lambda: None)
    assert main(["app", "--language", "fr"]) == 0
    assert seen["prefs_overrides"]["language"] == "fr"
    assert Preferences().language == "en" and Preferences().updated(language="pt-BR").language == "pt-BR"
    with pytest.raises(ValueError):
        Preferences().updated(language="../etc")


def test_the_tutorial_practises_in_the_language_written(qtbot, tmp_path, monkeypatch):
    from dasher_rnn.alphabet import load_alphabet
    from dasher_rnn.settings import SettingsStore
    from dasher_rnn.ui.window import MainWindow
    from dasher_rnn.zoom.controller import WritingController
    from dasher_rnn.zoom.practice import PHRASES, practice_phrases
    from tests.conftest import writer_source

    assert practice_phrases(load_alphabet("english")) == PHRASES
    assert practice_phrases(load_alphabet("fr")) == ("bonjour", "oui merci", "à bientôt")
    swahili = load_alphabet("sw")  # no phrases written here: the alphabet's own letters
    assert all(ch in swahili for phrase in practice_phrases(swahili) for ch in phrase)
    monkeypatch.setenv("DASHER_RNN_CONFIG", str(tmp_path / "settings.json"))
    store = SettingsStore()
    window = MainWindow(WritingController(writer_source("ppm", language="de")), store, store.load(), start_timer=False)
    qtbot.addWidget(window)
    dialog = window.open_tutorial(start_timer=False)
    assert dialog is not None and dialog.phrases == ("hallo", "ja bitte", "bis bald")
    dialog.reject()


def test_the_window_switches_language_without_a_restart(qtbot, tmp_path, monkeypatch):
    from dasher_rnn.settings import SettingsStore
    from dasher_rnn.ui.window import MainWindow
    from dasher_rnn.zoom.controller import WritingController
    from dasher_rnn.zoom.sources import WriterSource
    from tests.test_ui import steer

    monkeypatch.setenv("DASHER_RNN_CONFIG", str(tmp_path / "settings.json"))
    built: list = []

    def language_source(code: str) -> WriterSource:
        source = WriterSource(build_writer(WriterConfig(model="ppm", language=code, profile="anna",
                                                        profiles_dir=tmp_path / "profiles")))
        built.append(source)
        return source

    store = SettingsStore()
    window = MainWindow(WritingController(language_source("en")), store, store.load(), start_timer=False,
                        language_source=language_source)
    qtbot.addWidget(window)
    window.resize(760, 700)
    window.show()
    window.writing.toggle_running()
    steer(window, "hi")
    english = built[0].writer
    dialog = window.preferences_dialog()
    qtbot.addWidget(dialog)
    dialog.language.buttons["he"].click()  # from the Preferences, by pointer alone
    c = window.controller
    assert c.zoom.alphabet.language == "he" and window.view.alphabet.orientation == "rtl"
    assert c.history == "hi\n" and c.zoom.output == ""  # the English message was finished, not lost
    assert window.keeper.prefs.language == "he" and c.writer.status().profile == "anna.he"
    assert english.closed and (tmp_path / "profiles" / "anna").is_dir()  # what English learned was saved
    assert "עברית" in dialog.language_message.text()
    assert window.set_language("zz-nonsense") is False and "could not write" in window.status.notice.lower()
    assert c.zoom.alphabet.language == "he"  # nothing changed
    window.set_language("en")
    assert c.zoom.alphabet.language == "en" and c.writer.status().profile == "anna"


GERMAN = "Ich möchte bitte eine Tasse Tee. Schöne Grüße an die Familie! Wir gehen heute in den Garten.\n"
FRENCH = "Je voudrais une tasse de thé, s'il vous plaît. Ça va très bien! Nous allons au jardin.\n"


@pytest.fixture(scope="module")
def multilingual_model(tmp_path_factory):
    """A tiny model of German and French (their union alphabet), trained by `train` with an initial state per
    language (`--language-state`)."""
    from dasher_rnn.languages import union_alphabet

    tmp = tmp_path_factory.mktemp("multilingual")
    (tmp / "alphabet.json").write_text(json.dumps(union_alphabet(["de", "fr"]).to_json(), ensure_ascii=False))
    for name, text in (("german", GERMAN), ("french", FRENCH)):
        (tmp / f"{name}.txt").write_text((text * 3 + "\n") * 40)  # 40 documents
    assert main(["train", str(tmp / "german.txt"), str(tmp / "french.txt"), "--out", str(tmp / "run"),
                 "--alphabet", str(tmp / "alphabet.json"), "--embed", "8", "--hidden", "32", "--steps", "30",
                 "--batch-size", "8", "--seq-len", "32", "--eval-every", "1000", "--checkpoint-every", "1000",
                 "--threads", "1", "--no-progress", "--val-fraction", "0.3", "--language-state", "de=german",
                 "--language-state", "fr=french"]) == 0
    return tmp / "run" / "model"


def test_a_multilingual_model_writes_each_language_over_its_own_alphabet(multilingual_model, tmp_path):
    import numpy as np

    from dasher_rnn.languages import language_alphabet

    config = json.loads((multilingual_model / "config.json").read_text())
    assert set(config["languages"]) == {"de", "fr"} and "languages.safetensors" in config["files"]
    roots = {}
    for code in ("de", "fr"):
        writer = build_writer(WriterConfig(model="rnn", model_dir=multilingual_model, language=code, adapt=False))
        try:
            assert writer.alphabet.symbols == language_alphabet(code).symbols
            assert f"writing {code}" in writer.description
            root = writer.root("")
            roots[code] = writer.request([root]).result()[0].probs
            assert roots[code].shape == (len(writer.alphabet),) and abs(roots[code].sum() - 1) < 1e-5
            child = writer.child(writer.root("Sch"), "ö" if code == "de" else "é")
            assert abs(writer.request([child]).result()[0].probs.sum() - 1) < 1e-5
        finally:
            writer.close()
    shared = [ch for ch in language_alphabet("de").symbols if ch in language_alphabet("fr")]
    de_alphabet, fr_alphabet = language_alphabet("de"), language_alphabet("fr")
    de_share = np.array([roots["de"][de_alphabet.index(ch)] for ch in shared])
    fr_share = np.array([roots["fr"][fr_alphabet.index(ch)] for ch in shared])
    assert np.abs(de_share / de_share.sum() - fr_share / fr_share.sum()).max() > 1e-6  # each its own initial state


def test_a_multilingual_model_learns_a_language_into_its_profile(multilingual_model, tmp_path):
    config = WriterConfig(model="rnn", model_dir=multilingual_model, language="de", profile="anna",
                          profiles_dir=tmp_path)
    writer = build_writer(config)
    try:
        writer.commit("Schöne Grüße!\n" * 3)
        writer.flush()
        assert writer.status().characters_adapted > 0
        writer.save()
    finally:
        writer.close()
    again = build_writer(config)
    try:
        assert again.status().characters_adapted > 0 and again.status().profile == "anna.de"
    finally:
        again.close()
