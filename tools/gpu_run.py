#!/usr/bin/env python3
"""A turnkey training run on a lent GPU (issue 39), prepared and tested on the CPU.

The GPU machine gets a copy of the working tree (64 MiB in all, ``../shared`` stays behind) and has torch,
safetensors, numpy and tqdm, but not dasher-rnn: this script runs from the tree and imports the package from it.

    python tools/gpu_run.py budget                      # what travels now, and how much room a shard has
    python tools/gpu_run.py pack --mix dasher_rnn/assets/training_mix_v3.json --name english --budget-mb auto
    python tools/gpu_run.py train --shard gpu_job/english --out "$OUT" --hidden 1024 --layers 2 --minutes 8.5
    python tools/gpu_run.py join /work/.device/.../run runs/english-2x1024-gpu
    python tools/gpu_run.py probe --archs 2x1024,1x768 --batches 256,1024,2048   # chars/s, no shard needed
    python tools/gpu_run.py smoke                       # the whole chain on the CPU, a tiny model, seconds

``pack`` (here) encodes the sources exactly as ``dasher-rnn train`` does (``lm.corpus.build_corpus``: normalised
onto the alphabet, documents hashed into train/validation), keeps each source's first ``--val-chars`` validation
characters whole (so validation figures are the CPU runs' own) and, where the budget does not hold a source's
training text, a weighted share of it in line-aligned pieces spread through the source. Each part is compressed
with bz2 (on this text 2.1 bits/char against xz's 2.2, and it decompresses with Python's stdlib everywhere) into
``gpu_job/NAME.bin``, described by ``gpu_job/NAME.json``.

``train`` (there) reads the shard, builds the repo's ``Trainer`` (lm/train.py: the model, the schedule, the float16
checkpoint without optimizer state, resume), trains under autocast with cuDNN's LSTM for a fixed wall time, fits the
schedule's length to that time after timing the first steps, prints the validation curve, and keeps a copy of the
checkpoint in ``--out`` (``$OUT``) after every save: the run's folder with ``checkpoint.safetensors`` cut into parts
of at most ``--part-mb`` where it is larger (files come back from the machine 16 MiB at most). ``join`` (here) puts
such a folder together again as a run folder that ``dasher-rnn train --out`` continues.
"""

from __future__ import annotations

import argparse
import bz2
import hashlib
import itertools
import json
import lzma
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

_T0 = time.monotonic()  # the command's start (as near as the script sees it): --minutes count from here

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the GPU machine runs this from the tree, dasher-rnn uninstalled
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

_STARTED: float | None = None  # set when run as a script (train's wall time then includes Python's start-up)

if TYPE_CHECKING:
    import torch

    from dasher_rnn.alphabet import Alphabet
    from dasher_rnn.lm.corpus import Corpus, SourceSpec
    from dasher_rnn.lm.rnn import CharRNN
    from dasher_rnn.lm.train import Trainer

JOB_DIR = ROOT / "gpu_job"  # ignored (.gitignore); named in the device call's carry
TREE_LIMIT = 64 * 2**20  # what travels: tracked and untracked-not-ignored files plus carried paths
OUT_FILE_LIMIT = 16 * 2**20  # the largest file that comes back from $OUT
SHARD_FORMAT = 1
PARTS_FILE = "checkpoint.parts.json"
MANIFEST_SLACK = 1024 + 400  # bytes beyond the manifest's fixed part (its alphabet, specs), + that per source

CODECS: dict[str, tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]] = {
    "bz2": (lambda b: bz2.compress(b, 9), bz2.decompress),
    "xz": (lambda b: lzma.compress(b, preset=9 | lzma.PRESET_EXTREME), lzma.decompress),
}


def log(*parts: object) -> None:
    print(*parts, flush=True)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def mib(n: float) -> str:
    return f"{n / 2**20:.3f} MiB"


