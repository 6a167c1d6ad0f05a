"""The character RNN: embedding -> recurrent cell(s) -> log-probabilities over the alphabet.

``cell="lstm"`` uses torch's fused LSTM; the other cells are the layers of ``lm/cells.py``
(multiplicative LSTM, Mogrifier LSTM, and the four attention-over-recent-outputs variants). The
learned initial state (``h0``, ``c0``, one row per layer) is a parameter of the model and is what
every message starts from. A state is (h, c), each (layers, batch, width): h is the recurrence's
output (``hidden_size``), c the rest of its memory (``cell_state_size``: the LSTM cell, and for
attention cells the window of recent outputs too).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn

from dasher_rnn.lm.cells import MLSTMLayer, MogrifierLSTMLayer, WindowAttentionLSTMLayer
from dasher_rnn.lm.rnn_config import ATTENTION_KINDS, CELLS, RNNConfig
from dasher_rnn.lm.state_adapter import AdapterSpec, StateAdapter

State = tuple[torch.Tensor, torch.Tensor]  # h (layers, batch, hidden_size), c (layers, batch, cell_state_size)
LN2 = math.log(2.0)  # nats per bit


class CharRNN(nn.Module):
    def __init__(self, config: RNNConfig):
        super().__init__()
        if config.cell not in CELLS:
            raise ValueError(f"unknown cell {config.cell!r} (one of {', '.join(CELLS)})")
        self.config = config
        H, L = config.hidden_size, config.layers
        self.embed = nn.Embedding(config.vocab_size, config.embed_size)
        self.rnn: nn.LSTM | nn.ModuleList  # torch's LSTM for "lstm", else one layer of lm/cells.py per layer
        if config.cell == "lstm":
            self.rnn = nn.LSTM(config.embed_size, H, num_layers=L, batch_first=True)
        elif config.cell == "mlstm":
            self.rnn = nn.ModuleList(MLSTMLayer(config.embed_size if i == 0 else H, H) for i in range(L))
        elif config.cell == "mogrifier":
            self.rnn = nn.ModuleList(
                MogrifierLSTMLayer(config.embed_size if i == 0 else H, H, config.mog_rounds, config.mog_rank)
                for i in range(L)
            )
        else:
            self.rnn = nn.ModuleList(
                WindowAttentionLSTMLayer(config.embed_size if i == 0 else H, H, config.cell, config.attn_window)
                for i in range(L)
            )
        self.head = nn.Linear(H, config.vocab_size)
        self.h0 = nn.Parameter(torch.zeros(L, H))
        self.c0 = nn.Parameter(torch.zeros(L, config.cell_state_size))
        self.adapter: StateAdapter | None = None
        self.dropout = 0.0  # training only (``Trainer`` sets it): on the embedding and on the top layer's output

    @contextmanager
    def gradable(self) -> Iterator[None]:
        """For a backward pass outside the training loop (adaptation, the initial state, MS_g): cuDNN runs an RNN's
        backward only after a forward in training mode, so on CUDA the model is put in it meanwhile, which computes
        the same numbers since dropout is off outside that loop; on the CPU the mode stays as it is."""
        if self.dropout:
            raise RuntimeError("a backward pass outside training needs the model's dropout off")
        training = self.training
        self.train(training or self.h0.is_cuda)
        try:
            yield
        finally:
            self.train(training)

    def set_adapter(self, spec: AdapterSpec | None) -> None:
        """Attach fresh (identity) adaptation parameters on the top layer's h, or remove them; an adapter
        of the same spec is kept with its values (a fork of an adapted model goes on from them)."""
        if spec != (self.adapter.spec if self.adapter is not None else None):
            self.adapter = None if spec is None else StateAdapter(spec, self.config.hidden_size).to(self.h0.device)

    def initial_state(self, batch: int, learned: bool = True) -> State:
        """The state every message starts from: the learned one, or zeros."""
        if not learned:
            cfg = self.config
            return (torch.zeros(cfg.layers, batch, cfg.hidden_size, device=self.h0.device),
                    torch.zeros(cfg.layers, batch, cfg.cell_state_size, device=self.h0.device))
        return (
            self.h0.unsqueeze(1).expand(-1, batch, -1).contiguous(),
            self.c0.unsqueeze(1).expand(-1, batch, -1).contiguous(),
        )

    def forward(self, inputs: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """inputs (B, T) symbol ids -> log-probs (B, T, V) of the next symbol, final state."""
        if self.adapter is not None and self.adapter.spec.feed:  # the modified h is the state: step by step
            outputs = []
            for t in range(inputs.shape[1]):
                h, c = self._lstm_step(inputs[:, t], state) if self.config.cell == "lstm" \
                    else self._recur(inputs[:, t : t + 1], state)[1]
                state = (torch.cat([h[:-1], self.adapter(h[-1:])]), c)
                outputs.append(self.readout(state))
            return self._log_probs(torch.stack(outputs, dim=1)), state
        out, state = self._recur(inputs, state)
        return self._log_probs(F.dropout(out, self.dropout, self.training)), state

    def _recur(self, inputs: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """The recurrent layers: top-layer outputs (B, T, H) and the final state."""
        x = F.dropout(self.embed(inputs), self.dropout, self.training)
        if isinstance(self.rnn, nn.LSTM):  # cell "lstm"
            return self.rnn(x, state)
        hs, cs = [], []
        out = x
        for i, layer in enumerate(self.rnn):
            out, (h, c) = layer(out, (state[0][i], state[1][i]))
            hs.append(h)
            cs.append(c)
        return out, (torch.stack(hs), torch.stack(cs))

    def _lstm_step(self, symbols: torch.Tensor, state: State) -> State:
        """One step of the fused LSTM written out: the same result to float rounding, but its backward is many times
        cheaper than nn.LSTM's for one-step calls on CPU (dynamic evaluation through a fed adapter)."""
        x, hs, cs = self.embed(symbols), [], []
        for i in range(self.config.layers):
            gates = (F.linear(x, getattr(self.rnn, f"weight_ih_l{i}"), getattr(self.rnn, f"bias_ih_l{i}"))
                     + F.linear(state[0][i], getattr(self.rnn, f"weight_hh_l{i}"), getattr(self.rnn, f"bias_hh_l{i}")))
            in_gate, forget, cell, out_gate = gates.chunk(4, dim=-1)
            cs.append(torch.sigmoid(forget) * state[1][i] + torch.sigmoid(in_gate) * torch.tanh(cell))
            x = torch.sigmoid(out_gate) * torch.tanh(cs[-1])
            hs.append(x)
        return torch.stack(hs), torch.stack(cs)

    def readout(self, state: State) -> torch.Tensor:
        """The top layer's output (B, H) for a state alone: its h, or for attention cells h read against the window."""
        h, c = state[0][-1], state[1][-1]
        if self.config.cell in ATTENTION_KINDS:
            assert isinstance(self.rnn, nn.ModuleList)
            top = self.rnn[-1]
            assert isinstance(top, WindowAttentionLSTMLayer)
            return top.state_readout(h, c)
        return h

    def _log_probs(self, out: torch.Tensor) -> torch.Tensor:
        if self.adapter is not None and not self.adapter.spec.feed:  # only the head reads the modified h
            out = self.adapter(out)
        return torch.log_softmax(self.head(out), dim=-1)

    def network_parameters(self) -> dict[str, nn.Parameter]:
        """The weights training and adaptation change: everything but the learned initial state (and with an
        adapter attached, its parameters too)."""
        return {n: p for n, p in self.named_parameters() if n not in ("h0", "c0")}

    def state_log_probs(self, state: State) -> torch.Tensor:
        """Next-symbol log-probs (B, V) from a state alone."""
        return self._log_probs(self.readout(state))

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
