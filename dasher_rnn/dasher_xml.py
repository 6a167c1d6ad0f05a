"""Dasher's own alphabet files (``alphabet.*.xml``, Dasher 5's ``Data/alphabets/``), read as they are.

The format, as Dasher's parser (``Src/DasherCore/Alphabet/AlphIO.cpp``) reads it::

    <alphabets langcode="he">                  the language spoken (speech), for every alphabet in the file
      <alphabet name="Hebrew">                 one file may hold several
        <orientation type="RL"/>               LR, RL, TB or BT
        <train>training_hebrew_IL.txt</train>  the text Dasher trains its model on
        <space d="&#x25a1;" t=" " b="9"/>      d: what the box shows, t: the text written, b: a palette colour
        <paragraph d="&#182;" b="9"/>          writes a newline
        <group name="Letters" b="0">           groups nest; b: the group's colour
          <s d="&#x05d0;" t="&#x05d0;"/>       a symbol
          <group name="Final forms"> ... </group>
        </group>
      </alphabet>
    </alphabets>

Here an alphabet has one character a symbol, in flat groups with a colour each: nested groups are flattened in
document order (a run of symbols is one group, named by its path: "Letters / Final forms"), a palette number
becomes one of our colours, ``d`` becomes the symbol's glyph where it differs from ``t``, and paragraph and space
come last, as Dasher places them. ``<control>``, ``<encoding>``, ``<palette>``, ``<conversionmode>``,
``<convert>``, ``<protect>``, ``<context>``, ``<gamemode>`` are Dasher's own business and are passed over. A
symbol whose text is not one character (none in Dasher's own files, once Unicode-normalised), is a control
character other than newline and tab (NUL, ESC) or a lone surrogate, or repeats an earlier one is left out, and
the alphabet's description says how many.

The file is read with ``files.read_bounded`` (a regular file of at most ``MAX_BYTES``: a FIFO is never waited on,
``/dev/zero`` never read) and parsed by the standard library's expat, its elements nested at most ``MAX_DEPTH``
deep and at most ``MAX_ELEMENTS`` of them; an encoding Python does not know is refused. A document that declares
entities (the way to make a parser fetch files or expand without end) is refused, and a DTD named by the file
(``alphabet.dtd``) is never read. Anything malformed is a ``DasherFileError`` naming the file (``load_alphabet``
makes it an ``AlphabetError``). This module gives the alphabet's JSON form (``Alphabet.from_json``) and imports
nothing of ours but ``files``, so that ``alphabet`` can use it.
"""

from __future__ import annotations

import re
import unicodedata
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat as pyexpat

from dasher_rnn.files import read_bounded

ORIENTATION = {"LR": "ltr", "RL": "rtl", "TB": "ttb", "BT": "btt"}
SPACE_COLOUR = "#e6e6e6"  # Dasher's colour 9 (space and paragraph), as english.json's space group
# Dasher's colours are numbers in a palette (colour.*.xml, mostly saturated); ours are pastel, one per group.
# Within an alphabet, each palette number met (and each group with none) takes the next of these in turn.
MAX_BYTES = 4 << 20  # Dasher's largest alphabet file is under 200 KB
MAX_DEPTH = 32  # elements in elements: Dasher's files nest groups three or four deep
MAX_ELEMENTS = 100_000  # an alphabet has at most 254 symbols; a file may hold several alphabets
PALETTE = ("#fde7b0", "#c9e4f6", "#d8f0c8", "#f3d0e4", "#e0d4f5", "#fbd5c0", "#cdeee9", "#f0ecc0")


class DasherFileError(ValueError):
    """A Dasher alphabet file that cannot be read."""


_NAMED_ENTITY = re.compile(rb"&(?!(?:amp|lt|gt|quot|apos);)([A-Za-z_:][A-Za-z0-9_.:-]*);")


class _Refused(Exception):
    pass