# -- what travels ----------------------------------------------------------------------------------------------------
def travelling_files(root: Path = ROOT) -> dict[str, int]:
    """The files a device call sends without ``carry`` (tracked, and untracked files git does not ignore), with
    their sizes as they are in the working tree now (a tracked file deleted from the tree sends nothing)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            capture_output=True, check=True).stdout.split(b"\0")
    sizes = {}
    for name in {n.decode() for n in listed if n}:
        path = root / name
        if path.is_symlink() or path.is_file():
            sizes[name] = path.lstat().st_size
    return sizes


def folder_bytes(folder: Path, skip: Callable[[Path], bool] = lambda _p: False) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not skip(p)) if folder.is_dir() else 0


def headroom(root: Path = ROOT, job_dir: Path = JOB_DIR, skip: Callable[[Path], bool] = lambda _p: False) -> dict:
    """Bytes left under the 64 MiB limit for the job folder, the files of it that ``skip`` names left out."""
    files = travelling_files(root)
    tree = sum(files.values())
    job = folder_bytes(job_dir, skip)
    return {"limit": TREE_LIMIT, "tree": tree, "files": len(files), "job_dir_other": job, "left": TREE_LIMIT - tree - job,
            "largest": sorted(files.items(), key=lambda kv: -kv[1])[:12]}


def cmd_budget(args: argparse.Namespace) -> int:
    room = headroom()
    if args.json:
        print(json.dumps(room, indent=1))
        return 0
    log(f"travels without carry: {room['files']} files, {room['tree']:,} bytes ({mib(room['tree'])}) of {mib(TREE_LIMIT)}")
    log(f"{JOB_DIR.name}/ now: {room['job_dir_other']:,} bytes; left for it: {room['left']:,} bytes ({mib(room['left'])})")
    log("largest files that travel:")
    for name, size in room["largest"]:
        log(f"  {size:>12,}  {name}")
    return 0


# -- pack ------------------------------------------------------------------------------------------------------------
def line_starts(data: np.ndarray, newline: int) -> np.ndarray:
    """Where each line of ``data`` begins (0, and after every newline)."""
    return np.concatenate([[0], np.flatnonzero(np.asarray(data) == newline) + 1])


def take_pieces(data: np.ndarray, n: int, piece: int, starts: np.ndarray) -> tuple[np.ndarray, int]:
    """About ``n`` characters of ``data`` in line-aligned pieces of about ``piece`` characters spread evenly through
    it (all of it when ``n`` reaches its length); returns them joined and how many pieces."""
    length = len(data)
    if n >= length:
        return np.asarray(data), 1
    if n <= 0:
        return np.zeros(0, np.uint8), 0
    count = max(1, math.ceil(n / piece))
    size = n // count
    out = []
    for j in range(count):
        nominal = (length - size) * j // max(1, count - 1) if count > 1 else (length - size) // 2
        i = np.searchsorted(starts, nominal)
        begin = int(starts[i]) if i < len(starts) and starts[i] < length else nominal  # the next line's start
        k = np.searchsorted(starts, begin + size, side="right") - 1
        end = int(starts[k]) if k >= 0 and starts[k] > begin else min(length, begin + size)  # ends after a newline
        out.append(np.asarray(data[begin:end]))
    return np.concatenate(out), count


def allocate(total: float, weights: list[float], lengths: list[int]) -> list[int]:
    """Characters per source for ``total`` in all: shares by weight, a source capped at its length, what it
    cannot take shared among the others by weight (water-filling)."""
    alloc = [0.0] * len(weights)
    open_ = {i for i, w in enumerate(weights) if w > 0 and lengths[i] > 0}
    left = float(total)
    while open_ and left > 1e-9:
        wsum = sum(weights[i] for i in open_)
        capped = {i for i in open_ if alloc[i] + left * weights[i] / wsum >= lengths[i]}
        if not capped:
            for i in open_:
                alloc[i] += left * weights[i] / wsum
            break
        for i in capped:
            left -= lengths[i] - alloc[i]
            alloc[i] = lengths[i]
        open_ -= capped
    return [int(a) for a in alloc]


def pack(specs: list[SourceSpec], alphabet: Alphabet, cache_dir: Path, job_dir: Path, name: str, budget: int,
         val_fraction: float = 0.01, val_chars: int = 20_000, codec: str = "bz2", piece_chars: int = 1 << 18,
         say: Callable[..., None] = log) -> dict:
    """Write ``job_dir/name.bin`` and ``name.json`` within ``budget`` bytes; returns the manifest."""
    from dasher_rnn.alphabet import BREAK
    from dasher_rnn.lm.corpus import build_corpus
    from dasher_rnn.normalise import NORMALISATION_VERSION

    compress = CODECS[codec][0]
    corpus = build_corpus(specs, alphabet, cache_dir, val_fraction=val_fraction)
    newline = alphabet.index("\n") if "\n" in alphabet else BREAK
    sources = corpus.sources
    vals = [compress(np.asarray(s.val[:val_chars]).tobytes()) for s in sources]
    specs_json = [{"name": sp.name, "paths": [os.path.relpath(p, ROOT) for p in sp.paths], "weight": sp.weight,
                   "unwrap": sp.unwrap, "documents": sp.documents} for sp in specs]
    manifest_guess = len(json.dumps({"alphabet": alphabet.to_json(), "specs": specs_json}, indent=1).encode()) \
        + MANIFEST_SLACK * (1 + len(sources))
    fixed = sum(len(v) for v in vals) + manifest_guess
    room = budget - fixed
    if room <= 0:
        raise SystemExit(f"pack: the budget ({budget:,} bytes) does not hold the validation text and the manifest "
                         f"({fixed:,} bytes): free room in the tree, or lower --val-chars")
    lengths = [len(s.train) for s in sources]
    weights = [s.weight for s in sources]
    starts = [line_starts(s.train, newline) for s in sources]
    rate = []  # compressed bytes per character, from a sample of each source
    for s in sources:
        mid = len(s.train) // 2
        sample = np.asarray(s.train[max(0, mid - 500_000) : mid + 500_000]).tobytes()
        rate.append(len(compress(sample)) / max(1, len(sample)) if sample else 0.3)

    def estimate(total: float) -> float:
        return sum(r * a for r, a in zip(rate, allocate(total, weights, lengths), strict=True))

    lo, hi = 0.0, float(sum(lengths))
    if estimate(hi) <= room:
        target = hi
    else:
        for _ in range(60):
            mid_total = (lo + hi) / 2
            lo, hi = (mid_total, hi) if estimate(mid_total) <= room else (lo, mid_total)
        target = lo
    for _attempt in range(6):
        alloc = allocate(target, weights, lengths)
        blobs, rows = [], []
        for s, n, st in zip(sources, alloc, starts, strict=True):
            train, pieces = take_pieces(s.train, n, piece_chars, st)
            blobs.append(compress(train.tobytes()))
            rows.append((train, pieces))
        size = sum(len(b) for b in blobs) + fixed
        if size <= budget or target <= 0:
            break
        say(f"pack: {size:,} bytes is over the budget of {budget:,}: trying again with fewer characters")
        target *= (budget - fixed) / max(1, size - fixed) * 0.99
    else:
        raise SystemExit("pack: could not fit the budget")
    if size > budget:
        raise SystemExit(f"pack: {size:,} bytes is over the budget of {budget:,}")
    job_dir.mkdir(parents=True, exist_ok=True)
    entries, data = [], bytearray()
    for s, (train, pieces), blob, val_blob in zip(sources, rows, blobs, vals, strict=True):
        val = np.asarray(s.val[:val_chars])
        entry: dict[str, Any] = {"name": s.name, "weight": s.weight}
        for split, arr, raw, extra in (("train", train, blob, {"of_chars": len(s.train), "pieces": pieces}),
                                       ("val", val, val_blob, {"of_chars": len(s.val)})):
            entry[split] = {"offset": len(data), "bytes": len(raw), "chars": len(arr), "sha256": sha256(arr.tobytes()),
                            **extra}
            data += raw
        entries.append(entry)
    manifest = {
        "format": SHARD_FORMAT, "name": name, "codec": codec, "data": f"{name}.bin", "data_bytes": len(data),
        "data_sha256": sha256(bytes(data)), "alphabet": alphabet.to_json(), "normalisation_version": NORMALISATION_VERSION,
        "val_fraction": val_fraction, "val_chars": val_chars, "budget": budget,
        "specs": specs_json, "sources": entries,
    }
    text = json.dumps(manifest, indent=1).encode()
    if len(text) + len(data) > budget:
        raise SystemExit(f"pack: {len(text) + len(data):,} bytes with the manifest is over the budget of {budget:,}")
    (job_dir / f"{name}.bin").write_bytes(bytes(data))
    (job_dir / f"{name}.json").write_bytes(text)
    train_chars = sum(e["train"]["chars"] for e in entries)
    say(f"packed {job_dir / name}: {len(data) + len(text):,} bytes ({mib(len(data) + len(text))}) of a budget of "
        f"{budget:,}; {train_chars:,} training characters of {sum(lengths):,} "
        f"({8 * sum(len(b) for b in blobs) / max(1, train_chars):.3f} bits/char compressed, {codec})")
    for e in entries:
        say(f"  {e['name']:<20} weight {e['weight']:<5} train {e['train']['chars']:>12,} of {e['train']['of_chars']:>12,}"
            f" ({e['train']['pieces']} pieces, {e['train']['bytes']:,} bytes)  val {e['val']['chars']:,}")
    return manifest


def pack_specs(args: argparse.Namespace) -> list[SourceSpec]:
    from dasher_rnn.lm.corpus import load_mix, sources_from_paths
    from dasher_rnn.paths import ASSETS_DIR

    if args.paths:
        return sources_from_paths(args.paths)
    return load_mix(args.mix or ASSETS_DIR / "training_mix_v3.json", root=args.corpus_root)


def cmd_pack(args: argparse.Namespace) -> int:
    from dasher_rnn.alphabet import load_alphabet

    job_dir = Path(args.job_dir)
    mine = {f"{args.name}.bin", f"{args.name}.json"}
    if args.budget_mb == "auto":
        room = headroom(ROOT, job_dir, skip=lambda p: p.name in mine)
        budget = room["left"] - int(args.margin_mb * 2**20)
        log(f"budget: the tree sends {room['tree']:,} bytes ({room['files']} files), {job_dir.name}/ holds "
            f"{room['job_dir_other']:,} more; {room['left']:,} left under {mib(TREE_LIMIT)}, less a margin of "
            f"{args.margin_mb} MiB: {budget:,} bytes")
    else:
        budget = int(float(args.budget_mb) * 2**20)
    if budget <= 0:
        raise SystemExit("pack: no room left in the 64 MiB the device call sends (see `budget`)")
    pack(pack_specs(args), load_alphabet(args.alphabet), Path(args.corpus_cache), job_dir, args.name, budget,
         val_fraction=args.val_fraction, val_chars=args.val_chars, codec=args.codec, piece_chars=args.piece_chars)
    return 0


def reweigh(corpus: Corpus, weights: list[str]) -> None:
    """Apply ``SOURCE=W`` settings to the shard's mix."""
    by_name = {src.name: src for src in corpus.sources}
    for item in weights:
        name, _, value = item.partition("=")
        try:
            weight = float(value)
        except ValueError:
            weight = math.nan
        if name not in by_name or not math.isfinite(weight) or weight < 0:
            raise SystemExit(f"--weight {item}: give SOURCE=W, W a number from 0, SOURCE one of {', '.join(by_name)}")
        by_name[name].weight = weight


