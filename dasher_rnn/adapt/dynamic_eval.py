"""Dynamic evaluation (Krause et al. 2018) on committed text, with exact rollback and a guard.

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
spikes, it rolls back to the checkpoint before the trouble, halves the step and records an event.
"""

from __future__ import annotations

import copy
import math
from collections import deque
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F

from dasher_rnn.lm.rnn import LN2, CharRNN, State
from dasher_rnn.lm.state_adapter import ADAPTER_KINDS, AdapterSpec

RULES = ("sgd", "rms", "rms-rms")
METHODS = ("full", *ADAPTER_KINDS)
DEFAULT_ETA = {"sgd": 0.03, "rms": 1e-4, "rms-rms": 3e-4}


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


@dataclass
class Checkpoint:
    offset: int  # committed symbols consumed by updates before this one
    weights: torch.Tensor  # flat copy of the adapted parameters
    state: State
    base_state: State
    scale: float
    window: list[float]
    grad_norms: list[float]
    since_guard: int


@dataclass
class AdaptStats:
    updates: int = 0
    rollbacks: int = 0  # on deletion
    guard_events: int = 0  # explosions caught
    adapted_bits: float = 0.0  # bits of every adapted segment as predicted before its update
    base_bits: float = 0.0  # the same segments under the base weights
    events: list[dict] = field(default_factory=list)


