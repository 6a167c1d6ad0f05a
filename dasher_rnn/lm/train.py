"""Training loop for the character RNN: AdamW, warmup-stable-decay schedule, truncated BPTT with
the state carried across batches, gradient clipping, validation bits/char and resumable checkpoints.

Batches are a pure function of (seed, step) (see ``corpus.BatchStream``), so a checkpoint needs
only the weights, the carried state and the step to resume. A run keeps ONE checkpoint, overwritten
in place atomically: weights in float16 without optimizer state (small enough to commit), the
carried state, the step, the characters seen and the validation history, plus a README.md that
gives the command continuing it. Resuming starts a fresh AdamW whose rate warms up again over
``resume_warmup`` steps. Checkpoints of the earlier format (float32 weights and AdamW moments) are
still read, and resume exactly.

For an accelerator (``tools/gpu_run.py``): ``Trainer.use_amp`` trains under autocast (bf16 or fp16) with a gradient
scaler where the recurrence runs in float16, ``Trainer.run(max_seconds=...)`` stops after a wall time with a
validation record and a checkpoint, and ``Trainer.batch`` is where a subclass feeds batches made ahead.
"""

from __future__ import annotations

import json
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from dasher_rnn.alphabet import BREAK
from dasher_rnn.files import atomic_write
from dasher_rnn.lm.corpus import BatchStream, Corpus
from dasher_rnn.lm.model_io import load_tensors, save_tensors
from dasher_rnn.lm.rnn import LN2, CharRNN, State

