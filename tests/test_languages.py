"""Alphabets for every language (CLDR through worldalphabets), Dasher's alphabet files, normalisation onto an
alphabet, and `dasher-rnn languages`."""

import json
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dasher_rnn.alphabet import MAX_SYMBOLS, Alphabet, AlphabetError, SymbolGroup, load_alphabet
from dasher_rnn.cldr import find_language
from dasher_rnn.dasher_xml import dasher_alphabet_names
from dasher_rnn.languages import language_alphabet, languages
from dasher_rnn.lm.corpus import prepare_text
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.normalise import normalise

ENGLISH = load_alphabet("english")


def test_at_least_a_hundred_languages_each_with_a_valid_alphabet():
    found = languages()
    assert len(found) >= 100
    codes = [language.code for language in found]
    assert len(set(codes)) == len(codes)
    for language in found:
        alphabet = language_alphabet(language.code)
        assert 0 < len(alphabet) <= MAX_SYMBOLS == 254, language.code
        assert " " in alphabet and "\n" in alphabet, language.code
        assert (alphabet.space, alphabet.paragraph) == (" ", "\n"), language.code
        assert alphabet.orientation == language.orientation in ("ltr", "rtl", "ttb"), language.code
        assert all(len(g.symbols) and g.colour.startswith("#") for g in alphabet.groups), language.code
        assert language.kept <= language.letters and language.symbols == len(alphabet)
        assert language_alphabet(language.code) is alphabet  # built once
    by_code = {language.code: language for language in found}
    assert by_code["en"].rnn == ("english-lstm",) and by_code["pl"].rnn == ()
    assert by_code["de"].rnn == by_code["fr"].rnn == by_code["es"].rnn == ("de-fr-es-lstm",)  # one model, three
    assert by_code["zh"].kept < by_code["zh"].letters  # the most frequent of its 2210 letters
    assert "most frequent" in language_alphabet("zh").description


def test_letters_of_german_french_spanish_polish_and_their_punctuation():
    de, fr, es, pl = (language_alphabet(code) for code in ("de", "fr", "es", "pl"))
    assert set("äöüßÄÖÜ") <= set(de.symbols) and set("„“") <= set(de.symbols)
    assert set("éèêçœ«»ÉÇŒ") <= set(fr.symbols)
    assert set("ñÑ¿¡áé") <= set(es.symbols)
    assert set("ąćęłńóśźżŁ") <= set(pl.symbols)
    for alphabet in (de, fr, es, pl):
        assert alphabet.symbols.startswith("a") and set("0123456789.,?!") <= set(alphabet.symbols)
        assert [g.name for g in alphabet.groups] == ["lowercase", "uppercase", "digits", "punctuation", "space"]
        assert alphabet.glyph(" ") == ENGLISH.glyph(" ") and alphabet.glyph("\n") == "\u00b6"
        assert alphabet.language == alphabet.name and alphabet.orientation == "ltr"


def test_right_to_left_scripts_and_abugidas():
    for code in ("ar", "he", "fa", "ur", "dv", "syr"):
        assert language_alphabet(code).orientation == "rtl", code
    assert language_alphabet("ar").group_of("\u061f").name == "punctuation"  # ؟
    assert "\u200c" in language_alphabet("fa")  # Persian's zero-width non-joiner, drawn visibly
    hindi = language_alphabet("hi")
    assert set("कखग\u093f\u0940\u094d\u0964") <= set(hindi.symbols)  # letters, vowel signs, virama, danda
    assert hindi.glyph("\u093f") == "\u25cc\u093f"
    thai = language_alphabet("th")
    assert "\u0e48" in thai and "\u0e31" in thai  # tone mark and vowel sign: Thai cannot be written without them
    assert language_alphabet("ru").symbols.startswith("абв") and "Ж" in language_alphabet("ru")


def test_korean_is_written_with_hangul_letters_that_compose_into_syllables():
    korean = language_alphabet("ko")
    text = normalise("안녕하세요?", korean)
    assert all(ch in korean for ch in text)
    assert unicodedata.normalize("NFC", text) == "안녕하세요?"


