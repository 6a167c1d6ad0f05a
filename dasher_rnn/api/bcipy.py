"""BciPy's character language-model protocol, over a dasher-rnn server or in this process.

The adapter itself, and its path over HTTP, live in ``dasher-rnn-client`` (``dasher_rnn_client.bcipy``: Python 3.9
and newer, as BciPy needs); this module adds ``DasherRNNLanguageModel.in_process``, a Writer of this process
behind the same adapter, with the same incremental contexts (a call costs the same at any length of evidence).

    lm = DasherRNNLanguageModel.in_process()   # or .from_server("http://127.0.0.1:8765")
    lm.set_symbol_set(list("ABCDEFGHIJKLMNOPQRSTUVWXYZ") + ["<", "_"])
    lm.predict_character(["H", "E", "L", "L", "<", "L", "O", "_"])
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from dasher_rnn_client import bcipy as _client
from dasher_rnn_client.bcipy import (
    BACKSPACE_CHAR,
    SPACE_CHAR,
    InvalidSymbolSet,
    InvalidSymbolSetException,
    LanguageModelUnavailable,
    sentence_case,
    typed_text,
)

from dasher_rnn.adapt.writer import Context

__all__ = ["BACKSPACE_CHAR", "SPACE_CHAR", "DasherRNNLanguageModel", "InvalidSymbolSet", "InvalidSymbolSetException",
           "LanguageModelUnavailable", "sentence_case", "typed_text"]


class LocalBackend:
    """Contexts, learning and probabilities from a Writer of this process (the RNN alone, as over HTTP)."""

    def __init__(self, model_dir: Path, profile: str | None, learn: bool, profiles_dir: str | Path | None,
                 backend: str):
        from dasher_rnn.adapt.compose import WriterConfig, build_writer

        self.writer = build_writer(WriterConfig(model="rnn", model_dir=model_dir, profile=profile, adapt=learn,
                                                profiles_dir=profiles_dir, backend=backend))
        self.symbols = self.writer.alphabet.symbols

    def probs(self, context: Context) -> np.ndarray:
        return self.writer.request([context]).result()[0].probs

    def root(self, text: str) -> tuple[Context, np.ndarray]:
        context = self.writer.root(text)
        return context, self.probs(context)

    def start(self, text: str) -> Context:
        return self.writer.root(text)

    def path(self, context: Context, symbols: str) -> list[tuple[Context, np.ndarray | None]]:
        """A context after each symbol below ``context``, and the last one's distribution (computing it computes
        every state on the path: an earlier one's answer costs no step when it is asked for)."""
        contexts = []
        for ch in symbols:
            context = self.writer.child(context, ch)
            contexts.append(context)
        return [(c, None) for c in contexts[:-1]] + [(contexts[-1], self.probs(contexts[-1]))]

    def release(self, context: Context) -> None:
        self.writer.release(context)

    def commit(self, text: str) -> None:
        self.writer.commit(text)

    def delete(self, count: int) -> None:
        self.writer.delete(count)

    def new_message(self) -> None:
        self.writer.new_message()

    def close(self) -> None:
        self.writer.close(save=True)


class DasherRNNLanguageModel(_client.DasherRNNLanguageModel):
    """BciPy's ``CharacterLanguageModel``: ``set_symbol_set`` then ``predict_character(evidence)``; from a server
    (``from_server``) or in this process (``in_process``)."""

    @classmethod
    def in_process(cls, model_dir: str | Path | None = None, profile: str | None = None, learn: bool = False,
                   profiles_dir: str | Path | None = None, backend: str = "auto", **kwargs: Any) -> DasherRNNLanguageModel:
        """Predictions from a predictor service in this process (no server)."""
        from dasher_rnn.paths import DEFAULT_MODEL_DIR

        return cls(LocalBackend(Path(model_dir or DEFAULT_MODEL_DIR), profile, learn, profiles_dir, backend),
                   learn=learn, **kwargs)