def load_shard(path: str | Path) -> tuple[Corpus, dict]:
    """The corpus of a shard (``gpu_job/NAME``, its ``.json`` or its ``.bin``), every part checked."""
    from dasher_rnn.alphabet import Alphabet
    from dasher_rnn.lm.corpus import Corpus, EncodedSource

    path = Path(path)
    manifest_path = path if path.suffix == ".json" else path.with_name(path.stem + ".json") if path.suffix == ".bin" \
        else path.with_name(path.name + ".json")
    manifest = json.loads(manifest_path.read_text())
    if manifest.get("format") != SHARD_FORMAT:
        raise SystemExit(f"{manifest_path}: shard format {manifest.get('format')}, this script reads {SHARD_FORMAT}")
    data = (manifest_path.parent / manifest["data"]).read_bytes()
    if len(data) != manifest["data_bytes"] or sha256(data) != manifest["data_sha256"]:
        raise SystemExit(f"{manifest_path.parent / manifest['data']}: does not match its manifest (size or SHA-256)")
    decompress = CODECS[manifest["codec"]][1]
    alphabet = Alphabet.from_json(manifest["alphabet"], source=str(manifest_path))
    corpus = Corpus(alphabet)
    for entry in manifest["sources"]:
        arrays = []
        for split in ("train", "val"):
            part = entry[split]
            raw = decompress(data[part["offset"] : part["offset"] + part["bytes"]])
            if len(raw) != part["chars"] or sha256(raw) != part["sha256"]:
                raise SystemExit(f"{manifest_path}: {entry['name']} {split} does not decode to what was packed")
            arrays.append(np.frombuffer(raw, dtype=np.uint8))
        corpus.sources.append(EncodedSource(entry["name"], entry["weight"], arrays[0], arrays[1]))
    return corpus, manifest


