"""The character RNN's architecture (``config.json``'s ``architecture``), without torch: what a model folder is
checked against before any network is built (``lm/model_io.py``), and what ``lm/rnn.py::CharRNN`` is built from."""

from __future__ import annotations

from dataclasses import asdict, dataclass

ATTENTION_KINDS = ("attention", "kv-attention", "kvp-attention", "rnn-ngram")
CELLS = ("lstm", "mlstm", "mogrifier", *ATTENTION_KINDS)


@dataclass
class RNNConfig:
    vocab_size: int
    embed_size: int = 64
    hidden_size: int = 512
    layers: int = 1
    cell: str = "lstm"
    mog_rounds: int = 5  # Mogrifier only: rounds of mutual gating
    mog_rank: int = 64  # Mogrifier only: rank of the factorised Q and R
    attn_window: int = 5  # attention cells only: how many recent outputs each step reads

    @property
    def cell_state_size(self) -> int:
        """Width of c per layer: the LSTM cell, plus the window of recent outputs for attention cells."""
        return self.hidden_size * (1 + self.attn_window) if self.cell in ATTENTION_KINDS else self.hidden_size

    def to_json(self) -> dict:
        """The fields this cell uses (other cells' configs stay as they were: checkpoints compare them)."""
        out = asdict(self)
        if self.cell != "mogrifier":
            del out["mog_rounds"], out["mog_rank"]
        if self.cell not in ATTENTION_KINDS:
            del out["attn_window"]
        return out

    def lstm_shapes(self) -> dict[str, tuple[int, ...]]:
        """The shape of every tensor of a plain LSTM's state dict (``CharRNN``'s names: torch's LSTM and the learned
        initial state); ValueError for another cell, whose layers torch defines (``lm/cells.py``)."""
        if self.cell != "lstm":
            raise ValueError(f"the {self.cell} cell's tensors are defined by its torch layers")
        V, E, H = self.vocab_size, self.embed_size, self.hidden_size
        shapes: dict[str, tuple[int, ...]] = {"embed.weight": (V, E)}
        for k in range(self.layers):
            shapes.update({f"rnn.weight_ih_l{k}": (4 * H, E if k == 0 else H), f"rnn.weight_hh_l{k}": (4 * H, H),
                           f"rnn.bias_ih_l{k}": (4 * H,), f"rnn.bias_hh_l{k}": (4 * H,)})
        shapes.update({"head.weight": (V, H), "head.bias": (V,), "h0": (self.layers, H), "c0": (self.layers, H)})
        return shapes
