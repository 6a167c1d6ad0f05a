"""The RNN mixed with an adaptive PPM: the network knows English, PPM remembers a new word the first time.

Probabilities are mixed per context, ``w * p_rnn + (1 - w) * p_ppm``, with the RNN's weight ``w``
chosen by the order of PPM's deepest matching context (an order-5 match means the user has
written these characters before, where PPM is sharp; at low orders PPM knows little). The
weights are learned online from committed text (``OrderGate``), so the mixture keeps tracking a
user whose writing changes.

Both components learn committed symbols (the RNN by dynamic evaluation when it adapts, PPM by
Dasher's update-exclusion counts). To score a committed symbol the mixture keeps a second
context of each model on the committed stream, apart from the prediction context.
"""

from __future__ import annotations

import numpy as np

from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.lm.protocol import DASHER_FLOOR, quantise
from dasher_rnn.lm.rnn_lm import RNNLanguageModel

MIN_PROB = 1e-9


class OrderGate:
    """The RNN's mixing weight per PPM context order, learned online.

    Each committed symbol moves its order's weight towards the RNN's share of the mixture's
    probability of that symbol (its posterior responsibility), an exponential moving average whose
    fixed point is the weight that maximises the mixture's likelihood (an online EM step). Bayes'
    rule would instead pick whichever model has been better so far and never mix."""

    def __init__(self, orders: int, prior_rnn: float = 0.9, rate: float = 0.02, bounds: tuple[float, float] = (0.02, 0.995)):
        self.rate, self.bounds = rate, bounds
        self.w = np.full(orders + 1, prior_rnn)

    def weight(self, order: int) -> float:
        return float(self.w[order])

    def weights(self, orders: np.ndarray) -> np.ndarray:
        return self.w[orders]

    def update(self, order: int, p_rnn: float, p_ppm: float) -> None:
        w = self.w[order]
        mixed = w * p_rnn + (1 - w) * p_ppm
        responsibility = w * p_rnn / mixed if mixed > MIN_PROB else w
        self.w[order] = min(max(w + self.rate * (responsibility - w), self.bounds[0]), self.bounds[1])

    def copy(self) -> OrderGate:
        twin = OrderGate.__new__(OrderGate)
        twin.rate, twin.bounds, twin.w = self.rate, self.bounds, self.w.copy()
        return twin


class HybridLanguageModel:
    """Implements ``LanguageModel`` over an RNN language model (static or adaptive) and a PPM."""

    def __init__(self, rnn: RNNLanguageModel, ppm: PPMModel, gate: OrderGate | None = None):
        if rnn.alphabet.symbols != ppm.alphabet.symbols:
            raise ValueError("the RNN and PPM must share one alphabet")
        self.rnn, self.ppm, self.alphabet = rnn, ppm, rnn.alphabet
        self.gate = gate or OrderGate(ppm.max_order)
        self._committed_rnn = RNNLanguageModel(rnn.model, rnn.alphabet, rnn.zero_state)  # same (adapting) weights
        self.reset()

    def describe(self) -> str:
        return f"hybrid of RNN {self.rnn.describe()} and PPM order {self.ppm.max_order}"

    # -- prediction context ---------------------------------------------------------------
    def reset(self) -> None:
        self.rnn.reset()
        self.ppm.reset()
        self._committed_rnn.reset()
        self._committed_ppm = self.ppm.context_after("")

    def cut(self) -> None:
        self.rnn.cut()
        self.ppm.cut()

    def advance(self, symbol: int) -> None:
        self.rnn.advance(symbol)
        self.ppm.advance(symbol)

    def probs(self) -> np.ndarray:
        w = self.gate.weight(self.ppm.prediction_order)
        return w * self.rnn.probs() + (1 - w) * self.ppm.probs()

    def sequence_probs(self, symbols: list[int]) -> np.ndarray:
        """Probabilities before each symbol from the current context (the RNN in one call), as ``probs``/``advance``."""
        p_ppm, orders = np.zeros((len(symbols), len(self.alphabet))), np.zeros(len(symbols), np.int64)
        for i, symbol in enumerate(symbols):
            p_ppm[i], orders[i] = self.ppm.probs(), self.ppm.prediction_order
            self.ppm.advance(symbol)
        w = self.gate.weights(orders)[:, None]
        return w * self.rnn.sequence_probs(symbols) + (1 - w) * p_ppm

    def dasher_distribution(self, floor: float = DASHER_FLOOR) -> np.ndarray:
        return quantise(self.probs(), floor)

    # -- learning ---------------------------------------------------------------------------
    def learn(self, symbol: int) -> None:
        ctx = self._committed_ppm
        p_ppm = self.ppm.probs_at(ctx)[symbol]
        p_rnn = self._committed_rnn.probs()[symbol]
        self.gate.update(ctx.order, float(p_rnn), float(p_ppm))
        self.rnn.learn(symbol)
        self.ppm.learn(symbol)
        self._committed_rnn.advance(symbol)
        self._committed_ppm = self.ppm.entered(ctx, symbol)

    def fork(self) -> HybridLanguageModel:
        return HybridLanguageModel(self.rnn.fork(), self.ppm.fork(), self.gate.copy())