# -- checkpoints that travel -----------------------------------------------------------------------------------------
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


def cmd_join(args: argparse.Namespace) -> int:
    from dasher_rnn.lm.start_models import load_start_model

    dest = join_run(Path(args.src), Path(args.dest), force=args.force)
    model, alphabet, origin = load_start_model(dest)
    meta = json.loads((dest / "checkpoint.json").read_text())
    log(f"{dest}: {origin['architecture']} ({model.num_parameters():,} parameters, alphabet {alphabet.name}), step "
        f"{meta['step']:,}, {meta['chars']:,} characters; continue it with `dasher-rnn train --out {dest}` and the same "
        f"--embed/--hidden/--layers/--alphabet (the command in {dest / 'README.md'} is the GPU run's)")
    return 0


# -- train -----------------------------------------------------------------------------------------------------------
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


def train(args: argparse.Namespace, argv: list[str]) -> Path:
    """The run of ``train``: returns the exported run folder."""
    t_start = _STARTED if _STARTED is not None else time.monotonic()
    import torch

    from dasher_rnn.lm.start_models import load_start_model, new_model, remap_alphabet, widen_model
    from dasher_rnn.lm.train import CHECKPOINT_META, TrainConfig, Trainer, pick_device

    budget_s = args.minutes * 60.0
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    log(f"python {sys.version.split()[0]}, torch {torch.__version__}, device {device}"
        + (f" ({torch.cuda.get_device_name(device)}, cuDNN {torch.backends.cudnn.version()}, "
           f"{torch.cuda.get_device_properties(device).total_memory / 2**30:.0f} GiB)" if device.type == "cuda" else "")
        + f", {os.cpu_count()} CPUs")
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    corpus, manifest = load_shard(args.shard)
    alphabet = corpus.alphabet
    reweigh(corpus, args.weight)
    for row in corpus.summary():
        log(f"source {row['name']}: weight {row['weight']}, {row['train_chars']:,} train / {row['val_chars']:,} val chars")
    if args.val_chars > manifest["val_chars"]:
        raise SystemExit(f"--val-chars {args.val_chars} is more than the shard holds ({manifest['val_chars']})")

    out = Path(args.out or os.environ.get("OUT") or ROOT / "runs" / "gpu-run")
    export_dir = out / args.run_name
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="gpu_run."))
    run_dir = work / args.run_name
    if run_dir.resolve() == export_dir.resolve():
        raise SystemExit("--work and --out must differ: the copy in --out holds the checkpoint in parts")
    resume = Path(args.resume) if args.resume else None
    if resume is not None and not (run_dir / CHECKPOINT_META).is_file():
        join_run(resume, run_dir)
    fit = args.steps == "auto"
    tc = TrainConfig(
        steps=10**9 if fit else int(args.steps), batch_size=args.batch_size, seq_len=args.seq_len, lr=args.lr,
        warmup=args.warmup, decay_frac=args.decay_frac, weight_decay=args.weight_decay, clip=args.clip,
        eval_every=10**9 if fit else args.eval_every, checkpoint_every=10**9 if fit else args.eval_every,
        val_chars=args.val_chars, seed=args.seed, resume_warmup=args.resume_warmup, lowercase_frac=args.lowercase_frac,
        dropout=args.dropout,
    )
    origin = None
    if (run_dir / CHECKPOINT_META).is_file():
        meta = json.loads((run_dir / CHECKPOINT_META).read_text())
        from dasher_rnn.lm.rnn import CharRNN, RNNConfig

        model = CharRNN(RNNConfig(**meta["model_config"]))  # its weights come with load_checkpoint below
    elif args.init_from:
        model, start_alphabet, origin = load_start_model(args.init_from)
        if start_alphabet.symbols != alphabet.symbols:
            model = remap_alphabet(model, start_alphabet, alphabet)
        if (args.embed, args.layers, "lstm") != (model.config.embed_size, model.config.layers, model.config.cell):
            raise SystemExit(f"--init-from {args.init_from} is {origin['architecture']} with embedding "
                             f"{model.config.embed_size}: give the same --layers and --embed (only --hidden may grow)")
        if args.hidden != model.config.hidden_size:
            model = widen_model(model, args.hidden, seed=args.seed)
            origin["widened"] = True
    else:
        model = new_model(alphabet, args.embed, args.hidden, args.layers, "lstm", args.seed)
    trainer_class = make_gpu_trainer(Trainer)
    command = shlex.join(["python", "tools/gpu_run.py", *argv])
    trainer: Any = trainer_class(model, corpus, tc, run_dir, device, command=command)
    trainer.origin = origin
    dtypes: dict[str, torch.dtype | None] = {"bf16": torch.bfloat16, "fp16": torch.float16, "off": None}
    amp = dtypes[args.amp]
    trainer.use_amp(amp, scale_grads={"auto": None, "on": True, "off": False}[args.scale_grads])
    if trainer.load_checkpoint():  # this run's TrainConfig stays: with --steps auto the total is fitted below
        log(f"resumed at step {trainer.step:,} ({trainer.chars:,} characters), fresh AdamW warming up over "
            f"{tc.resume_warmup} steps")
    trainer.workers = args.workers if args.workers >= 0 else (min(12, (os.cpu_count() or 2) - 2)
                                                              if device.type == "cuda" else 0)
    trainer.export_dir = export_dir
    trainer.best_by = tuple(name for name in args.best_by.split(",") if name)
    unknown = set(trainer.best_by) - {src.name for src in corpus.sources} - {"overall"}
    if unknown:
        raise SystemExit(f"--best-by: the shard has no source {', '.join(sorted(unknown))}")
    trainer.part_bytes = int(args.part_mb * 2**20)
    trainer.fit_steps, trainer.eval_seconds, trainer.print_seconds = fit, args.eval_seconds, args.print_seconds
    log(f"model: lstm {model.config.layers}x{model.config.hidden_size} (embedding {model.config.embed_size}), "
        f"{model.num_parameters():,} parameters; batch {tc.batch_size}x{tc.seq_len}; autocast {args.amp}"
        f"{', gradient scaling' if trainer.scaler is not None else ''}; {trainer.workers} batch workers")
    rnn = model.rnn
    if device.type == "cuda" and amp is not None and isinstance(rnn, torch.nn.LSTM):
        with torch.no_grad(), torch.autocast("cuda", dtype=amp):
            probe, _ = rnn(model.embed(torch.zeros(2, 4, dtype=torch.long, device=device)))
        log(f"under autocast {args.amp} the LSTM computes in {probe.dtype} (cuDNN's RNN autocasts to float16)")
    if args.probe:
        for row in probe_throughput(model, len(alphabet), [int(b) for b in args.probe.split(",")], tc.seq_len, device,
                                    amp):
            log(f"probe: batch {row['batch']}x{tc.seq_len}: {row['ms']} ms forward+backward, {row['chars_s']} chars/s")
    # first record and checkpoint before the long part: a broken output folder shows in seconds, and their times
    # are kept back from the training time
    t0 = time.monotonic()
    if not trainer.history or trainer.history[-1]["step"] != trainer.step:
        record = trainer.validate()
        trainer.history.append(record)
        log(json.dumps(record))
    t_val = time.monotonic() - t0
    t0 = time.monotonic()
    trainer.save_checkpoint()
    t_save = time.monotonic() - t0
    log(f"validation {t_val:.1f} s, checkpoint and its export {t_save:.1f} s, to {export_dir}")
    reserve = 2 * (t_val + t_save) + args.reserve_seconds
    train_s = budget_s - (time.monotonic() - t_start) - reserve
    if train_s <= 0:
        raise SystemExit(f"no time left to train in --minutes {args.minutes} (setup took {time.monotonic() - t_start:.0f} s)")
    trainer.train_seconds = train_s
    trainer.start()
    log(f"training for {train_s:.0f} s of wall time (--minutes {args.minutes:g}, {reserve:.0f} s kept for the end)")
    trainer.run(progress=False, max_seconds=train_s)
    print_curve(trainer.history)
    log(f"done: step {trainer.step:,}, {trainer.chars:,} characters in this run folder, {trainer.elapsed:.0f} s of steps, "
        f"{time.monotonic() - t_start:.0f} s in all; checkpoint in {export_dir}")
    return export_dir


