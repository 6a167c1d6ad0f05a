"""The plain LSTM character RNN (``cell="lstm"``, any number of layers) in numpy, with the backward of a segment:
what dynamic evaluation needs without PyTorch (``adapt/numpy_eval.py``). No torch here.

The model is ``lm/rnn.py::CharRNN`` with torch's LSTM (gates i, f, g, o; two biases per layer), its weights under
the same names (``embed.weight``, ``rnn.weight_ih_l{k}``, ``rnn.weight_hh_l{k}``, ``rnn.bias_ih_l{k}``,
``rnn.bias_hh_l{k}``, ``head.weight``, ``head.bias``, and the learned initial state ``h0``, ``c0``). A state is
(h, c), each (layers, hidden): one stream, no batch. ``segment_gradients`` is ``CharRNN.score`` over a segment,
the mean NLL in nats and its backward through the segment (the state it starts from is a constant, as the torch
path's detached state): the loss, the gradient of every network weight, and the state after the segment. It
computes in float32, as torch does.

Corpus adaptation (``adapt/corpus_numpy.py``) trains on parallel streams: ``batch_gradients`` is ``CharRNN.forward``
and the mean NLL over a batch, with its backward, and ``symbol_log_probs`` scores padded messages; their states are
(h, c), each (layers, batch, hidden).
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
    """One layer's forward over a batch of segments, with what its backward needs. Shapes: x (T, B, in), h and c
    (B, H); the batch is the second axis throughout (one stream is B = 1)."""

    def __init__(self, x: np.ndarray, h: np.ndarray, c: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray,
                 bias: np.ndarray):
        T, (B, H) = len(x), h.shape
        pre = x @ w_ih.T + bias  # every step's input gates at once
        w_hh_t = w_hh.T
        self.x, self.w_ih, self.w_hh = x, w_ih, w_hh
        self.h = np.empty((T + 1, B, H), np.float32)  # h[0] the state before the segment, h[t + 1] after step t
        self.c = np.empty((T + 1, B, H), np.float32)
        self.tanh_c = np.empty((T, B, H), np.float32)
        self.gates = np.empty((T, B, 4 * H), np.float32)  # activated: sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)
        self.h[0], self.c[0] = h, c
        for t in range(T):
            a = pre[t] + self.h[t] @ w_hh_t
            gates = self.gates[t]
            gates[:] = _sigmoid(a)
            gates[:, 2 * H : 3 * H] = np.tanh(a[:, 2 * H : 3 * H])
            i, f, g, o = gates[:, :H], gates[:, H : 2 * H], gates[:, 2 * H : 3 * H], gates[:, 3 * H :]
            self.c[t + 1] = f * self.c[t] + i * g
            self.tanh_c[t] = np.tanh(self.c[t + 1])
            self.h[t + 1] = o * self.tanh_c[t]

    def backward(self, dy: np.ndarray, last: int) -> np.ndarray:
        """``dy`` (T, B, H): the loss's gradient on each step's output h; steps after ``last`` have none anywhere.
        Returns the gradient on each step's gate pre-activations (T, B, 4H)."""
        T, B, H = self.h.shape[0] - 1, self.h.shape[1], self.h.shape[2]
        d_pre = np.zeros((T, B, 4 * H), np.float32)
        dh_next = np.zeros((B, H), np.float32)
        dc_next = np.zeros((B, H), np.float32)
        for t in range(last, -1, -1):
            gates = self.gates[t]
            i, f, g, o = gates[:, :H], gates[:, H : 2 * H], gates[:, 2 * H : 3 * H], gates[:, 3 * H :]
            dh = dy[t] + dh_next
            dc = dc_next + dh * o * (1 - self.tanh_c[t] * self.tanh_c[t])
            da = d_pre[t]
            da[:, :H] = dc * g * i * (1 - i)
            da[:, H : 2 * H] = dc * self.c[t] * f * (1 - f)
            da[:, 2 * H : 3 * H] = dc * i * (1 - g * g)
            da[:, 3 * H :] = dh * self.tanh_c[t] * o * (1 - o)
            if t:  # the state before the segment is a constant: no gradient goes there
                dh_next = da @ self.w_hh
                dc_next = dc * f
        return d_pre


