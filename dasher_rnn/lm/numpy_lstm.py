"""The plain LSTM character RNN (``cell="lstm"``, any number of layers) in numpy, with the backward of a segment:
what dynamic evaluation needs without PyTorch (``adapt/numpy_eval.py``). No torch here.

The model is ``lm/rnn.py::CharRNN`` with torch's LSTM (gates i, f, g, o; two biases per layer), its weights under
the same names (``embed.weight``, ``rnn.weight_ih_l{k}``, ``rnn.weight_hh_l{k}``, ``rnn.bias_ih_l{k}``,
``rnn.bias_hh_l{k}``, ``head.weight``, ``head.bias``, and the learned initial state ``h0``, ``c0``). A state is
(h, c), each (layers, hidden): one stream, no batch. ``segment_gradients`` is ``CharRNN.score`` over a segment,
the mean NLL in nats and its backward through the segment (the state it starts from is a constant, as the torch
path's detached state): the loss, the gradient of every network weight, and the state after the segment. It
computes in float32, as torch does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

Weights = Mapping[str, np.ndarray]
State = tuple[np.ndarray, np.ndarray]  # h (layers, hidden), c (layers, hidden)


def network_names(layers: int) -> list[str]:
    """The weights training and adaptation change, in the order of ``CharRNN.network_parameters()``."""
    names = ["embed.weight"]
    for k in range(layers):
        names += [f"rnn.weight_ih_l{k}", f"rnn.weight_hh_l{k}", f"rnn.bias_ih_l{k}", f"rnn.bias_hh_l{k}"]
    return names + ["head.weight", "head.bias"]


def lstm_layers(weights: Weights) -> int:
    """How many layers a plain LSTM's weights have; ValueError when they are not exactly a plain LSTM's."""
    layers = sum(1 for k in weights if k.startswith("rnn.weight_ih_l"))
    expected = {*network_names(layers), "h0", "c0"}
    if layers < 1 or set(weights) != expected:
        odd = sorted(set(weights) ^ expected)[:4]
        raise ValueError(f"not the weights of a plain LSTM (unexpected or missing: {', '.join(odd)})")
    return layers


def initial_state(weights: Weights) -> State:
    """The learned state every message starts from."""
    return np.array(weights["h0"], dtype=np.float32), np.array(weights["c0"], dtype=np.float32)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # no overflow for large |x|


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def log_probs(weights: Weights, state: State) -> np.ndarray:
    """Next-symbol log-probs (V,) from a state alone: the head on the top layer's h."""
    return _log_softmax(state[0][-1] @ weights["head.weight"].T + weights["head.bias"])


class _Layer:
    """One layer's forward over a segment, with what its backward needs."""

    def __init__(self, x: np.ndarray, h: np.ndarray, c: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray,
                 bias: np.ndarray):
        T, H = len(x), len(h)
        pre = x @ w_ih.T + bias  # every step's input gates at once
        self.x, self.w_ih, self.w_hh = x, w_ih, w_hh
        self.h = np.empty((T + 1, H), np.float32)  # h[0] the state before the segment, h[t + 1] after step t
        self.c = np.empty((T + 1, H), np.float32)
        self.tanh_c = np.empty((T, H), np.float32)
        self.gates = np.empty((T, 4 * H), np.float32)  # activated: sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)
        self.h[0], self.c[0] = h, c
        for t in range(T):
            a = pre[t] + w_hh @ self.h[t]
            gates = self.gates[t]
            gates[:] = _sigmoid(a)
            gates[2 * H : 3 * H] = np.tanh(a[2 * H : 3 * H])
            i, f, g, o = gates[:H], gates[H : 2 * H], gates[2 * H : 3 * H], gates[3 * H :]
            self.c[t + 1] = f * self.c[t] + i * g
            self.tanh_c[t] = np.tanh(self.c[t + 1])
            self.h[t + 1] = o * self.tanh_c[t]

    def backward(self, dy: np.ndarray, last: int) -> np.ndarray:
        """``dy`` (T, H): the loss's gradient on each step's output h; steps after ``last`` have none anywhere.
        Returns the gradient on each step's gate pre-activations (T, 4H)."""
        T, H = self.h.shape[0] - 1, self.h.shape[1]
        d_pre = np.zeros((T, 4 * H), np.float32)
        dh_next = np.zeros(H, np.float32)
        dc_next = np.zeros(H, np.float32)
        for t in range(last, -1, -1):
            gates = self.gates[t]
            i, f, g, o = gates[:H], gates[H : 2 * H], gates[2 * H : 3 * H], gates[3 * H :]
            dh = dy[t] + dh_next
            dc = dc_next + dh * o * (1 - self.tanh_c[t] * self.tanh_c[t])
            da = d_pre[t]
            da[:H] = dc * g * i * (1 - i)
            da[H : 2 * H] = dc * self.c[t] * f * (1 - f)
            da[2 * H : 3 * H] = dc * i * (1 - g * g)
            da[3 * H :] = dh * self.tanh_c[t] * o * (1 - o)
            if t:  # the state before the segment is a constant: no gradient goes there
                dh_next = da @ self.w_hh
                dc_next = dc * f
        return d_pre


