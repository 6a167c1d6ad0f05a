"""Training loop for the character RNN: AdamW, warmup-stable-decay schedule, truncated BPTT with
the state carried across batches, gradient clipping, validation bits/char and resumable checkpoints.

Batches are a pure function of (seed, step) (see ``corpus.BatchStream``), so a checkpoint needs
only the weights, the optimizer moments, the carried state and the step to resume exactly.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from dasher_rnn.alphabet import BREAK, Alphabet
from dasher_rnn.files import atomic_write
from dasher_rnn.lm.corpus import BatchStream, Corpus
from dasher_rnn.lm.model_io import load_tensors, save_tensors
from dasher_rnn.lm.rnn import LN2, CharRNN, RNNConfig, State

CHECKPOINT = "checkpoint.safetensors"
CHECKPOINT_META = "checkpoint.json"


@dataclass
class TrainConfig:
    steps: int = 7000
    batch_size: int = 128
    seq_len: int = 128
    lr: float = 2e-3
    min_lr_frac: float = 0.05
    warmup: int = 200
    decay_frac: float = 0.25  # final fraction of steps over which the rate decays linearly
    weight_decay: float = 0.01
    clip: float = 1.0
    eval_every: int = 500
    checkpoint_every: int = 100
    val_chars: int = 20000  # per source
    seed: int = 0
    span_batches: int = 64


def lr_at(step: int, tc: TrainConfig) -> float:
    """Warmup, constant, then linear decay: the total can be extended on resume before the decay starts."""
    if step < tc.warmup:
        return tc.lr * (step + 1) / tc.warmup
    decay_start = int(tc.steps * (1 - tc.decay_frac))
    if step < decay_start:
        return tc.lr
    frac = (step - decay_start) / max(1, tc.steps - decay_start)
    return tc.lr * (1 - (1 - tc.min_lr_frac) * min(1.0, frac))


def pick_device(name: str = "auto") -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


@torch.no_grad()
def validation_bits(model: CharRNN, data: np.ndarray, newline: int, device: torch.device, rows: int = 16,
                    chunk: int = 256) -> tuple[float, int]:
    """Total bits and scored characters of ``data`` read as ``rows`` parallel streams from a zero state."""
    n = (len(data) - 1) // rows
    if n < 2:
        return 0.0, 0
    arr = np.asarray(data[: rows * n + 1], dtype=np.int64)
    idx = np.arange(rows)[:, None] * n + np.arange(n + 1)[None, :]
    streams = arr[np.minimum(idx, len(arr) - 1)]
    inputs = torch.from_numpy(streams[:, :-1]).to(device)
    targets = torch.from_numpy(streams[:, 1:]).to(device)
    inputs = torch.where(inputs == BREAK, torch.full_like(inputs, newline), inputs)
    targets = torch.where(targets == BREAK, torch.full_like(targets, -1), targets)
    state = model.initial_state(rows, learned=False)
    total, count = 0.0, 0
    for t in range(0, n, chunk):
        logp, state = model(inputs[:, t : t + chunk], state)
        tgt = targets[:, t : t + chunk]
        total += F.nll_loss(logp.reshape(-1, logp.shape[-1]), tgt.reshape(-1), ignore_index=-1, reduction="sum").item()
        count += int((tgt >= 0).sum())
    return total / LN2, count


def evaluate_corpus(model: CharRNN, corpus: Corpus, max_chars: int, device: torch.device) -> dict[str, float]:
    """Validation bits/char per source (first ``max_chars`` of each) and overall."""
    result, bits, chars = {}, 0.0, 0
    was_training = model.training
    model.eval()
    for src in corpus.sources:
        b, c = validation_bits(model, src.val[:max_chars], corpus.alphabet.index("\n"), device)
        if c:
            result[src.name] = b / c
            bits, chars = bits + b, chars + c
    model.train(was_training)
    result["overall"] = bits / chars if chars else float("nan")
    return result


class Trainer:
    def __init__(self, model: CharRNN, corpus: Corpus, tc: TrainConfig, out_dir: str | Path,
                 device: torch.device):
        self.model, self.corpus, self.tc, self.device = model.to(device), corpus, tc, device
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.stream = BatchStream(corpus, tc.batch_size, tc.seq_len, tc.seed, tc.span_batches)
        # the learned initial state is trained separately (init_state.py), never here
        params = list(model.network_parameters().values())
        decay = [p for p in params if p.dim() >= 2]
        no_decay = [p for p in params if p.dim() < 2]
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": tc.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=tc.lr, betas=(0.9, 0.99),
        )
        self.state: State = model.initial_state(tc.batch_size, learned=False)
        self.step = 0
        self.elapsed = 0.0
        self.history: list[dict] = []

    # -- checkpoints ---------------------------------------------------------------------
    def save_checkpoint(self) -> None:
        tensors = {f"model.{k}": v for k, v in self.model.state_dict().items()}
        tensors["carry.h"], tensors["carry.c"] = self.state
        opt = self.optimizer.state_dict()
        for idx, st in opt["state"].items():
            for key, value in st.items():
                tensors[f"opt.{idx}.{key}"] = value if torch.is_tensor(value) else torch.tensor(value)
        save_tensors(self.out_dir / CHECKPOINT, tensors)
        meta = {
            "step": self.step, "elapsed_s": self.elapsed, "train_config": asdict(self.tc),
            "model_config": self.model.config.to_json(), "alphabet": self.corpus.alphabet.to_json(),
            "param_groups": opt["param_groups"], "history": self.history,
        }
        atomic_write(self.out_dir / CHECKPOINT_META, json.dumps(meta, indent=1).encode())

    def load_checkpoint(self) -> bool:
        """Resume from ``out_dir`` if a checkpoint is there; returns whether one was loaded."""
        meta_path = self.out_dir / CHECKPOINT_META
        if not meta_path.is_file():
            return False
        meta = json.loads(meta_path.read_text())
        if meta["model_config"] != self.model.config.to_json():
            raise ValueError(f"{meta_path}: checkpoint is for model {meta['model_config']}, not {self.model.config.to_json()}")
        if meta["alphabet"]["groups"] != self.corpus.alphabet.to_json()["groups"]:
            raise ValueError(f"{meta_path}: checkpoint was trained with another alphabet")
        tensors = load_tensors(self.out_dir / CHECKPOINT)
        self.model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
        self.state = (tensors["carry.h"].to(self.device), tensors["carry.c"].to(self.device))
        opt_state: dict[int, dict] = {}
        for key, value in tensors.items():
            if key.startswith("opt."):
                _, idx, name = key.split(".", 2)
                opt_state.setdefault(int(idx), {})[name] = value
        self.optimizer.load_state_dict({"state": opt_state, "param_groups": meta["param_groups"]})
        self.step, self.elapsed, self.history = meta["step"], meta["elapsed_s"], meta["history"]
        return True

    # -- training ------------------------------------------------------------------------
    def train_step(self) -> float:
        """One optimisation step; returns the batch loss in bits/char."""
        tc, model = self.tc, self.model
        inputs, targets, reset = self.stream.batch(self.step)
        inputs_t = torch.from_numpy(inputs).to(self.device)
        targets_t = torch.from_numpy(targets).to(self.device)
        keep = torch.from_numpy(~reset).to(self.device).float()[None, :, None]
        state = (self.state[0] * keep, self.state[1] * keep)
        logp, state = model(inputs_t, state)
        loss = F.nll_loss(logp.reshape(-1, logp.shape[-1]), targets_t.reshape(-1), ignore_index=-1)
        for group in self.optimizer.param_groups:
            group["lr"] = lr_at(self.step, tc)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), tc.clip)
        self.optimizer.step()
        self.state = (state[0].detach(), state[1].detach())
        self.step += 1
        return loss.item() / LN2

    def run(self, progress: bool = True) -> list[dict]:
        tc = self.tc
        self.model.train()
        chars_per_step = tc.batch_size * tc.seq_len
        bar = tqdm(total=tc.steps, initial=self.step, disable=not progress, unit="step", dynamic_ncols=True)
        ema = None
        try:
            while self.step < tc.steps:
                t0 = time.perf_counter()
                bpc = self.train_step()
                dt = time.perf_counter() - t0
                self.elapsed += dt
                ema = bpc if ema is None else 0.98 * ema + 0.02 * bpc
                bar.set_postfix(bpc=f"{ema:.3f}", chars_s=f"{chars_per_step / dt:,.0f}", lr=f"{lr_at(self.step, tc):.1e}")
                bar.update(1)
                if self.step % tc.eval_every == 0 or self.step == tc.steps:
                    val = evaluate_corpus(self.model, self.corpus, tc.val_chars, self.device)
                    record = {"step": self.step, "chars": self.step * chars_per_step, "elapsed_s": round(self.elapsed),
                              "train_bpc": round(ema, 4), "val_bpc": {k: round(v, 4) for k, v in val.items()}}
                    self.history.append(record)
                    bar.write(json.dumps(record))
                if self.step % tc.checkpoint_every == 0 or self.step == tc.steps:
                    self.save_checkpoint()
        except KeyboardInterrupt:
            self.save_checkpoint()
            bar.write(f"interrupted: checkpoint saved at step {self.step}; run the same command again to continue")
            raise
        finally:
            bar.close()
        return self.history


def new_model(alphabet: Alphabet, embed: int, hidden: int, layers: int, cell: str, seed: int,
              **cell_options: int) -> CharRNN:
    """A freshly initialised model; ``cell_options`` are the cell's own RNNConfig fields (mog_rank, attn_window, ...)."""
    torch.manual_seed(seed)
    return CharRNN(RNNConfig(vocab_size=len(alphabet), embed_size=embed, hidden_size=hidden, layers=layers, cell=cell,
                             **cell_options))


