"""Dynamic evaluation in torch: every cell, every weight or a state adapter (the rules, the ring and the guard are
``adapt/evaluation.py``'s, re-exported here). ``adapt/numpy_eval.py`` does the same for a plain LSTM without torch."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from dasher_rnn.adapt.evaluation import (
    DEFAULT_ETA,
    METHODS,
    RULES,
    AdaptConfig,
    AdaptStats,
    Checkpoint,
    StreamEvaluator,
    default_eta,
)
from dasher_rnn.lm.rnn import CharRNN, State

__all__ = ["DEFAULT_ETA", "METHODS", "RULES", "AdaptConfig", "AdaptStats", "Checkpoint", "DynamicEvaluator",
           "default_eta"]


class DynamicEvaluator(StreamEvaluator):
    """Adapts ``model`` in place; ``model`` must not be shared with another thread while it runs."""

    def __init__(self, model: CharRNN, config: AdaptConfig, newline: int,
                 msg: dict[str, torch.Tensor] | None = None):
        self.model = model
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
        super().__init__(config, newline, sum(p.numel() for p in self.params))
        with torch.no_grad():
            h0, c0 = model.initial_state(1)
            self.state = (h0.detach(), c0.detach())
        self.base_state = self.state

    # -- weights in and out ---------------------------------------------------------
    def state_dict(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def adapted_weights(self) -> dict[str, torch.Tensor]:
        return {n: p.detach().clone() for n, p in zip(self.names, self.params, strict=True)}

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {n: tuple(p.shape) for n, p in self.model.network_parameters().items()}

    def load_weights(self, weights: dict[str, Any]) -> None:
        params = self.model.network_parameters()
        with torch.no_grad():
            for n, value in weights.items():
                params[n].copy_(value if isinstance(value, torch.Tensor) else torch.tensor(np.asarray(value)))

    # -- the arithmetic -------------------------------------------------------------
    def _flat(self) -> torch.Tensor:
        return torch.cat([p.detach().reshape(-1) for p in self.params])  # cat copies: a snapshot, not a view

    def _set_flat(self, flat: torch.Tensor) -> None:
        with torch.no_grad():
            start = 0
            for p in self.params:
                p.copy_(flat[start : start + p.numel()].view_as(p))
                start += p.numel()

    def _segment_loss(self, model: CharRNN, state: State, segment: torch.Tensor) -> tuple[torch.Tensor, State]:
        """Mean nats of the segment from ``state`` (first symbol predicted from the state alone)."""
        logp, new_state = model.score(segment[None, :], state)
        return F.nll_loss(logp[0], segment), new_state

    def _symbols(self, symbols: list[int]) -> torch.Tensor:
        """Symbol ids on the device the adapting weights are on (the CPU, or a GPU)."""
        return torch.tensor(symbols, device=self.params[0].device)

    def _evaluate(self, segment: list[int]):
        symbols = self._symbols(segment)
        with torch.no_grad():
            base_loss, base_state = self._segment_loss(self.base_model, self.base_state, symbols)
        with self.model.gradable():
            loss, new_state = self._segment_loss(self.model, self.state, symbols)
        for p in self.params:
            p.grad = None
        loss.backward()
        grads: list[torch.Tensor] = []
        for p in self.params:
            assert p.grad is not None  # every adapting parameter is in the loss's graph
            grads.append(p.grad)
            p.grad = None
        grad_norm = float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))
        return (loss.item(), base_loss.item(), grads, grad_norm, (new_state[0].detach(), new_state[1].detach()),
                base_state)

    def _step(self, grads: list[torch.Tensor]) -> None:
        eta = self.config.eta * self.scale
        with torch.no_grad():
            for i, (p, g, base) in enumerate(zip(self.params, grads, self.base, strict=True)):
                direction = g * self.inv_rms[i] if self.inv_rms is not None else g
                p.add_(direction, alpha=-eta)
                if self.config.lam > 0:
                    p.add_((base - p) * self.decay[i])

    def _finite(self) -> bool:
        return all(bool(torch.isfinite(p).all()) for p in self.params)

    def _reset_to_base(self) -> None:
        with torch.no_grad():
            for p, base in zip(self.params, self.base, strict=True):
                p.copy_(base)

    def _carry(self, symbols: list[int]) -> None:
        with torch.no_grad():
            _, state = self.model(self._symbols(symbols)[None, :], self.state)
        self.state = (state[0].detach(), state[1].detach())

    def _heldout_loss(self, symbols: list[int]) -> float:
        with torch.no_grad():
            h0, c0 = self.model.initial_state(1)
            loss, _ = self._segment_loss(self.model, (h0.detach(), c0.detach()), self._symbols(symbols))
        return float(loss.item())
