"""Bits per character on phrase sets, scored through the Writer, the app's own prediction path.

Each file is scored independently from a fresh Writer (the trained model, or a profile as saved).
Each line is a message: from a message start, score every character of the normalised line, and in
adaptive mode commit the line (learning it) before the next. Characters outside the model's alphabet are skipped: they cost no
bits, stay in the denominator and are counted. Overall figures are total bits over total
characters. Sentence-start figures are mean bits of the first 1, 5, 10 and 20 characters
over messages that have that many.

With a symbol set (``symbols``, e.g. ``"peer"``: a-z, apostrophe and space, as TextSlinger scores
COMM-letter) each character is scored with the model's distribution renormalised over the set;
characters outside the set are entered as context but skipped (no bits, counted). With ``fold_case`` as
well, scoring is that of a speller with one case of letters, as the BciPy adapter's fold mode predicts: the
context is the text in sentence case (``fold_context``: lower case, a capital at a sentence start) and a
letter of the set stands for both its cases, its probability the sum of the two (renormalised over the set).
TextSlinger's published LLM figures (distilgpt2, their mixture) sum the cases so, with a context cased much
the same (a capital at the start and on "I", "I'm", ...).
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dasher_rnn.adapt.writer import Context, Writer
from dasher_rnn.lm.messages import encoded_messages, symbol_bits
from dasher_rnn.lm.protocol import DASHER_TOTAL, LanguageModel, quantise
from dasher_rnn.normalise import normalise
from dasher_rnn.progress_bar import progress_bar
from dasher_rnn.textio import read_text

START_LENGTHS = (1, 5, 10, 20)
# TextSlinger's 28 scored symbols: a-z, apostrophe, space. BciPy's symbol set has a 29th, backspace, to which their
# n-gram and LLMs give no probability (it is not an end symbol: nothing marks the end of a sentence).
SYMBOL_SETS = {"peer": "abcdefghijklmnopqrstuvwxyz' "}


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


def _bits(dist, symbol: int, floor: float) -> float:
    """Bits of ``symbol`` under a distribution: Dasher's integers when there is a floor, else the probability."""
    if floor > 0:
        return math.log2(DASHER_TOTAL / dist.counts[symbol])
    return -math.log2(dist.probs[symbol] / dist.probs.sum())


def _restricted_bits(probs: np.ndarray, symbols: list[int], groups: np.ndarray, floor: float) -> list[float]:
    """Bits of each symbol under the distributions ``probs`` (T, V) gathered onto the scored symbols by ``groups``
    (``symbol_groups``) and renormalised over them; with a floor, Dasher's integers over the scored symbols alone.
    Symbols outside the set cost 0 (the caller counts them as skipped)."""
    sub = probs @ groups.astype(probs.dtype)  # (T, K): each scored symbol's mass, its other case's too when folded
    column = groups.argmax(axis=1)  # the scored symbol a model symbol counts as
    inside = groups.any(axis=1)
    if floor > 0:
        sub = quantise(sub, floor) / DASHER_TOTAL
    else:
        sub = sub / sub.sum(axis=1, keepdims=True)
    return [float(-np.log2(sub[t, column[s]])) if inside[s] else 0.0 for t, s in enumerate(symbols)]


def _message_contexts(writer: Writer, symbols: list[int]) -> list[Context]:
    """The context before each symbol of a message entered from a message start."""
    contexts = [writer.root("")]
    for symbol in symbols[:-1]:
        contexts.append(writer.child(contexts[-1], symbol))
    return contexts


def symbol_groups(symbols: str | None, alphabet, fold_case: bool = False) -> np.ndarray | None:
    """A boolean matrix (V, K): which of ``alphabet``'s V symbols count as each of the K scored ``symbols`` (a name
    of ``SYMBOL_SETS`` or the characters); each scored symbol itself, and with ``fold_case`` its other case too
    (a symbol of the alphabet counts as at most one: as itself if it is in the set)."""
    if symbols is None:
        if fold_case:
            raise ValueError("fold_case needs a symbol set (symbols)")
        return None
    symbols = resolve_symbols(symbols)
    missing = [ch for ch in symbols if ch not in alphabet]
    if missing:
        raise ValueError(f"symbols {''.join(missing)!r} are not in the model's alphabet {alphabet.name!r}")
    groups = np.zeros((len(alphabet), len(symbols)), dtype=bool)
    for k, ch in enumerate(symbols):
        groups[alphabet.index(ch), k] = True
    if fold_case:
        for k, ch in enumerate(symbols):
            for other in {ch.lower(), ch.upper()} - {ch}:
                if len(other) == 1 and other in alphabet and other not in symbols:
                    groups[alphabet.index(other), k] = True
    return groups


