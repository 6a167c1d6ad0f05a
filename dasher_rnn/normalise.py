"""Map typographic text onto plain ASCII before it meets an alphabet.

Normalisation is alphabet-independent so that every model is scored on the same characters:
curly quotes, dashes, ellipses, unusual spaces, ligatures and accented Latin letters become
their ASCII forms and line endings become ``\\n``. Characters with no sensible ASCII form are
left as they are; the alphabet then decides what to do with them (see ``alphabet``).
Bump ``NORMALISATION_VERSION`` whenever the mapping changes: models record it.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from functools import cache

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


def normalise(text: str) -> str:
    """Return ``text`` with typographic characters mapped onto ASCII and CR/CRLF made ``\\n``."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    table = {ord(ch): _map_char(ch) for ch in set(text) if ord(ch) >= 128 or ch in _SPECIAL}
    return text.translate(table) if table else text


def unmapped_characters(text: str, allowed: set[str] | frozenset[str]) -> Counter[str]:
    """Count the characters of (normalised) ``text`` that are not in ``allowed``."""
    missing = set(text) - set(allowed)
    return Counter({ch: text.count(ch) for ch in missing})