def _forward(weights: Weights, layers: int, symbols: Sequence[int] | np.ndarray,
             state: State) -> tuple[list[_Layer], State]:
    x = weights["embed.weight"][np.asarray(symbols, dtype=np.int64)]
    done = []
    for k in range(layers):
        layer = _Layer(x, state[0][k], state[1][k], weights[f"rnn.weight_ih_l{k}"], weights[f"rnn.weight_hh_l{k}"],
                       weights[f"rnn.bias_ih_l{k}"] + weights[f"rnn.bias_hh_l{k}"])
        done.append(layer)
        x = layer.h[1:]
    return done, (np.stack([layer.h[-1] for layer in done]), np.stack([layer.c[-1] for layer in done]))


def run(weights: Weights, symbols: Sequence[int] | np.ndarray, state: State) -> State:
    """The state after ``symbols`` entered from ``state``."""
    return _forward(weights, len(state[0]), symbols, state)[1]


def _scored(weights: Weights, symbols: np.ndarray, state: State):
    """The forward over a segment and its log-probs (T, V) of the distribution before each symbol."""
    done, new_state = _forward(weights, len(state[0]), symbols, state)
    inputs = np.concatenate([state[0][-1][None], done[-1].h[1:-1]])  # the head reads h before each symbol
    return done, new_state, inputs, _log_softmax(inputs @ weights["head.weight"].T + weights["head.bias"])


def segment_loss(weights: Weights, symbols: Sequence[int] | np.ndarray, state: State) -> tuple[float, State]:
    """Mean nats of the segment from ``state`` (the first symbol predicted from the state alone), and the state
    after it."""
    symbols = np.asarray(symbols, dtype=np.int64)
    _, new_state, _, logp = _scored(weights, symbols, state)
    return float(-logp[np.arange(len(symbols)), symbols].mean()), new_state


def segment_gradients(weights: Weights, symbols: Sequence[int] | np.ndarray, state: State,
                      out: Mapping[str, np.ndarray] | None = None) -> tuple[float, dict[str, np.ndarray], State]:
    """``segment_loss`` and the gradient of every network weight (``network_names``) of that loss, written into
    ``out`` (float32 arrays of the weights' shapes, by name) when given, else into new arrays."""
    symbols = np.asarray(symbols, dtype=np.int64)
    T, layers = len(symbols), len(state[0])
    names = network_names(layers)
    grads = {n: out[n] for n in names} if out is not None else {n: np.empty_like(weights[n]) for n in names}
    done, new_state, inputs, logp = _scored(weights, symbols, state)
    picked = logp[np.arange(T), symbols]
    d_logits = np.exp(logp)
    d_logits[np.arange(T), symbols] -= 1
    d_logits /= np.float32(T)
    np.matmul(d_logits.T, inputs, out=grads["head.weight"])
    np.sum(d_logits, axis=0, out=grads["head.bias"])
    d_inputs = d_logits @ weights["head.weight"]
    dy = np.zeros_like(done[-1].h[1:])
    dy[:-1] = d_inputs[1:]  # the output of step t is read before symbol t + 1; the last step's is read by none
    for k in range(layers - 1, -1, -1):
        layer = done[k]
        d_pre = layer.backward(dy, T - 2)
        np.matmul(d_pre.T, layer.x, out=grads[f"rnn.weight_ih_l{k}"])
        np.matmul(d_pre.T, layer.h[:-1], out=grads[f"rnn.weight_hh_l{k}"])
        np.sum(d_pre, axis=0, out=grads[f"rnn.bias_ih_l{k}"])
        grads[f"rnn.bias_hh_l{k}"][...] = grads[f"rnn.bias_ih_l{k}"]
        dy = d_pre @ layer.w_ih
    grads["embed.weight"].fill(0)
    np.add.at(grads["embed.weight"], symbols, dy)
    return float(-picked.mean()), grads, new_state