def score_messages(writer: Writer, lines: list[str], name: str = "", adaptive: bool = False,
                   floor: float = 0.05, progress: Callable[[int], None] | None = None,
                   symbols: str | None = None, fold_case: bool = False) -> Score:
    """Score messages one by one through ``writer``'s own prediction path (the app's), learning each after
    it is scored when ``adaptive``. Static messages are asked for in batches (the predictor steps them together).
    ``symbols``: score over this set (a name of ``SYMBOL_SETS`` or the characters), each distribution
    renormalised over it; characters outside it count as skipped. ``fold_case``: the context in sentence case
    (``fold_context``) and a letter of the set standing for both its cases (``symbol_groups``)."""
    score = Score(name)
    alphabet = writer.alphabet
    groups = symbol_groups(symbols, alphabet, fold_case)
    batch_nodes = max(1, writer.service.tree.budget // 3) if writer.service is not None else 1 << 30
    pending: list[tuple[str, list[bool], list[int]]] = []

    def run(batch: list[tuple[str, list[bool], list[int]]]) -> None:
        contexts = [_message_contexts(writer, committed) for _, _, committed in batch]
        try:
            dists = writer.request([c for cs in contexts for c in cs]).result()
        finally:
            for cs in contexts:
                writer.release(cs[0])
        start = 0
        for (line, known, committed), cs in zip(batch, contexts, strict=True):
            mine = dists[start : start + len(cs)]
            start += len(cs)
            if groups is None:
                bits = iter([_bits(d, s, floor) for d, s in zip(mine, committed, strict=True)])
            else:
                bits = iter(_restricted_bits(np.stack([d.probs for d in mine]), committed, groups, floor))
            if adaptive:
                for symbol, context in zip(committed, cs, strict=True):
                    writer.commit_symbol(symbol, context)
                writer.new_message()
                writer.flush()
            _add(score, line, known, [next(bits) if ok else 0.0 for ok in known], groups, alphabet)
        if progress is not None:
            progress(len(batch))

    for line, known, committed in encoded_messages(lines, alphabet, fold_case):
        if not committed:
            _add(score, line, known, [0.0] * len(line))
            continue
        if adaptive or sum(len(c) for *_, c in pending) + len(committed) > batch_nodes:
            run(pending)
            pending = []
        pending.append((line, known, committed))
        if adaptive:
            run(pending)
            pending = []
    if pending:
        run(pending)
    return score


def score_language_model(model: LanguageModel, lines: list[str], name: str = "", adaptive: bool = False,
                         floor: float = 0.05, symbols: str | None = None, fold_case: bool = False) -> Score:
    """The same protocol on a network in memory (``lm.rnn_lm``, ``adapt.adaptive_lm``, PPM): research and
    benchmark scripts that compare networks or settings without a model folder or a Writer (``symbols`` and
    ``fold_case`` as ``score_messages``)."""
    score = Score(name)
    alphabet = model.alphabet
    groups = symbol_groups(symbols, alphabet, fold_case)
    for line, known, committed in encoded_messages(lines, alphabet, fold_case):
        model.reset()
        if hasattr(model, "sequence_probs"):  # the RNN scores the whole message in one call
            probs = np.asarray(model.sequence_probs(committed), dtype=np.float64).reshape(len(committed), len(alphabet))
        elif groups is None and floor > 0:  # Dasher's own integers, as its boxes
            probs = None
            bits = []
            for symbol in committed:
                bits.append(math.log2(DASHER_TOTAL / model.dasher_distribution(floor)[symbol]))
                model.advance(symbol)
        else:
            rows = []
            for symbol in committed:
                rows.append(np.asarray(model.probs(), dtype=np.float64))
                model.advance(symbol)
            probs = np.stack(rows) if rows else np.zeros((0, len(alphabet)))
        if probs is not None:
            if groups is not None:
                bits = _restricted_bits(probs, committed, groups, floor)
            else:
                bits = symbol_bits(probs, committed, floor)
        if adaptive:
            for symbol in committed:
                model.learn(symbol)
        it = iter(bits)
        _add(score, line, known, [next(it) if ok else 0.0 for ok in known], groups, alphabet)
    return score


def _add(score: Score, line: str, known: list[bool], per_char: list[float], groups: np.ndarray | None = None,
         alphabet=None) -> None:
    scored = known if groups is None else [ok and bool(groups[alphabet.index(ch)].any())
                                           for ch, ok in zip(line, known, strict=True)]
    score.skipped += len(line) - sum(scored)
    score.skipped_chars.update(ch for ch, ok in zip(line, scored, strict=True) if not ok)
    score.bits += sum(per_char)
    score.char_bits.extend(per_char)
    score.chars += len(line)
    score.messages += 1
    cumulative = np.cumsum(per_char)
    for k in START_LENGTHS:
        if len(per_char) >= k:
            score.start_bits[k].append(float(cumulative[k - 1]))


def evaluate_files(make_writer: Callable[[], Writer], paths: list[str | Path], adaptive: bool = False,
                   floor: float = 0.05, replace_errors: bool = False, progress: bool | None = None,
                   symbols: str | None = None, fold_case: bool = False) -> dict:
    """Score each file with a fresh Writer from ``make_writer`` (closed afterwards without saving anything);
    per-file and overall figures (over ``symbols`` with renormalised distributions when given, case folded with
    ``fold_case``: see ``score_messages``). ``progress``: a bar on stderr (``progress_bar``: a line every few seconds
    where it is no terminal); None: only where stderr is a terminal."""
    if fold_case and symbols is None:
        raise ValueError("fold_case needs a symbol set (symbols)")
    overall = Score("overall")
    files = {}
    texts = [(Path(p).stem, read_text(p, replace_errors=replace_errors)) for p in paths]
    total = sum(len(normalise(text).split("\n")) for _, text in texts)
    shown = sys.stderr.isatty() if progress is None else progress
    with progress_bar(shown, total=total, unit="msg", desc="eval", leave=False) as bar:
        for name, text in texts:
            writer = make_writer()
            try:  # the lines normalised onto the model's alphabet: a French model is scored on é, not on e
                lines = normalise(text, writer.alphabet).split("\n")
                score = score_messages(writer, lines, name, adaptive=adaptive, floor=floor, progress=bar.update,
                                       symbols=symbols, fold_case=fold_case)
            finally:
                writer.close(save=False)
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
