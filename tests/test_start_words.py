"""A language without an RNN starts PPM from its shipped word list (issue 47), and says so; without one, PPM starts
empty as before."""

from __future__ import annotations

import math

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.languages import Language
from dasher_rnn.start_words import WORDS_DIR, read_words, word_list, words_text


def first_char_bits(config: WriterConfig, word: str, before: str = "") -> float:
    """Bits of ``word``'s first character after ``before`` (a message's start where "")."""
    writer = build_writer(config)
    try:
        dist = writer.request([writer.root(before)]).result()[0]
        return -dist.log_probs[writer.alphabet.index(word[0])] / math.log(2)
    finally:
        writer.close(save=False)


def test_a_language_with_a_word_list_starts_ppm_from_it():
    assert word_list("pl") == WORDS_DIR / "pl.txt" and "nie" in read_words(WORDS_DIR / "pl.txt")[:5]
    default = WriterConfig(language="pl", read_only=True)
    writer = build_writer(default)
    try:
        assert writer.model == "ppm" and "word list pl.txt" in writer.description
        assert "no RNN writes 'pl'" in writer.notice and "word list" in writer.notice
    finally:
        writer.close(save=False)
    empty = WriterConfig(model="ppm", language="pl", read_only=True)  # Dasher's PPM, nothing given: empty
    assert first_char_bits(default, "nie", "To ") < first_char_bits(empty, "nie", "To ") - 0.5


def test_a_language_without_a_word_list_starts_empty_as_before():
    assert word_list("ss") is None
    writer = build_writer(WriterConfig(language="ss", read_only=True))
    try:
        assert writer.model == "ppm" and "trained on nothing" in writer.description
        assert "word list" not in writer.notice
    finally:
        writer.close(save=False)


def test_given_training_text_replaces_the_word_list(tmp_path):
    text = tmp_path / "mine.txt"
    text.write_text("Ala ma kota.\n", encoding="utf-8")
    writer = build_writer(WriterConfig(language="pl", ppm_train=(str(text),), read_only=True))
    try:
        assert "mine.txt" in writer.description and "word list" not in writer.description
    finally:
        writer.close(save=False)


def test_words_text_repeats_frequent_words_more_and_capitalises_lines():
    lines = words_text(["tak", "nie", "dom"], scale=6)
    words = " ".join(lines).lower().replace(".", "").split()
    assert words.count("tak") == 6 and words.count("nie") == 3 and words.count("dom") == 2
    assert all(line[0].isupper() and line.endswith(".") for line in lines)
    assert words_text(["tak", "nie", "dom"], scale=6) == lines  # the same every time


def test_languages_says_what_each_starts_from():
    common = dict(name="x", native_name="", script="Latn", orientation="ltr", alphabet="x", symbols=1, letters=1,
                  kept=1)
    assert "word list pl.txt" in Language(code="pl", ppm_words="pl.txt", **common).starts_from
    assert "empty" in Language(code="ss", **common).starts_from
    assert "english-lstm" in Language(code="en", rnn=("english-lstm",), ppm_words="en.txt", **common).starts_from