def cmd_train(args: argparse.Namespace) -> int:
    train(args, args.argv)
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    """Throughput without a shard (random symbols): forward+backward of each architecture at each batch size."""
    import torch

    from dasher_rnn.alphabet import load_alphabet
    from dasher_rnn.lm.start_models import new_model
    from dasher_rnn.lm.train import pick_device

    device = pick_device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    log(f"python {sys.version.split()[0]}, torch {torch.__version__}, device {device}"
        + (f" ({torch.cuda.get_device_name(device)}, cuDNN {torch.backends.cudnn.version()})" if device.type == "cuda"
           else ""))
    alphabet = load_alphabet(args.alphabet)
    dtypes: dict[str, torch.dtype | None] = {"bf16": torch.bfloat16, "fp16": torch.float16, "off": None}
    rows = []
    for arch in args.archs.split(","):
        layers, hidden = (int(v) for v in arch.lower().split("x"))
        model = new_model(alphabet, args.embed, hidden, layers, "lstm", 0)
        for row in probe_throughput(model, len(alphabet), [int(b) for b in args.batches.split(",")], args.seq_len,
                                    device, dtypes[args.amp], repeats=args.repeats):
            rows.append({"arch": arch, "params": model.num_parameters(), **row})
            log(json.dumps(rows[-1]))
    log(f"{'arch':>8} {'params':>12} {'batch':>6} {'ms':>9} {'chars/s':>12}   (forward+backward, seq {args.seq_len}, "
        f"autocast {args.amp})")
    for r in rows:
        log(f"{r['arch']:>8} {r['params']:>12,} {r['batch']:>6} {r['ms'] or float('nan'):>9.2f} "
            f"{r['chars_s'] or 0:>12,}")
    return 0


