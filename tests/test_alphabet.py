import numpy as np
import pytest

from dasher_rnn.alphabet import BREAK, Alphabet, AlphabetError, available_alphabets, load_alphabet
from dasher_rnn.normalise import normalise, unmapped_characters


def test_english_is_printable_ascii_plus_newline_in_display_order():
    a = load_alphabet("english")
    assert len(a) == 96
    assert set(a.symbols) == {chr(c) for c in range(32, 127)} | {"\n"}
    assert a.symbols.startswith("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    assert a.symbols.endswith(" \n")
    assert [g.name for g in a.groups] == ["lowercase", "uppercase", "digits", "punctuation", "space"]
    assert a.glyph(" ") != " " and a.glyph("\n") == "\u00b6" and a.glyph("q") == "q"
    assert a.group_of("7").name == "digits"


def test_english_limited_is_dashers_61_symbols():
    a = load_alphabet("english-limited")
    assert len(a) == 61
    assert set(a.symbols) == set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ&\"'?!,.\n ")
    assert set(available_alphabets()) >= {"english", "english-limited"}


def test_encode_marks_characters_outside_the_alphabet_as_break():
    a = load_alphabet("english-limited")
    ids = a.encode("Hi 5\u4e2d!")
    assert ids.dtype == np.uint8
    assert ids.tolist() == [a.index("H"), a.index("i"), a.index(" "), BREAK, BREAK, a.index("!")]
    assert a.decode([a.index("o"), a.index("k")]) == "ok"
    with pytest.raises(KeyError, match="'5'"):
        a.index("5")


def test_unknown_alphabet_and_malformed_file_give_clear_errors(tmp_path):
    with pytest.raises(AlphabetError, match="unknown alphabet 'klingon'"):
        load_alphabet("klingon")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(AlphabetError, match="bad.json"):
        load_alphabet(bad)
    bad.write_text('{"name": "x"}')
    with pytest.raises(AlphabetError, match="malformed"):
        load_alphabet(bad)
    with pytest.raises(AlphabetError, match="twice"):
        Alphabet.from_json({"name": "d", "groups": [{"name": "g", "colour": "#fff", "symbols": "aa"}]})


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("\u201cHi\u201d \u2018there\u2019", "\"Hi\" 'there'"),
        ("a\u2013b\u2014c\u2212d", "a-b-c-d"),
        ("wait\u2026", "wait..."),
        ("a\u00a0b\u202fc\u2009d\te", "a b c d e"),
        ("caf\u00e9 na\u00efve \u00c5ngstr\u00f6m \u00e7a", "cafe naive Angstrom ca"),
        ("Stra\u00dfe \u00e6on \u0153uvre \u00f8l", "Strasse aeon oeuvre ol"),
        ("line1\r\nline2\rline3", "line1\nline2\nline3"),
        ("zero\u200bwidth\ufeff", "zerowidth"),
        ("\ufb01ne", "fine"),
    ],
)
def test_normaliser_maps_typographic_text_onto_ascii(raw, expected):
    assert normalise(raw) == expected


def test_normaliser_reports_what_it_could_not_map():
    text = normalise("I \u2764 \u4e2d\u6587 \u4e2d")
    english = load_alphabet("english")
    missing = unmapped_characters(text, set(english.symbols))
    assert missing == {"\u2764": 1, "\u4e2d": 2, "\u6587": 1}
