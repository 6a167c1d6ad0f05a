"""Languages: every language that can be written, and what each one has (an alphabet, a PPM text, an RNN).

``languages()`` lists them; ``language_alphabet("de")`` is a language's alphabet (``load_alphabet("de")`` gives the
same object), built from CLDR's letters by ``cldr`` (the data and its licences are described there: letters from
the ``worldalphabets`` package, MIT, built from Unicode CLDR, Unicode License v3). ``en`` is the shipped
``english`` alphabet. Codes are read as people write them: ``de``, ``DE``, ``de-DE``, ``pt_BR``, ``sr-latn``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from dasher_rnn.alphabet import MAX_SYMBOLS, Alphabet, AlphabetError, SymbolGroup, load_alphabet
from dasher_rnn.cldr import build, entries, find_language
from dasher_rnn.paths import ASSETS_DIR, MODELS_DIR

# The text a language's PPM starts from, shipped as assets/training/CODE.txt (none ships yet: PPM learns from empty).
TRAINING_TEXT_DIR = ASSETS_DIR / "training"


@dataclass(frozen=True)
class Language:
    """A language that can be written, and what it has.

    ``code``: BCP-47, what ``--alphabet`` takes (``sr-Latn`` for a language's other script); ``name``: in English;
    ``native_name``: in the language itself, "" where the data has none (so far everywhere); ``script``: ISO 15924;
    ``orientation``: the alphabet's; ``alphabet``: its name; ``symbols``: how many; ``letters``: the letters the
    data lists (both cases); ``kept``: those in the alphabet (fewer only where the 254-symbol limit kept the most
    frequent); ``ppm_text``: the text PPM starts from, if one ships (assets/training/CODE.txt), else None (PPM
    learns from empty); ``rnn``: the shipped RNN model folders that write it; ``ppm_words``: the shipped word list
    (assets/words/CODE.txt, ``start_words.py``) PPM starts from where no RNN writes the language and no text ships,
    else None; ``starts_from``: what a new user's prediction starts from, in words."""

    code: str
    name: str
    native_name: str
    script: str
    orientation: str
    alphabet: str
    symbols: int
    letters: int
    kept: int
    ppm_text: str | None = None
    rnn: tuple[str, ...] = ()
    ppm_words: str | None = None

    @property
    def starts_from(self) -> str:
        if self.rnn:
            return f"the RNN {self.rnn[0]} (its PPM empty)"
        if self.ppm_text:
            return f"PPM from the text {self.ppm_text}"
        if self.ppm_words:
            return f"PPM from the word list {self.ppm_words} (worldalphabets)"
        return "PPM from empty (uniform)"

    def to_json(self) -> dict:
        return {"code": self.code, "name": self.name, "native_name": self.native_name, "script": self.script,
                "orientation": self.orientation, "alphabet": self.alphabet, "symbols": self.symbols,
                "letters": self.letters, "kept_letters": self.kept, "ppm_text": self.ppm_text,
                "ppm_words": self.ppm_words, "rnn": list(self.rnn), "starts_from": self.starts_from}


def language_alphabet(code: str) -> Alphabet:
    """The alphabet of the language ``code`` names (as ``find_language`` reads it); ``en`` is ``english``."""
    found = find_language(code)
    if found is None:
        raise AlphabetError(f"unknown language {code!r} (`dasher-rnn languages` lists the codes)")
    return load_alphabet(found)


@cache
def _shipped_models() -> dict[str, tuple[str, ...]]:
    """The shipped model folders by the language they write (an English alphabet's model writes en; a multilingual
    model each language of its ``languages``)."""
    models: dict[str, list[str]] = {}
    for config_path in sorted(MODELS_DIR.glob("*/config.json")):
        try:
            config = json.loads(config_path.read_text(encoding="utf-8"))
            alphabet = config.get("alphabet") or {}
            name = str(alphabet.get("name", ""))
            code = alphabet.get("language") or config.get("language") or ("en" if name.startswith("english") else name)
            codes = list(config.get("languages") or {}) or [code]  # a multilingual model writes each it lists
        except (OSError, ValueError, AttributeError):
            continue
        for code in codes:
            models.setdefault(str(code), []).append(config_path.parent.name)
    return {k: tuple(v) for k, v in models.items()}


def shipped_rnn(code: str) -> Path | None:
    """The shipped RNN model folder that writes the language ``code`` (as ``find_language`` reads it), or None."""
    found = find_language(code)
    folders = _shipped_models().get(found or code, ())
    return MODELS_DIR / folders[0] if folders else None


def training_text(code: str) -> str | None:
    """The shipped text PPM starts from for ``code`` (assets/training/CODE.txt), or None."""
    path = TRAINING_TEXT_DIR / f"{code}.txt"
    return path.name if path.is_file() else None


def _words_name(code: str) -> str | None:
    from dasher_rnn.start_words import word_list

    found = word_list(code)
    return found.name if found is not None else None


@cache
def languages() -> list[Language]:
    """Every language that can be written, by code."""
    return list(each_language())


def language_count() -> int:
    """How many languages ``languages()`` lists (known at once: the data's entries)."""
    return len(entries())


def each_language() -> Iterator[Language]:
    """``languages()`` one at a time, each as soon as its alphabet is built (building them all takes seconds)."""
    models = _shipped_models()
    for code, entry in sorted(entries().items()):
        alphabet = language_alphabet(code)
        if code == "en":
            letters = kept = sum(len(g.symbols) for g in alphabet.groups if g.name in ("lowercase", "uppercase"))
        else:
            built = build(code, MAX_SYMBOLS)
            letters, kept = built.letters, built.kept
        yield Language(code=code, name=entry.name, native_name="", script=entry.script,
                       orientation=alphabet.orientation, alphabet=alphabet.name, symbols=len(alphabet),
                       letters=letters, kept=kept, ppm_text=training_text(code), rnn=models.get(code, ()),
                       ppm_words=_words_name(code))


def union_alphabet(codes: list[str]) -> Alphabet:
    """One alphabet with every symbol of the languages' alphabets (the first one's order, then the others' new ones,
    each in its group): what a multilingual model is trained on, each language's alphabet a subset of it."""
    alphabets = [language_alphabet(code) for code in codes]
    groups: dict[str, list[str]] = {}
    colours: dict[str, str] = {}
    seen: set[str] = set()
    for alphabet in alphabets:
        for group in alphabet.groups:
            colours.setdefault(group.name, group.colour)
            for ch in group.symbols:
                if ch not in seen:
                    seen.add(ch)
                    groups.setdefault(group.name, []).append(ch)
    glyphs = {k: v for a in alphabets for k, v in a.glyphs.items()}
    return Alphabet(f"union-{'-'.join(codes)}", tuple(SymbolGroup(n, colours[n], "".join(s)) for n, s in groups.items()),
                    glyphs, f"every symbol of {', '.join(codes)}")
