"""Map typographic text onto an alphabet's characters before it meets the alphabet.

Without an alphabet, text is mapped onto plain ASCII: curly quotes, dashes, ellipses, unusual spaces, ligatures
and accented Latin letters become their ASCII forms and line endings become ``\\n``. Characters with no sensible
ASCII form are left as they are; the alphabet then decides what to do with them (see ``alphabet``).

With an alphabet (``normalise(text, alphabet)``), every character the alphabet has is kept as it is (é stays é
for French, « stays « when the alphabet has it), a character written in a different but canonically equal form
(e + combining acute) becomes the alphabet's form, and only a character the alphabet lacks is folded by the
rules above, and then only when what it folds to is in the alphabet; otherwise it is left as it is, to be
skipped and reported. An alphabet of ASCII symbols only (``english``, ``english-limited``: every model shipped so
far) gets the mapping without an alphabet, exactly as before, so ``NORMALISATION_VERSION`` did not change (and the
rule above gives the same for English: tests/test_languages.py checks it character by character).
Bump it whenever the mapping changes: models record it.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import cache, lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dasher_rnn.alphabet import Alphabet

NORMALISATION_VERSION = 1

_SPECIAL: dict[str, str] = {
    # quotes and apostrophes
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u00b4": "'",
    "\u02bc": "'", "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
    "\u00ab": '"', "\u00bb": '"', "\u2039": "'", "\u203a": "'",
    # dashes and minus signs
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-", "\u00ad": "",
    # ellipsis, bullets
    "\u2026": "...", "\u2022": "*", "\u00b7": ".",
    # spaces and invisible characters
    "\u00a0": " ", "\u2007": " ", "\u202f": " ", "\u205f": " ", "\u3000": " ", "\t": " ",
    "\u200b": "", "\u200c": "", "\u200d": "", "\u2060": "", "\ufeff": "",
    "\u2028": "\n", "\u2029": "\n", "\x0b": "\n", "\x0c": "\n",
    # letters that do not decompose
    "\u00df": "ss", "\u00e6": "ae", "\u00c6": "AE", "\u0153": "oe", "\u0152": "OE",
    "\u00f8": "o", "\u00d8": "O", "\u0142": "l", "\u0141": "L", "\u0111": "d", "\u0110": "D",
    "\u00f0": "d", "\u00d0": "D", "\u00fe": "th", "\u00de": "Th", "\u0131": "i",
    # symbols with a conventional ASCII spelling
    "\u00d7": "x", "\u00f7": "/", "\u2044": "/", "\u00bd": "1/2", "\u00bc": "1/4", "\u00be": "3/4",
}


@cache
def _map_char(ch: str) -> str:
    """ASCII replacement for one non-ASCII character, or the character itself."""
    if ch in _SPECIAL:
        return _SPECIAL[ch]
    if unicodedata.category(ch) == "Zs":
        return " "
    decomposed = unicodedata.normalize("NFKD", ch)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    if stripped and all(ord(c) < 128 for c in stripped):
        return stripped
    return ch


def normalise(text: str, alphabet: Alphabet | None = None) -> str:
    """``text`` with CR/CRLF made ``\\n`` and typographic characters mapped onto ASCII, or, given ``alphabet``,
    onto the alphabet: what it has is kept, what it lacks is folded only onto characters it has."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if alphabet is None or alphabet.symbols.isascii():
        table = {ord(ch): _map_char(ch) for ch in set(text) if ord(ch) >= 128 or ch in _SPECIAL}
        return text.translate(table) if table else text
    symbols = alphabet.symbols
    out = _onto(text, symbols)
    for _ in range(3):  # a fold can leave a letter and a mark that compose (ı + acute -> i + acute -> í): again
        if out == text or unicodedata.is_normalized("NFC", out):
            break
        text, out = out, _onto(out, symbols)
    return out


def _fold(ch: str) -> str:
    """What the alphabet-free mapping makes of one character."""
    return _map_char(ch) if ord(ch) >= 128 or ch in _SPECIAL else ch


@lru_cache(maxsize=64)
def _symbol_set(symbols: str) -> frozenset[str]:
    return frozenset(symbols)


@lru_cache(maxsize=1 << 16)
def _decide(symbols: str, ch: str) -> str:
    """One character onto the alphabet: kept if the alphabet has it, else folded if the alphabet has all of the
    fold (the ASCII fold, else the compatibility form, else the letters without their marks), else kept (to be
    skipped and reported)."""
    have = _symbol_set(symbols)
    if ch in have:
        return ch
    folded = _fold(ch)
    if folded != ch and all(c in have for c in folded):
        return folded
    # beyond ASCII: the compatibility form (Armenian և -> եւ) or the letters without their marks (ё -> е, ἀ -> α)
    compatible = unicodedata.normalize("NFKD", ch)
    bare = "".join(c for c in compatible if not unicodedata.combining(c))
    for form in (unicodedata.normalize("NFC", compatible), bare):
        if form and form != ch and all(c in have for c in form):
            return form
    return ch


def _onto(text: str, symbols: str) -> str:
    """One pass of ``normalise`` with an alphabet (CR already made ``\\n``)."""
    if not unicodedata.is_normalized("NFC", text):
        text = _clusters().sub(lambda m: _cluster(m.group(), symbols), text)
    table = {ord(ch): out for ch in set(text) if (out := _decide(symbols, ch)) != ch}
    return text.translate(table) if table else text


def _cluster(seg: str, symbols: str) -> str:
    """A character with the marks that follow it (or one that canonical normalisation changes on its own):
    the first of its canonical composition, itself or its canonical decomposition that the alphabet has
    entirely, else each character as ``_decide`` says."""
    have = _symbol_set(symbols)
    for form in (unicodedata.normalize("NFC", seg), seg, unicodedata.normalize("NFD", seg)):
        if all(c in have for c in form):
            return form
    return "".join(_decide(symbols, c) for c in seg)


def _char_class(codes: list[int]) -> str:
    """A regular-expression character class of ``codes`` (sorted), as ranges."""
    parts, i = [], 0
    while i < len(codes):
        j = i
        while j + 1 < len(codes) and codes[j + 1] == codes[j] + 1:
            j += 1
        parts.append(re.escape(chr(codes[i])) + ("-" + re.escape(chr(codes[j])) if j > i else ""))
        i = j + 1
    return "[" + "".join(parts) + "]"


@cache
def _clusters() -> re.Pattern[str]:
    """Where canonical normalisation can change text: a character followed by combining marks (or by a letter
    that composes with what precedes it: Hangul vowels and finals, some Indic vowel signs), or a character that
    normalisation replaces on its own (KELVIN SIGN, a composition exclusion). Decompositions all lie below
    U+30000."""
    marks, changed = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3)), []
    for code in range(0x30000):
        ch = chr(code)
        if unicodedata.combining(ch):
            marks.add(code)
        decomposition = unicodedata.decomposition(ch)
        if decomposition and not decomposition.startswith("<"):
            parts = decomposition.split()
            if len(parts) == 2 and not unicodedata.combining(chr(int(parts[1], 16))):
                marks.add(int(parts[1], 16))
            if unicodedata.normalize("NFC", ch) != ch:
                changed.append(code)
    return re.compile(f"(?s:.){_char_class(sorted(marks))}+|{_char_class(changed)}")


def unmapped_characters(text: str, allowed: set[str] | frozenset[str]) -> Counter[str]:
    """Count the characters of (normalised) ``text`` that are not in ``allowed``."""
    missing = set(text) - set(allowed)
    return Counter({ch: text.count(ch) for ch in missing})