def finish_model(trainer: Trainer, model_dir: str | Path, log=print) -> dict:
    """After training: learn the initial state, compute MS_g, write the model directory and its ONNX export."""
    from dasher_rnn.lm.init_state import learn_initial_state
    from dasher_rnn.lm.model_io import MSG_FILE, read_config, save_model, write_config
    from dasher_rnn.lm.msg import mean_squared_gradients
    from dasher_rnn.lm.onnx_export import export_onnx

    model, corpus, tc = trainer.model, trainer.corpus, trainer.tc
    model_dir = Path(model_dir)
    init = learn_initial_state(model, corpus, seed=tc.seed, log=log)
    msg, msg_info = mean_squared_gradients(model, corpus, seed=tc.seed + 1)
    val = evaluate_corpus(model, corpus, tc.val_chars, trainer.device)
    info = {
        "training": {
            "steps": trainer.step, "characters": trainer.step * tc.batch_size * tc.seq_len,
            "train_seconds": round(trainer.elapsed), "device": str(trainer.device),
            "threads": torch.get_num_threads(), "config": asdict(tc), "sources": corpus.summary(),
        },
        "validation_bpc": {k: round(v, 4) for k, v in val.items()},
        "initial_state": init,
        "msg": msg_info,
    }
    save_model(model_dir, model, corpus.alphabet, info=info)
    save_tensors(model_dir / MSG_FILE, msg, metadata={k: str(v) for k, v in msg_info.items()})
    write_config(model_dir, read_config(model_dir))
    info["onnx_max_abs_diff"] = export_onnx(model_dir)
    log(f"model written to {model_dir}: validation {info['validation_bpc']['overall']:.4f} bits/char, "
        f"start bits/char {init['zero_state_bpc']:.3f} (zero state) -> {init['learned_state_bpc']:.3f} (learned)")
    return info
