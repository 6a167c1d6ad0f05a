"""Alphabets built from CLDR's letters, for every language the data knows, in the alphabet's JSON form.

``alphabet.load_alphabet("de")`` makes an ``Alphabet`` of ``build("de", 254).json``; ``languages`` lists them. This
module reads data only, so that ``alphabet`` can use it (it imports nothing of ours).

An alphabet is built from data, not written by hand: the language's lower-case letters in its alphabetical order,
their upper case where the script has case, the combining vowel signs and marks that an abugida (Devanagari,
Bengali, Thai, Tibetan...) cannot be written without, digits (0-9 and the language's own), the common punctuation
of english.json plus what the script and the language use (``¿ ¡`` for Spanish, ``« »`` for French, ``„ “`` for
German, ``، ؟`` for Arabic, ``।`` for Hindi, ``。、`` for Chinese), space and newline. Groups, colours and the glyphs
of space and newline are english.json's. Right to left for scripts whose letters are right to left (Arabic,
Hebrew, Syriac, Thaana, N'Ko, Adlam, Hanifi Rohingya), top to bottom for Mongolian. An alphabet holds at most 254
symbols (one byte each, 255 marks a character outside it): a language with more letters (Chinese, Japanese, the
Ethiopic syllabary) keeps its most frequent letters and its description says how many of how many; Korean is
written with Hangul's 67 conjoining letters, from which every syllable is made. English is not built here: it is
the shipped ``english`` alphabet, so the English model and its figures are those they always were.

Data: the letters, their frequencies and the languages' English names come from the ``worldalphabets`` package
(MIT licence, (c) Will Wade), whose alphabets are built from the Unicode CLDR's exemplar characters (CLDR data:
Unicode License v3) with letter frequencies from its own corpora. Punctuation, marks and digits come from
Unicode's character data (Python's ``unicodedata``) and the small tables below. The data has no names of
languages in themselves (``languages.Language.native_name`` is "").
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.metadata import version

COLOURS = {"lowercase": "#fde7b0", "uppercase": "#c9e4f6", "letters": "#fde7b0", "marks": "#e0d4f5",
           "digits": "#d8f0c8", "punctuation": "#f3d0e4", "space": "#e6e6e6"}
GLYPHS = {" ": "\u2423", "\n": "\u00b6"}
ZWNJ = "\u200c"  # zero-width non-joiner: Persian, Urdu and Pashto write it inside words (Dasher's glyph: ∥)

# english.json's punctuation: every alphabet has it (digits and Latin punctuation are written in every script)
COMMON_PUNCTUATION = ".,'?!\"-:;()&@#$%*+/=<>[]\\^_`{|}~"
CJK_PUNCTUATION = "\u3002\u3001\uff0c\uff01\uff1f\uff1a\uff1b\u300c\u300d\u300e\u300f\uff08\uff09\u30fb\u30fc\u301c\u300a\u300b"
SCRIPT_PUNCTUATION = {
    "Arab": "\u060c\u061b\u061f\u066a\u00ab\u00bb",  # ، ؛ ؟ ٪ « »
    "Hebr": "\u05be\u05f3\u05f4\u20aa",  # maqaf, geresh, gershayim, shekel
    "Syrc": "\u0700\u0701\u0702\u060c\u061b\u061f",
    "Thaa": "\u060c\u061b\u061f",
    "Nkoo": "\u07f8\u07f9\u060c\u061f",
    "Adlm": "\U0001e95e\U0001e95f\u060c\u061f",
    "Rohg": "\u060c\u061b\u061f",
    "Deva": "\u0964\u0965",  # danda, double danda
    "Beng": "\u0964\u0965",
    "Guru": "\u0964\u0965",
    "Orya": "\u0964\u0965",
    "Grek": "\u00ab\u00bb\u00b7",  # the Greek question mark is ";" once normalised, the ano teleia "·"
    "Cyrl": "\u00ab\u00bb\u201e\u201c\u2116",  # « » „ “ №
    "Armn": "\u0589\u055d\u055e\u055c\u055b\u055a\u00ab\u00bb",
    "Geor": "\u201e\u201c\u00ab\u00bb",
    "Ethi": "\u1362\u1363\u1364\u1365\u1366\u1367\u1368\u1361",  # ። ፣ ፤ ፥ ፦ ፧ ፨ and the word space ፡
    "Khmr": "\u17d4\u17d5\u17d6\u17d7",
    "Mymr": "\u104a\u104b",
    "Tibt": "\u0f0b\u0f0d\u0f0e\u0f14",  # tsheg (between syllables), shad
    "Mong": "\u1802\u1803",
    "Cans": "\u166e",
    "Vaii": "\ua60d\ua60e\ua60f",
    "Olck": "\u1c7e\u1c7f",
    "Mtei": "\uabeb\uaaf0\uaaf1",
    "Cakm": "\U00011141\U00011142\U00011143",
    "Lepc": "\u1c3b\u1c3c\u1c3d\u1c3e\u1c3f",
    "Saur": "\ua8ce\ua8cf",
    "Hans": CJK_PUNCTUATION, "Hant": CJK_PUNCTUATION, "Jpan": CJK_PUNCTUATION, "Hira": CJK_PUNCTUATION,
    "Kana": CJK_PUNCTUATION, "Yiii": CJK_PUNCTUATION,
}
# what a language writes beyond its script's: quotation marks as CLDR gives them, Spanish's opening ¿ ¡, the
# Catalan middle dot (l·l)
LANGUAGE_PUNCTUATION = {
    "es": "¿¡«»“”", "ast": "¿¡«»", "gl": "¿¡«»", "ca": "·«»", "eu": "«»", "fr": "«»", "br": "«»", "it": "«»",
    "pt": "«»“”", "ro": "„”«»", "de": "„“‚‘", "lb": "„“", "pl": "„”«»", "cs": "„“‚‘", "sk": "„“‚‘", "sl": "„“»«",
    "hr": "„“", "bs": "„“", "sr": "„“", "hu": "„”»«", "da": "„“", "is": "„“‚‘", "nb": "«»", "nn": "«»", "no": "«»",
    "sv": "”’", "fi": "”’", "et": "„“", "lt": "„“", "lv": "«»„“", "sq": "«»„“", "tr": "“”", "nl": "‘’“”", "vi": "“”",
    "fa": ZWNJ, "ur": ZWNJ, "ps": ZWNJ,
}
# scripts that cannot be written without their combining vowel signs and marks (the data lists the letters only)
MARK_SCRIPTS = {"Deva", "Beng", "Guru", "Gujr", "Orya", "Taml", "Telu", "Knda", "Mlym", "Sinh", "Thai", "Laoo", "Khmr",
                "Mymr", "Tibt", "Thaa", "Cakm", "Lepc", "Saur", "Mtei", "Nkoo", "Adlm", "Rohg", "Bali", "Java", "Bugi",
                "Batk", "Buhd", "Hano", "Tagb", "Tglg", "Limb", "Rjng", "Kali"}
ARABIC_MARKS = "\u064b\u064c\u064d\u064e\u064f\u0650\u0651\u0652\u0670"  # fathatan ... sukun, superscript alef
TOP_TO_BOTTOM = {"Mong"}
# a language written in several scripts: the script its plain code means (others are CODE-Script)
DEFAULT_SCRIPT = {"az": "Latn", "bal": "Arab", "be": "Cyrl", "bm": "Latn", "ff": "Latn", "iu": "Cans", "ja": "Jpan",
                  "kaa": "Latn", "ko": "Kore", "kok": "Deva", "ks": "Arab", "mn": "Cyrl", "mni": "Beng", "mr": "Deva",
                  "sat": "Olck", "sr": "Cyrl", "uz": "Latn", "zh": "Hans"}
# worldalphabets' entries whose "script" names a language too
ODD_ENTRIES = {("zh", "min-nan-Hans"): ("nan", "Hans"), ("zh", "yue-Hant"): ("yue", "Hant")}
# entries whose letters are in another script than the data says (worldalphabets 0.1.1): the languages' traditional
# scripts, so their code is CODE-Script (Tagalog in Baybayin is tl-Tglg; tl itself, in Latin letters, has no data)
MISLABELLED = {("ban", "Latn"): "Bali", ("bku", "Latn"): "Buhd", ("bug", "Latn"): "Bugi", ("bya", "Latn"): "Batk",
               ("hnn", "Latn"): "Hano", ("lif", "Deva"): "Limb", ("mid", "Latn"): "Mand", ("rej", "Latn"): "Rjng",
               ("sam", "Latn"): "Samr", ("tbw", "Latn"): "Tagb", ("tl", "Latn"): "Tglg", ("zra", "Latn"): "Kali"}
# letters the data leaves out of a few languages' lists (Somali's vowels, Urdu's noon ghunna, Armenian's և,
# Malayalam's chillu letters, Maithili's vowels)
LANGUAGE_LETTERS = {"so": "aeiou", "ur": "\u0622\u06ba\u06d3", "hy": "\u0587", "ml": "\u0d7a\u0d7b\u0d7c\u0d7d\u0d7e",
                    "mai": "\u0905\u0906\u0907\u0908\u0909\u090a\u090f\u0910\u0913\u0914"}
VIETNAMESE_TONES = "\u0300\u0301\u0303\u0309\u0323"  # grave, acute, tilde, hook above, dot below


@dataclass(frozen=True)
class Entry:
    """A language (in one script) that the data has letters for."""

    code: str  # ours: the language's code for its usual script, else code-Script ("sr-Latn")
    language: str  # worldalphabets' language code, and its script: the data file
    script: str  # ISO 15924
    data_script: str
    name: str  # in English


@dataclass(frozen=True)
class Built:
    """An alphabet in JSON form (``Alphabet.from_json``), and how many letters the data has and it kept."""

    json: dict
    letters: int
    kept: int


@cache
def entries() -> dict[str, Entry]:
    """Every language and script in the data, by our code: the language's code for its usual script, else
    ``code-Script``."""
    from worldalphabets import get_index_data

    entries: dict[str, Entry] = {}
    rows = [row for row in get_index_data() if row.get("script") and row.get("file")]
    by_language: dict[str, list[dict]] = {}
    for row in rows:
        by_language.setdefault(row["language"], []).append(row)
    for language, group in by_language.items():
        default = DEFAULT_SCRIPT.get(language, group[0]["script"])
        for row in group:
            data_script = str(row["script"])
            code, script = ODD_ENTRIES.get((language, data_script), (language, data_script))
            if len(script) != 4 or not script.isalpha():  # "x-old": a spelling, not a script
                continue
            script = MISLABELLED.get((language, data_script)) or script
            if code == language and (script != default or (language, data_script) in MISLABELLED):
                code = f"{language}-{script}"
            entries.setdefault(code, Entry(code, language, script, data_script, str(row.get("name") or code)))
    return entries


def find_language(text: str) -> str | None:
    """The code of the language ``text`` names (``de``, ``DE``, ``de-DE``, ``pt_BR``, ``sr-latn``), or None."""
    known = entries()
    parts = text.strip().replace("_", "-").split("-")
    if not parts or not parts[0].isalpha():
        return None
    language = parts[0].lower()
    script = next((p.title() for p in parts[1:] if len(p) == 4 and p.isalpha()), None)
    if script is not None:
        for candidate in (f"{language}-{script}", language):
            entry = known.get(candidate)
            if entry is not None and entry.script == script:
                return candidate
        return None
    return language if language in known else None


def _data(entry: Entry) -> dict:
    from worldalphabets import get_language

    data = get_language(entry.language, script=entry.data_script)
    if data is None:
        raise ValueError(f"worldalphabets has no alphabet data for {entry.code!r}")
    return data


def _letters(items: list[str]) -> list[str]:
    """The single characters of a letter list, composed, in order, once each; a letter written with several
    characters (the German "SS", Welsh "ch") gives those of its characters that are not combining marks."""
    out: list[str] = []
    for item in items:
        item = unicodedata.normalize("NFC", str(item))
        for ch in item if len(item) > 1 else [item]:
            category = unicodedata.category(ch) if ch else "Cn"
            if (ch not in out and category[0] not in "NZC"  # a digit or a space listed as a letter: not one
                    and not (len(item) > 1 and category[0] == "M")):
                out.append(ch)
    return out


# Latin letters that are no accented form of the letter they sort with
LATIN_BASE = {"ı": "i", "ł": "l", "ø": "o", "đ": "d", "ð": "d", "ß": "s", "æ": "a", "œ": "o", "þ": "t", "ŧ": "t",
              "ħ": "h", "ĸ": "k", "ɛ": "e", "ə": "e", "ɔ": "o", "ŋ": "n", "ɲ": "n", "ɓ": "b", "ɗ": "d", "ƙ": "k",
              "ƴ": "y", "ʃ": "s", "ʒ": "z", "ʋ": "v", "ɣ": "g", "ƒ": "f", "ɨ": "i", "ʉ": "u", "ɖ": "d", "ɩ": "i"}


def _latin_order(letters: list[str]) -> Callable[[str], tuple[int, str, bool, int]]:
    """A sort key: by the a-z letter a letter is built on (that letter first, then the others in the data's order);
    letters built on none after z, in the data's order."""
    place = {ch: i for i, ch in enumerate(letters)}

    def key(ch: str) -> tuple[int, str, bool, int]:
        base = unicodedata.normalize("NFD", ch.lower())[0]
        base = LATIN_BASE.get(base, base)
        if "a" <= base <= "z":
            return (0, base, ch.lower() != base, place.get(ch, -1))
        return (1, "", False, place.get(ch, len(place)))

    return key


def _script_prefix(letters: list[str]) -> str:
    """The Unicode name prefix of the script of ``letters`` ("DEVANAGARI", "OL CHIKI"), or ""."""
    for ch in letters:
        name = unicodedata.name(ch, "")
        for word in (" LETTER ", " CHARACTER ", " SYLLABLE "):
            if word in name:
                return name.split(word)[0].removesuffix(" SMALL").removesuffix(" CAPITAL")
    return ""


@cache
def _marks_by_prefix() -> dict[str, list[str]]:
    """Combining marks (Mn, Mc) by the first words of their Unicode names."""
    found: dict[str, list[str]] = {}
    for code in range(0x0590, 0x20000):
        ch = chr(code)
        if unicodedata.category(ch) in ("Mn", "Mc"):
            name = unicodedata.name(ch, "")
            words = name.split(" ")
            for i in range(1, min(3, len(words))):
                found.setdefault(" ".join(words[:i]), []).append(ch)
    return found


def _marks(script: str, letters: list[str]) -> list[str]:
    """The combining vowel signs and marks of an abugida's script; Arabic's short vowels, tanween, shadda and sukun
    (as Dasher's Arabic, Persian and Urdu alphabets have them: ``جداً`` is written with one); none for other scripts."""
    if script == "Arab":
        return list(ARABIC_MARKS)
    if script not in MARK_SCRIPTS:
        return []
    prefix = _script_prefix(letters)
    low, high = min(map(ord, letters)) - 0x80, max(map(ord, letters)) + 0x80  # the script's own block, not extensions
    skip = ("VEDIC", "STRESS SIGN", "ASTROLOGICAL", "CANTILLATION", "SIGN INVERTED", "ACCENT", "INHERENT")
    return [ch for ch in _marks_by_prefix().get(prefix, [])
            if low <= ord(ch) <= high and ch not in letters and not any(w in unicodedata.name(ch, "") for w in skip)]


def _native_digits(script: str, data: dict, letters: list[str]) -> str:
    """The language's own digits, where it has them beside 0-9."""
    digits = "".join(str(d) for d in data.get("digits") or [])
    if len(digits) == 10 and all(not d.isascii() and unicodedata.category(d) == "Nd" for d in digits):
        return digits
    if script == "Arab":
        return "".join(chr(0x06F0 + i) for i in range(10))  # Persian and Urdu digits (Arabic's own: in its data)
    prefix = _script_prefix(letters)
    if script in MARK_SCRIPTS and prefix:
        found = [unicodedata.lookup(f"{prefix} DIGIT {n}") for n in
                 ("ZERO", "ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX", "SEVEN", "EIGHT", "NINE")
                 if f"{prefix} DIGIT {n}" in _digit_names()]
        return "".join(found) if len(found) == 10 else ""
    return ""


@cache
def _digit_names() -> frozenset[str]:
    return frozenset(unicodedata.name(chr(c), "") for c in range(0x0590, 0x20000) if unicodedata.category(chr(c)) == "Nd")


def _orientation(script: str, letters: list[str]) -> str:
    if script in TOP_TO_BOTTOM:
        return "ttb"
    rtl = sum(unicodedata.bidirectional(ch) in ("R", "AL") for ch in letters)
    return "rtl" if rtl * 2 > len(letters) else "ltr"


@cache
def build(code: str, max_symbols: int) -> Built:
    """The alphabet of the language ``code`` (a key of ``entries``), of at most ``max_symbols`` symbols."""
    entry = entries()[code]
    data = _data(entry)
    lower = _letters([*(data.get("lowercase") or data.get("alphabetical") or []),
                      *LANGUAGE_LETTERS.get(entry.language, "")])
    upper = [ch for ch in _letters(data.get("uppercase") or []) if ch not in lower]
    if entry.script == "Latn":  # a-z in every Latin alphabet (names, words and addresses from other languages),
        # and each letter beside the one it is built on (the data's order is not always the alphabet's)
        lower = sorted(dict.fromkeys([*lower, *"abcdefghijklmnopqrstuvwxyz"]), key=_latin_order(lower))
        if upper:
            upper = sorted(dict.fromkeys([*upper, *"ABCDEFGHIJKLMNOPQRSTUVWXYZ"]), key=_latin_order(upper))
    if entry.code == "ko":  # Hangul as its conjoining letters, from which every syllable is written (the data's
        # 11,172 syllables do not fit; normalise decomposes a syllable onto them, and NFC composes them back)
        lower = [chr(c) for c in (*range(0x1100, 0x1113), *range(0x1161, 0x1176), *range(0x11A8, 0x11C3))]
    if entry.language == "vi":  # CLDR's Vietnamese letters carry their tones; the data lists the bare vowels
        vowels = [ch for ch in lower if unicodedata.normalize("NFD", ch)[0] in "aeiouy"]
        lower += [unicodedata.normalize("NFC", v + t) for v in vowels for t in VIETNAMESE_TONES]
        upper += [ch.upper() for ch in lower if ch.upper() not in upper and len(ch.upper()) == 1 and ch.upper() != ch]
    marks = _marks(entry.script, lower)
    digits = "".join(dict.fromkeys(d for d in "0123456789" + _native_digits(entry.script, data, lower) if d not in lower))
    taken = set(lower) | set(upper) | set(marks) | set(digits) | {" ", "\n"}
    punctuation = ""
    for ch in (COMMON_PUNCTUATION + SCRIPT_PUNCTUATION.get(entry.script, "")
               + LANGUAGE_PUNCTUATION.get(entry.language, "")):
        if ch not in taken and ch not in punctuation:
            punctuation += ch
    total = len(lower) + len(upper)
    room = max_symbols - len(marks) - len(digits) - len(punctuation) - 2
    if total > room:  # keep the most frequent letters (with their upper case), in their own order
        frequency = data.get("frequency") or {}
        upper_of = {ch: ch.upper() for ch in lower if ch.upper() in upper}
        chosen: set[str] = set()
        used = 0
        for ch in sorted(lower, key=lambda c: -float(frequency.get(c, 0.0))):
            cost = 2 if ch in upper_of else 1
            if used + cost <= room:
                chosen.add(ch)
                used += cost
        lower = [ch for ch in lower if ch in chosen]
        upper = [ch for ch in upper if ch in {upper_of[c] for c in chosen if c in upper_of}]
    kept = len(lower) + len(upper)
    parts: dict[str, str | list[str]] = {"lowercase": lower, "uppercase": upper} if upper else {"letters": lower}
    parts |= {"marks": marks, "digits": digits, "punctuation": punctuation, "space": " \n"}
    groups = [{"name": name, "colour": COLOURS[name], "symbols": "".join(symbols)} for name, symbols in parts.items()
              if symbols]
    glyphs = dict(GLYPHS) | {m: "\u25cc" + m for m in marks}
    if ZWNJ in punctuation:
        glyphs[ZWNJ] = "\u2225"
    source = ("Hangul's conjoining letters, from which every syllable is written" if entry.code == "ko"
              else f"letters from CLDR through worldalphabets {version('worldalphabets')}")
    description = f"{entry.name} ({entry.script}): {source}, with digits, punctuation, space and newline"
    if kept < total:
        description += (f"; the {kept} most frequent of its {total} letters "
                        f"(an alphabet holds at most {max_symbols} symbols)")
    alphabet = {"name": code, "description": description, "groups": groups, "glyphs": glyphs, "language": code,
                "orientation": _orientation(entry.script, lower)}
    return Built(alphabet, total, kept)
