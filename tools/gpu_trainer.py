"""The training side of a GPU job (``tools/gpu_run.py``): the repository's ``Trainer`` made for the accelerator
(``make_gpu_trainer``: batches made ahead, progress lines, a schedule in wall time, an exported copy of every
checkpoint), the throughput probe, the validation curve, and the checkpoint that travels back in parts of at
most 16 MiB (``export_run``) and is put together again here (``join_run``).
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

if TYPE_CHECKING:
    import torch

    from dasher_rnn.lm.rnn import CharRNN
    from dasher_rnn.lm.train import Trainer

from gpu_shard import PARTS_FILE, log, sha256


def export_run(src: Path, dest: Path, part_bytes: int) -> list[str]:
    """Copy a run folder's checkpoint into ``dest``: checkpoint.json, README.md, and checkpoint.safetensors whole or,
    when larger than ``part_bytes``, in parts ``checkpoint.safetensors.partN`` listed in checkpoint.parts.json."""
    from dasher_rnn.files import atomic_write
    from dasher_rnn.lm.train import CHECKPOINT, CHECKPOINT_META

    dest.mkdir(parents=True, exist_ok=True)
    blob = (src / CHECKPOINT).read_bytes()
    written = []
    if len(blob) <= part_bytes:
        atomic_write(dest / CHECKPOINT, blob)
        written.append(CHECKPOINT)
        parts: list[dict] = []
    else:
        parts = []
        for i, at in enumerate(range(0, len(blob), part_bytes)):
            chunk = blob[at : at + part_bytes]
            part = f"{CHECKPOINT}.part{i}"
            atomic_write(dest / part, chunk)
            parts.append({"name": part, "bytes": len(chunk), "sha256": sha256(chunk)})
            written.append(part)
        (dest / CHECKPOINT).unlink(missing_ok=True)
    keep = {p["name"] for p in parts}
    for stale in dest.glob(f"{CHECKPOINT}.part*"):
        if stale.name not in keep:
            stale.unlink()
    if parts:
        atomic_write(dest / PARTS_FILE, json.dumps({"file": CHECKPOINT, "bytes": len(blob), "sha256": sha256(blob),
                                                    "parts": parts}, indent=1).encode())
        written.append(PARTS_FILE)
    else:
        (dest / PARTS_FILE).unlink(missing_ok=True)
    for name in ("README.md", CHECKPOINT_META):  # the metadata last: a copy with it is whole
        atomic_write(dest / name, (src / name).read_bytes())
        written.append(name)
    return written


def join_run(src: Path, dest: Path, force: bool = False) -> Path:
    """A run folder in ``dest`` from an exported one (its checkpoint whole, or in parts checked against their list)."""
    from dasher_rnn.files import atomic_write
    from dasher_rnn.lm.train import CHECKPOINT, CHECKPOINT_META

    if (dest / CHECKPOINT_META).exists() and not force and dest.resolve() != src.resolve():
        raise SystemExit(f"join: {dest} already has a checkpoint (--force replaces it)")
    if (src / PARTS_FILE).is_file():
        listing = json.loads((src / PARTS_FILE).read_text())
        chunks = []
        for part in listing["parts"]:
            chunk = (src / part["name"]).read_bytes()
            if len(chunk) != part["bytes"] or sha256(chunk) != part["sha256"]:
                raise SystemExit(f"join: {src / part['name']} is damaged or incomplete")
            chunks.append(chunk)
        blob = b"".join(chunks)
        if sha256(blob) != listing["sha256"]:
            raise SystemExit(f"join: the parts in {src} do not make the checkpoint they were cut from")
    else:
        blob = (src / CHECKPOINT).read_bytes()
    dest.mkdir(parents=True, exist_ok=True)
    atomic_write(dest / CHECKPOINT, blob)
    for name in ("README.md", CHECKPOINT_META):
        if (src / name).is_file():
            atomic_write(dest / name, (src / name).read_bytes())
    return dest


class _StepBatches:
    """Map-style dataset whose item k is the batch of step k (a pure function of the seed and the step)."""

    def __init__(self, trainer: Trainer):
        self.stream, self.rows = trainer.stream, trainer.rows

    def __getitem__(self, step: int) -> tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        return step, self.stream.batch(step, self.rows)


def _identity(item: Any) -> Any:
    return item


def make_gpu_trainer(base: type[Trainer]) -> type[Trainer]:
    """The Trainer of this script: batches made ahead by worker processes, progress lines, an exported copy of every
    checkpoint, and with ``fit_steps`` (--steps auto) a schedule in wall time: warmup over ``tc.warmup`` steps, the
    constant rate, then the linear decay over the last ``tc.decay_frac`` of ``train_seconds``, so that the rate
    reaches its floor when the time is up, however fast the steps turn out; ``tc.steps`` is then an estimate (for
    the progress lines) until the time is up, when it becomes the step reached and the run ends as a finished one."""

    class GpuTrainer(base):  # type: ignore[valid-type, misc]
        workers = 0
        export_dir: Path | None = None
        part_bytes = 15 * 2**20
        fit_steps = False  # --steps auto: the schedule in wall time, the run ends after train_seconds
        train_seconds = 0.0
        eval_seconds = 60.0
        print_seconds = 30.0
        calibrate_after = 3  # steps left out of the timing (cuDNN's plans, the allocator, the first batches)
        calibrate_steps = 10
        _loader: Iterator | None = None
        _started = False
        _t_begin = _last_print = 0.0
        _timing: tuple[int, float] | None = None  # (step, time) where the step timing began
        _ema: float | None = None
        _first_step = 0
        best_by: tuple[str, ...] = ()  # validation sources whose mean picks the exported checkpoint (none: every one)
        best: tuple[int, float] | None = None  # (step, score) of the checkpoint exported

        def start(self) -> None:
            """Called just before ``run``: the wall-time schedule and the step timing count from here."""
            self._started = True
            self._t_begin = time.monotonic()
            self._last_print = self._t_begin
            self._timing, self._ema, self._first_step = None, None, self.step

        def batch(self, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            if self.workers <= 0:
                return super().batch(step)
            if self._loader is None:
                import torch.utils.data

                loader: Any = torch.utils.data.DataLoader(
                    cast(Any, _StepBatches(self)), batch_size=None, sampler=itertools.count(step), num_workers=self.workers,
                    collate_fn=_identity, prefetch_factor=4, multiprocessing_context="fork")
                self._loader = iter(loader)
            got, arrays = next(self._loader)
            if got != step:  # never expected: the steps are consumed in order
                self._loader = None
                return super().batch(step)
            return arrays

        def lr(self, step: int | None = None) -> float:
            if not self.fit_steps or not self._started:
                return super().lr(step)
            step = self.step if step is None else step
            tc = self.tc
            if step < tc.warmup:
                rate = tc.lr * (step + 1) / tc.warmup
            else:
                done = (time.monotonic() - self._t_begin) / self.train_seconds
                rate = tc.lr * (1 - (1 - tc.min_lr_frac) * min(1.0, max(0.0, done - (1 - tc.decay_frac)) / tc.decay_frac))
            if self.resumed_at is not None and tc.resume_warmup > 0:
                rate *= min(1.0, (step - self.resumed_at + 1) / tc.resume_warmup)
            return rate

        def train_step(self) -> float:
            bpc = super().train_step()
            self._ema = bpc if self._ema is None else 0.98 * self._ema + 0.02 * bpc
            now = time.monotonic()
            if self.fit_steps and now - self._t_begin >= self.train_seconds:
                self.tc.steps = self.step  # time is up: Trainer.run validates, saves and ends as at its last step
            done = self.step - self._first_step
            if done == self.calibrate_after:
                self._timing = (self.step, now)
            elif self._timing is not None and (done == self.calibrate_after + self.calibrate_steps
                                               or (self.fit_steps and self.step % self.tc.eval_every == 0)):
                self._fit(now)
            if now - self._last_print >= self.print_seconds:
                self._last_print = now
                rate = self.global_batch * self.tc.seq_len * done / max(1e-9, now - self._t_begin)
                scale = f", loss scale {self.scaler.get_scale():g}" if self.scaler is not None else ""
                log(f"step {self.step:,}/{self.tc.steps:,}: train {self._ema:.3f} bits/char, lr {self.lr():.2e}, "
                    f"{rate:,.0f} chars/s since the start{scale}, {now - self._t_begin:.0f} s")
            return bpc

        def _fit(self, now: float) -> None:
            """Step time from the timed steps (validations and checkpoints included once they happen); with
            --steps auto, the evaluation interval from it and an estimate of the total."""
            assert self._timing is not None
            step0, t0 = self._timing
            per_step = (now - t0) / max(1, self.step - step0)
            if self.tc.eval_every >= 10**9:  # the first fit
                self.tc.eval_every = self.tc.checkpoint_every = max(1, round(self.eval_seconds / per_step))
            if self.fit_steps and self.tc.steps > self.step:
                left = self.train_seconds - (now - self._t_begin)
                self.tc.steps = self.step + max(1, int(left / per_step))
            if self.step - step0 == self.calibrate_steps:
                log(f"timed {self.calibrate_steps} steps: {per_step * 1000:.1f} ms a step, "
                    f"{self.global_batch * self.tc.seq_len / per_step:,.0f} chars/s; {self.tc.steps:,} steps in all, "
                    f"validation and a checkpoint every {self.tc.eval_every:,} steps")

        def save_checkpoint(self) -> None:
            super().save_checkpoint()
            if self.export_dir is not None and self.is_main and self._is_best():
                export_run(self.out_dir, self.export_dir, self.part_bytes)

        def _score(self, record: dict) -> float:
            """The mean validation bits/char of ``best_by`` in a history record; NaN where one is missing (a source
            with too little validation text) or not finite (a diverged step), which is never the best."""
            val = record.get("val_bpc", {})
            scores = [val.get(name, math.nan) for name in self.best_by]
            return sum(scores) / len(scores) if all(math.isfinite(x) for x in scores) else math.nan

        def _is_best(self) -> bool:
            """With ``best_by``, whether this step's validation is the best yet on those sources (their mean): only
            then is the checkpoint exported, so that the copy is the best one when later steps memorise the text (and
            a ``--resume`` of the copy goes on from that step). A resumed run counts the records it brought along."""
            if not self.best_by:
                return True
            if self.best is None:
                scored = [(r["step"], self._score(r)) for r in self.history[:-1]]
                self.best = min((b for b in scored if math.isfinite(b[1])), key=lambda b: b[1], default=None)
            if not self.history or self.history[-1]["step"] != self.step:
                return False  # no validation at this step
            score = self._score(self.history[-1])
            if not math.isfinite(score) or (self.best is not None and score >= self.best[1]):
                best = f"step {self.best[0]:,} ({self.best[1]:.4f})" if self.best else "none yet"
                log(f"step {self.step:,}: {score:.4f} bits/char on {', '.join(self.best_by)}, not better than {best}: "
                    "the export stays")
                return False
            self.best = (self.step, score)
            return True

    return GpuTrainer


def probe_throughput(model: CharRNN, vocab: int, batches: list[int], seq_len: int, device: torch.device,
                     amp: torch.dtype | None, repeats: int = 5) -> list[dict]:
    """Forward and backward of the model on random symbols at each batch size (no optimizer step): chars/s."""
    import copy
    from contextlib import nullcontext

    import torch

    results: list[dict[str, Any]] = []
    for b in batches:
        net = copy.deepcopy(model).to(device).train()
        x = torch.randint(0, vocab, (b, seq_len), device=device)
        try:
            times = []
            for i in range(repeats + 2):
                if device.type == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                with torch.autocast(device.type, dtype=amp) if amp is not None else nullcontext():
                    logp, _ = net(x, net.initial_state(b, learned=False))
                loss = logp.float().mean()
                loss.backward()
                if device.type == "cuda":
                    torch.cuda.synchronize()
                if i >= 2:
                    times.append(time.perf_counter() - t0)
            per = sorted(times)[len(times) // 2]
            results.append({"batch": b, "ms": round(per * 1000, 2), "chars_s": round(b * seq_len / per)})
        except torch.cuda.OutOfMemoryError:
            results.append({"batch": b, "ms": None, "chars_s": None})
        del net
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return results


def print_curve(history: list[dict]) -> None:
    sources = sorted({k for rec in history for k in rec.get("val_bpc", {}) if k != "overall"})
    log("validation curve (bits/char on held-out documents of each source):")
    log("  " + "  ".join(f"{h:>10}" for h in ("step", "chars", "seconds", "train", "overall", *sources)))
    for rec in history:
        val = rec.get("val_bpc", {})
        cells = [f"{rec['step']:>10,}", f"{rec.get('chars', 0):>10,}", f"{rec.get('elapsed_s', 0):>10}",
                 f"{rec.get('train_bpc', float('nan')):>10.4f}", f"{val.get('overall', float('nan')):>10.4f}",
                 *(f"{val.get(s, float('nan')):>10.4f}" for s in sources)]
        log("  " + "  ".join(cells))
