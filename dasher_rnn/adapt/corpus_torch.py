"""Corpus adaptation's arithmetic in torch (``corpus_adapt.CorpusEngine``): every cell, on the CPU or CUDA."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from dasher_rnn.lm.rnn import LN2, CharRNN, State


class TorchCorpusEngine:
    """Adapts ``model`` (moved to ``device``) with Adam (rate ``lr``), the gradients' norm clipped to ``clip`` and a
    decay ``lam`` toward its starting weights after each step."""

    name = "torch"

    def __init__(self, model: CharRNN, lr: float, clip: float, lam: float, device: torch.device):
        self.model, self.clip, self.lam, self.device = model.to(device), clip, lam, device
        network = self.model.network_parameters()
        self.names, self.params = list(network), list(network.values())
        self.start = [p.detach().clone() for p in self.params]
        self.optimizer = torch.optim.Adam(self.params, lr=lr)
        self.state: State | None = None

    @torch.no_grad()
    def bits(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        self.model.eval()
        symbols, present = torch.from_numpy(ids).to(self.device), torch.from_numpy(mask).to(self.device)
        logp, _ = self.model.score(symbols, self.model.initial_state(len(ids)))
        nll = -logp.gather(-1, symbols.unsqueeze(-1)).squeeze(-1) * present
        return (nll.sum(dim=1) / LN2).cpu().numpy()

    def start_epoch(self, rows: int) -> None:
        self.model.train()
        h, c = self.model.initial_state(rows)
        self.state = (h.detach(), c.detach())

    def train_step(self, inputs: np.ndarray, targets: np.ndarray) -> float:
        assert self.state is not None, "start_epoch first"
        x = torch.from_numpy(np.ascontiguousarray(inputs, dtype=np.int64)).to(self.device)
        y = torch.from_numpy(np.ascontiguousarray(targets, dtype=np.int64)).to(self.device)
        logp, state = self.model(x, self.state)
        loss = F.nll_loss(logp.reshape(-1, logp.shape[-1]), y.reshape(-1))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, self.clip)
        self.optimizer.step()
        with torch.no_grad():
            for p, s in zip(self.params, self.start, strict=True):
                p.add_((s - p) * self.lam)
        self.state = (state[0].detach(), state[1].detach())
        return float(loss.item())

    def weights(self) -> dict[str, np.ndarray]:
        return {n: p.detach().float().cpu().numpy().copy() for n, p in zip(self.names, self.params, strict=True)}

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        with torch.no_grad():
            for n, p in zip(self.names, self.params, strict=True):
                p.copy_(torch.from_numpy(np.asarray(weights[n], dtype=np.float32)))