def test_english_is_the_shipped_alphabet_and_codes_are_read_as_people_write_them():
    assert load_alphabet("en") is language_alphabet("en") and load_alphabet("en").name == "english"
    assert load_alphabet("english").to_json() == {**load_alphabet("en").to_json()}
    assert load_alphabet("de") is language_alphabet("de")
    assert find_language("de-DE") == find_language("DE") == "de"
    assert find_language("pt_BR") == "pt"
    assert find_language("sr-latn") == "sr-Latn" and find_language("sr") == "sr"
    assert find_language("klingon") is None
    with pytest.raises(AlphabetError, match="unknown alphabet 'klingon'"):
        load_alphabet("klingon")
    with pytest.raises(AlphabetError, match="unknown language"):
        language_alphabet("xx-Zzzz")


def test_alphabet_json_carries_language_orientation_space_paragraph_and_training_text():
    english = load_alphabet("english").to_json()
    assert set(english) == {"name", "description", "groups", "glyphs", "language"}  # the rest at their defaults
    hebrew = Alphabet("he", (SymbolGroup("letters", "#fff", "אב \n"),), language="he", orientation="rtl",
                      training_text="training_hebrew_IL.txt")
    again = Alphabet.from_json(json.loads(json.dumps(hebrew.to_json())))
    assert again == hebrew and again.orientation == "rtl" and again.training_text == "training_hebrew_IL.txt"
    assert Alphabet.from_json({"name": "x", "groups": [{"name": "g", "colour": "#fff", "symbols": "ab"}]}).space == " "
    with pytest.raises(AlphabetError, match="orientation"):
        Alphabet("x", (SymbolGroup("g", "#fff", "ab"),), orientation="sideways")


# -- normalisation onto an alphabet ---------------------------------------------------------------------------


def test_normalise_keeps_what_the_alphabet_has_and_folds_the_rest():
    fr = language_alphabet("fr")
    text = "\u201cL\u2019\u00e9t\u00e9 \u00e0 Gda\u0144sk\u2026\u201d \u00abOui\u00bb\r\nCafe\u0301"
    assert normalise(text, fr) == "\"L'\u00e9t\u00e9 \u00e0 Gdansk...\" \u00abOui\u00bb\nCaf\u00e9"
    assert normalise(text, ENGLISH) == normalise(text) == "\"L'ete a Gdansk...\" \"Oui\"\nCafe\u0301"
    assert normalise("Stra\u00dfe \u0142\u00f3d\u017a", language_alphabet("de")) == "Stra\u00dfe lodz"
    assert normalise("Stra\u00dfe \u0142\u00f3d\u017a", language_alphabet("pl")) == "Strasse \u0142\u00f3d\u017a"
    # what cannot be folded onto the alphabet stays, to be skipped and reported (Russian has no Latin e)
    assert normalise("\u4e2d \u00e9 \u2014", language_alphabet("ru")) == "\u4e2d \u00e9 -"
    assert normalise("\u1f00\u03bb\u03bb\u03ac", language_alphabet("el")) == "\u03b1\u03bb\u03bb\u03ac"  # ἀ -> α
    assert normalise("\u0587", language_alphabet("hy")) == "\u0587"  # Armenian's և is one of its letters


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_normalise_onto_english_is_todays_normalise(text):
    assert normalise(text, ENGLISH) == normalise(text)
    assert normalise(text, load_alphabet("english-limited")) == normalise(text)