CHECKPOINT = "checkpoint.safetensors"
CHECKPOINT_META = "checkpoint.json"
CHECKPOINT_FORMAT = 2  # 1 (no "format" key): float32 weights and AdamW moments


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
    resume_warmup: int = 20  # steps over which a fresh optimizer's rate ramps up again after a resume
    lowercase_frac: float = 0.0  # case augmentation: share of lines (messages) lower-cased in training batches
    dropout: float = 0.0  # on the embedding and the top layer's output, in training only (small texts memorise)

    def __post_init__(self) -> None:
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout {self.dropout}: give a probability from 0 up to (not including) 1")


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
    """One training run in ``out_dir``. Under ``torch.distributed`` (``torchrun``) the model is wrapped in
    DistributedDataParallel: each process trains ``batch_size`` rows of a global batch of
    ``batch_size * world_size`` rows, and rank 0 alone writes checkpoints and logs."""

    def __init__(self, model: CharRNN, corpus: Corpus, tc: TrainConfig, out_dir: str | Path,
                 device: torch.device, command: str | None = None):
        self.model, self.corpus, self.tc, self.device = model.to(device), corpus, tc, device
        self.out_dir = Path(out_dir)
        self.distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
        self.rank = torch.distributed.get_rank() if self.distributed else 0
        self.world_size = torch.distributed.get_world_size() if self.distributed else 1
        if self.rank == 0:
            self.out_dir.mkdir(parents=True, exist_ok=True)
        self.global_batch = tc.batch_size * self.world_size
        self.stream = BatchStream(corpus, self.global_batch, tc.seq_len, tc.seed, tc.span_batches,
                                  lowercase_frac=tc.lowercase_frac)
        self.rows = slice(self.rank * tc.batch_size, (self.rank + 1) * tc.batch_size)
        self.net: torch.nn.Module = model
        if self.distributed:
            from torch.nn.parallel import DistributedDataParallel

            # the learned initial state is not used in training: DDP must not wait for its gradients
            model.h0.requires_grad_(False)
            model.c0.requires_grad_(False)
            self.net = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
            model.h0.requires_grad_(True)
            model.c0.requires_grad_(True)
        self.optimizer = self._new_optimizer()
        self.state: State = model.initial_state(tc.batch_size, learned=False)
        self.step = 0
        self.chars = 0  # characters trained on in this run, all processes together
        self.elapsed = 0.0
        self.history: list[dict] = []
        self.resumed_at: int | None = None  # step at which a fresh optimizer took over (None: not resumed so)
        self.command = command
        self.origin: dict | None = None  # where the weights came from when the run started from another model
        self.amp_dtype: torch.dtype | None = None  # autocast's dtype in training steps (None: float32); see use_amp
        self.scaler: torch.amp.GradScaler | None = None

    def _new_optimizer(self) -> torch.optim.Optimizer:
        # the learned initial state is trained separately (init_state.py), never here
        params = list(self.model.network_parameters().values())
        decay = [p for p in params if p.dim() >= 2]
        no_decay = [p for p in params if p.dim() < 2]
        return torch.optim.AdamW(
            [{"params": decay, "weight_decay": self.tc.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=self.tc.lr, betas=(0.9, 0.99),
        )

    def use_amp(self, dtype: torch.dtype | None, scale_grads: bool | None = None) -> None:
        """Train under autocast in ``dtype`` (torch.bfloat16 or torch.float16; None: float32 again). The weights,
        the optimizer and validation stay in float32. ``scale_grads`` (default: on CUDA, or for float16) scales the
        loss with a GradScaler: on CUDA, autocast runs cuDNN's LSTM in float16 whatever the dtype asked for (ATen's
        AutocastRNN.cpp casts ``_cudnn_rnn`` to half), so its small gradients need the scaling that float16 does."""
        self.amp_dtype = dtype
        if scale_grads is None:
            scale_grads = dtype is not None and (self.device.type == "cuda" or dtype == torch.float16)
        self.scaler = torch.amp.GradScaler(self.device.type) if scale_grads else None

    def leave_group(self) -> None:
        """Every process leaves the process group together once the last checkpoint is written; rank 0 then
        finishes the model alone, with no connection open to a peer that has exited. The DDP wrapper holds the
        group too: it goes first, so the group is torn down here and not at interpreter exit, where gloo's
        worker threads abort the process (SIGABRT, "terminate called without an active exception")."""
        import gc

        torch.distributed.barrier()
        self.net = self.model
        gc.collect()
        torch.distributed.destroy_process_group()

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def lr(self, step: int | None = None) -> float:
        """The rate at ``step``: the schedule, times the re-warmup after a fresh-optimizer resume."""
        step = self.step if step is None else step
        rate = lr_at(step, self.tc)
        if self.resumed_at is not None and self.tc.resume_warmup > 0:
            rate *= min(1.0, (step - self.resumed_at + 1) / self.tc.resume_warmup)
        return rate

    # -- checkpoints ---------------------------------------------------------------------
    def _global_carry(self) -> State:
        """The carried state of every row of the global batch (gathered from all processes)."""
        if not self.distributed:
            return self.state
        parts = []
        for t in self.state:
            chunks = [torch.empty_like(t) for _ in range(self.world_size)]
            torch.distributed.all_gather(chunks, t.contiguous())
            parts.append(torch.cat(chunks, dim=1))
        return parts[0], parts[1]

    def save_checkpoint(self) -> None:
        """Write the run's one checkpoint (float16 weights, no optimizer state) and its README.md, atomically.
        Under DDP every process must call it (the carried state is gathered); rank 0 writes."""
        carry_h, carry_c = self._global_carry()
        if not self.is_main:
            return
        tensors = {f"model.{k}": v.half() for k, v in self.model.state_dict().items()}
        tensors["carry.h"], tensors["carry.c"] = carry_h.half(), carry_c.half()
        save_tensors(self.out_dir / CHECKPOINT, tensors)
        meta = {
            "format": CHECKPOINT_FORMAT, "step": self.step, "chars": self.chars, "elapsed_s": round(self.elapsed, 1),
            "weights_dtype": "float16", "train_config": asdict(self.tc), "world_size": self.world_size,
            "model_config": self.model.config.to_json(), "alphabet": self.corpus.alphabet.to_json(),
            "sources": self.corpus.summary(), "command": self.command, "origin": self.origin,
            "history": self.history,
        }
        atomic_write(self.out_dir / CHECKPOINT_META, json.dumps(meta, indent=1).encode())
        atomic_write(self.out_dir / "README.md", checkpoint_readme(meta).encode())

    def load_checkpoint(self) -> bool:
        """Resume from ``out_dir`` if a checkpoint is there; returns whether one was loaded.

        A float16 checkpoint resumes with a fresh AdamW and a re-warmup of ``tc.resume_warmup`` steps; one of the
        earlier format (float32 weights and AdamW moments) resumes exactly."""
        meta_path = self.out_dir / CHECKPOINT_META
        if not meta_path.is_file():
            return False
        meta = json.loads(meta_path.read_text())
        if meta["model_config"] != self.model.config.to_json():
            raise ValueError(f"{meta_path}: checkpoint is for model {meta['model_config']}, not {self.model.config.to_json()}")
        if meta["alphabet"]["groups"] != self.corpus.alphabet.to_json()["groups"]:
            raise ValueError(f"{meta_path}: checkpoint was trained with another alphabet")
        tensors = load_tensors(self.out_dir / CHECKPOINT)
        self.model.load_state_dict(_checkpoint_weights(tensors))
        carry = (tensors["carry.h"].float(), tensors["carry.c"].float())
        if carry[0].shape[1] == self.global_batch:
            self.state = (carry[0][:, self.rows].to(self.device).contiguous(),
                          carry[1][:, self.rows].to(self.device).contiguous())
        # else: another global batch size than the checkpoint's: the rows start from a zero state
        self.step, self.elapsed, self.history = meta["step"], meta["elapsed_s"], meta["history"]
        old_tc = meta.get("train_config", {})
        self.chars = meta.get("chars", self.step * old_tc.get("batch_size", self.tc.batch_size)
                              * old_tc.get("seq_len", self.tc.seq_len))
        self.origin = meta.get("origin")
        if self.command is None:
            self.command = meta.get("command")
        opt_keys = [k for k in tensors if k.startswith("opt.")]
        if opt_keys and "param_groups" in meta:  # the earlier format: resume the optimizer exactly
            opt_state: dict[int, dict] = {}
            for key in opt_keys:
                _, idx, name = key.split(".", 2)
                opt_state.setdefault(int(idx), {})[name] = tensors[key]
            self.optimizer.load_state_dict({"state": opt_state, "param_groups": meta["param_groups"]})
            self.resumed_at = None
        else:
            self.resumed_at = self.step
        return True

    # -- training ------------------------------------------------------------------------
    def batch(self, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(inputs, targets, reset) of ``step`` for this process's rows; a subclass may make them ahead."""
        return self.stream.batch(step, self.rows)

    def train_step(self) -> float:
        """One optimisation step; returns the batch loss in bits/char (this process's rows)."""
        tc = self.tc
        inputs, targets, reset = self.batch(self.step)
        inputs_t = torch.from_numpy(inputs).to(self.device, non_blocking=True)
        targets_t = torch.from_numpy(targets).to(self.device, non_blocking=True)
        keep = torch.from_numpy(~reset).to(self.device).float()[None, :, None]
        state = (self.state[0] * keep, self.state[1] * keep)
        amp = nullcontext() if self.amp_dtype is None else torch.autocast(self.device.type, dtype=self.amp_dtype)
        with amp:
            logp, state = self.net(inputs_t, state)
        loss = F.nll_loss(logp.float().reshape(-1, logp.shape[-1]), targets_t.reshape(-1), ignore_index=-1)
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr()
        self.optimizer.zero_grad(set_to_none=True)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), tc.clip)
            self.scaler.step(self.optimizer)  # skipped (and the scale lowered) when a gradient overflowed
            self.scaler.update()
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), tc.clip)
            self.optimizer.step()
        self.state = (state[0].detach().float(), state[1].detach().float())
        self.step += 1
        self.chars += self.global_batch * tc.seq_len
        return loss.item() / LN2

    def validate(self) -> dict:
        """Validation bits/char per source (rank 0 computes it), recorded in the history."""
        val = evaluate_corpus(self.model, self.corpus, self.tc.val_chars, self.device)
        return {"step": self.step, "chars": self.chars, "elapsed_s": round(self.elapsed),
                "val_bpc": {k: round(v, 4) for k, v in val.items()}}

    def run(self, progress: bool = True, max_seconds: float | None = None) -> list[dict]:
        """Train to ``tc.steps``, or until ``max_seconds`` of wall time have passed since the call: then the run stops
        after the step in hand with a validation record and a checkpoint, and the same run can be continued."""
        tc = self.tc
        if max_seconds is not None and self.distributed:
            raise ValueError("a wall-time limit is for one process: under torchrun the ranks could stop at different steps")
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        self.model.train()
        self.model.dropout = tc.dropout  # for this loop's steps only: validation, the finish and adaptation run without
        chars_per_step = self.global_batch * tc.seq_len
        bar = tqdm(total=tc.steps, initial=self.step, disable=not progress or not self.is_main, unit="step",
                   dynamic_ncols=True)
        ema = None
        try:
            while self.step < tc.steps:
                t0 = time.perf_counter()
                bpc = self.train_step()
                dt = time.perf_counter() - t0
                self.elapsed += dt
                ema = bpc if ema is None else 0.98 * ema + 0.02 * bpc
                bar.set_postfix(bpc=f"{ema:.3f}", chars_s=f"{chars_per_step / dt:,.0f}", lr=f"{self.lr():.1e}")
                bar.update(1)
                timed_out = deadline is not None and time.monotonic() >= deadline and self.step < tc.steps
                if self.is_main and (self.step % tc.eval_every == 0 or self.step == tc.steps or timed_out):
                    record = {**self.validate(), "train_bpc": round(ema, 4)}
                    self.history.append(record)
                    bar.write(json.dumps(record))
                if self.step % tc.checkpoint_every == 0 or self.step == tc.steps or timed_out:
                    self.save_checkpoint()
                if timed_out:
                    bar.write(f"time limit of {max_seconds:g} s: stopped at step {self.step} of {tc.steps}, checkpoint "
                              "saved; run the same command again to continue")
                    break
        except KeyboardInterrupt:
            if not self.distributed:
                self.save_checkpoint()
                bar.write(f"interrupted: checkpoint saved at step {self.step}; run the same command again to continue")
            raise
        finally:
            bar.close()
            self.model.dropout = 0.0
        return self.history


