"""Bits per character on phrase sets, with the protocol of DESIGN.md section 4.

Each file is scored independently from the trained model. Each line is a message: reset the
model, score every character of the normalised line, and in adaptive mode learn (commit)
the line before the next. Characters outside the model's alphabet are skipped: they cost no
bits, stay in the denominator and are counted. Overall figures are total bits over total
characters. Sentence-start figures are mean bits of the first 1, 5, 10 and 20 characters
over messages that have that many.
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


def _message_bits(model: LanguageModel, symbols: list[int], floor: float) -> list[float]:
    """Bits of each symbol of a message entered from a reset. Models with ``sequence_probs``
    (the RNN) score the whole message in one call; the result is the same as stepping."""
    model.reset()
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
                   floor: float = 0.05) -> Score:
    """Score messages one by one on ``model`` (which learns them when ``adaptive``)."""
    score = Score(name)
    alphabet = model.alphabet
    for raw in lines:
        line = normalise(raw)
        if not line:
            continue
        known = [ch in alphabet for ch in line]
        committed = [alphabet.index(ch) for ch, ok in zip(line, known, strict=True) if ok]
        symbol_bits_iter = iter(_message_bits(model, committed, floor))
        per_char = [next(symbol_bits_iter) if ok else 0.0 for ok in known]
        score.skipped += len(line) - len(committed)
        score.skipped_chars.update(ch for ch, ok in zip(line, known, strict=True) if not ok)
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
                   floor: float = 0.05, replace_errors: bool = False) -> dict:
    """Score each file from a fresh fork of ``model``; return per-file and overall figures."""
    overall = Score("overall")
    files = {}
    for path in paths:
        lines = read_messages(path, replace_errors)
        score = score_messages(model.fork(), lines, Path(path).stem, adaptive=adaptive, floor=floor)
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
