"""What a GPU job carries (``tools/gpu_run.py``): the room under the device call's 64 MiB for the job folder
(``headroom``), and the training shard packed here (``pack``: each source's validation text whole, a weighted
share of its training text in line-aligned pieces, bz2-compressed) and read there (``load_shard``, ``reweigh``).
"""

from __future__ import annotations

import bz2
import hashlib
import json
import lzma
import math
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:

    from dasher_rnn.alphabet import Alphabet
    from dasher_rnn.lm.corpus import Corpus, SourceSpec

ROOT = Path(__file__).resolve().parents[1]
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
