"""A phrase set's messages as the models score them: read and normalised (``read_messages``), in sentence case
for a speller with one case of letters (``fold_context``), encoded onto an alphabet (``encoded_messages``), and the
bits of their symbols under a batch of distributions (``symbol_bits``). Shared by ``evaluate.py`` (through the
Writer) and the ONNX export's check (``onnx_export.py``), below both."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from dasher_rnn.alphabet import Alphabet
from dasher_rnn.lm.protocol import DASHER_TOTAL, quantise
from dasher_rnn.normalise import normalise
from dasher_rnn.textio import read_text


def read_messages(path: str | Path, replace_errors: bool = False, alphabet: Alphabet | None = None) -> list[str]:
    """Lines of a phrase file, normalised (onto ``alphabet`` when given: what it has is kept); scoring normalises
    each line again onto the model's alphabet."""
    return normalise(read_text(path, replace_errors=replace_errors), alphabet).split("\n")


def fold_context(line: str, alphabet) -> str:
    """``line`` in sentence case, as ``fold_case`` enters it: lower case with a capital at the start and after
    ". ", "! ", "? " or a newline, the casing the BciPy adapter's fold mode gives the model
    (``dasher_rnn_client.bcipy.sentence_case``). A character keeps its place: one whose other case is not a single
    character, or not in ``alphabet``, stays as written."""
    out, start, prev = [], True, ""
    for ch in line:
        low = ch.lower() if len(ch.lower()) == 1 else ch
        if start and low.isalpha():
            cased = low.upper() if len(low.upper()) == 1 else low
            start = False
        else:
            cased = low
            if low.isspace():
                start = start or prev in (".", "!", "?") or low == "\n"
            elif start and low not in "\"'(":
                start = False
        out.append(cased if cased in alphabet else ch)
        prev = low
    return "".join(out)


def encoded_messages(lines: list[str], alphabet, fold_case: bool = False) -> Iterator[tuple[str, list[bool], list[int]]]:
    """Each non-empty normalised line (in sentence case with ``fold_case``), which of its characters the alphabet
    has, and their symbols."""
    for raw in lines:
        line = normalise(raw, alphabet)
        if fold_case:
            line = fold_context(line, alphabet)
        if line:
            known = [ch in alphabet for ch in line]
            yield line, known, [alphabet.index(ch) for ch, ok in zip(line, known, strict=True) if ok]


def symbol_bits(probs: np.ndarray, symbols: Sequence[int] | np.ndarray, floor: float) -> list[float]:
    """Bits of each symbol under the distributions ``probs`` (T, V): Dasher's integers with a floor, exact without."""
    rows = np.arange(len(symbols))
    if floor > 0:
        return np.log2(DASHER_TOTAL / quantise(probs, floor)[rows, symbols]).tolist()
    return (-np.log2(probs[rows, symbols])).tolist()
