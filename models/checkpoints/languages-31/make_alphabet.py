"""Write alphabet.json for the 31-language run: at most 254 symbols chosen from the languages' own alphabets.

The union of the 31 languages' alphabets (``dasher_rnn.languages.union_alphabet``) has 770 symbols (560 without
Japanese), but an alphabet holds at most 254 (the corpus stores a symbol in one byte; 255 marks a character outside
the alphabet). So the symbols are chosen by what the training text needs, each language weighing the same (as the
training samples its sources):

- a symbol's share in a language is its count in that language's ``aac/`` text (normalised onto the language's own
  alphabet, as the app does) over the text's characters; only symbols of the language's own alphabet count;
- a symbol kept is worth its share in full; a symbol left out that ``normalise`` folds onto kept symbols (é -> e,
  ё -> е, ή -> η, が -> か, « -> ") is worth ``FOLD_VALUE`` of its share (the context goes on, the distinction is
  lost); one that folds onto nothing kept is lost (a context break in training, skipped in scoring);
- space, newline and 0-9 are always kept; the rest is picked greedily, each time the symbol that adds the most to
  the sum over the languages.

Run from the repository root: ``.venv/bin/python models/checkpoints/languages-31/make_alphabet.py`` (it prints each
language's coverage).
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from pathlib import Path

from dasher_rnn.alphabet import MAX_SYMBOLS, Alphabet, SymbolGroup, load_alphabet
from dasher_rnn.cldr import COLOURS
from dasher_rnn.normalise import _fold, normalise

AAC = Path("../shared/corpora/languages/aac")
OUT = Path(__file__).resolve().parent / "alphabet.json"
FOLD_VALUE = 0.5
ALWAYS = " \n0123456789"
GROUP_ORDER = ("lowercase", "uppercase", "letters", "marks", "digits", "punctuation", "space")


def folds(ch: str) -> list[str]:
    """What ``normalise`` may fold ``ch`` onto when the alphabet lacks it, in its order of preference."""
    compatible = unicodedata.normalize("NFKD", ch)
    bare = "".join(c for c in compatible if not unicodedata.combining(c))
    forms = [_fold(ch), unicodedata.normalize("NFC", compatible), bare]
    return [f for f in dict.fromkeys(forms) if f and f != ch]


def main() -> None:
    stems = sorted(p.stem for p in AAC.glob("*.txt"))
    alphabets = {s: load_alphabet(s.split("_")[0]) for s in stems}
    shares: dict[str, dict[str, float]] = {}
    for s in stems:
        text = normalise((AAC / f"{s}.txt").read_text(encoding="utf-8"), alphabets[s])
        counts = Counter(text)
        total = sum(counts.values())
        shares[s] = {ch: n / total for ch, n in counts.items() if ch in alphabets[s]}

    def score(chosen: set[str]) -> dict[str, tuple[float, float]]:
        """(exact, exact + folded) coverage of each language's text."""
        out = {}
        for s, share in shares.items():
            exact = sum(p for ch, p in share.items() if ch in chosen)
            folded = sum(p for ch, p in share.items() if ch not in chosen
                         and any(all(c in chosen for c in f) for f in folds(ch)))
            out[s] = (exact, exact + folded)
        return out

    fold_forms = {ch: folds(ch) for share in shares.values() for ch in share}
    rescues: dict[str, set[str]] = {}  # symbol -> the symbols one of whose folds needs it
    for ch, forms in fold_forms.items():
        for form in forms:
            for c in form:
                rescues.setdefault(c, set()).add(ch)

    def covered(ch: str, chosen: set[str]) -> bool:
        return any(all(c in chosen for c in f) for f in fold_forms[ch])

    def worth(ch: str, chosen: set[str]) -> float:
        """What a symbol's share is worth, summed over the languages, given the chosen symbols."""
        weight = 1.0 if ch in chosen else FOLD_VALUE if covered(ch, chosen) else 0.0
        return weight * sum(share.get(ch, 0.0) for share in shares.values())

    candidates = sorted({ch for share in shares.values() for ch in share} - set(ALWAYS))
    chosen = set(ALWAYS)
    while len(chosen) < MAX_SYMBOLS:
        best, best_gain = None, 0.0
        for ch in candidates:
            if ch in chosen:
                continue
            touched = {ch} | {x for x in rescues.get(ch, ()) if x not in chosen}
            after = chosen | {ch}
            gain = sum(worth(x, after) - worth(x, chosen) for x in touched)
            if gain > best_gain:
                best, best_gain = ch, gain
        if best is None:
            break
        chosen.add(best)

    groups: dict[str, list[str]] = {}
    glyphs: dict[str, str] = {}
    for s in stems:
        alphabet = alphabets[s]
        for group in alphabet.groups:
            for ch in group.symbols:
                if ch in chosen and not any(ch in g for g in groups.values()):
                    groups.setdefault(group.name, []).append(ch)
                    if ch in alphabet.glyphs:
                        glyphs[ch] = alphabet.glyphs[ch]
    codes = [s.split("_")[0] for s in stems]
    union = Alphabet(
        "union-31",
        tuple(SymbolGroup(n, COLOURS[n], "".join(groups[n])) for n in GROUP_ORDER if n in groups),
        glyphs,
        f"{len(chosen)} symbols of {', '.join(codes)}: chosen by their share of the languages' aac/ texts, each "
        "language weighing the same (models/checkpoints/languages-31/make_alphabet.py); the languages' full union has "
        "770, more than an alphabet holds",
    )
    OUT.write_text(json.dumps(union.to_json(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(union)} symbols")
    own = {s: sum(1 for ch in alphabets[s].symbols if ch in chosen) for s in stems}
    for s, (exact, folded) in score(chosen).items():
        print(f"{s}: {own[s]} of its {len(alphabets[s])} symbols; text exact {exact:.4f}, with folds {folded:.4f}")


if __name__ == "__main__":
    main()
