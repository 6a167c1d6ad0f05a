"""Symbol sets: which characters a model predicts, their display order, groups, colours and glyphs.

Policy for characters outside an alphabet (after ``normalise``):
- scoring skips them: they cost no bits, count in the denominator and are reported as skipped;
- training treats them as a context break (the corpus stores them as ``BREAK``);
- prediction cuts the context at the last such character, as Dasher does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dasher_rnn.paths import ASSETS_DIR

ALPHABETS_DIR = ASSETS_DIR / "alphabets"
DEFAULT_ALPHABET = "english"
BREAK = 255  # code of a character outside the alphabet in encoded arrays


class AlphabetError(ValueError):
    """An alphabet file is missing or malformed."""


@dataclass(frozen=True)
class SymbolGroup:
    name: str
    colour: str
    symbols: str


@dataclass(frozen=True)
class Alphabet:
    name: str
    groups: tuple[SymbolGroup, ...]
    glyphs: dict[str, str] = field(default_factory=dict)
    description: str = ""

    def __post_init__(self) -> None:
        symbols = self.symbols
        if len(set(symbols)) != len(symbols):
            raise AlphabetError(f"alphabet {self.name!r} lists a symbol twice")
        if not 0 < len(symbols) < BREAK:
            raise AlphabetError(f"alphabet {self.name!r} must have 1-{BREAK - 1} symbols")

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
        return {
            "name": self.name,
            "description": self.description,
            "groups": [{"name": g.name, "colour": g.colour, "symbols": g.symbols} for g in self.groups],
            "glyphs": dict(self.glyphs),
        }

    @classmethod
    def from_json(cls, data: dict, source: str = "<json>") -> Alphabet:
        try:
            groups = tuple(SymbolGroup(str(g["name"]), str(g["colour"]), str(g["symbols"])) for g in data["groups"])
            return cls(
                name=str(data["name"]),
                groups=groups,
                glyphs={str(k): str(v) for k, v in data.get("glyphs", {}).items()},
                description=str(data.get("description", "")),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise AlphabetError(f"{source}: malformed alphabet ({exc!r})") from None


def available_alphabets() -> list[str]:
    return sorted(p.stem for p in ALPHABETS_DIR.glob("*.json"))


def load_alphabet(name_or_path: str | Path = DEFAULT_ALPHABET) -> Alphabet:
    """Load a shipped alphabet by name (``english``, ``english-limited``) or from a JSON file."""
    path = Path(name_or_path)
    if not path.suffix:
        path = ALPHABETS_DIR / f"{name_or_path}.json"
    if not path.is_file():
        known = ", ".join(available_alphabets())
        raise AlphabetError(f"unknown alphabet {str(name_or_path)!r} (known: {known})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AlphabetError(f"{path}: not a valid alphabet file ({exc})") from None
    return Alphabet.from_json(data, source=str(path))
