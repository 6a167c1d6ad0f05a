"""The character RNN: embedding -> recurrent cell(s) -> log-probabilities over the alphabet.

``cell="lstm"`` uses torch's fused LSTM; ``cell="mlstm"`` is Krause's multiplicative LSTM
(m = (W_mx x) * (W_mh h_prev), gates from x and m) and ``cell="mogrifier"`` the Mogrifier LSTM of
Melis et al. (x and h_prev gate each other for ``mog_rounds`` rounds before an LSTM step), both run
step by step. The learned initial
state (``h0``, ``c0``, one row per layer) is a parameter of the model and is what every
message starts from.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

State = tuple[torch.Tensor, torch.Tensor]  # (h, c), each (layers, batch, hidden)
LN2 = math.log(2.0)  # nats per bit


@dataclass
class RNNConfig:
    vocab_size: int
    embed_size: int = 64
    hidden_size: int = 512
    layers: int = 1
    cell: str = "lstm"
    mog_rounds: int = 5  # Mogrifier only: rounds of mutual gating
    mog_rank: int = 64  # Mogrifier only: rank of the factorised Q and R

    def to_json(self) -> dict:
        out = asdict(self)
        if self.cell != "mogrifier":  # other cells' configs stay as they were (checkpoints compare them)
            del out["mog_rounds"], out["mog_rank"]
        return out


class MLSTMLayer(nn.Module):
    """One multiplicative-LSTM layer (Krause et al. 2016), batch-first, run step by step."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.hidden_size = hidden_size
        self.wmx = nn.Linear(input_size, hidden_size, bias=False)
        self.wmh = nn.Linear(hidden_size, hidden_size, bias=False)
        self.wx = nn.Linear(input_size, 4 * hidden_size)
        self.wm = nn.Linear(hidden_size, 4 * hidden_size, bias=False)

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]):
        h, c = state
        xm, xg = self.wmx(x), self.wx(x)  # input projections for all steps at once
        outputs = []
        for t in range(x.shape[1]):
            m = xm[:, t] * self.wmh(h)
            i, f, g, o = (xg[:, t] + self.wm(m)).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(h)
        return torch.stack(outputs, dim=1), (h, c)


class MogrifierLSTMLayer(nn.Module):
    """One Mogrifier LSTM layer (Melis et al. 2020), batch-first, run step by step. Before each LSTM
    step, for rounds i = 1..r: odd rounds x <- 2 sigmoid(Q_i h) * x, even rounds h <- 2 sigmoid(R_i x) * h,
    with Q_i and R_i factorised at rank k. The cell state c is not gated."""

    def __init__(self, input_size: int, hidden_size: int, rounds: int = 5, rank: int = 64):
        super().__init__()
        self.hidden_size, self.rounds = hidden_size, rounds

        def factorised(n_in: int, n_out: int) -> nn.Sequential:
            return nn.Sequential(nn.Linear(n_in, rank, bias=False), nn.Linear(rank, n_out, bias=False))

        self.q = nn.ModuleList(factorised(hidden_size, input_size) for _ in range((rounds + 1) // 2))
        self.r = nn.ModuleList(factorised(input_size, hidden_size) for _ in range(rounds // 2))
        self.wx = nn.Linear(input_size, 4 * hidden_size)
        self.wh = nn.Linear(hidden_size, 4 * hidden_size, bias=False)

    def mogrify(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        for i in range(self.rounds):
            if i % 2 == 0:
                x = 2 * torch.sigmoid(self.q[i // 2](h)) * x
            else:
                h = 2 * torch.sigmoid(self.r[i // 2](x)) * h
        return x, h

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]):
        h, c = state
        outputs = []
        for t in range(x.shape[1]):
            xt, hm = self.mogrify(x[:, t], h)
            i, f, g, o = (self.wx(xt) + self.wh(hm)).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(h)
        return torch.stack(outputs, dim=1), (h, c)


CELLS = ("lstm", "mlstm", "mogrifier")


class CharRNN(nn.Module):
    def __init__(self, config: RNNConfig):
        super().__init__()
        if config.cell not in CELLS:
            raise ValueError(f"unknown cell {config.cell!r} (one of {', '.join(CELLS)})")
        self.config = config
        H, L = config.hidden_size, config.layers
        self.embed = nn.Embedding(config.vocab_size, config.embed_size)
        if config.cell == "lstm":
            self.rnn = nn.LSTM(config.embed_size, H, num_layers=L, batch_first=True)
        elif config.cell == "mlstm":
            self.rnn = nn.ModuleList(MLSTMLayer(config.embed_size if i == 0 else H, H) for i in range(L))
        else:
            self.rnn = nn.ModuleList(
                MogrifierLSTMLayer(config.embed_size if i == 0 else H, H, config.mog_rounds, config.mog_rank)
                for i in range(L)
            )
        self.head = nn.Linear(H, config.vocab_size)
        self.h0 = nn.Parameter(torch.zeros(L, H))
        self.c0 = nn.Parameter(torch.zeros(L, H))

    def initial_state(self, batch: int, learned: bool = True) -> State:
        """The state every message starts from: the learned one, or zeros."""
        if not learned:
            z = torch.zeros(self.config.layers, batch, self.config.hidden_size, device=self.h0.device)
            return z, z.clone()
        return (
            self.h0.unsqueeze(1).expand(-1, batch, -1).contiguous(),
            self.c0.unsqueeze(1).expand(-1, batch, -1).contiguous(),
        )

    def forward(self, inputs: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """inputs (B, T) symbol ids -> log-probs (B, T, V) of the next symbol, final state."""
        x = self.embed(inputs)
        if self.config.cell == "lstm":
            out, state = self.rnn(x, state)
        else:
            hs, cs = [], []
            out = x
            for i, layer in enumerate(self.rnn):
                out, (h, c) = layer(out, (state[0][i], state[1][i]))
                hs.append(h)
                cs.append(c)
            state = (torch.stack(hs), torch.stack(cs))
        return torch.log_softmax(self.head(out), dim=-1), state

    def network_parameters(self) -> dict[str, nn.Parameter]:
        """The weights training and adaptation change: everything but the learned initial state."""
        return {n: p for n, p in self.named_parameters() if n not in ("h0", "c0")}

    def state_log_probs(self, state: State) -> torch.Tensor:
        """Next-symbol log-probs (B, V) from a state alone (the top layer's h)."""
        return torch.log_softmax(self.head(state[0][-1]), dim=-1)

    def score(self, symbols: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """Log-probs (B, T, V) of the distribution *before* each of ``symbols`` (B, T) entered from
        ``state``: the first comes from the state alone. Also returns the state after the last symbol."""
        first = self.state_log_probs(state)
        out, new_state = self.forward(symbols, state)
        return torch.cat([first.unsqueeze(1), out[:, :-1]], dim=1), new_state

    def step(self, symbols: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """One step for a batch: symbols (B,) -> log-probs (B, V), new state."""
        logp, state = self.forward(symbols.unsqueeze(1), state)
        return logp[:, 0], state

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
