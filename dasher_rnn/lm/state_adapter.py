"""Small sets of adaptation parameters on the top layer's hidden state: the alternatives to
adapting every weight (dynamic evaluation then updates only these).

- sparse (Krause et al. 2018): h'_S = h_S + M h_S on the first ``units`` units S, M (|S| x |S|);
- lhuc (Swietojanski and Renals 2014): h' = h * 2 sigmoid(r), r one per unit.
Both start at zero, where h' = h. With ``feed`` the modified h is the state (the recurrence and
the head read it); without, only the head reads it and the recurrence runs on the original.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

ADAPTER_KINDS = ("sparse", "lhuc")


@dataclass(frozen=True)
class AdapterSpec:
    kind: str
    feed: bool = True
    units: int = 100  # sparse only: how many hidden units M mixes

    def __post_init__(self) -> None:
        if self.kind not in ADAPTER_KINDS:
            raise ValueError(f"unknown state adapter {self.kind!r} (choose from {', '.join(ADAPTER_KINDS)})")
        if self.units < 1:
            raise ValueError("a sparse adapter needs at least one unit")


class StateAdapter(nn.Module):
    def __init__(self, spec: AdapterSpec, hidden_size: int):
        super().__init__()
        self.spec = spec
        if spec.kind == "sparse":
            self.units = min(spec.units, hidden_size)
            self.m = nn.Parameter(torch.zeros(self.units, self.units))
        else:
            self.r = nn.Parameter(torch.zeros(hidden_size))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if self.spec.kind == "sparse":
            subset = h[..., : self.units]
            return torch.cat([subset + subset @ self.m.T, h[..., self.units :]], dim=-1)
        return h * (2 * torch.sigmoid(self.r))
