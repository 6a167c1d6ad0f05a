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
    """Integers summing exactly to ``total``: the floor to every symbol, the rest by largest remainder."""
    n = len(probs)
    add = uniform_add(n, floor, total)
    rest = total - add * n
    p = np.asarray(probs, dtype=np.float64)
    p = np.clip(p, 0.0, None)
    p = p / p.sum() if p.sum() > 0 else np.full(n, 1.0 / n)
    scaled = p * rest
    ints = np.floor(scaled).astype(np.int64)
    short = rest - int(ints.sum())
    if short > 0:
        ints[np.argsort(ints - scaled, kind="stable")[:short]] += 1
    return ints + add
