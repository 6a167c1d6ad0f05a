"""Dynamic evaluation (Krause et al. 2018) on committed text, with exact rollback and a guard: its settings
and everything but the network's arithmetic, without torch.

Committed symbols form one stream (messages separated by newlines, as in training). Every
``segment`` symbols the segment is predicted with the current weights from the state at its
start, then one gradient step is taken on its loss (backpropagating within the segment only;
the state carries over, detached). Rules, with theta_g the weights adaptation started from:
  sgd:      theta <- theta - eta * g + lam * (theta_g - theta)
  rms:      theta <- theta - eta * g / (sqrt(MS_g) + eps) + lam * (theta_g - theta)
  rms-rms:  as rms, the decay multiplied by min(sqrt(MS_g) / mean(sqrt(MS_g)), 1/lam)
theta is every weight (``method="full"``), or only a small set of parameters on the top layer's
hidden state (``sparse``: h_S + M h_S on a subset of units; ``lhuc``: h * 2 sigmoid(r); see
``lm/state_adapter.py``), with or without feeding the modified state into the recurrence.

Before each update a checkpoint (weights, states, text offset, step scale, guard window) goes
into a ring bounded by memory; deleting past an update restores the checkpoint before it, so
re-entering the same text reproduces the weights exactly. The guard scores every segment under
the base weights too; when the adapted loss exceeds the base loss by ``margin`` bits/char on
average over ``window`` segments (or by twice that on one segment), or a loss or gradient is not finite, or the gradient norm
spikes, it rolls back to the checkpoint before the trouble, halves the step and records an event. The damping
does not last: every ``recovery`` updates without a guard event the step doubles again, up to its full size, so
bursts of bad text cannot leave a profile learning slowly for good.

Text can also do harm the guard cannot see, because it scores each segment against the base model on that same text
(random text is as hard for both): it makes the model predict the user's *other* text worse. So every
``heldout_every`` updates the weights are scored on held-out text, the ``heldout_symbols`` symbols the user wrote
before the anchor (the last check that found nothing worse), against the anchor's weights; when learning since the
anchor made that text more than ``heldout_margin`` bits/char harder to predict, it is not kept (the anchor's weights
come back, and a ``held-out`` event says so). Harm that comes a little at a time adds up against the same anchor.

``StreamEvaluator`` is the stream, the ring and the guard; two engines do the arithmetic with the same rules and
give the same weights (to float rounding): ``adapt/dynamic_eval.py::DynamicEvaluator`` (torch: every cell, the
state adapters) and ``adapt/numpy_eval.py::NumpyEvaluator`` (numpy: a plain LSTM adapting every weight, for an
installation without PyTorch). ``choose_engine`` picks one.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any

from dasher_rnn.extras import TORCH_INSTALL, TorchMissing, torch_available
from dasher_rnn.lm.adapter_spec import ADAPTER_KINDS, AdapterSpec

RULES = ("sgd", "rms", "rms-rms")
METHODS = ("full", *ADAPTER_KINDS)
DEFAULT_ETA = {"sgd": 0.03, "rms": 1e-4, "rms-rms": 3e-4}
LN2 = math.log(2.0)  # nats per bit
ENGINES = ("auto", "torch", "numpy")  # what computes dynamic evaluation (``choose_engine``)


def default_eta(rule: str) -> float:
    """Step size per rule, tuned on eval/aac_imagined_dev and adapt/sms_user_history (docs/history/adaptation.md)."""
    return DEFAULT_ETA[rule]


@dataclass
class AdaptConfig:
    rule: str = "sgd"
    eta: float = 0.03
    lam: float = 0.0
    segment: int = 20
    eps: float = 1e-3
    margin: float = 0.5  # bits/char the adapted model may lose to the base, on average over the window
    window: int = 3
    spike: float = 20.0  # gradient norm above this many times the running median is a spike
    damp: float = 0.5
    recovery: int = 50  # updates without a guard event after which a damped step doubles again (0: never)
    heldout_every: int = 50  # updates between checks on held-out text (0: never)
    heldout_symbols: int = 500  # symbols of held-out text (at least 200 are needed for a check)
    heldout_tolerance: float = 0.02  # bits/char worse on held-out text that still counts as nothing worse
    heldout_margin: float = 0.15  # bits/char worse on held-out text than at the anchor: not kept
    ring_bytes: int = 64 * 2**20
    method: str = "full"  # which parameters adapt: every weight, or a state adapter (sparse, lhuc)
    feed: bool = True  # state adapters: the modified state feeds the recurrence (else only the head reads it)
    units: int = 100  # sparse: hidden units M mixes

    @property
    def adapter_spec(self) -> AdapterSpec | None:
        return None if self.method == "full" else AdapterSpec(self.method, self.feed, self.units)

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"unknown rule {self.rule!r} (choose from {', '.join(RULES)})")
        if self.method not in METHODS:
            raise ValueError(f"unknown adaptation method {self.method!r} (choose from {', '.join(METHODS)})")
        if self.method != "full" and self.rule != "sgd":
            raise ValueError(f"the {self.method} method adapts with sgd (MS_g is stored for the weights only)")
        if self.units < 1:
            raise ValueError("a sparse adapter needs at least one unit")
        if self.segment < 1 or self.eta < 0 or not 0 <= self.lam < 1:
            raise ValueError("need segment >= 1, eta >= 0 and 0 <= lam < 1")


def choose_engine(cell: str, config: AdaptConfig, engine: str = "auto") -> str:
    """Which engine adapts a model of ``cell``: "numpy" when asked for (``engine="numpy"``), or with ``auto`` when
    PyTorch is not installed; else "torch". Numpy adapts a plain LSTM's weights only (``method="full"``): a research
    cell or a state adapter needs torch, and without it ``TorchMissing`` says which extra installs it."""
    if engine not in ENGINES:
        raise ValueError(f"unknown adaptation engine {engine!r} (choose from {', '.join(ENGINES)})")
    what = f"adapting the {cell} cell" if cell != "lstm" else \
        f"the {config.method} state adapter" if config.method != "full" else "the torch adaptation engine"
    if engine == "numpy":
        if what != "the torch adaptation engine":
            raise ValueError(f"the numpy adaptation engine adapts a plain LSTM's weights only; {what} needs torch")
        return "numpy"
    has_torch = torch_available()
    if engine == "auto" and not has_torch and what == "the torch adaptation engine":
        return "numpy"
    if not has_torch:
        raise TorchMissing(f"{what} needs PyTorch, which is not installed: {TORCH_INSTALL} installs it")
    return "torch"


@dataclass
class Checkpoint:
    offset: int  # committed symbols consumed by updates before this one
    weights: Any  # flat copy of the adapted parameters (the engine's tensor or array)
    state: Any
    base_state: Any
    scale: float
    window: list[float]
    grad_norms: list[float]
    since_guard: int


@dataclass
class AdaptStats:
    updates: int = 0
    rollbacks: int = 0  # on deletion
    guard_events: int = 0  # explosions caught
    heldout_events: int = 0  # learning not kept because it made held-out text worse
    adapted_bits: float = 0.0  # bits of every adapted segment as predicted before its update
    base_bits: float = 0.0  # the same segments under the base weights
    events: list[dict] = field(default_factory=list)


class StreamEvaluator:
    """The stream of committed symbols, the checkpoint ring and the guard. An engine (a subclass) holds the weights
    and the states and does the arithmetic: its ``names`` and ``params`` (the adapted parameters, live), ``state``
    and ``base_state`` (the recurrent state under the adapted and the base weights), and the methods below that
    raise NotImplementedError here."""

    names: list[str]
    params: list[Any]
    state: Any
    base_state: Any

    def __init__(self, config: AdaptConfig, newline: int, size: int):
        """``size``: how many numbers adapt (the ring holds as many checkpoints as ``ring_bytes`` allows)."""
        self.config, self.newline = config, newline
        self.committed: list[int] = []
        self.offset = 0
        self.scale = 1.0
        self.window: list[float] = []
        self.grad_norms: list[float] = []
        self.since_guard = 1 << 30  # updates since the guard last fired
        self.ring: deque[Checkpoint] = deque()
        self.stats = AdaptStats()
        self.ring_size = max(1, config.ring_bytes // max(1, size * 4))
        self.good: Checkpoint | None = None  # the anchor: the weights at the last check that found nothing worse
        self._anchor_bits: float | None = None  # the anchor's bits/char on its held-out text, once computed
        self.since_check = 0  # updates since the last check

    # -- the writing stream ------------------------------------------------------
    def commit(self, symbol: int) -> bool:
        """Commit one symbol; returns whether an update ran."""
        self.committed.append(int(symbol))
        if len(self.committed) - self.offset >= self.config.segment:
            self._update()
            return True
        return False

    def end_message(self) -> None:
        """A message ended: the newline that separates messages joins the stream."""
        if self.committed and self.committed[-1] != self.newline:
            self.commit(self.newline)

    def delete_to(self, length: int) -> None:
        """Forget committed symbols beyond ``length``; restore the weights from before any update that used them."""
        if not 0 <= length <= len(self.committed):
            raise ValueError(f"cannot delete to {length}: {len(self.committed)} symbols are committed")
        if length < self.offset:
            # the last update that used no deleted text starts at or before ``length``; restore the state before it
            newer = None
            while self.ring and self.ring[-1].offset > length:
                newer = self.ring.pop()
            checkpoint = self.ring.pop() if self.ring else newer
            if checkpoint is None:
                raise RuntimeError("no checkpoint to restore")  # cannot happen: every update pushes one
            if self.good is not None and self.good.offset > checkpoint.offset:
                self.good = None  # the check's weights learned from deleted text: the next check starts again
            if checkpoint.offset > length:
                self.stats.events.append({"event": "rollback-beyond-ring", "offset": checkpoint.offset,
                                          "kept_deleted_symbols": checkpoint.offset - length})
            self._restore(checkpoint)
            self.stats.rollbacks += 1
        del self.committed[length:]

    def settings(self) -> dict:
        return asdict(self.config)

    # -- the engine's part -------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """A copy of every weight of the model (the adapted ones as they are now), by ``CharRNN``'s names: what the
        predictor is handed."""
        raise NotImplementedError

    def adapted_weights(self) -> dict[str, Any]:
        """A copy of the adapted parameters by name: a profile's ``rnn`` part."""
        raise NotImplementedError

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """The shape of every parameter a profile's ``rnn`` part may hold."""
        raise NotImplementedError

    def load_weights(self, weights: dict[str, Any]) -> None:
        """Set parameters (numpy arrays or tensors, by name; checked against ``shapes`` by the caller)."""
        raise NotImplementedError

    def _flat(self) -> Any:
        """A flat copy of the adapted parameters."""
        raise NotImplementedError

    def _set_flat(self, flat: Any) -> None:
        raise NotImplementedError

    def _evaluate(self, segment: list[int]) -> tuple[float, float, list[Any], float, Any, Any]:
        """The segment predicted from ``state`` with the adapted weights and from ``base_state`` with the base ones:
        (mean nats, base mean nats, the gradient of each parameter, the gradients' norm, the state after it, the
        base state after it)."""
        raise NotImplementedError

    def _step(self, grads: list[Any]) -> None:
        """The rule's step on ``params``, scaled by ``scale``."""
        raise NotImplementedError

    def _finite(self) -> bool:
        """Whether every adapted parameter is finite."""
        raise NotImplementedError

    def _reset_to_base(self) -> None:
        """The adapted parameters back to the weights adaptation started from."""
        raise NotImplementedError

    def _carry(self, symbols: list[int]) -> None:
        """``state`` moved over ``symbols`` with the adapted weights, learning nothing."""
        raise NotImplementedError

    def _heldout_loss(self, symbols: list[int]) -> float:
        """Mean nats of ``symbols`` under the adapted weights, from the state a message starts from; nothing changes."""
        raise NotImplementedError

    # -- updates -----------------------------------------------------------------
    def _checkpoint(self) -> Checkpoint:
        return Checkpoint(self.offset, self._flat(), self.state, self.base_state, self.scale, list(self.window),
                          list(self.grad_norms), self.since_guard)

    def _restore(self, cp: Checkpoint) -> None:
        self._set_flat(cp.weights)
        self.offset, self.state, self.base_state = cp.offset, cp.state, cp.base_state
        self.scale, self.window, self.grad_norms = cp.scale, list(cp.window), list(cp.grad_norms)
        self.since_guard = cp.since_guard

    def _update(self) -> None:
        cfg = self.config
        segment = self.committed[self.offset : self.offset + cfg.segment]
        self.ring.append(self._checkpoint())
        while len(self.ring) > self.ring_size:
            self.ring.popleft()
        loss, base_loss, grads, grad_norm, self.state, self.base_state = self._evaluate(segment)
        self.offset += len(segment)
        self.stats.updates += 1
        self.since_guard += 1
        excess = (loss - base_loss) / LN2
        self.stats.adapted_bits += loss / LN2 * len(segment)
        self.stats.base_bits += base_loss / LN2 * len(segment)
        self.window = (self.window + [excess])[-cfg.window :]
        median = sorted(self.grad_norms)[len(self.grad_norms) // 2] if self.grad_norms else None
        reason = None
        if not (math.isfinite(loss) and math.isfinite(grad_norm)):
            reason = "non-finite loss or gradient"
        elif median is not None and len(self.grad_norms) >= 5 and grad_norm > cfg.spike * median:
            reason = f"gradient norm {grad_norm:.3g} > {cfg.spike} x median {median:.3g}"
        elif len(self.window) == cfg.window and sum(self.window) / cfg.window > cfg.margin:
            reason = f"adapted loss {sum(self.window) / cfg.window:.2f} bits/char above the base model"
        elif excess > 2 * cfg.margin:
            reason = f"adapted loss {excess:.2f} bits/char above the base model on one segment"
        if reason is not None:
            self._guard(reason)
            return
        self.grad_norms = (self.grad_norms + [grad_norm])[-50:]
        self._step(grads)
        if not self._finite():  # e.g. a corrupt step size: never keep them
            self._guard("non-finite weights after a step")
            return
        if cfg.recovery > 0 and self.scale < 1.0 and self.since_guard % cfg.recovery == 0:
            self.scale = min(1.0, self.scale * 2.0)  # learning goes on well: the damping wears off
        self.since_check += 1
        if cfg.heldout_every > 0 and self.since_check >= cfg.heldout_every:
            self._check_heldout()

    def _check_heldout(self) -> None:
        """Compare the weights now with the anchor's (the weights of the last check that found nothing worse) on the
        held-out text, the symbols written before the anchor. Nothing worse (``heldout_tolerance``): now is the new
        anchor. Worse by up to ``heldout_margin``: learning goes on, the anchor stays, so harm that comes a little at
        a time adds up against it. Worse by more: what was learned since the anchor is not kept."""
        cfg, anchor = self.config, self.good
        self.since_check = 0
        now = self._checkpoint()
        if anchor is None:
            self.good, self._anchor_bits = now, None
            return
        heldout = self.committed[max(0, anchor.offset - cfg.heldout_symbols) : anchor.offset]
        if len(heldout) < 200:
            self.good, self._anchor_bits = now, None
            return
        bits_now = self._heldout_loss(heldout) / LN2
        if self._anchor_bits is None:
            self._set_flat(anchor.weights)
            self._anchor_bits = self._heldout_loss(heldout) / LN2
            self._set_flat(now.weights)
        worse = bits_now - self._anchor_bits
        if math.isfinite(worse) and worse <= cfg.heldout_tolerance:
            self.good, self._anchor_bits = now, None
            return
        if math.isfinite(worse) and worse <= cfg.heldout_margin:
            return
        # not kept: the anchor's weights come back (the anchor and its held-out text stay, so more of the same text
        # is judged against the same writing); deleting back from here restores them too
        self._set_flat(anchor.weights)
        self.ring.clear()
        self.ring.append(Checkpoint(self.offset, anchor.weights, self.state, self.base_state, self.scale, [], [],
                                    self.since_guard))
        self.stats.heldout_events += 1
        self.stats.events.append({"event": "held-out", "worse_by": round(worse, 3) if math.isfinite(worse) else None,
                                  "not_kept": [anchor.offset, self.offset], "heldout_symbols": len(heldout)})

    def _guard(self, reason: str) -> None:
        """Roll back to the checkpoint before the window of trouble, damp the step, record it.

        A segment's loss judges the weights the previous step produced, so a window of w bad segments
        means the last w steps are suspect: restore the checkpoint from before them (w + 1 back). When
        the ring holds none that old, or a rollback did not help (the guard fires again within a window),
        fall back to the base weights, which the guard tracks anyway."""
        offset, base_now, scale_now = self.offset, self.base_state, self.scale
        back = len(self.window) + 1
        rolled_back_to: int | str  # the checkpoint's offset, or "base weights"
        if len(self.ring) >= back and self.since_guard > self.config.window:
            checkpoint = self.ring[-back]
            self._restore(checkpoint)
            for _ in range(back):
                self.ring.pop()
            # text after the checkpoint stays committed but is not learned from: carry the state over it
            skipped = self.committed[checkpoint.offset : offset]
            if skipped:
                self._carry(skipped)
            rolled_back_to = checkpoint.offset
        else:
            self._reset_to_base()
            self.ring.pop()  # this update's checkpoint held the weights that failed
            self.state = base_now
            rolled_back_to = "base weights"
        self.offset, self.base_state = offset, base_now
        self.scale = (scale_now if math.isfinite(scale_now) and 0 < scale_now <= 1 else 1.0) * self.config.damp
        self.window, self.grad_norms, self.since_guard = [], [], 0
        self.good, self.since_check = None, 0  # the next check starts from the weights the guard left
        self.stats.guard_events += 1
        self.stats.events.append({"event": "guard", "reason": reason, "offset": offset,
                                  "rolled_back_to": rolled_back_to, "step_scale": self.scale})