# -- smoke -----------------------------------------------------------------------------------------------------------
def cmd_smoke(args: argparse.Namespace) -> int:
    """pack -> train (tiny model, a few seconds) -> join -> resume with the repo's Trainer -> load as a model."""
    import torch

    from dasher_rnn.alphabet import load_alphabet
    from dasher_rnn.lm.start_models import load_start_model
    from dasher_rnn.lm.train import TrainConfig, Trainer

    global _STARTED
    _STARTED = None  # the training's --minutes count from its own start, not the pack's
    torch.set_num_threads(1)
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gpu_run_smoke."))
    folder.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    pack(pack_specs(args), load_alphabet(args.alphabet), Path(args.corpus_cache), folder / "job", "smoke",
         int(args.budget_mb * 2**20), val_chars=2000, piece_chars=1 << 14)
    log(f"pack: {time.monotonic() - t0:.1f} s")
    argv = ["train", "--shard", str(folder / "job" / "smoke"), "--out", str(folder / "out"), "--work", str(folder / "work"),
            "--embed", "16", "--hidden", "48", "--layers", "2", "--batch-size", "16", "--seq-len", "32", "--lr", "3e-3",
            "--warmup", "5", "--val-chars", "2000", "--minutes", f"{args.seconds / 60:.4g}", "--eval-seconds", "1",
            "--print-seconds", "2", "--reserve-seconds", "0.5", "--device", "cpu", "--threads", "1", "--amp", "bf16",
            "--scale-grads", "on", "--part-mb", "0.05", "--workers", "1"]
    log("$ python tools/gpu_run.py " + shlex.join(argv))
    assert main(argv) == 0
    exported = folder / "out" / "run"
    log(f"exported: {sorted(p.name for p in exported.iterdir())}")
    home = join_run(exported, folder / "home")
    model, alphabet, origin = load_start_model(home)
    log(f"joined into {home}: loads as {origin['architecture']} ({model.num_parameters():,} parameters)")
    corpus, _ = load_shard(folder / "job" / "smoke")
    meta = json.loads((home / "checkpoint.json").read_text())
    tc = TrainConfig(**{**meta["train_config"], "steps": meta["step"] + 3})
    trainer = Trainer(model, corpus, tc, home, torch.device("cpu"))
    assert trainer.load_checkpoint(), "the joined checkpoint does not resume"
    trainer.run(progress=False)
    log(f"resumed with lm.train.Trainer from step {meta['step']} to {trainer.step}: OK ({folder})")
    return 0