@dataclass
class _Run:
    """Symbols in document order that belong to one group."""

    name: str
    colour: str
    symbols: list[str] = field(default_factory=list)


def _parse(path: Path) -> ET.Element:
    """The file's element tree, built by expat with every entity declaration and reference refused."""

    def refuse(*_args: object) -> int:
        raise _Refused("declares XML entities, which a Dasher alphabet file never needs")

    def skipped(name: str, _is_parameter: bool) -> None:
        raise _Refused(f"uses the entity &{name}; that it does not define (write the character, or &#x...;)")

    try:
        data = read_bounded(path, MAX_BYTES)
    except OSError as exc:  # UnreadableFile says what it is: a FIFO, a device, a folder, too large
        raise DasherFileError(f"{path}: cannot read the alphabet file ({exc.strerror or exc})") from None
    undefined = _NAMED_ENTITY.search(data)  # expat drops one in an attribute silently when the file names a DTD
    if undefined is not None:
        name = undefined.group(1).decode("ascii", "replace")
        raise DasherFileError(f"{path}: uses the entity &{name}; that it does not define (write the character, "
                            "or &#x...;); refused")
    builder = ET.TreeBuilder()
    parser = pyexpat.ParserCreate()
    parser.buffer_text = True
    depth, elements = [0], [0]

    def start(tag: str, attributes: dict[str, str]) -> None:
        depth[0] += 1
        elements[0] += 1
        if depth[0] > MAX_DEPTH:
            raise _Refused(f"nests elements more than {MAX_DEPTH} deep")
        if elements[0] > MAX_ELEMENTS:
            raise _Refused(f"has more than {MAX_ELEMENTS:,} elements")
        builder.start(tag, attributes)

    def end(tag: str) -> None:
        depth[0] -= 1
        builder.end(tag)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = builder.data
    parser.EntityDeclHandler = refuse
    parser.UnparsedEntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    parser.SkippedEntityHandler = skipped
    try:
        parser.Parse(data, True)
        return builder.close()
    except _Refused as exc:
        raise DasherFileError(f"{path}: {exc}; refused") from None
    except pyexpat.ExpatError as exc:
        raise DasherFileError(f"{path}: not a valid Dasher alphabet file (XML error: {exc})") from None
    except (LookupError, ValueError, RecursionError) as exc:  # an encoding Python does not know, a bad one
        raise DasherFileError(f"{path}: not a valid Dasher alphabet file ({type(exc).__name__}: {str(exc)[:100]})") \
            from None


def _text_of(t: str) -> str | None:
    """The one character a symbol writes (Unicode-composed), or None if it writes none or several.
    A character that composition would split (a composition exclusion, e.g. DEVANAGARI LETTER QA) stays."""
    composed = unicodedata.normalize("NFC", t)
    if len(composed) == 1:
        return composed
    return t if len(t) == 1 else None


