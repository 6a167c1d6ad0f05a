"""The RNN mixed with an adaptive PPM: the network knows English, PPM remembers a new word the first time.

Probabilities are mixed per context, ``w * p_rnn + (1 - w) * p_ppm``, with the RNN's weight ``w``
chosen by the order of PPM's deepest matching context (an order-5 match means the user has
written these characters before, where PPM is sharp; at low orders PPM knows little). The
weights are learned online from committed text (``OrderGate``), so the mixture keeps tracking a
user whose writing changes. PPM's share is earned (``HybridMixer.EARNED_AT``): an empty PPM, the app's default
for a new user, gets none, so the hybrid starts as its RNN, and PPM's share grows with what it has stored.

Both components learn committed symbols (the RNN by dynamic evaluation when it adapts, PPM by
Dasher's update-exclusion counts). To score a committed symbol the mixture keeps a second
context of each model on the committed stream, apart from the prediction context.
"""

from __future__ import annotations

import numpy as np

from dasher_rnn.lm.ppm import LearnRecord, PPMContext, PPMModel

MIN_PROB = 1e-9
# The hybrid's PPM remembers longer strings than Dasher's order 5: a user's repeated phrases are its job
# (on imagined AAC messages after the user's history, order 8 gave 1.672 bits/char alone against 1.732
# at order 5, and the mixture 0.918 x the adapted RNN against 0.950). Keys hold up to 9 symbols.
HYBRID_PPM_ORDER = 8


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


class HybridMixer:
    """PPM, the mixing weights and the undo records of what they learned: the hybrid's state apart
    from the RNN. The Writer brings the RNN's probabilities; the mixer adds PPM's, learns committed symbols and
    takes deleted ones back.

    ``commit`` scores the symbol in the committed context (the message so far), so the gate learns
    from what the user wrote, wherever the prediction contexts are."""

    # set by ``new_message``: per committed symbol, the committed context before it, its order's weight then and
    # what PPM learned (None: adaptation was paused); the symbols committed in this message; the context after them
    _undo: list[tuple[PPMContext, float, LearnRecord | None]]
    message: list[int]
    _committed: PPMContext
    earned: float  # the part of the gate's share PPM gets, n / (n + EARNED_AT)
    _stored: int  # n: the strings PPM has stored

    # PPM's share is earned: the gate's share for PPM times n / (n + EARNED_AT), n the strings PPM has stored (its
    # training and the user's writing, counted at each message's start and kept up to date as it learns). An empty
    # PPM gets none, so the hybrid starts as its RNN; a PPM trained on a text (10^5 strings and more) gets nearly
    # all the gate gives it (Dasher's English text: 870,000 strings, 0.98); 2,400 characters of writing: ~15,000.
    EARNED_AT = 20_000

    def __init__(self, ppm: PPMModel, gate: OrderGate | None = None):
        self.ppm = ppm
        self.gate = gate or OrderGate(ppm.max_order)
        self.new_message()

    def context_after(self, text: str) -> PPMContext:
        return self.ppm.context_after(text)

    def entered(self, ctx: PPMContext, symbol: int) -> PPMContext:
        return self.ppm.entered(ctx, symbol)

    def weight_at(self, ctx: PPMContext) -> float:
        """The RNN's mixing weight in PPM context ``ctx``: the gate's for its order, with PPM's share scaled by
        what PPM has earned (``EARNED_AT``)."""
        return 1.0 - (1.0 - self.gate.weight(ctx.order)) * self.earned

    def _update_earned(self, stored: int | None = None) -> None:
        """``earned`` from PPM's stored strings (counted afresh, or kept up to date by ``commit``/``uncommit``)."""
        self._stored = self.ppm.num_contexts if stored is None else stored
        self.earned = self._stored / (self._stored + self.EARNED_AT) if self.EARNED_AT > 0 else 1.0

    def mix(self, p_rnn: np.ndarray, ctx: PPMContext) -> np.ndarray:
        """The mixture's probabilities in PPM context ``ctx`` given the RNN's ``p_rnn`` there."""
        w = self.weight_at(ctx)
        return w * p_rnn + (1 - w) * self.ppm.probs_at(ctx)

    def commit(self, symbol: int, p_rnn: float | None = None, learn: bool = True) -> None:
        """PPM learns ``symbol`` (unless ``learn`` is false: adaptation paused); the gate learns from it
        when the RNN's probability of it is given."""
        ctx = self._committed
        weight = self.gate.weight(ctx.order)
        if learn and p_rnn is not None:
            self.gate.update(ctx.order, float(p_rnn), float(self.ppm.probs_at(ctx)[symbol]))
        # the next context's order as a prediction would have seen it: before PPM learns this symbol
        self._committed = self.ppm.entered(ctx, symbol)
        record = self.ppm.learn(symbol) if learn else None
        self._undo.append((ctx, weight, record))
        self.message.append(symbol)
        if record is not None and record.new:
            self._update_earned(self._stored + record.new)

    def uncommit(self, count: int) -> None:
        """Take back the last ``count`` committed symbols of this message: PPM's counts and the weights exactly."""
        for _ in range(min(count, len(self._undo))):
            ctx, weight, record = self._undo.pop()
            if record is not None:
                self.ppm.unlearn(record)
                self._update_earned(self._stored - record.new)
            self.gate.w[ctx.order] = weight
            self._committed = ctx
            self.message.pop()

    def new_message(self) -> None:
        """Deletions never reach back past a message start (as in the RNN's writing session)."""
        self._undo = []
        self.message = []
        self.ppm.reset()
        self._committed = self.ppm.context_after("")
        self._update_earned()

    # -- persistence: PPM's counts (training text and the user's) and the weights, one safetensors blob --
    def to_bytes(self) -> bytes:
        """The profile's ``ppm`` part."""
        from safetensors.numpy import save

        return save({**self.ppm.snapshot(), "gate": self.gate.w})

    def restore(self, data: bytes) -> None:
        """Take PPM's counts and the weights from a profile's ``ppm`` part; ``ValueError`` if it does not fit."""
        from safetensors.numpy import load

        try:
            arrays = load(data)
            gate = arrays.pop("gate")
            if gate.shape != self.gate.w.shape or not np.all((gate > 0) & (gate < 1)):
                raise ValueError("mixing weights of the wrong shape or outside (0, 1)")
            self.ppm.restore(arrays)
        except Exception as exc:  # safetensors and PPM raise several types for a broken or foreign file
            raise ValueError(f"the PPM state does not fit ({type(exc).__name__}: {exc})") from None
        self.gate.w = gate.astype(np.float64)
        self.new_message()