def _forward(weights: Weights, symbols: np.ndarray, state: State) -> tuple[list[_Layer], State]:
    """The layers' forward over ``symbols`` (T, B) from ``state`` (h and c (layers, B, H))."""
    x = weights["embed.weight"][symbols]
    done = []
    for k in range(len(state[0])):
        layer = _Layer(x, state[0][k], state[1][k], weights[f"rnn.weight_ih_l{k}"], weights[f"rnn.weight_hh_l{k}"],
                       weights[f"rnn.bias_ih_l{k}"] + weights[f"rnn.bias_hh_l{k}"])
        done.append(layer)
        x = layer.h[1:]
    return done, (np.stack([layer.h[-1] for layer in done]), np.stack([layer.c[-1] for layer in done]))


def _one(symbols: Sequence[int] | np.ndarray, state: State) -> tuple[np.ndarray, State]:
    """One stream as a batch of one: symbols (T, 1), state (layers, 1, H)."""
    return np.asarray(symbols, dtype=np.int64)[:, None], (state[0][:, None], state[1][:, None])


def _unbatched(state: State) -> State:
    return state[0][:, 0], state[1][:, 0]


def run(weights: Weights, symbols: Sequence[int] | np.ndarray, state: State) -> State:
    """The state after ``symbols`` entered from ``state``."""
    return _unbatched(_forward(weights, *_one(symbols, state))[1])


def _scored(weights: Weights, symbols: np.ndarray, state: State):
    """The forward over a batch of segments (T, B) and the log-probs (T, B, V) of the distribution before each
    symbol."""
    done, new_state = _forward(weights, symbols, state)
    inputs = np.concatenate([state[0][-1][None], done[-1].h[1:-1]])  # the head reads h before each symbol
    return done, new_state, inputs, _log_softmax(inputs @ weights["head.weight"].T + weights["head.bias"])


def segment_loss(weights: Weights, symbols: Sequence[int] | np.ndarray, state: State) -> tuple[float, State]:
    """Mean nats of the segment from ``state`` (the first symbol predicted from the state alone), and the state
    after it."""
    ids, batch_state = _one(symbols, state)
    _, new_state, _, logp = _scored(weights, ids, batch_state)
    return float(-logp[np.arange(len(ids)), 0, ids[:, 0]].mean()), _unbatched(new_state)


def _head_gradients(weights: Weights, inputs: np.ndarray, d_logits: np.ndarray,
                    grads: dict[str, np.ndarray]) -> np.ndarray:
    """The head's gradients, into ``grads``, from the logits' gradient ``d_logits`` (T, B, V) of a head that read
    ``inputs`` (T, B, H); returns the gradient on ``inputs``."""
    V, H = d_logits.shape[-1], inputs.shape[-1]
    np.matmul(d_logits.reshape(-1, V).T, inputs.reshape(-1, H), out=grads["head.weight"])
    np.sum(d_logits, axis=(0, 1), out=grads["head.bias"])
    return d_logits @ weights["head.weight"]


def _backward(done: list[_Layer], dy: np.ndarray, symbols: np.ndarray, last: int, grads: dict[str, np.ndarray]) -> None:
    """The layers' backward from ``dy`` (T, B, H), the gradient on the top layer's outputs (none after step
    ``last``), into ``grads``."""
    for k in range(len(done) - 1, -1, -1):
        layer = done[k]
        d_pre = layer.backward(dy, last)
        flat = d_pre.reshape(-1, d_pre.shape[-1])
        np.matmul(flat.T, layer.x.reshape(len(flat), -1), out=grads[f"rnn.weight_ih_l{k}"])
        np.matmul(flat.T, layer.h[:-1].reshape(len(flat), -1), out=grads[f"rnn.weight_hh_l{k}"])
        np.sum(flat, axis=0, out=grads[f"rnn.bias_ih_l{k}"])
        grads[f"rnn.bias_hh_l{k}"][...] = grads[f"rnn.bias_ih_l{k}"]
        dy = d_pre @ layer.w_ih
    grads["embed.weight"].fill(0)
    np.add.at(grads["embed.weight"], symbols.reshape(-1), dy.reshape(-1, dy.shape[-1]))


def _gradient_arrays(weights: Weights, layers: int, out: Mapping[str, np.ndarray] | None) -> dict[str, np.ndarray]:
    names = network_names(layers)
    return {n: out[n] for n in names} if out is not None else {n: np.empty_like(weights[n]) for n in names}