def test_the_rule_itself_gives_todays_mapping_for_english_character_by_character():
    """English's figures do not move because an ASCII alphabet takes the old mapping; the new rule agrees with it:
    English plus é (so that the rule, not the shortcut, runs) differs from the old mapping only in keeping é."""
    english_and_e = Alphabet("english+é", (SymbolGroup("all", "#fff", ENGLISH.symbols + "\u00e9"),))
    differ = [chr(c) for c in range(0x30000) if not 0xD800 <= c < 0xE000
              and normalise(chr(c), english_and_e) != normalise(chr(c))]
    assert differ == ["\u00e9"]
    for base in "aeAE? ":
        for mark in map(chr, range(0x300, 0x370)):
            if unicodedata.normalize("NFC", base + mark) != "\u00e9":
                assert normalise(base + mark, english_and_e) == normalise(base + mark)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("aeiouéèçœßłń\u0301\u0300\u0327\u00ad\u0131 \u2019\u00ab\u2026\u1100\u1161"
                                        "\uac00\u0915\u093f\u094d\u0958\u212a"), max_size=30),
       st.sampled_from(["fr", "de", "pl", "hi", "ko", "vi"]))
def test_normalise_onto_a_language_is_idempotent(text, code):
    alphabet = language_alphabet(code)
    once = normalise(text, alphabet)
    assert normalise(once, alphabet) == once


def test_training_text_keeps_the_languages_letters():
    fr = language_alphabet("fr")
    assert prepare_text("L\u2019\u00e9t\u00e9\r\n\r\nD\u00e9j\u00e0", alphabet=fr) == "L'\u00e9t\u00e9\nD\u00e9j\u00e0"
    assert prepare_text("L\u2019\u00e9t\u00e9") == "L'ete"


# -- Dasher's alphabet files ----------------------------------------------------------------------------------

DASHER_FILE = """<?xml version="1.0"?>
<!DOCTYPE alphabets SYSTEM "alphabet.dtd">
<?xml-stylesheet type="text/xsl" href="alphabet.xsl"?>
<alphabets langcode="he">
<alphabet name="Ivrit test">
<orientation type="RL"/>
<encoding type="Hebrew"/>
<palette>Default</palette>
<train>training_hebrew_IL.txt</train>
<space d="&#x25a1;" t=" " b="9" />
<paragraph d="&#182;" b="9"/>
<control d="Control" t="" b="8"/>
<conversionmode id="0"/>
<group name="Hebrew letters" b="0">
  <s d="&#x05d0;" t="&#x05d0;" note="Alef"/>
  <s d="&#x05d1;" t="&#x05d1;" />
  <s d="&#x05d2;" t="&#x05d2;" />
  <s d="&#x05dc;" t="&#x05dc;" />
  <s d="&#x05de;" t="&#x05de;" />
  <group name="Final forms" b="113">
    <s d="&#x05dd;" t="&#x05dd;" note="Final Mem"/>
    <s d="&#x05df;" t="&#x05df;" />
  </group>
  <s d="&#x05e9;" t="&#x05e9;" />
  <s d="&#x05d0;" t="&#x05d0;" note="the same letter again: left out"/>
</group>
<group name="Punctuation" b="112">
  <s b="106" d="&#x200F;(&#x200F;" t="("/>
  <s b="107" d="&#x200F;)&#x200F;" t=")"/>
  <s d="." t="."/>
  <s d="?" t="?"/>
  <s d="two" t="ab"/>
</group>
</alphabet>
<alphabet name="Ivrit small">
<orientation type="RL"/><encoding type="Hebrew"/><palette>Default</palette><train>t.txt</train>
<space d="_" t=" "/><paragraph d="&#182;"/><control d="Control" t=""/>
<group name="Letters"><s d="&#x05d0;" t="&#x05d0;"/><s d="&#x05d1;" t="&#x05d1;"/></group>
</alphabet>
</alphabets>
"""


