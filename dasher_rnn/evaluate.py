"""Bits per character on phrase sets, with the protocol of DESIGN.md section 4.

Each file is scored independently from the trained model. Each line is a message: reset the
model, score every character of the normalised line, and in adaptive mode learn (commit)
the line before the next. Characters outside the model's alphabet are skipped: they cost no
bits, stay in the denominator and are counted. Overall figures are total bits over total
characters. Sentence-start figures are mean bits of the first 1, 5, 10 and 20 characters
over messages that have that many.

With a symbol set (``symbols``, e.g. ``"peer"``: a-z, apostrophe and space, as TextSlinger scores
COMM-letter) each character is scored with the model's distribution renormalised over the set;
characters outside the set are entered as context but skipped (no bits, counted).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dasher_rnn.lm.protocol import DASHER_TOTAL, LanguageModel, quantise
from dasher_rnn.normalise import normalise
from dasher_rnn.textio import read_text

START_LENGTHS = (1, 5, 10, 20)
SYMBOL_SETS = {"peer": "abcdefghijklmnopqrstuvwxyz' "}  # TextSlinger's 28 scored symbols (29 with their end symbol)


def resolve_symbols(spec: str | None) -> str | None:
    """A named symbol set (``peer``) or the characters of ``spec`` themselves."""
    if spec is None:
        return None
    return SYMBOL_SETS.get(spec, spec)


@dataclass
class Score:
    name: str
    bits: float = 0.0
    chars: int = 0
    skipped: int = 0
    messages: int = 0
    start_bits: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in START_LENGTHS})
    char_bits: list[float] = field(default_factory=list, repr=False)  # every character, in order
    skipped_chars: Counter[str] = field(default_factory=Counter)

    @property
    def bits_per_char(self) -> float:
        return self.bits / self.chars if self.chars else float("nan")

    def add(self, other: Score) -> None:
        self.bits += other.bits
        self.chars += other.chars
        self.skipped += other.skipped
        self.messages += other.messages
        self.char_bits.extend(other.char_bits)
        self.skipped_chars.update(other.skipped_chars)
        for k in START_LENGTHS:
            self.start_bits[k].extend(other.start_bits[k])

    def to_json(self) -> dict:
        return {
            "bits_per_char": round(self.bits_per_char, 4),
            "bits": round(self.bits, 1),
            "chars": self.chars,
            "skipped": self.skipped,
            "messages": self.messages,
            "skipped_characters": dict(self.skipped_chars.most_common(10)),
            "start_bits": {
                str(k): round(float(np.mean(v)), 3) if v else None for k, v in self.start_bits.items()
            },
        }


def symbol_bits(model: LanguageModel, symbol: int, floor: float) -> float:
    """Bits of ``symbol`` in the model's prediction context: Dasher's integers when there is a floor."""
    if floor > 0:
        return math.log2(DASHER_TOTAL / model.dasher_distribution(floor)[symbol])
    return -math.log2(model.probs()[symbol])


def _restricted_bits(probs: np.ndarray, symbols: list[int], mask: np.ndarray, floor: float) -> list[float]:
    """Bits of each symbol under the distributions ``probs`` (T, V) renormalised over ``mask``; with a floor, Dasher's
    integers over the set's symbols alone. Symbols outside the set cost 0 (the caller counts them as skipped)."""
    sub = probs[:, mask]
    position = np.cumsum(mask) - 1  # a symbol's column in ``sub``
    if floor > 0:
        sub = quantise(sub, floor) / DASHER_TOTAL
    else:
        sub = sub / sub.sum(axis=1, keepdims=True)
    return [float(-np.log2(sub[t, position[s]])) if mask[s] else 0.0 for t, s in enumerate(symbols)]


