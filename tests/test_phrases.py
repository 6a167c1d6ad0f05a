"""Quick phrases: the list kept with the profile (adapt/phrases.py), the Phrases box of the control box where each
phrase is a box sized by its uses (zoom/model.py), writing one as if written (typed, learned), and the list going
with the profile on export and import."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from dasher_rnn.adapt.phrases import MAX_LENGTH, PHRASES_FILE, STARTERS, PhraseError, PhraseList
from dasher_rnn.adapt.profiles import ProfileStore
from dasher_rnn.normalise import normalise
from dasher_rnn.zoom.boxes import ZoomSettings
from dasher_rnn.zoom.control import NO_PHRASES, PHRASES_BOX, PHRASES_INDEX, Action
from dasher_rnn.zoom.model import ZoomModel
from dasher_rnn.zoom.simulate import target_pointer, wait_for_answers
from tests.test_control import ALPHABET, DT, drive, zoom_steps
from tests.test_zoom import RecordingSource


def test_a_new_profile_starts_with_everyday_phrases_in_its_language(tmp_path):
    assert [p.text for p in PhraseList(tmp_path / "anna").ordered()] == list(STARTERS["en"])
    assert [p.text for p in PhraseList(tmp_path / "anna.de", "de").phrases] == list(STARTERS["de"])
    assert PhraseList(tmp_path / "anna.pl", "pl").phrases == []  # no starters for it: the user adds their own
    assert not (tmp_path / "anna").exists()  # nothing written until the user changes the list


def test_adding_removing_and_using_are_saved_and_ordered_by_use(tmp_path):
    phrases = PhraseList(tmp_path / "anna")
    phrases.add("  Please open the window ")
    phrases.use("Thank you", now=100.0)
    phrases.use("Thank you", now=200.0)
    phrases.use("Please open the window", now=300.0)
    assert phrases.remove("I love you") and not phrases.remove("not there")
    again = PhraseList(tmp_path / "anna")
    order = [p.text for p in again.ordered()]
    assert order[:2] == ["Thank you", "Please open the window"] and "I love you" not in order
    assert again.ordered()[0].uses == 2 and again.ordered()[0].last_used == 200.0
    assert oct(os.stat(again.path).st_mode & 0o777) == "0o600"  # the user's alone


@pytest.mark.parametrize("text, said", [("   ", "nothing"), ("x" * (MAX_LENGTH + 1), "at most"),
                                        ("Thank you", "already")])
def test_a_phrase_that_cannot_be_stored_says_why_and_changes_nothing(tmp_path, text, said):
    phrases = PhraseList(tmp_path / "anna")
    with pytest.raises(PhraseError, match=said):
        phrases.add(text)
    assert not phrases.path.exists()


def test_a_phrase_is_folded_onto_the_alphabet_when_stored(tmp_path):
    phrases = PhraseList(tmp_path / "anna")
    stored = phrases.add("Café “ok”", fold=lambda t: normalise(t, ALPHABET))
    assert all(ch in ALPHABET for ch in stored.text) and stored.text.startswith("Caf")


@pytest.mark.parametrize("content", [b"\xff\xfe not utf-8", b"[1, 2, 3]", b"{\"phrases\": 7}", b"{broken"])
def test_a_broken_file_is_said_kept_aside_and_never_overwritten(tmp_path, content):
    folder = tmp_path / "anna"
    folder.mkdir()
    (folder / PHRASES_FILE).write_bytes(content)
    phrases = PhraseList(folder)
    assert phrases.phrases == [] and "phrase" in phrases.notice or "regular" in phrases.notice
    phrases.add("Hello")
    kept = [p for p in folder.iterdir() if p.name.startswith(PHRASES_FILE + ".broken")]
    assert len(kept) == 1 and kept[0].read_bytes() == content
    assert [p.text for p in PhraseList(folder).phrases] == ["Hello"]


def test_entries_that_are_not_phrases_are_skipped_and_counted(tmp_path):
    folder = tmp_path / "anna"
    folder.mkdir()
    entries = [{"text": "Yes", "uses": 3}, {"text": "Yes", "uses": 1}, {"text": 5}, {"text": "No", "uses": -1},
               {"text": "Maybe", "uses": True}, {"text": "Later", "last_used": float("inf")}, "text", {"text": "Ok"}]
    (folder / PHRASES_FILE).write_text(json.dumps({"phrases": entries}).replace("Infinity", "1e999"))
    phrases = PhraseList(folder)
    assert [p.text for p in phrases.phrases] == ["Yes", "Ok"] and phrases.skipped == 6 and "6 entries" in phrases.notice


def test_a_fifo_in_place_of_the_file_is_never_waited_on(tmp_path):
    folder = tmp_path / "anna"
    folder.mkdir()
    os.mkfifo(folder / PHRASES_FILE)
    phrases = PhraseList(folder)
    assert phrases.phrases == [] and phrases.notice


def test_the_phrases_go_with_the_profile_on_export_and_import(tmp_path):
    store = ProfileStore(tmp_path / "profiles")
    store.save("anna", {}, {"characters_adapted": 0})
    phrases = PhraseList(store.path("anna"))
    phrases.add("See you tomorrow")
    phrases.use("See you tomorrow", now=5.0)
    exported = store.export("anna", tmp_path / "out")
    store.import_(exported, "bob")
    bob = PhraseList(store.path("bob"))
    assert bob.ordered()[0].text == "See you tomorrow" and bob.ordered()[0].uses == 1


def test_a_deeply_nested_file_is_said_and_never_stops_the_app(tmp_path):
    """Issue 48: '[' * 1000 + ']' * 1000 (2 KB) ended PhraseList._read in RecursionError at every start."""
    folder = tmp_path / "anna"
    folder.mkdir()
    (folder / PHRASES_FILE).write_text("[" * 1000 + "]" * 1000)
    phrases = PhraseList(folder)
    assert phrases.phrases == [] and "nested 1,000 deep" in phrases.notice
    phrases.add("Hello")  # the bad file is kept aside, never overwritten
    assert [p.text for p in PhraseList(folder).phrases] == ["Hello"] and list(folder.glob("phrases.json.broken-*"))


def test_a_lone_surrogate_is_left_out_and_every_save_and_export_goes_on(tmp_path):
    """Issue 48: a phrase with a lone surrogate broke every phrase save and ``profile export`` (UnicodeEncodeError)."""
    store = ProfileStore(tmp_path / "profiles")
    store.save("anna", {}, {"characters_adapted": 0})
    (store.path("anna") / PHRASES_FILE).write_text(
        '{"format": 1, "phrases": [{"text": "bad \\ud800 one"}, {"text": "Good one"}]}')
    phrases = PhraseList(store.path("anna"))
    assert [p.text for p in phrases.phrases] == ["Good one"] and phrases.skipped == 1
    phrases.use("Good one")
    with pytest.raises(PhraseError, match="surrogate"):
        phrases.add("also \ud800 bad")
    exported = store.export("anna", tmp_path / "out")
    assert [p.text for p in PhraseList(exported).phrases] == ["Good one"]


def test_export_and_import_of_a_profile_with_a_deeply_nested_phrase_file_go_on(tmp_path):
    """Issue 48: ``profile export`` crashed on it, and ``profile import`` replaced the parts, then crashed."""
    store = ProfileStore(tmp_path / "profiles")
    store.save("anna", {}, {"characters_adapted": 7})
    (store.path("anna") / PHRASES_FILE).write_text("[" * 1000 + "]" * 1000)
    exported = store.export("anna", tmp_path / "out")
    assert not (exported / PHRASES_FILE).exists()  # not copied: nothing in it could be read
    (exported / PHRASES_FILE).write_text("{" * 5000)
    store.import_(exported, "bob")
    assert store.load("bob").characters_adapted == 7 and not (store.path("bob") / PHRASES_FILE).exists()


# -- in the zoom ----------------------------------------------------------------------------------------------
def phrases_box(zoom: ZoomModel):
    control = zoom._child(zoom.root, zoom.control_symbol)
    return zoom._child(control, PHRASES_INDEX)


def test_the_phrases_box_holds_each_phrase_sized_by_its_uses():
    zoom = ZoomModel(RecordingSource(), ZoomSettings(control=True))
    zoom.idle()
    box = phrases_box(zoom)
    assert box.item is PHRASES_BOX and box.action is None
    assert zoom._child(box, 0).item is NO_PHRASES  # none yet: one box that goes back to the letters
    zoom.set_phrases([("yes", 3), ("no", 0), ("thank you", 1), ("caf\u00e9\u2122", 9)])  # the last is not in the alphabet
    sizes = np.diff(zoom.layout(box))
    assert sizes / sizes.sum() == pytest.approx(np.array([4, 1, 2]) / 7)
    assert [zoom._child(box, i).item.text for i in range(3)] == ["yes", "no", "thank you"]
    assert zoom.phrase_index("thank you") == 2 and zoom.phrase_index("caf\u00e9\u2122") is None


def test_writing_a_phrase_types_it_as_a_word_and_learns_it_like_written_text():
    source = RecordingSource()
    zoom = ZoomModel(source, ZoomSettings(speed_bps=3.0, control=True))
    zoom.set_phrases([("i need the nurse", 0), ("yes", 5)])
    drive(zoom_steps(zoom), zoom, "hi")
    frames = []
    for _ in range(5000):
        wait_for_answers(zoom)
        frames.append(zoom.step(*target_pointer(zoom, "hi", Action.PHRASE, "i need the nurse"), DT))
        if frames[-1].action is not None:
            break
    frame = frames[-1]
    assert frame.action == Action.PHRASE and frame.phrase == "i need the nurse"
    assert zoom.output == "hi i need the nurse" and "".join(f.typed for f in frames).endswith(" i need the nurse")
    drive(zoom_steps(zoom), zoom, "hi i need the nurse now")
    assert "".join(source.learned).startswith("hi i need the nurse")  # committed as the view moved on, as written text is


# -- in the window ---------------------------------------------------------------------------------------------
def test_the_window_writes_adds_and_counts_phrases_of_the_profile_in_use(qtbot, tmp_path, monkeypatch):
    from dasher_rnn.lm.ppm import PPMModel
    from tests.conftest import make_sentences, writer_source
    from tests.test_ui import open_window, steer

    monkeypatch.setenv("DASHER_RNN_CONFIG", str(tmp_path / "settings.json"))
    monkeypatch.setenv("DASHER_RNN_PROFILES", str(tmp_path / "profiles"))
    model = PPMModel(ALPHABET)
    model.train_text("\n".join(make_sentences(300)) + "\n")
    window = open_window(qtbot, source=writer_source("ppm", trained_ppm=model, profile="me"), profile="me")
    part = window.phrases
    assert part.phrases is not None and window.controller.zoom.phrase_index("I need the nurse") is not None
    window.writing.toggle_running()
    steer(window, "I see")
    dialog = part.open_dialog()
    qtbot.addWidget(dialog)
    assert dialog.list.count() == len(STARTERS["en"]) and dialog.add_button.isEnabled()
    dialog.add_message()  # "I see" becomes a phrase
    assert "I see" in part.phrases and dialog.list.count() == len(STARTERS["en"]) + 1
    dialog.list.setCurrentRow([dialog.list.item(i).text() for i in range(dialog.list.count())].index("Thank you"))
    dialog.write_selected()
    assert window.controller.zoom.output == "I see Thank you" and window.panel.toPlainText().endswith("I see Thank you")
    assert part.phrases.ordered()[0].text == "Thank you" and part.phrases.ordered()[0].uses == 1
    assert PhraseList(tmp_path / "profiles" / "me").ordered()[0].text == "Thank you"  # saved
    assert window.controller.zoom.phrase_index("Thank you") == 0  # the most used comes first in the zoom too


@pytest.mark.parametrize("content", ["[" * 1000 + "]" * 1000, '{"format": 1, "phrases": [{"text": "a \\ud800"}]}'])
def test_the_window_starts_with_a_hostile_phrase_file_and_says_so(qtbot, tmp_path, monkeypatch, content):
    """Issue 48: a 2 KB phrases.json stopped the app at every start (MainWindow built the list unguarded)."""
    from dasher_rnn.lm.ppm import PPMModel
    from tests.conftest import make_sentences, writer_source
    from tests.test_ui import open_window

    monkeypatch.setenv("DASHER_RNN_CONFIG", str(tmp_path / "settings.json"))
    monkeypatch.setenv("DASHER_RNN_PROFILES", str(tmp_path / "profiles"))
    (tmp_path / "profiles" / "me").mkdir(parents=True)
    (tmp_path / "profiles" / "me" / PHRASES_FILE).write_text(content)
    model = PPMModel(ALPHABET)
    model.train_text("\n".join(make_sentences(50)) + "\n")
    window = open_window(qtbot, source=writer_source("ppm", trained_ppm=model, profile="me"), profile="me")
    part = window.phrases
    assert part.phrases is not None and part.phrases.notice
    part.add("Hello there")  # saving goes on: the bad file kept aside, the bad entry left out
    assert [p.text for p in PhraseList(tmp_path / "profiles" / "me").phrases][-1] == "Hello there"