class DynamicEvaluator:
    """Adapts ``model`` in place; ``model`` must not be shared with another thread while it runs."""

    def __init__(self, model: CharRNN, config: AdaptConfig, newline: int,
                 msg: dict[str, torch.Tensor] | None = None):
        self.model, self.config, self.newline = model, config, newline
        spec = config.adapter_spec
        model.set_adapter(spec)
        self.base_model = copy.deepcopy(model).eval()
        self.base_model.set_adapter(None)
        if spec is None:
            network = model.network_parameters()
        else:
            assert model.adapter is not None  # set_adapter(spec) made it
            network = {f"adapter.{n}": p for n, p in model.adapter.named_parameters()}
        self.names, self.params = list(network), list(network.values())
        for p in model.parameters():  # gradients only for what adapts (an adapter's backward stays small)
            p.requires_grad_(any(p is q for q in self.params))
        self.base = [p.detach().clone() for p in self.params]
        self.inv_rms: list[torch.Tensor] | None = None
        self.decay: list[torch.Tensor | float] = [config.lam] * len(self.params)
        if config.rule != "sgd":
            if msg is None:
                raise ValueError(f"rule {config.rule!r} needs the model's mean squared gradients (msg.safetensors)")
            rms = [msg[n].to(p.device).sqrt() for n, p in zip(self.names, self.params, strict=True)]
            self.inv_rms = [1.0 / (r + config.eps) for r in rms]
            if config.rule == "rms-rms" and config.lam > 0:
                mean = torch.cat([r.reshape(-1) for r in rms]).mean()
                self.decay = [config.lam * torch.clamp(r / mean, max=1.0 / config.lam) for r in rms]
        with torch.no_grad():
            h0, c0 = model.initial_state(1)
            self.state = (h0.detach(), c0.detach())
        self.base_state = self.state
        self.committed: list[int] = []
        self.offset = 0
        self.scale = 1.0
        self.window: list[float] = []
        self.grad_norms: list[float] = []
        self.since_guard = 1 << 30  # updates since the guard last fired
        self.ring: deque[Checkpoint] = deque()
        self.stats = AdaptStats()
        flat_bytes = sum(p.numel() for p in self.params) * 4
        self.ring_size = max(1, config.ring_bytes // max(1, flat_bytes))

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
            if checkpoint.offset > length:
                self.stats.events.append({"event": "rollback-beyond-ring", "offset": checkpoint.offset,
                                          "kept_deleted_symbols": checkpoint.offset - length})
            self._restore(checkpoint)
            self.stats.rollbacks += 1
        del self.committed[length:]

    # -- updates -----------------------------------------------------------------
    def _flat(self) -> torch.Tensor:
        return torch.cat([p.detach().reshape(-1) for p in self.params])  # cat copies: a snapshot, not a view

    def _checkpoint(self) -> Checkpoint:
        return Checkpoint(self.offset, self._flat(), self.state, self.base_state, self.scale, list(self.window),
                          list(self.grad_norms), self.since_guard)

    def _restore(self, cp: Checkpoint) -> None:
        with torch.no_grad():
            start = 0
            for p in self.params:
                p.copy_(cp.weights[start : start + p.numel()].view_as(p))
                start += p.numel()
        self.offset, self.state, self.base_state = cp.offset, cp.state, cp.base_state
        self.scale, self.window, self.grad_norms = cp.scale, list(cp.window), list(cp.grad_norms)
        self.since_guard = cp.since_guard

    def _segment_loss(self, model: CharRNN, state: State, segment: torch.Tensor) -> tuple[torch.Tensor, State]:
        """Mean nats of the segment from ``state`` (first symbol predicted from the state alone)."""
        logp, new_state = model.score(segment[None, :], state)
        return F.nll_loss(logp[0], segment), new_state

    def _update(self) -> None:
        cfg = self.config
        segment = torch.tensor(self.committed[self.offset : self.offset + cfg.segment])
        self.ring.append(self._checkpoint())
        while len(self.ring) > self.ring_size:
            self.ring.popleft()
        with torch.no_grad():
            base_loss, self.base_state = self._segment_loss(self.base_model, self.base_state, segment)
        loss, new_state = self._segment_loss(self.model, self.state, segment)
        for p in self.params:
            p.grad = None
        loss.backward()
        grads: list[torch.Tensor] = []
        for p in self.params:
            assert p.grad is not None  # every adapting parameter is in the loss's graph
            grads.append(p.grad)
        grad_norm = float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))
        self.offset += len(segment)
        self.state = (new_state[0].detach(), new_state[1].detach())
        self.stats.updates += 1
        self.since_guard += 1
        excess = (loss.item() - base_loss.item()) / LN2
        self.stats.adapted_bits += loss.item() / LN2 * len(segment)
        self.stats.base_bits += base_loss.item() / LN2 * len(segment)
        self.window = (self.window + [excess])[-cfg.window :]
        median = sorted(self.grad_norms)[len(self.grad_norms) // 2] if self.grad_norms else None
        reason = None
        if not (math.isfinite(loss.item()) and math.isfinite(grad_norm)):
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
        if not all(bool(torch.isfinite(p).all()) for p in self.params):  # e.g. a corrupt step size: never keep them
            self._guard("non-finite weights after a step")

    def _step(self, grads: list[torch.Tensor]) -> None:
        eta = self.config.eta * self.scale
        with torch.no_grad():
            for i, (p, g, base) in enumerate(zip(self.params, grads, self.base, strict=True)):
                direction = g * self.inv_rms[i] if self.inv_rms is not None else g
                p.add_(direction, alpha=-eta)
                if self.config.lam > 0:
                    p.add_((base - p) * self.decay[i])
                p.grad = None

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
            with torch.no_grad():
                skipped = torch.tensor(self.committed[checkpoint.offset : offset])
                if len(skipped):
                    _, state = self.model(skipped[None, :], self.state)
                    self.state = (state[0].detach(), state[1].detach())
            rolled_back_to = checkpoint.offset
        else:
            with torch.no_grad():
                for p, base in zip(self.params, self.base, strict=True):
                    p.copy_(base)
            self.ring.pop()  # this update's checkpoint held the weights that failed
            self.state = base_now
            rolled_back_to = "base weights"
        self.offset, self.base_state = offset, base_now
        self.scale = (scale_now if math.isfinite(scale_now) and 0 < scale_now <= 1 else 1.0) * self.config.damp
        self.window, self.grad_norms, self.since_guard = [], [], 0
        self.stats.guard_events += 1
        self.stats.events.append({"event": "guard", "reason": reason, "offset": offset,
                                  "rolled_back_to": rolled_back_to, "step_scale": self.scale})
        for p in self.params:
            p.grad = None

    def settings(self) -> dict:
        return asdict(self.config)