# -- command line ----------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tools/gpu_run.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("budget", help="what a device call sends now, and the room left for gpu_job/")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_budget)

    def sources(p: argparse.ArgumentParser) -> None:
        p.add_argument("paths", nargs="*", help="text files or folders (one equally weighted source each)")
        p.add_argument("--mix", help="training-mix JSON (default: dasher_rnn/assets/training_mix_v3.json)")
        # as dasher-rnn train's and the runbook's commands give them (from the repository root), so that the
        # encoded corpus cache is the same folder
        p.add_argument("--corpus-root", default="../shared/corpora/train")
        p.add_argument("--alphabet", default="english", help="a name or a file, as for dasher-rnn train")
        p.add_argument("--corpus-cache", default="runs/corpus-cache")

    p = sub.add_parser("pack", help="encode and compress training text into gpu_job/NAME.{bin,json}")
    sources(p)
    p.add_argument("--name", default="english")
    p.add_argument("--job-dir", default=str(JOB_DIR))
    p.add_argument("--budget-mb", default="auto", help="MiB for this shard, or auto: what is left under the 64 MiB "
                   "a device call sends, less --margin-mb")
    p.add_argument("--margin-mb", type=float, default=0.125)
    p.add_argument("--val-fraction", type=float, default=0.01)
    p.add_argument("--val-chars", type=int, default=20_000, help="validation characters kept per source")
    p.add_argument("--codec", choices=sorted(CODECS), default="bz2")
    p.add_argument("--piece-chars", type=int, default=1 << 18, help="size of the pieces a subsampled source is cut in")
    p.set_defaults(func=cmd_pack)

    p = sub.add_parser("train", help="train from a shard for a fixed wall time (the GPU machine's part)")
    p.add_argument("--shard", default=str(JOB_DIR / "english"))
    p.add_argument("--out", help="where the run folder is copied after each checkpoint (default: $OUT)")
    p.add_argument("--run-name", default="run")
    p.add_argument("--work", help="the run folder's parent (default: a temporary folder)")
    p.add_argument("--resume", help="a run folder (exported or joined) to continue")
    p.add_argument("--init-from", help="a model folder or run folder to start from (widened to --hidden)")
    p.add_argument("--embed", type=int, default=64)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--decay-frac", type=float, default=0.3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--lowercase-frac", type=float, default=0.2)
    p.add_argument("--resume-warmup", type=int, default=20)
    p.add_argument("--dropout", type=float, default=0.0, help="on the embedding and the top layer's output, training only")
    p.add_argument("--best-by", default="", help="comma-separated validation sources (or overall): export a checkpoint "
                   "only when their mean bits/char is the best so far, so the copy (and a --resume of it) is at the best "
                   "step, not the last (default: every checkpoint)")
    p.add_argument("--weight", action="append", default=[], metavar="SOURCE=W",
                   help="another weight in the mix for a source of the shard (repeatable)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", default="auto", help="optimizer steps in all, or auto: as many as --minutes holds "
                   "(timed on the first steps)")
    p.add_argument("--eval-every", type=int, default=200, help="steps between validations (with a fixed --steps)")
    p.add_argument("--eval-seconds", type=float, default=45.0, help="time between validations (--steps auto)")
    p.add_argument("--print-seconds", type=float, default=30.0)
    p.add_argument("--val-chars", type=int, default=20_000)
    p.add_argument("--minutes", type=float, default=8.5, help="wall time of the whole command, start to last checkpoint")
    p.add_argument("--reserve-seconds", type=float, default=10.0, help="kept back at the end beyond the measured "
                   "time of one validation and one checkpoint (twice each)")
    p.add_argument("--amp", choices=("bf16", "fp16", "off"), default="bf16")
    p.add_argument("--scale-grads", choices=("auto", "on", "off"), default="auto")
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--workers", type=int, default=-1, help="batch worker processes (-1: 12 on CUDA, none on the CPU)")
    p.add_argument("--part-mb", type=float, default=15.0, help="largest file copied to --out (16 MiB come back)")
    p.add_argument("--probe", default="", help="batch sizes to time forward+backward at first, e.g. 256,1024,4096")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("probe", help="forward+backward throughput of LSTM sizes at several batch sizes (no shard)")
    p.add_argument("--archs", default="2x1024,1x768", help="LAYERSxHIDDEN, comma-separated")
    p.add_argument("--batches", default="256,1024,2048")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--embed", type=int, default=64)
    p.add_argument("--alphabet", default="english")
    p.add_argument("--amp", choices=("bf16", "fp16", "off"), default="bf16")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=0)
    p.set_defaults(func=cmd_probe)

    p = sub.add_parser("join", help="put an exported run folder (checkpoint in parts) together as a run folder")
    p.add_argument("src")
    p.add_argument("dest")
    p.add_argument("--force", action="store_true")
    p.set_defaults(func=cmd_join)

    p = sub.add_parser("smoke", help="the whole chain on the CPU: a tiny model, a seconds-long budget")
    sources(p)
    p.add_argument("--budget-mb", type=float, default=0.25)
    p.add_argument("--seconds", type=float, default=12.0)
    p.add_argument("--keep", help="folder to work in (default: a temporary one, kept)")
    p.set_defaults(func=cmd_smoke)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    return int(args.func(args))


if __name__ == "__main__":
    _STARTED = _T0
    sys.exit(main())