def _message_bits(model: LanguageModel, symbols: list[int], floor: float, mask: np.ndarray | None = None) -> list[float]:
    """Bits of each symbol of a message entered from a reset. Models with ``sequence_probs``
    (the RNN) score the whole message in one call; the result is the same as stepping. With ``mask`` (a boolean
    vector over the alphabet) each distribution is renormalised over the symbols it marks."""
    model.reset()
    if mask is not None:
        if hasattr(model, "sequence_probs"):
            probs = np.asarray(model.sequence_probs(symbols), dtype=np.float64)
        else:
            rows = []
            for symbol in symbols:
                rows.append(np.asarray(model.probs(), dtype=np.float64))
                model.advance(symbol)
            probs = np.stack(rows) if rows else np.zeros((0, len(mask)))
        return _restricted_bits(probs, symbols, mask, floor)
    if hasattr(model, "sequence_probs"):
        probs = model.sequence_probs(symbols)
        rows = np.arange(len(symbols))
        if floor > 0:
            return np.log2(DASHER_TOTAL / quantise(probs, floor)[rows, symbols]).tolist()
        return (-np.log2(probs[rows, symbols])).tolist()
    bits = []
    for symbol in symbols:
        bits.append(symbol_bits(model, symbol, floor))
        model.advance(symbol)
    return bits


def score_messages(model: LanguageModel, lines: list[str], name: str = "", adaptive: bool = False,
                   floor: float = 0.05, symbols: str | None = None) -> Score:
    """Score messages one by one on ``model`` (which learns them when ``adaptive``); ``symbols``: score over this
    set (a name of ``SYMBOL_SETS`` or the characters) with renormalised distributions."""
    score = Score(name)
    alphabet = model.alphabet
    symbols = resolve_symbols(symbols)
    mask = None
    if symbols is not None:
        missing = [ch for ch in symbols if ch not in alphabet]
        if missing:
            raise ValueError(f"symbols {''.join(missing)!r} are not in the model's alphabet {alphabet.name!r}")
        mask = np.zeros(len(alphabet), dtype=bool)
        mask[[alphabet.index(ch) for ch in symbols]] = True
    for raw in lines:
        line = normalise(raw)
        if not line:
            continue
        known = [ch in alphabet for ch in line]
        committed = [alphabet.index(ch) for ch, ok in zip(line, known, strict=True) if ok]
        symbol_bits_iter = iter(_message_bits(model, committed, floor, mask))
        per_char = [next(symbol_bits_iter) if ok else 0.0 for ok in known]
        scored = [ok and (symbols is None or ch in symbols) for ch, ok in zip(line, known, strict=True)]
        score.skipped += len(line) - sum(scored)
        score.skipped_chars.update(ch for ch, ok in zip(line, scored, strict=True) if not ok)
        if adaptive:
            for symbol in committed:
                model.learn(symbol)
        score.bits += sum(per_char)
        score.char_bits.extend(per_char)
        score.chars += len(line)
        score.messages += 1
        cumulative = np.cumsum(per_char)
        for k in START_LENGTHS:
            if len(per_char) >= k:
                score.start_bits[k].append(float(cumulative[k - 1]))
    return score


def read_messages(path: str | Path, replace_errors: bool = False) -> list[str]:
    """Lines of a phrase file (normalisation happens when scoring)."""
    return normalise(read_text(path, replace_errors=replace_errors)).split("\n")


def evaluate_files(model: LanguageModel, paths: list[str | Path], adaptive: bool = False,
                   floor: float = 0.05, replace_errors: bool = False, symbols: str | None = None) -> dict:
    """Score each file from a fresh fork of ``model``; return per-file and overall figures (over ``symbols``
    with renormalised distributions when given)."""
    overall = Score("overall")
    files = {}
    for path in paths:
        lines = read_messages(path, replace_errors)
        score = score_messages(model.fork(), lines, Path(path).stem, adaptive=adaptive, floor=floor,
                               symbols=symbols)
        files[score.name] = score.to_json()
        overall.add(score)
    return {"files": files, "overall": overall.to_json()}


def format_report(report: dict) -> str:
    rows = [f"{'file':<24}{'bits/char':>10}{'chars':>8}{'skipped':>8}   first 1/5/10/20 chars (bits)"]
    for name, r in [*report["files"].items(), ("overall", report["overall"])]:
        starts = "/".join("-" if v is None else f"{v:.2f}" for v in r["start_bits"].values())
        rows.append(f"{name:<24}{r['bits_per_char']:>10.3f}{r['chars']:>8}{r['skipped']:>8}   {starts}")
    if report["overall"]["skipped_characters"]:
        skipped = ", ".join(f"{ch!r} x{n}" for ch, n in report["overall"]["skipped_characters"].items())
        rows.append(f"characters outside the alphabet (skipped): {skipped}")
    return "\n".join(rows)
