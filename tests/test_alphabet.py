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


# -- issue 48: alphabet files read with bounds -------------------------------------------------------------------------
def _returns(fn, *args):
    from tests.test_profile_faults import finishes

    return finishes(fn, *args)


@pytest.mark.parametrize("suffix", [".json", ".xml"])
def test_a_fifo_or_dev_zero_in_place_of_an_alphabet_file_is_refused_at_once(tmp_path, suffix):
    import os

    fifo, zero = tmp_path / f"fifo{suffix}", tmp_path / f"zero{suffix}"
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    for path in (fifo, zero):
        with pytest.raises(AlphabetError):
            _returns(load_alphabet, path)


@pytest.mark.parametrize("content", [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"name": "x", "groups": ' + b"[" * 3000 + b"]" * 3000 + b"}",
])
def test_a_deeply_nested_json_alphabet_is_a_clear_error(tmp_path, content):
    (tmp_path / "deep.json").write_bytes(content)
    with pytest.raises(AlphabetError, match="nested"):
        load_alphabet(tmp_path / "deep.json")


@pytest.mark.parametrize("content, said", [
    (b'<?xml version="1.0" encoding="no-such-encoding"?><alphabets/>', "encoding|LookupError"),
    (b"<alphabets><alphabet>" + b"<group>" * 5000 + b'<s t="a"/>' + b"</group>" * 5000 + b"</alphabet></alphabets>",
     "deep"),
])
def test_a_hostile_dasher_file_is_a_clear_error_never_a_traceback(tmp_path, content, said):
    (tmp_path / "alphabet.x.xml").write_bytes(content)
    with pytest.raises(AlphabetError, match=said):
        load_alphabet(tmp_path / "alphabet.x.xml")


def test_a_million_symbols_are_refused_without_comparing_each_with_each():
    groups = [{"name": "g", "colour": "#fff", "symbols": "ab" * 500_000}]
    with pytest.raises(AlphabetError, match="1-254 symbols"):
        _returns(Alphabet.from_json, {"name": "huge", "groups": groups})


@pytest.mark.parametrize("symbol", ["\x00", "\x1b", "\ud800", "\x7f"])
def test_a_surrogate_nul_or_esc_is_never_a_symbol(tmp_path, symbol):
    with pytest.raises(AlphabetError, match="cannot be a symbol"):
        Alphabet.from_json({"name": "x", "groups": [{"name": "g", "colour": "#fff", "symbols": "ab" + symbol}]})
    xml = f'<alphabets><alphabet name="x"><s t="a"/><s t="&#x{ord(symbol):x};"/></alphabet></alphabets>'
    (tmp_path / "alphabet.x.xml").write_text(xml)
    if symbol != "\x7f":  # XML 1.0 cannot even say them: expat refuses
        with pytest.raises(AlphabetError):
            load_alphabet(tmp_path / "alphabet.x.xml")
        return
    alphabet = load_alphabet(tmp_path / "alphabet.x.xml")
    assert alphabet.symbols == "a" and "control character" in alphabet.description


def test_every_language_alphabet_is_still_built():
    from dasher_rnn.cldr import entries

    for code in sorted(entries())[:400]:
        load_alphabet(code)
