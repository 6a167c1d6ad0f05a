"""Small sets of adaptation parameters on the top layer's hidden state: the alternatives to
adapting every weight (dynamic evaluation then updates only these).

- sparse (Krause et al. 2018): h'_S = h_S + M h_S on the first ``units`` units S, M (|S| x |S|);
- lhuc (Swietojanski and Renals 2014): h' = h * 2 sigmoid(r), r one per unit.
Both start at zero, where h' = h. With ``feed`` the modified h is the state (the recurrence and
the head read it); without, only the head reads it and the recurrence runs on the original.
"""

from __future__ import annotations

import torch
from torch import nn

from dasher_rnn.lm.adapter_spec import ADAPTER_KINDS, AdapterSpec

__all__ = ["ADAPTER_KINDS", "AdapterSpec", "StateAdapter"]


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
