"""Corpus adaptation's arithmetic in numpy (``corpus_adapt.CorpusEngine``), for an installation without PyTorch: a
plain LSTM, the forward and backward of ``lm/numpy_lstm.py`` on parallel streams, and torch's Adam
(``torch.optim.Adam``'s defaults), gradient clipping (``clip_grad_norm_``) and the decay, so that both engines take
the same steps (to float rounding: tests/test_corpus_adapt.py). No torch here.

The adapted weights live in one flat float32 array (views of it by ``CharRNN``'s names), as in
``adapt/numpy_eval.py``, so that a step is one pass over it. The products are large here (128 streams), so numpy's
BLAS runs on ``threads`` threads while the engine works (threadpoolctl; all of them when not given).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from dasher_rnn.adapt.evaluation import LN2
from dasher_rnn.lm import numpy_lstm

BETAS = (0.9, 0.999)  # torch.optim.Adam's defaults
ADAM_EPS = 1e-8
CLIP_EPS = 1e-6  # torch.nn.utils.clip_grad_norm_'s


class NumpyCorpusEngine:
    """Adapts a copy of a plain LSTM's ``weights`` (``CharRNN``'s names, with ``h0`` and ``c0``, which stay) with
    Adam (rate ``lr``), the gradients' norm clipped to ``clip`` and a decay ``lam`` toward the starting weights after
    each step; numpy's BLAS on ``threads`` threads meanwhile (None: as it is)."""

    name = "numpy"

    def __init__(self, weights: Mapping[str, Any], lr: float, clip: float, lam: float, threads: int | None = None):
        self.lr, self.clip, self.lam, self.threads = lr, clip, lam, threads
        self.layers = numpy_lstm.lstm_layers(weights)
        self.names = numpy_lstm.network_names(self.layers)
        self.all = {k: np.asarray(v).astype(np.float32) for k, v in weights.items()}  # a copy the caller cannot touch
        self.flat = np.concatenate([self.all[n].reshape(-1) for n in self.names])
        self.all.update(zip(self.names, self._views(self.flat), strict=True))
        self.start = self.flat.copy()
        self.grad = np.empty_like(self.flat)
        self.grads = dict(zip(self.names, self._views(self.grad), strict=True))
        self.m = np.zeros_like(self.flat)  # Adam's moments
        self.v = np.zeros_like(self.flat)
        self.steps = 0
        self.state: numpy_lstm.State | None = None

    def _views(self, flat: np.ndarray) -> list[np.ndarray]:
        """``flat`` cut into the adapted parameters' shapes (views)."""
        return numpy_lstm.flat_views(flat, [self.all[n].shape for n in self.names])

    @contextmanager
    def _blas(self) -> Iterator[None]:
        if not self.threads:
            yield
            return
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=self.threads, user_api="blas"):
            yield

    def _initial(self, rows: int) -> numpy_lstm.State:
        h0, c0 = numpy_lstm.initial_state(self.all)
        return (np.repeat(h0[:, None], rows, axis=1), np.repeat(c0[:, None], rows, axis=1))

    def bits(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        with self._blas():
            logp = numpy_lstm.symbol_log_probs(self.all, ids, self._initial(len(ids)))
        return -(logp * mask).sum(axis=1, dtype=np.float64) / LN2

    def start_epoch(self, rows: int) -> None:
        self.state = self._initial(rows)

    def train_step(self, inputs: np.ndarray, targets: np.ndarray) -> float:
        assert self.state is not None, "start_epoch first"
        with self._blas():
            loss, _, self.state = numpy_lstm.batch_gradients(self.all, inputs, targets, self.state, self.grads)
        g = self.grad
        norm = float(np.sqrt(np.dot(g.astype(np.float64), g)))
        scale = min(1.0, self.clip / (norm + CLIP_EPS))
        if scale < 1.0:
            g *= np.float32(scale)
        b1, b2 = BETAS
        self.steps += 1
        self.m *= np.float32(b1)
        self.m += np.float32(1 - b1) * g
        self.v *= np.float32(b2)
        self.v += np.float32(1 - b2) * g * g
        denom = np.sqrt(self.v) / np.float32(np.sqrt(1 - b2 ** self.steps)) + np.float32(ADAM_EPS)
        self.flat -= np.float32(self.lr / (1 - b1 ** self.steps)) * self.m / denom
        self.flat += (self.start - self.flat) * np.float32(self.lam)
        return loss

    def weights(self) -> dict[str, np.ndarray]:
        return {n: self.all[n].copy() for n in self.names}

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        for n in self.names:
            self.all[n][...] = np.asarray(weights[n], dtype=np.float32)