def segment_gradients(weights: Weights, symbols: Sequence[int] | np.ndarray, state: State,
                      out: Mapping[str, np.ndarray] | None = None) -> tuple[float, dict[str, np.ndarray], State]:
    """``segment_loss`` and the gradient of every network weight (``network_names``) of that loss, written into
    ``out`` (float32 arrays of the weights' shapes, by name) when given, else into new arrays."""
    ids, batch_state = _one(symbols, state)
    T = len(ids)
    grads = _gradient_arrays(weights, len(state[0]), out)
    done, new_state, inputs, logp = _scored(weights, ids, batch_state)
    picked = logp[np.arange(T), 0, ids[:, 0]]
    d_logits = np.exp(logp)
    d_logits[np.arange(T), 0, ids[:, 0]] -= 1
    d_logits /= np.float32(T)
    d_inputs = _head_gradients(weights, inputs, d_logits, grads)
    dy = np.zeros_like(done[-1].h[1:])
    dy[:-1] = d_inputs[1:]  # the output of step t is read before symbol t + 1; the last step's is read by none
    _backward(done, dy, ids, T - 2, grads)
    return float(-picked.mean()), grads, _unbatched(new_state)


def batch_gradients(weights: Weights, inputs: np.ndarray, targets: np.ndarray, state: State,
                    out: Mapping[str, np.ndarray] | None = None) -> tuple[float, dict[str, np.ndarray], State]:
    """Training on parallel streams, as ``CharRNN.forward`` and torch's mean NLL: ``inputs`` and ``targets`` (B, T)
    symbol ids, each target predicted after its input; ``state`` h and c (layers, B, H), a constant. Returns the
    mean nats over every target, the gradient of every network weight (into ``out`` when given) and the state
    after the inputs."""
    ids = np.ascontiguousarray(np.asarray(inputs, dtype=np.int64).T)  # (T, B)
    wanted = np.asarray(targets, dtype=np.int64).T
    T, B = ids.shape
    grads = _gradient_arrays(weights, len(state[0]), out)
    done, new_state = _forward(weights, ids, state)
    outputs = done[-1].h[1:]
    logp = _log_softmax(outputs @ weights["head.weight"].T + weights["head.bias"])
    rows, cols = np.arange(T)[:, None], np.arange(B)[None, :]
    loss = float(-logp[rows, cols, wanted].mean())
    d_logits = np.exp(logp)
    d_logits[rows, cols, wanted] -= 1
    d_logits /= np.float32(T * B)
    _backward(done, _head_gradients(weights, outputs, d_logits, grads), ids, T - 1, grads)
    return loss, grads, new_state


def symbol_log_probs(weights: Weights, symbols: np.ndarray, state: State) -> np.ndarray:
    """The log-probability of each symbol of parallel sequences ``symbols`` (B, T) from ``state`` (h and c
    (layers, B, H)), each predicted before it is entered (the first from the state alone), as ``CharRNN.score``;
    (B, T). Forward only, a step at a time: nothing of the whole sequence is kept."""
    symbols = np.asarray(symbols, dtype=np.int64)
    B, T = symbols.shape
    layers = len(state[0])
    # the first layer's input gates of every symbol, with both biases: one row per symbol (as the fused step)
    table = weights["embed.weight"] @ weights["rnn.weight_ih_l0"].T + weights["rnn.bias_ih_l0"] + weights["rnn.bias_hh_l0"]
    h, c = np.array(state[0], np.float32), np.array(state[1], np.float32)
    H = h.shape[-1]
    out = np.empty((B, T), np.float32)
    rows = np.arange(B)
    for t in range(T):
        out[:, t] = _log_softmax(h[-1] @ weights["head.weight"].T + weights["head.bias"])[rows, symbols[:, t]]
        x = None
        for k in range(layers):
            a = (table[symbols[:, t]] if k == 0 else
                 x @ weights[f"rnn.weight_ih_l{k}"].T + weights[f"rnn.bias_ih_l{k}"] + weights[f"rnn.bias_hh_l{k}"])
            a = a + h[k] @ weights[f"rnn.weight_hh_l{k}"].T
            gates = _sigmoid(a)
            g = np.tanh(a[:, 2 * H : 3 * H])
            c[k] = gates[:, H : 2 * H] * c[k] + gates[:, :H] * g
            h[k] = gates[:, 3 * H :] * np.tanh(c[k])
            x = h[k]
    return out


def flat_views(flat: np.ndarray, shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    """``flat`` cut into arrays of ``shapes``, in order: views, so writing to them writes to ``flat`` (the adapted
    weights and their gradients live in one flat array each)."""
    views, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        views.append(flat[start : start + size].reshape(shape))
        start += size
    return views
