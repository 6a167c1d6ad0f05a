"""Dynamic evaluation of a plain LSTM in numpy, for an installation without PyTorch: the same stream, ring, guard
and rules as the torch engine (``adapt/evaluation.py``), the forward and backward of ``lm/numpy_lstm.py``, and the
same weights after the same text (to float rounding: tests/test_numpy_adaptation.py). No torch here.

The adapted parameters live in one flat float32 array (``params`` are views of it, by ``CharRNN``'s names), so a
checkpoint is one copy and the rule one pass over it.

An update runs on one BLAS thread (``one_blas_thread``): its products are small (20 characters, one stream), and
OpenBLAS's own threads made them about 20 times slower on a busy machine, spinning against whatever else runs (the
predictor, the window). threadpoolctl sets the BLAS libraries' thread count for the update alone and puts it back,
so numpy elsewhere in the process keeps its threads; an environment variable (OPENBLAS_NUM_THREADS) would have to be
set before numpy is first imported, and for the whole process.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from dasher_rnn.adapt.evaluation import AdaptConfig, StreamEvaluator
from dasher_rnn.lm import numpy_lstm
from dasher_rnn.lm.numpy_lstm import State


class _OneBlasThread:
    """numpy's BLAS on one thread while any update runs, as it was once none does. Counted, because every writing
    session (the API server has many) runs its updates on its own thread and the BLAS setting is the process's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._controller: Any = None  # threadpoolctl's controller of the BLAS libraries loaded (found once: it scans)
        self._limiter: Any = None
        self._users = 0

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._users == 0:
                if self._controller is None:
                    from threadpoolctl import ThreadpoolController

                    self._controller = ThreadpoolController().select(user_api="blas")
                self._limiter = self._controller.limit(limits=1)
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    self._limiter.restore_original_limits()


one_blas_thread = _OneBlasThread()


class NumpyEvaluator(StreamEvaluator):
    """Adapts a copy of ``weights`` (a plain LSTM's state dict, ``CharRNN``'s names, with ``h0`` and ``c0``);
    ``msg``: the mean squared gradients by the same names (the rms rules)."""

    def __init__(self, weights: Mapping[str, Any], config: AdaptConfig, newline: int,
                 msg: Mapping[str, Any] | None = None):
        if config.adapter_spec is not None:
            raise ValueError(f"the numpy engine adapts every weight; the {config.method} state adapter needs torch")
        self.layers = numpy_lstm.lstm_layers(weights)
        self.names = numpy_lstm.network_names(self.layers)
        # a float32 copy the caller cannot touch (astype copies; tensors convert through np.asarray)
        self.weights = {k: np.asarray(v).astype(np.float32) for k, v in weights.items()}
        self.base_weights = {k: v.copy() for k, v in self.weights.items()}
        self.flat = np.concatenate([self.weights[n].reshape(-1) for n in self.names])
        self.params = self._views(self.flat)  # the live weights are views of the flat array
        self.weights.update(zip(self.names, self.params, strict=True))
        self.base = self.flat.copy()
        self.grad = np.empty_like(self.flat)  # each update's gradients, by name as views of it
        self.grads = {n: v for n, v in zip(self.names, self._views(self.grad), strict=True)}
        self.inv_rms: np.ndarray | None = None
        self.decay: np.ndarray | float = config.lam
        if config.rule != "sgd":
            if msg is None:
                raise ValueError(f"rule {config.rule!r} needs the model's mean squared gradients (msg.safetensors)")
            rms = np.sqrt(np.concatenate([np.asarray(msg[n], dtype=np.float32).reshape(-1) for n in self.names]))
            self.inv_rms = np.float32(1.0) / (rms + np.float32(config.eps))
            if config.rule == "rms-rms" and config.lam > 0:
                self.decay = np.float32(config.lam) * np.minimum(rms / rms.mean(), np.float32(1.0 / config.lam))
        super().__init__(config, newline, self.flat.size)
        self.state: State = numpy_lstm.initial_state(self.weights)
        self.base_state: State = self.state

    def _views(self, flat: np.ndarray) -> list[np.ndarray]:
        """``flat`` cut into the adapted parameters' shapes (views)."""
        return numpy_lstm.flat_views(flat, [self.weights[n].shape for n in self.names])

    # -- weights in and out ---------------------------------------------------------
    def state_dict(self) -> dict[str, np.ndarray]:
        return {k: v.copy() for k, v in self.weights.items()}

    def adapted_weights(self) -> dict[str, np.ndarray]:
        return {n: p.copy() for n, p in zip(self.names, self.params, strict=True)}

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {n: tuple(p.shape) for n, p in zip(self.names, self.params, strict=True)}

    def load_weights(self, weights: dict[str, Any]) -> None:
        for n, value in weights.items():
            self.weights[n][...] = np.asarray(value, dtype=np.float32)

    def log_probs(self) -> np.ndarray:
        """Next-symbol log-probs (V,) from the current state with the adapted weights."""
        return numpy_lstm.log_probs(self.weights, self.state)

    # -- the arithmetic -------------------------------------------------------------
    def _update(self) -> None:
        with one_blas_thread():
            super()._update()

    def _flat(self) -> np.ndarray:
        return self.flat.copy()

    def _set_flat(self, flat: np.ndarray) -> None:
        self.flat[...] = flat

    def _evaluate(self, segment: list[int]):
        base_loss, base_state = numpy_lstm.segment_loss(self.base_weights, segment, self.base_state)
        loss, grads, new_state = numpy_lstm.segment_gradients(self.weights, segment, self.state, self.grads)
        grad_norm = float(np.linalg.norm([np.linalg.norm(grads[n]) for n in self.names]))
        return loss, base_loss, [self.grad], grad_norm, new_state, base_state

    def _step(self, grads: list[np.ndarray]) -> None:
        """``grads``: the flat gradient (used up: the step is computed in its place)."""
        (direction,) = grads
        if self.inv_rms is not None:
            direction *= self.inv_rms
        direction *= np.float32(self.config.eta * self.scale)
        self.flat -= direction
        if self.config.lam > 0:
            self.flat += (self.base - self.flat) * self.decay

    def _finite(self) -> bool:
        return bool(np.isfinite(self.flat).all())

    def _reset_to_base(self) -> None:
        self.flat[...] = self.base

    def _carry(self, symbols: list[int]) -> None:
        self.state = numpy_lstm.run(self.weights, symbols, self.state)

    def _heldout_loss(self, symbols: list[int]) -> float:
        with one_blas_thread():
            loss, _ = numpy_lstm.segment_loss(self.weights, symbols, numpy_lstm.initial_state(self.weights))
        return float(loss)
