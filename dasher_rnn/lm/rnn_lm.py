"""The character RNN behind the ``LanguageModel`` protocol (one context, one step at a time).

This is the simple, exact reference used by ``eval``; the batched tree predictor is separate.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from dasher_rnn.alphabet import Alphabet
from dasher_rnn.lm.model_io import load_model
from dasher_rnn.lm.protocol import DASHER_FLOOR, quantise
from dasher_rnn.lm.rnn import CharRNN, State
from dasher_rnn.paths import DEFAULT_MODEL_DIR


class RNNLanguageModel:
    """The static model (``adapt.adaptive_lm`` adds learning)."""

    def __init__(self, model: CharRNN, alphabet: Alphabet, zero_state: bool = False):
        self.model = model.eval()
        self.alphabet = alphabet
        self.zero_state = zero_state
        self._state: State
        self._logp: torch.Tensor
        self.reset()

    @classmethod
    def from_dir(cls, model_dir: str | Path | None = None, zero_state: bool = False) -> RNNLanguageModel:
        model, alphabet, _ = load_model(model_dir or DEFAULT_MODEL_DIR)
        return cls(model, alphabet, zero_state)

    def describe(self) -> str:
        c = self.model.config
        return f"{c.cell} {c.layers}x{c.hidden_size} ({self.model.num_parameters():,} parameters, {self.alphabet.name})"

    @torch.no_grad()
    def reset(self) -> None:
        self._state = self.model.initial_state(1, learned=not self.zero_state)
        self._logp = self.model.state_log_probs(self._state)[0]

    def cut(self) -> None:
        self.reset()

    @torch.no_grad()
    def advance(self, symbol: int) -> None:
        logp, self._state = self.model.step(torch.tensor([symbol]), self._state)
        self._logp = logp[0]

    @torch.no_grad()
    def sequence_probs(self, symbols: list[int]) -> np.ndarray:
        """Probabilities before each of ``symbols`` entered from the current context, shape (n, V),
        in one forward call; leaves the context after the last symbol, exactly as ``advance`` would."""
        if not symbols:
            return np.zeros((0, len(self.alphabet)))
        logp, self._state = self.model.score(torch.tensor([symbols]), self._state)
        self._logp = self.model.state_log_probs(self._state)[0]
        probs = logp[0].double().exp()
        return (probs / probs.sum(dim=-1, keepdim=True)).numpy()

    def learn(self, symbol: int) -> None:
        """A static model learns nothing (see ``adapt.adaptive_lm``)."""

    def log_probs(self) -> np.ndarray:
        return self._logp.double().numpy()

    def probs(self) -> np.ndarray:
        p = np.exp(self.log_probs())
        return p / p.sum()

    def dasher_distribution(self, floor: float = DASHER_FLOOR) -> np.ndarray:
        return quantise(self.probs(), floor)

    def fork(self) -> RNNLanguageModel:
        return RNNLanguageModel(self.model, self.alphabet, self.zero_state)