def _colour_number(element: ET.Element) -> int | None:
    value = element.get("b")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _alphabet(element: ET.Element, language: str, source: str) -> dict:
    name = element.get("name") or Path(source).stem
    orientation_el = element.find("orientation")
    orientation = ORIENTATION.get((orientation_el.get("type") or "LR") if orientation_el is not None else "LR", "ltr")
    train = (element.findtext("train") or "").strip()
    runs: list[_Run] = []
    glyphs: dict[str, str] = {}
    seen: set[str] = set()
    skipped = {"not one character": 0, "repeated": 0, "a control character or a lone surrogate": 0}

    def add(symbol: ET.Element, run: _Run) -> None:
        text = _text_of(symbol.get("t", ""))
        if text is None:
            skipped["not one character"] += 1
            return
        if text in seen:
            skipped["repeated"] += 1
            return
        if text not in "\n\t" and unicodedata.category(text) in ("Cc", "Cs"):  # NUL, ESC...: no symbol (alphabet.py)
            skipped["a control character or a lone surrogate"] += 1
            return
        seen.add(text)
        display = symbol.get("d")
        if display and display != text:
            glyphs[text] = display
        if not runs or runs[-1] is not run:
            runs.append(run)
        run.symbols.append(text)

    slots: dict[object, int] = {}

    def colour_for(number: int | None) -> str:
        if number == 9:  # Dasher's space colour
            return SPACE_COLOUR
        slot = slots.setdefault(number if number is not None else object(), len(slots))
        return PALETTE[slot % len(PALETTE)]

    def walk(node: ET.Element, path: list[str], colour: str) -> None:
        here = _Run(" / ".join(path) or "symbols", colour)
        for child in node:
            if child.tag == "s":
                add(child, here)
            elif child.tag == "group":
                name = child.get("name") or "group"
                walk(child, [*path, name], colour_for(_colour_number(child)))
                here = _Run(here.name, here.colour)  # symbols after a nested group: a run of their own

    walk(element, [], PALETTE[0])
    specials = _Run("space", SPACE_COLOUR)
    paragraph = space = ""
    paragraph_el, space_el = element.find("paragraph"), element.find("space")
    if paragraph_el is not None:  # Dasher writes a newline for it whatever its t says
        paragraph = "\n"
        if "\n" not in seen:
            specials.symbols.append("\n")
            glyphs["\n"] = paragraph_el.get("d") or "\u00b6"
    if space_el is not None:
        text = _text_of(space_el.get("t", " "))
        if text is not None:  # t="" turns Dasher's space off
            space = text
            if text not in seen and text not in specials.symbols:
                specials.symbols.append(text)
                display = space_el.get("d")
                if display and display != text:
                    glyphs[text] = display
    if specials.symbols:
        runs.append(specials)
    if not any(r.symbols for r in runs):
        raise DasherFileError(f"{source}: alphabet {name!r} has no symbols")
    notes = [f"{n} symbol{'s' if n != 1 else ''} left out ({why})" for why, n in skipped.items() if n]
    description = f"Dasher alphabet {name!r} from {Path(source).name}" + (f"; {', '.join(notes)}" if notes else "")
    return {"name": name, "description": description,
            "groups": [{"name": r.name, "colour": r.colour, "symbols": "".join(r.symbols)} for r in runs if r.symbols],
            "glyphs": glyphs, "language": language, "orientation": orientation, "space": space,
            "paragraph": paragraph, "training_text": train}


def _elements(path: str | Path) -> tuple[list[ET.Element], str]:
    """The ``<alphabet>`` elements of a Dasher alphabet file, and the language code the file gives them."""
    path = Path(path)
    root = _parse(path)
    if root.tag not in ("alphabets", "alphabet"):
        raise DasherFileError(f"{path}: not a Dasher alphabet file (its root element is <{root.tag}>, not <alphabets>)")
    elements = [root] if root.tag == "alphabet" else root.findall("alphabet")
    if not elements:
        raise DasherFileError(f"{path}: a Dasher alphabet file with no <alphabet>")
    return elements, root.get("langcode", "")


def dasher_alphabet_names(path: str | Path) -> list[str]:
    """The names of the alphabets in a Dasher alphabet file, in file order."""
    elements, _ = _elements(path)
    return [e.get("name") or Path(path).stem for e in elements]


def read_dasher_alphabet(spec: str | Path) -> tuple[dict, str]:
    """The first alphabet of a Dasher alphabet file, or, for ``FILE.xml#NAME``, the one named NAME, in JSON form,
    and the file's path."""
    text = str(spec)
    wanted = None
    if not Path(text).is_file() and "#" in text:
        text, wanted = text.rsplit("#", 1)
    elements, language = _elements(text)
    if wanted is not None:
        chosen = [e for e in elements if (e.get("name") or Path(text).stem) == wanted]
        if not chosen:
            names = ", ".join(repr(n) for n in dasher_alphabet_names(text))
            raise DasherFileError(f"{text}: no alphabet named {wanted!r} (it has {names})")
        elements = chosen
    return _alphabet(elements[0], language, text), text
