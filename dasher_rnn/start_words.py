"""A language's starting point for PPM from a frequency-ranked word list (issue 47).

A new user of a language without an RNN used to start from an empty PPM: uniform boxes. Where a word list ships
(``assets/words/CODE.txt``: one word a line, the most frequent first; from the ``worldalphabets`` package's
top-1,000 lists, whose sources and licences ``assets/words/SOURCES.md`` names), PPM learns a text made from it
before the user writes: each word repeated about as often as Zipf's law says a word of its rank occurs
(``scale / rank`` times, at least once), in a fixed pseudo-random order, in short lines of a few words with the
first word capitalised and a full stop at the end, each line its own segment (as a message is). Nothing is
sentences, but the letters, the word starts and ends, and which words are common are the language's.
"""

from __future__ import annotations

import random
from pathlib import Path

from dasher_rnn.paths import ASSETS_DIR

WORDS_DIR = ASSETS_DIR / "words"
ZIPF_SCALE = 300  # the first word is repeated this many times, the r-th scale / r times (at least once)
LINE_WORDS = (2, 7)  # words per line, drawn uniformly
SEED = 47


def word_list(code: str) -> Path | None:
    """The shipped word list of the language ``code`` (assets/words/CODE.txt), or None."""
    path = WORDS_DIR / f"{code}.txt"
    return path if path.is_file() else None


def read_words(path: str | Path) -> list[str]:
    """The words of a word list file, most frequent first (blank lines and ``#`` comments skipped)."""
    text = Path(path).read_text(encoding="utf-8")
    return [w.strip() for w in text.split("\n") if w.strip() and not w.startswith("#")]


def words_text(words: list[str], scale: int = ZIPF_SCALE, seed: int = SEED) -> list[str]:
    """The lines PPM starts from for ``words`` (most frequent first): see the module's docstring."""
    tokens = [w for rank, w in enumerate(words, 1) for _ in range(max(1, round(scale / rank)))]
    rng = random.Random(seed)
    rng.shuffle(tokens)
    lines, i = [], 0
    while i < len(tokens):
        n = rng.randint(*LINE_WORDS)
        chunk = tokens[i:i + n]
        i += n
        chunk[0] = chunk[0][:1].upper() + chunk[0][1:]
        lines.append(" ".join(chunk) + ".")
    return lines