def test_a_dasher_alphabet_file_loads_and_writes(tmp_path):
    path = tmp_path / "alphabet.test.xml"
    path.write_text(DASHER_FILE, encoding="utf-8")
    alphabet = load_alphabet(path)
    assert alphabet.name == "Ivrit test" and alphabet.language == "he" and alphabet.orientation == "rtl"
    assert alphabet.training_text == "training_hebrew_IL.txt"
    assert [g.name for g in alphabet.groups] == ["Hebrew letters", "Hebrew letters / Final forms", "Hebrew letters",
                                                 "Punctuation", "space"]
    assert alphabet.symbols == "\u05d0\u05d1\u05d2\u05dc\u05de\u05dd\u05df\u05e9().?\n "
    assert (alphabet.space, alphabet.paragraph) == (" ", "\n")
    colours = [g.colour for g in alphabet.groups]
    assert colours[0] == colours[2] and len({colours[0], colours[1], colours[3], colours[4]}) == 4
    assert alphabet.glyph("(") == "\u200f(\u200f" and alphabet.glyph("\n") == "\u00b6" and alphabet.glyph(" ") == "\u25a1"
    assert "1 symbol left out (not one character)" in alphabet.description and "1 symbol left out (repeated)" in \
        alphabet.description
    assert dasher_alphabet_names(path) == ["Ivrit test", "Ivrit small"]
    assert load_alphabet(f"{path}#Ivrit small").symbols == "\u05d0\u05d1\n "

    # it writes: text encodes and decodes, and Dasher's PPM learns and predicts over it
    text = "\u05e9\u05dc\u05d5\u05dd (\u05e9\u05dc\u05d5\u05dd)?\n"
    ids = alphabet.encode(text)
    assert alphabet.decode([i for i in ids if i != 255]) == "\u05e9\u05dc\u05dd (\u05e9\u05dc\u05dd)?\n"
    model = PPMModel(alphabet)
    model.train_text("\u05e9\u05dc\u05de \u05e9\u05dc\u05de \u05e9\u05dc\u05de\n" * 5)
    model.reset()
    for ch in "\u05e9\u05dc":
        model.advance(alphabet.index(ch))
    probs = np.asarray(model.probs())
    assert probs.shape == (len(alphabet),) and abs(probs.sum() - 1) < 1e-6
    assert int(np.argmax(probs)) == alphabet.index("\u05de")
    assert json.loads(json.dumps(alphabet.to_json(), ensure_ascii=False))["orientation"] == "rtl"


@pytest.mark.parametrize("content, message", [
    ("<alphabets><alphabet name='x'>", "not a valid Dasher alphabet file"),
    ("<colours/>", "not a Dasher alphabet file"),
    ("<alphabets langcode='en'/>", "no <alphabet>"),
    ("<alphabets><alphabet name='x'><group name='g'/></alphabet></alphabets>", "no symbols"),
    ('<!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]><alphabets>&x;</alphabets>', "entit"),
    ('<!DOCTYPE a [<!ENTITY x "xx"><!ENTITY y "&x;&x;">]><alphabets>&y;</alphabets>', "entit"),
    ('<!DOCTYPE a [<!ENTITY x "xx">]><alphabets/>', "declares XML entities"),
    ('<!DOCTYPE alphabets SYSTEM "alphabet.dtd"><alphabets><alphabet name="x"><s t="&nbsp;" d="a"/></alphabet>'
     "</alphabets>", "&nbsp;"),
])
def test_a_malformed_dasher_file_is_an_alphabet_error_naming_it(tmp_path, content, message):
    path = tmp_path / "bad.xml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(AlphabetError, match=message) as info:
        load_alphabet(path)
    assert "bad.xml" in str(info.value)


def test_the_languages_command_lists_every_language(capsys):
    from dasher_rnn.cli import main

    assert main(["languages", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert len(listed) == len(languages()) >= 100
    english = next(row for row in listed if row["code"] == "en")
    assert english["rnn"] == ["english-lstm"] and english["alphabet"] == "english" and english["symbols"] == 96
    arabic = next(row for row in listed if row["code"] == "ar")
    assert arabic["orientation"] == "rtl" and arabic["ppm_text"] is None and arabic["ppm_words"] == "ar.txt"
    assert "word list ar.txt" in arabic["starts_from"] and "english-lstm" in english["starts_from"]
    assert main(["languages"]) == 0
    table = capsys.readouterr().out
    assert "PPM from empty" in table and "PPM from the word list pl.txt" in table and "english-lstm" in table
