"""Recurrent layers beyond torch's fused LSTM, each batch-first with per-layer state (h, c).

- ``MLSTMLayer``: Krause's multiplicative LSTM, m = (W_mx x) * (W_mh h_prev), gates from x and m.
- ``MogrifierLSTMLayer``: Melis et al.; x and h_prev gate each other for r rounds before an LSTM step.
- ``WindowAttentionLSTMLayer``: Daniluk et al.; an LSTM whose output attends over its last W outputs
  (plain, key-value, key-value-predict) or concatenates parts of them (the RNN n-gram). The window
  rides in c after the cell state, so a state is self-contained and the tree predictor stays exact.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dasher_rnn.lm.rnn_config import ATTENTION_KINDS


class MLSTMLayer(nn.Module):
    """One multiplicative-LSTM layer (Krause et al. 2016), run step by step."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.hidden_size = hidden_size
        self.wmx = nn.Linear(input_size, hidden_size, bias=False)
        self.wmh = nn.Linear(hidden_size, hidden_size, bias=False)
        self.wx = nn.Linear(input_size, 4 * hidden_size)
        self.wm = nn.Linear(hidden_size, 4 * hidden_size, bias=False)

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]):
        h, c = state
        # input projections for all steps at once; unbind, not x[:, t]: each indexing's backward writes a full-size gradient
        outputs = []
        for xm, xg in zip(self.wmx(x).unbind(1), self.wx(x).unbind(1), strict=True):
            m = xm * self.wmh(h)
            i, f, g, o = (xg + self.wm(m)).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(h)
        return torch.stack(outputs, dim=1), (h, c)


class MogrifierLSTMLayer(nn.Module):
    """One Mogrifier LSTM layer (Melis et al. 2020), run step by step. Before each LSTM step, for
    rounds i = 1..r: odd rounds x <- 2 sigmoid(Q_i h) * x, even rounds h <- 2 sigmoid(R_i x) * h, with
    Q_i and R_i factorised at rank k. The cell state c is not gated."""

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
        for x_t in x.unbind(1):
            xt, hm = self.mogrify(x_t, h)
            i, f, g, o = (self.wx(xt) + self.wh(hm)).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(h)
        return torch.stack(outputs, dim=1), (h, c)


class WindowAttentionLSTMLayer(nn.Module):
    """An LSTM layer (torch's fused one; the recurrence is unchanged) whose output h*_t reads its own
    last ``window`` outputs Y = [h_{t-W} .. h_{t-1}] (Daniluk et al. 2017, "Frustratingly short
    attention spans"). With h_t split into key / value / predict parts (``kind``):
      attention:      k = v = p = h_t
      kv-attention:   h_t = [k_t, v_t], p = v
      kvp-attention:  h_t = [k_t, v_t, p_t]
        M = tanh(W_Y K_Y + (W_h k_t) 1^T), alpha = softmax(w^T M), r = V_Y alpha^T, h* = tanh(W_r r + W_x p_t)
      rnn-ngram:      h_t split into W + 1 parts; h* = tanh(W_n [h_t^1; h_{t-1}^2; ...; h_{t-W}^{W+1}])
    State: h is h_t (the recurrence's), c is [cell (H), window (W x H), oldest first]."""

    def __init__(self, input_size: int, hidden_size: int, kind: str, window: int):
        super().__init__()
        if kind not in ATTENTION_KINDS:
            raise ValueError(f"unknown attention kind {kind!r} (one of {', '.join(ATTENTION_KINDS)})")
        if window < 1:
            raise ValueError("the attention window needs at least one output")
        H = hidden_size
        self.kind, self.hidden_size, self.window = kind, H, window
        self.lstm = nn.LSTM(input_size, H, batch_first=True)
        if kind == "rnn-ngram":
            if H % (window + 1):
                raise ValueError(f"rnn-ngram splits h into window + 1 = {window + 1} parts: hidden size {H} is not divisible")
            self.w_ngram = nn.Linear(H, H)
            return
        k = {"attention": H, "kv-attention": H // 2, "kvp-attention": H // 3}[kind]
        if kind == "attention":
            self.key, self.value, self.predict = slice(0, H), slice(0, H), slice(0, H)
        elif kind == "kv-attention":
            self.key, self.value, self.predict = slice(0, k), slice(k, H), slice(k, H)
        else:
            self.key, self.value, self.predict = slice(0, k), slice(k, 2 * k), slice(2 * k, H)
        value_size, predict_size = len(range(H)[self.value]), len(range(H)[self.predict])
        self.w_memory = nn.Linear(k, k, bias=False)  # W_Y
        self.w_query = nn.Linear(k, k)  # W_h (the score's bias lives here)
        self.w_score = nn.Linear(k, 1, bias=False)  # w
        self.w_read = nn.Linear(value_size, H, bias=False)  # W_r
        self.w_out = nn.Linear(predict_size, H)  # W_x

    def split_state(self, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """c (..., H (1 + W)) -> cell (..., H), window (..., W, H)."""
        H = self.hidden_size
        return c[..., :H], c[..., H:].unflatten(-1, (self.window, H))

    def readout(self, h: torch.Tensor, window: torch.Tensor) -> torch.Tensor:
        """h* from outputs h (..., H) and their windows (..., W, H)."""
        if self.kind == "rnn-ngram":
            size = self.hidden_size // (self.window + 1)
            parts = [h[..., :size]] + [window[..., self.window - i, i * size : (i + 1) * size]
                                       for i in range(1, self.window + 1)]
            return torch.tanh(self.w_ngram(torch.cat(parts, dim=-1)))
        return self.attend(h, self.w_memory(window[..., self.key]), window[..., self.value])

    def attend(self, h: torch.Tensor, memory: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """Attention readout with the window's keys already projected (memory = W_Y K)."""
        scores = self.w_score(torch.tanh(memory + self.w_query(h[..., self.key]).unsqueeze(-2))).squeeze(-1)
        read = (F.softmax(scores, dim=-1).unsqueeze(-1) * values).sum(dim=-2)
        return torch.tanh(self.w_read(read) + self.w_out(h[..., self.predict]))

    def state_readout(self, h: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """The layer's output for a state alone (what the head reads before the next input)."""
        return self.readout(h, self.split_state(c)[1])

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]):
        h, c = state
        cell, window = self.split_state(c)
        out, (h_n, c_n) = self.lstm(x, (h[None], cell[None]))
        W, T = self.window, x.shape[1]
        history = torch.cat([window, h.unsqueeze(1), out], dim=1)  # the outputs before step 0, then every step's

        def windows(seq: torch.Tensor) -> torch.Tensor:  # (B, T, W, ...): what each step reads (no unfold: ONNX)
            return torch.stack([seq[:, j + 1 : j + 1 + T] for j in range(W)], dim=2)

        if self.kind == "rnn-ngram":
            star = self.readout(out, windows(history))
        else:  # project every key once, then cut the windows
            star = self.attend(out, windows(self.w_memory(history[..., self.key])), windows(history[..., self.value]))
        new_window = history[:, T : T + W]
        return star, (h_n[0], torch.cat([c_n[0], new_window.flatten(1)], dim=-1))
