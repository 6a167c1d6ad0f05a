"""The one interface every language model implements (PPM, the RNN, later mixtures).

A model holds two contexts, as Dasher does: the *prediction* context, moved by ``advance``
while the user explores, and the *learning* context, moved by ``learn`` as characters are
committed. ``reset`` puts both at a message start. Symbols are alphabet indices.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from dasher_rnn.alphabet import Alphabet

DASHER_TOTAL = 65536
DASHER_FLOOR = 0.05  # Dasher's LP_UNIFORM = 50 per mille


@runtime_checkable
class LanguageModel(Protocol):
    alphabet: Alphabet

    def reset(self) -> None:
        """Both contexts to a message start."""

    def probs(self) -> np.ndarray:
        """Next-symbol probabilities (float64, alphabet order, sum 1) in the prediction context."""

    def dasher_distribution(self, floor: float = DASHER_FLOOR) -> np.ndarray:
        """Next-symbol integers summing exactly to 65536 with a uniform floor (Dasher's contract)."""

    def advance(self, symbol: int) -> None:
        """Enter a symbol into the prediction context without learning it."""

    def cut(self) -> None:
        """Cut the prediction context (a character outside the alphabet was entered)."""

    def learn(self, symbol: int) -> None:
        """Commit a symbol: learn it in the learning context and move that context on."""

    def fork(self) -> LanguageModel:
        """An independent copy (learning in one does not affect the other)."""


def uniform_add(n_symbols: int, floor: float, total: int = DASHER_TOTAL) -> int:
    """Dasher's per-symbol floor: max(1, (total * per_mille / 1000) // n)."""
    if floor <= 0:
        return 0
    return max(1, int(total * round(floor * 1000)) // 1000 // n_symbols)


def quantise(probs: np.ndarray, floor: float = DASHER_FLOOR, total: int = DASHER_TOTAL) -> np.ndarray:
    """Integers summing exactly to ``total`` along the last axis: the floor to every symbol, the rest
    by largest remainder. Works on one distribution or a stack of them."""
    p = np.clip(np.asarray(probs, dtype=np.float64), 0.0, None)
    n = p.shape[-1]
    add = uniform_add(n, floor, total)
    rest = total - add * n
    sums = p.sum(axis=-1, keepdims=True)
    p = np.where(sums > 0, p / np.where(sums > 0, sums, 1), 1.0 / n)
    scaled = p * rest
    ints = np.floor(scaled).astype(np.int64)
    short = rest - ints.sum(axis=-1, keepdims=True)  # < n per row
    # one more unit to each of the ``short`` largest remainders, ties to the lower index
    order = np.argsort(ints - scaled, axis=-1, kind="stable")
    bonus = np.zeros_like(ints)
    np.put_along_axis(bonus, order, np.arange(n) < short, axis=-1)
    return ints + bonus + add