def _checkpoint_weights(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The network's float32 state dict from a checkpoint's tensors (either format)."""
    return {k[6:]: v.float() for k, v in tensors.items() if k.startswith("model.")}


def save_exact_checkpoint(trainer: Trainer, out_dir: str | Path | None = None) -> None:
    """A checkpoint of the earlier format (format 1: float32 weights and AdamW moments, no "format" key), which
    ``load_checkpoint`` still resumes exactly; written only to measure and test that (``bench/resume_cost.py``)."""
    out_dir = Path(out_dir or trainer.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tensors = {f"model.{k}": v for k, v in trainer.model.state_dict().items()}
    tensors["carry.h"], tensors["carry.c"] = trainer.state
    opt = trainer.optimizer.state_dict()
    for idx, st in opt["state"].items():
        for key, value in st.items():
            tensors[f"opt.{idx}.{key}"] = value if torch.is_tensor(value) else torch.tensor(value)
    save_tensors(out_dir / CHECKPOINT, tensors)
    meta = {"step": trainer.step, "elapsed_s": trainer.elapsed, "train_config": asdict(trainer.tc),
            "model_config": trainer.model.config.to_json(), "alphabet": trainer.corpus.alphabet.to_json(),
            "param_groups": opt["param_groups"], "history": trainer.history}
    atomic_write(out_dir / CHECKPOINT_META, json.dumps(meta).encode())


def checkpoint_readme(meta: dict) -> str:
    """The README.md written beside a run's checkpoint: what it is and the command that continues it."""
    tc, arch = meta["train_config"], meta["model_config"]
    lines = [
        "# Training checkpoint (written by `dasher-rnn train`, overwritten at every checkpoint)",
        "",
        f"Model: {arch['cell']} {arch['layers']}x{arch['hidden_size']} (embedding {arch['embed_size']}), "
        f"vocabulary {arch['vocab_size']}. Step **{meta['step']:,}** of {tc['steps']:,}, "
        f"**{meta['chars']:,} characters** seen in this run, {meta['elapsed_s'] / 3600:.2f} hours of training time; "
        f"global batch {tc['batch_size'] * meta.get('world_size', 1)}x{tc['seq_len']}.",
        "",
    ]
    origin = meta.get("origin")
    if origin:
        lines += [f"The run started from `{origin.get('path')}` ({origin.get('architecture')}, "
                  f"{origin.get('chars', 0):,} characters seen there){', widened' if origin.get('widened') else ''}; "
                  f"with it the weights have seen {origin.get('chars', 0) + meta['chars']:,} characters.", ""]
    lines += [
        "`checkpoint.safetensors` holds the weights in float16 and the carried state, without optimizer state;",
        "`checkpoint.json` the configuration and the validation history. To continue (a fresh AdamW warms up",
        f"again over {tc.get('resume_warmup', 0)} steps), run from the repository root:",
        "",
        f"    {meta.get('command') or 'dasher-rnn train --out <this folder> ... (the options that started it)'}",
        "",
        "To train longer, raise `--steps`: the rate decays over the last "
        f"{tc['decay_frac']:.0%} of the steps, so a larger total puts the run back at its constant rate first.",
        "",
        "## Validation (bits/char on held-out documents of each source)",
        "",
    ]
    sources = sorted({k for rec in meta["history"] for k in rec.get("val_bpc", {}) if k != "overall"})
    if meta["history"]:
        lines.append("| step | characters | " + " | ".join(sources) + " | overall |")
        lines.append("|---:|---:|" + "---:|" * (len(sources) + 1))
        for rec in meta["history"]:
            val = rec.get("val_bpc", {})
            cells = [f"{val[s]:.4f}" if s in val else "-" for s in (*sources, "overall")]
            lines.append(f"| {rec['step']:,} | {rec.get('chars', 0):,} | " + " | ".join(cells) + " |")
    else:
        lines.append("(none yet)")
    return "\n".join(lines) + "\n"


def finish_model(trainer: Trainer, model_dir: str | Path, log=print,
                 language_states: dict[str, list[str]] | None = None) -> dict:
    """After training: learn the initial state (and one per language of ``language_states``, ``{code: [source
    names]}``, for a multilingual model), compute MS_g, write the model directory and its ONNX export."""
    from dasher_rnn.lm.init_state import learn_initial_state, learn_language_states
    from dasher_rnn.lm.model_io import LANGUAGES_FILE, MSG_FILE, read_config, save_model, write_config
    from dasher_rnn.lm.msg import mean_squared_gradients
    from dasher_rnn.lm.onnx_export import export_onnx

    model, corpus, tc = trainer.model, trainer.corpus, trainer.tc
    model_dir = Path(model_dir)
    init = learn_initial_state(model, corpus, seed=tc.seed, log=log)
    states, languages = learn_language_states(model, corpus, language_states or {}, seed=tc.seed, log=log)
    msg, msg_info = mean_squared_gradients(model, corpus, seed=tc.seed + 1)
    val = evaluate_corpus(model, corpus, tc.val_chars, trainer.device)
    info: dict[str, Any] = {
        "training": {
            "steps": trainer.step, "characters": trainer.chars,
            "characters_with_origin": trainer.chars + (trainer.origin or {}).get("chars", 0), "origin": trainer.origin,
            "train_seconds": round(trainer.elapsed), "device": str(trainer.device),
            "threads": torch.get_num_threads(), "config": asdict(tc), "sources": corpus.summary(),
        },
        "validation_bpc": {k: round(v, 4) for k, v in val.items()},
        "initial_state": init,
        "languages": languages,
        "msg": msg_info,
    }
    save_model(model_dir, model, corpus.alphabet, info=info)
    save_tensors(model_dir / MSG_FILE, msg, metadata={k: str(v) for k, v in msg_info.items()})
    if states:
        save_tensors(model_dir / LANGUAGES_FILE, states)
    else:
        (model_dir / LANGUAGES_FILE).unlink(missing_ok=True)
    write_config(model_dir, read_config(model_dir))
    info["onnx_max_abs_diff"] = export_onnx(model_dir)
    log(f"model written to {model_dir}: validation {info['validation_bpc']['overall']:.4f} bits/char, "
        f"start bits/char {init['zero_state_bpc']:.3f} (zero state) -> {init['learned_state_bpc']:.3f} (learned)")
    return info
