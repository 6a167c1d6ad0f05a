"""The network a training run starts from: a new one (``new_model``), the network of a model folder or of a run's
checkpoint (``load_start_model``), one remapped onto another language's alphabet (``remap_alphabet``) or widened to
more units computing the same function (``widen_model``). The loop that trains it is ``train.py``'s.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from dasher_rnn.alphabet import Alphabet
from dasher_rnn.lm.model_io import load_tensors
from dasher_rnn.lm.rnn import CharRNN, RNNConfig
from dasher_rnn.lm.train import CHECKPOINT, CHECKPOINT_META, _checkpoint_weights


def new_model(alphabet: Alphabet, embed: int, hidden: int, layers: int, cell: str, seed: int,
              **cell_options: int) -> CharRNN:
    """A freshly initialised model; ``cell_options`` are the cell's own RNNConfig fields (mog_rank, attn_window, ...)."""
    torch.manual_seed(seed)
    return CharRNN(RNNConfig(vocab_size=len(alphabet), embed_size=embed, hidden_size=hidden, layers=layers, cell=cell,
                             **cell_options))


def load_start_model(path: str | Path) -> tuple[CharRNN, Alphabet, dict]:
    """The network of a model directory or a run folder's checkpoint (either format), in float32, its alphabet,
    and a record of where it came from (path, architecture, characters it has seen) for the new run's metadata."""
    from dasher_rnn.lm.model_io import CONFIG_FILE, load_model

    path = Path(path)
    if (path / CONFIG_FILE).is_file():
        model, alphabet, config = load_model(path)
        training = config.get("training", {})
        chars = int(training.get("characters_with_origin", training.get("characters", 0)))
    elif (path / CHECKPOINT_META).is_file():
        meta = json.loads((path / CHECKPOINT_META).read_text())
        alphabet = Alphabet.from_json(meta["alphabet"], source=str(path / CHECKPOINT_META))
        model = CharRNN(RNNConfig(**meta["model_config"]))
        tensors = load_tensors(path / CHECKPOINT)
        model.load_state_dict(_checkpoint_weights(tensors))
        tc = meta.get("train_config", {})
        chars = int(meta.get("chars", meta["step"] * tc.get("batch_size", 0) * tc.get("seq_len", 0)))
        chars += int((meta.get("origin") or {}).get("chars", 0))
    else:
        raise ValueError(f"{path}: neither a model directory ({CONFIG_FILE}) nor a run folder ({CHECKPOINT_META})")
    arch = model.config
    origin = {"path": str(path), "architecture": f"{arch.cell} {arch.layers}x{arch.hidden_size}", "chars": chars,
              "alphabet": alphabet.name}
    return model, alphabet, origin


def _base_character(ch: str) -> str:
    """The letter a character is built on (é -> e, Ä -> A, ß -> s), or the character itself."""
    import unicodedata

    base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
    return base[:1] or ch


@torch.no_grad()
def remap_alphabet(model: CharRNN, old: Alphabet, new: Alphabet) -> CharRNN:
    """A copy of ``model`` that reads and predicts ``new``'s symbols, for a model in another language started from
    this one. A symbol both alphabets have keeps its embedding, head row and bias. A new symbol starts from the
    letter it is built on where the old alphabet has that letter (é from e, Ä from A), otherwise from the mean of
    the old rows, and its bias starts 2 nats below its source's, so that no new symbol takes probability from
    the old ones before training has seen it. The recurrent weights and the learned initial state are kept."""
    cfg = model.config
    copy = CharRNN(RNNConfig(**{**cfg.to_json(), "vocab_size": len(new)}))
    src = model.state_dict()
    out = {name: value.clone() for name, value in src.items() if not name.startswith(("embed.", "head."))}
    embed, head_w, head_b = src["embed.weight"], src["head.weight"], src["head.bias"]
    rows = []
    for ch in new.symbols:
        source = ch if ch in old else _base_character(ch)
        rows.append(old.index(source) if source in old else None)
    mean = (embed.mean(0), head_w.mean(0), head_b.mean())

    def take(table: torch.Tensor, fallback: torch.Tensor) -> torch.Tensor:
        return torch.stack([table[i] if i is not None else fallback for i in rows])

    out["embed.weight"] = take(embed, mean[0])
    out["head.weight"] = take(head_w, mean[1])
    bias = take(head_b, mean[2])
    kept = torch.tensor([ch in old for ch in new.symbols])
    out["head.bias"] = torch.where(kept, bias, bias - 2.0)
    copy.load_state_dict(out)
    return copy


@torch.no_grad()
def widen_model(model: CharRNN, hidden: int, seed: int = 0, init_scale: float | None = None) -> CharRNN:
    """A copy of an LSTM ``model`` with ``hidden`` units per layer that computes the same function (Net2Net-style).

    The old units keep their weights. The new units get small random incoming weights (from the input and from
    all units, with biases) so they start to learn at once, and zero outgoing weights to the old units (the gates
    of their own layer and of the next layer) and to the head. So they cannot change any old unit or the output until
    training moves their outgoing weights, which get gradients from the start. Their learned initial state is 0.
    """
    cfg = model.config
    if cfg.cell != "lstm":
        raise ValueError(f"widening is implemented for the LSTM cell, not {cfg.cell!r}")
    old = cfg.hidden_size
    if hidden < old:
        raise ValueError(f"cannot widen {old} units to {hidden}")
    new_cfg = RNNConfig(**{**cfg.to_json(), "hidden_size": hidden})
    torch.manual_seed(seed)
    wide = CharRNN(new_cfg)
    scale = init_scale if init_scale is not None else 0.5 / hidden**0.5
    src, dst = model.state_dict(), wide.state_dict()
    out: dict[str, torch.Tensor] = {}
    for name, target in dst.items():
        value = src[name].float()
        if name.startswith("rnn.weight_") or name.startswith("rnn.bias_"):
            layer = int(name.rsplit("_l", 1)[1])
            new = torch.empty_like(target).uniform_(-scale, scale)  # new units' incoming weights and biases
            gate_rows = [(g * hidden, g * hidden + old, g * old) for g in range(4)]  # (start in new, end, start in old)
            takes_hidden = name.startswith("rnn.weight_hh") or (name.startswith("rnn.weight_ih") and layer > 0)
            for start, end, old_start in gate_rows:
                if value.dim() == 2:
                    new[start:end, : value.shape[1]] = value[old_start : old_start + old]
                    if takes_hidden:
                        new[start:end, old:] = 0.0  # old units' input from new units (this layer or below): zero
                else:
                    new[start:end] = value[old_start : old_start + old]
            out[name] = new
        elif name in ("head.weight", "h0", "c0"):  # the head reads nothing from the new units; their state starts at 0
            out[name] = torch.cat([value, torch.zeros(value.shape[0], hidden - old)], dim=1)
        else:  # the embedding and the head's bias
            out[name] = value.clone()
    wide.load_state_dict(out)
    return wide


__all__ = ["load_start_model", "new_model", "remap_alphabet", "widen_model"]
