"""Symbol sets: which characters a model predicts, their display order, groups, colours and glyphs, the language
they write, which way it runs, and which symbols act as Dasher's space and paragraph.

An alphabet comes from a shipped JSON file (``english``, ``english-limited``), a language code (``de``, ``ar``: built
from CLDR's letters by ``cldr``; ``languages`` lists them), a JSON file, or a Dasher alphabet file
(``alphabet.*.xml``, read by ``dasher_xml``): ``load_alphabet`` takes any of them.

Policy for characters outside an alphabet (after ``normalise``):
- scoring skips them: they cost no bits, count in the denominator and are reported as skipped;
- training treats them as a context break (the corpus stores them as ``BREAK``);
- prediction cuts the context at the last such character, as Dasher does.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from dasher_rnn.files import read_json
from dasher_rnn.paths import ASSETS_DIR

ALPHABETS_DIR = ASSETS_DIR / "alphabets"
DEFAULT_ALPHABET = "english"
BREAK = 255  # code of a character outside the alphabet in encoded arrays
MAX_SYMBOLS = BREAK - 1  # one byte a symbol, BREAK excluded
MAX_FILE_BYTES = 4 << 20  # an alphabet file (JSON or Dasher's XML): Dasher's largest is under 200 KB
ORIENTATIONS = ("ltr", "rtl", "ttb", "btt")  # left to right, right to left, top to bottom, bottom to top (Dasher's BT)


class AlphabetError(ValueError):
    """An alphabet file is missing or malformed."""


def usable_symbol(ch: str) -> bool:
    """Whether ``ch`` can be a symbol: one character that a file can hold and a screen can show; not a lone surrogate,
    not a control character (NUL, ESC...) other than newline and tab (Dasher's paragraph, a tab key)."""
    return len(ch) == 1 and (ch in "\n\t" or unicodedata.category(ch) not in ("Cs", "Cc"))


@dataclass(frozen=True)
class SymbolGroup:
    name: str
    colour: str
    symbols: str


# the fields beyond groups and glyphs, with the defaults that a JSON file may leave out (and ``to_json`` leaves out)
_OPTIONAL = {"language": "", "orientation": "ltr", "space": " ", "paragraph": "\n", "training_text": ""}


@dataclass(frozen=True)
class Alphabet:
    """Symbols (one character each, fewer than 255), in groups with a colour each, in display order.

    ``language``: the BCP-47 code of the language it writes ("" when unknown); ``orientation``: one of
    ``ORIENTATIONS``; ``space``, ``paragraph``: the symbols that act as Dasher's space and paragraph ("" or a
    character the alphabet lacks: it has none); ``training_text``: the name of the text Dasher trains it on
    (a Dasher file's ``<train>``), "" when none is named. ``glyphs``: how a symbol is drawn when not as itself
    (a Dasher file's display text)."""

    name: str
    groups: tuple[SymbolGroup, ...]
    glyphs: dict[str, str] = field(default_factory=dict)
    description: str = ""
    language: str = ""
    orientation: str = "ltr"
    space: str = " "
    paragraph: str = "\n"
    training_text: str = ""

    def __post_init__(self) -> None:
        symbols = self.symbols
        if not 0 < len(symbols) < BREAK:  # first: the checks below are then on at most 254 symbols
            raise AlphabetError(f"alphabet {self.name!r} must have 1-{MAX_SYMBOLS} symbols, not {len(symbols)}")
        if len(set(symbols)) != len(symbols):
            twice = sorted(ch for ch, n in Counter(symbols).items() if n > 1)
            raise AlphabetError(f"alphabet {self.name!r} lists a symbol twice: {''.join(twice)!r}")
        bad = [ch for ch in symbols if not usable_symbol(ch)]
        if bad:
            raise AlphabetError(f"alphabet {self.name!r}: {', '.join(f'U+{ord(ch):04X}' for ch in bad[:5])} cannot be "
                                "a symbol (a lone surrogate, or a control character other than newline and tab)")
        if self.orientation not in ORIENTATIONS:
            raise AlphabetError(f"alphabet {self.name!r}: orientation {self.orientation!r} is not one of {ORIENTATIONS}")
        if len(self.space) > 1 or len(self.paragraph) > 1:
            raise AlphabetError(f"alphabet {self.name!r}: space and paragraph are one character each (or none)")

    @property
    def symbols(self) -> str:
        """All symbols in display order, as one string (index = symbol id)."""
        return "".join(g.symbols for g in self.groups)

    def __len__(self) -> int:
        return len(self.symbols)

    def __contains__(self, ch: object) -> bool:
        return isinstance(ch, str) and len(ch) == 1 and ch in self._index

    @property
    def _index(self) -> dict[str, int]:
        cached = self.__dict__.get("_index_cache")
        if cached is None:
            cached = {ch: i for i, ch in enumerate(self.symbols)}
            object.__setattr__(self, "_index_cache", cached)
        return cached

    def index(self, ch: str) -> int:
        """Symbol id of ``ch``; raises ``KeyError`` naming the character if it is not in the alphabet."""
        try:
            return self._index[ch]
        except KeyError:
            raise KeyError(f"{ch!r} is not in alphabet {self.name!r}") from None

    def encode(self, text: str) -> np.ndarray:
        """Symbol ids of ``text`` as uint8, with ``BREAK`` for characters outside the alphabet."""
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        lut = self._lookup_table()
        out = np.full(codes.shape, BREAK, dtype=np.uint8)
        small = codes < len(lut)
        out[small] = lut[codes[small]]
        return out

    def decode(self, ids: np.ndarray | list[int]) -> str:
        return "".join(self.symbols[i] for i in ids)

    def _lookup_table(self) -> np.ndarray:
        cached = self.__dict__.get("_lut_cache")
        if cached is None:
            cached = np.full(max(ord(c) for c in self.symbols) + 1, BREAK, dtype=np.uint8)
            for i, ch in enumerate(self.symbols):
                cached[ord(ch)] = i
            object.__setattr__(self, "_lut_cache", cached)
        return cached

    def glyph(self, ch: str) -> str:
        """How a symbol is drawn in a box (space and newline get visible marks)."""
        return self.glyphs.get(ch, ch)

    def group_of(self, ch: str) -> SymbolGroup:
        for group in self.groups:
            if ch in group.symbols:
                return group
        raise KeyError(f"{ch!r} is not in alphabet {self.name!r}")

    def to_json(self) -> dict:
        """The alphabet as JSON; a field at its default is left out (so English's JSON is what it always was)."""
        out = {
            "name": self.name,
            "description": self.description,
            "groups": [{"name": g.name, "colour": g.colour, "symbols": g.symbols} for g in self.groups],
            "glyphs": dict(self.glyphs),
        }
        out.update({k: getattr(self, k) for k, default in _OPTIONAL.items() if getattr(self, k) != default})
        return out

    @classmethod
    def from_json(cls, data: dict, source: str = "<json>") -> Alphabet:
        try:
            groups = tuple(SymbolGroup(str(g["name"]), str(g["colour"]), str(g["symbols"])) for g in data["groups"])
            return cls(
                name=str(data["name"]),
                groups=groups,
                glyphs={str(k): str(v) for k, v in data.get("glyphs", {}).items()},
                description=str(data.get("description", "")),
                **{k: str(data.get(k, default)) for k, default in _OPTIONAL.items()},
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise AlphabetError(f"{source}: malformed alphabet ({exc!r})") from None
        except AlphabetError as exc:
            raise AlphabetError(f"{source}: {exc}") from None


def available_alphabets() -> list[str]:
    """The shipped alphabets' names (every language code is an alphabet too: ``languages.languages()``)."""
    return sorted(p.stem for p in ALPHABETS_DIR.glob("*.json"))


def load_alphabet(name_or_path: str | Path = DEFAULT_ALPHABET) -> Alphabet:
    """An alphabet by shipped name (``english``, ``english-limited``), language code (``de``, ``fr``, ``ar``,
    ``sr-Latn``, ``pt_BR``: built from CLDR's letters, the same object each time; ``en`` is ``english``), JSON
    file, or Dasher alphabet file (``FILE.xml``: its first alphabet; ``FILE.xml#NAME``: the one named NAME)."""
    text = str(name_or_path)
    path = Path(name_or_path)
    if path.suffix.lower() == ".xml" or (".xml#" in text.lower() and not path.is_file()):
        from dasher_rnn.dasher_xml import DasherFileError, read_dasher_alphabet

        try:
            data, source = read_dasher_alphabet(text)
        except DasherFileError as exc:
            raise AlphabetError(str(exc)) from None
        return Alphabet.from_json(data, source=source)
    if not path.suffix:
        shipped = ALPHABETS_DIR / f"{text}.json"
        if shipped.is_file():
            path = shipped
        else:
            from dasher_rnn.cldr import find_language

            code = find_language(text)
            if code is not None:
                return _language_alphabet(code)
    if not path.is_file():
        known = ", ".join(available_alphabets())
        raise AlphabetError(f"unknown alphabet {text!r} (known: {known}, a language code such as de, fr or ar "
                            "(`dasher-rnn languages` lists them), a JSON file or a Dasher alphabet .xml file)")
    return _read_json(path)


def _read_json(path: Path) -> Alphabet:
    try:
        data = read_json(path, MAX_FILE_BYTES)
    except (OSError, ValueError) as exc:  # UnreadableFile (a FIFO, a device, too large), BadFile (not JSON, too deep)
        raise AlphabetError(f"{path}: not a valid alphabet file ({exc})") from None
    if not isinstance(data, dict):
        raise AlphabetError(f"{path}: malformed alphabet (not a JSON object)")
    return Alphabet.from_json(data, source=str(path))


@cache
def _language_alphabet(code: str) -> Alphabet:
    """The alphabet of a language, built once: ``code`` as ``cldr.entries`` has it (``cldr.find_language`` reads
    the ways people write codes); ``en`` is the shipped ``english``, so the English model's alphabet never moves."""
    if code == "en":
        return _read_json(ALPHABETS_DIR / "english.json")
    from dasher_rnn.cldr import build, entries

    if code not in entries():
        raise AlphabetError(f"unknown language {code!r} (`dasher-rnn languages` lists the codes)")
    return Alphabet.from_json(build(code, MAX_SYMBOLS).json, source=f"language {code!r}")
