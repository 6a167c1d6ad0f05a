"""The character RNN as a ``LanguageModel`` that learns what is committed (dynamic evaluation)."""

from __future__ import annotations

import copy
from pathlib import Path

import torch

from dasher_rnn.adapt.dynamic_eval import AdaptConfig, DynamicEvaluator
from dasher_rnn.alphabet import Alphabet
from dasher_rnn.lm.model_io import load_model, load_msg
from dasher_rnn.lm.rnn import CharRNN
from dasher_rnn.lm.rnn_lm import RNNLanguageModel
from dasher_rnn.paths import DEFAULT_MODEL_DIR


class AdaptiveRNNLanguageModel(RNNLanguageModel):
    """``learn`` commits symbols to a ``DynamicEvaluator``; ``reset`` ends the message (a newline joins the stream)."""

    def __init__(self, model: CharRNN, alphabet: Alphabet, config: AdaptConfig,
                 msg: dict[str, torch.Tensor] | None = None, zero_state: bool = False):
        self.config, self.msg = config, msg
        self.adapter = DynamicEvaluator(model, config, alphabet.index("\n"), msg)
        super().__init__(model, alphabet, zero_state)

    @classmethod
    def from_dir(cls, model_dir: str | Path | None = None, zero_state: bool = False,
                 config: AdaptConfig | None = None) -> AdaptiveRNNLanguageModel:
        model_dir = model_dir or DEFAULT_MODEL_DIR
        config = config or AdaptConfig()
        model, alphabet, _ = load_model(model_dir)
        msg = load_msg(model_dir, model) if config.rule != "sgd" else None
        return cls(model, alphabet, config, msg, zero_state)

    def reset(self) -> None:
        self.adapter.end_message()
        super().reset()

    def learn(self, symbol: int) -> None:
        self.adapter.commit(symbol)

    def fork(self) -> AdaptiveRNNLanguageModel:
        """A copy with its own weights, starting from the current ones, and an empty history."""
        return AdaptiveRNNLanguageModel(copy.deepcopy(self.model), self.alphabet, self.config, self.msg,
                                        self.zero_state)
