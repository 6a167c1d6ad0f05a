"""Corpus pipeline: text files -> normalised, alphabet-encoded uint8 arrays -> training batches.

Sources are weighted so the model fits what people type (conversation, speeches, encyclopaedic
prose) more than the bulk of 19th-century books. Each source is split into documents, and a
document goes to validation when a hash of its text says so, which is deterministic and
independent of file order. Encoded arrays are cached on disk and read as memmaps.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from dasher_rnn.alphabet import BREAK, Alphabet
from dasher_rnn.normalise import NORMALISATION_VERSION, normalise
from dasher_rnn.textio import expand_paths, read_text

CORPUS_FORMAT = 2


@dataclass
class SourceSpec:
    """One training source: files or folders, a sampling weight and how to cut it up."""

    name: str
    paths: list[str]
    weight: float = 1.0
    unwrap: bool = False  # join hard-wrapped lines inside paragraphs (books)
    documents: str = "block"  # "file": each file is a document; "block": blank-line separated blocks


def load_mix(mix_file: str | Path, root: str | Path | None = None) -> list[SourceSpec]:
    """Read a training-mix JSON file; relative paths are resolved against ``root`` (default: the file's folder)."""
    mix_file = Path(mix_file)
    data = json.loads(mix_file.read_text(encoding="utf-8"))
    base = Path(root) if root is not None else mix_file.parent
    specs = []
    for item in data["sources"]:
        spec = SourceSpec(**item)
        spec.paths = [str(base / p) for p in spec.paths]
        specs.append(spec)
    return specs


def sources_from_paths(paths: list[str]) -> list[SourceSpec]:
    """One equally weighted source per path given on the command line."""
    return [SourceSpec(name=Path(p).stem or f"source{i}", paths=[p]) for i, p in enumerate(paths)]


_WRAPPED_NEWLINE = re.compile(r"(?<=\S)[ \t]*\n[ \t]*(?=\S)")
_BLANK_LINES = re.compile(r"\n\s*\n")


def prepare_text(text: str, unwrap: bool = False, alphabet: Alphabet | None = None) -> str:
    """Normalise text (onto ``alphabet``: what it has is kept, é for French); optionally unwrap paragraphs; keep
    one newline between paragraphs."""
    text = normalise(text, alphabet)
    if unwrap:
        text = _WRAPPED_NEWLINE.sub(" ", text)
    text = _BLANK_LINES.sub("\n", text)
    return "\n".join(line.strip(" ") for line in text.split("\n")).strip("\n")


def split_documents(text: str, lines_per_block: int = 100) -> list[str]:
    """Blank-line separated blocks; text without blank lines is cut into blocks of lines."""
    blocks = [b for b in _BLANK_LINES.split(text) if b.strip()]
    if len(blocks) > 1:
        return blocks
    lines = text.split("\n")
    return ["\n".join(lines[i : i + lines_per_block]) for i in range(0, len(lines), lines_per_block)]


def document_hash(document: str) -> float:
    """A number in [0, 1) fixed by the document's text: which split it goes to."""
    digest = hashlib.blake2b(document.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2**64


@dataclass
class EncodedSource:
    name: str
    weight: float
    train: np.ndarray
    val: np.ndarray


@dataclass
class Corpus:
    alphabet: Alphabet
    sources: list[EncodedSource] = field(default_factory=list)

    @property
    def train_chars(self) -> int:
        return sum(len(s.train) for s in self.sources)

    def summary(self) -> list[dict]:
        return [
            {"name": s.name, "weight": s.weight, "train_chars": len(s.train), "val_chars": len(s.val)}
            for s in self.sources
        ]


def _cache_key(specs: list[SourceSpec], alphabet: Alphabet, val_fraction: float) -> str:
    h = hashlib.sha256()
    key: list = [CORPUS_FORMAT, NORMALISATION_VERSION, alphabet.symbols, val_fraction]
    if not alphabet.symbols.isascii():  # normalised onto the alphabet (é kept) since this marker: not the old folding
        key.append("onto-alphabet")
    h.update(json.dumps(key).encode())
    for spec in specs:
        h.update(json.dumps(asdict(spec), sort_keys=True).encode())
        for f in expand_paths(spec.paths):
            st = f.stat()
            h.update(f"{f.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def _encode_source(spec: SourceSpec, alphabet: Alphabet, val_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """(train, validation) arrays; each document ends with a newline. A source of two or more
    documents always gives at least one to validation (the one with the smallest hash)."""
    newline = np.array([alphabet.index("\n") if "\n" in alphabet else BREAK], dtype=np.uint8)
    encoded: list[np.ndarray] = []
    hashes: list[float] = []
    for f in expand_paths(spec.paths):
        text = prepare_text(read_text(f, replace_errors=True), unwrap=spec.unwrap, alphabet=alphabet)
        for doc in [text] if spec.documents == "file" else split_documents(text):
            encoded.append(np.concatenate([alphabet.encode(doc), newline]))
            hashes.append(document_hash(doc))
    is_val = np.array(hashes) < val_fraction
    if len(encoded) > 1 and not is_val.any():
        is_val[int(np.argmin(hashes))] = True
    empty = np.zeros(0, dtype=np.uint8)
    train = [e for e, v in zip(encoded, is_val, strict=True) if not v]
    val = [e for e, v in zip(encoded, is_val, strict=True) if v]
    return (np.concatenate(train) if train else empty, np.concatenate(val) if val else empty)


def build_corpus(
    specs: list[SourceSpec], alphabet: Alphabet, cache_dir: str | Path, val_fraction: float = 0.01
) -> Corpus:
    """Encode every source once (cached under ``cache_dir``) and return memmapped arrays."""
    folder = Path(cache_dir) / _cache_key(specs, alphabet, val_fraction)
    manifest = folder / "manifest.json"
    if not manifest.exists():
        folder.mkdir(parents=True, exist_ok=True)
        for spec in specs:
            train, val = _encode_source(spec, alphabet, val_fraction)
            train.tofile(folder / f"{spec.name}.train.u8")
            val.tofile(folder / f"{spec.name}.val.u8")
        manifest.write_text(json.dumps({"sources": [asdict(s) for s in specs]}, indent=1))
    corpus = Corpus(alphabet)
    for spec in specs:
        arrays = []
        for split in ("train", "val"):
            path = folder / f"{spec.name}.{split}.u8"
            arrays.append(np.memmap(path, dtype=np.uint8, mode="r") if path.stat().st_size else np.zeros(0, np.uint8))
        corpus.sources.append(EncodedSource(spec.name, spec.weight, arrays[0], arrays[1]))
    return corpus


class BatchStream:
    """Deterministic training batches: ``batch(step)`` depends only on the seed and the step.

    Each of the ``batch_size`` rows reads a span of ``span_batches * seq_len`` consecutive
    characters from a source drawn by weight, then jumps; its recurrent state is reset at the
    jump. Rows jump at staggered steps. Resuming at step k therefore needs no sampler state.

    Case augmentation (``lowercase_frac``): a share of the lines (messages; paragraphs of books) is
    lower-cased, chosen by a hash of (seed, source, line), so batches stay a function of (seed, step).
    """

    def __init__(self, corpus: Corpus, batch_size: int, seq_len: int, seed: int = 0, span_batches: int = 64,
                 lowercase_frac: float = 0.0):
        usable = [s for s in corpus.sources if len(s.train) > 1 and s.weight > 0]
        if not usable:
            raise ValueError("the training corpus is empty")
        self.sources = usable
        weights = np.array([s.weight for s in usable], dtype=np.float64)
        self.probs = weights / weights.sum()
        self.batch_size, self.seq_len, self.seed, self.span_batches = batch_size, seq_len, seed, span_batches
        self.newline = corpus.alphabet.index("\n")
        self.lowercase_frac = lowercase_frac
        self._line_ends: list[np.ndarray | None] = [None] * len(usable)
        symbols = corpus.alphabet.symbols
        self._lower = np.arange(256, dtype=np.int64)
        for i, ch in enumerate(symbols):
            if ch.lower() != ch and ch.lower() in symbols:
                self._lower[i] = symbols.index(ch.lower())

    def _span_start(self, row: int, span: int) -> tuple[int, int]:
        rng = np.random.default_rng([self.seed, row, span])
        src = int(rng.choice(len(self.sources), p=self.probs))
        length = len(self.sources[src].train)
        return src, int(rng.integers(0, max(1, length - self.span_batches * self.seq_len - 1)))

    def _lowercase(self, src: int, idx: np.ndarray, chunk: np.ndarray) -> np.ndarray:
        """Lower-case the characters of ``chunk`` (read at positions ``idx`` of source ``src``) whose line is drawn."""
        ends = self._line_ends[src]
        if ends is None:
            ends = self._line_ends[src] = np.flatnonzero(np.asarray(self.sources[src].train) == self.newline)
        line = np.searchsorted(ends, idx, side="left").astype(np.uint64)
        # splitmix64 of (seed, source, line): a fixed draw per line
        with np.errstate(over="ignore"):
            z = line + np.uint64((self.seed * 1_000_003 + src * 7919 + 1) & 0xFFFFFFFF) * np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
        drawn = (z >> np.uint64(11)).astype(np.float64) / 2.0**53 < self.lowercase_frac
        return np.where(drawn, self._lower[chunk], chunk)

    def batch(self, step: int, rows: slice | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(inputs, targets, reset) for ``step``: int64 (B, T) arrays and a (B,) bool mask; ``rows`` picks a part
        of the batch (one process's share under DDP), the same rows as in the whole batch.

        ``BREAK`` inputs become newlines (a fresh context); ``BREAK`` targets become -1 (ignored).
        """
        B, T = self.batch_size, self.seq_len
        picked = range(B)[rows] if rows is not None else range(B)
        chunk = np.empty((len(picked), T + 1), dtype=np.int64)
        reset = np.zeros(len(picked), dtype=bool)
        for out, row in enumerate(picked):
            k = step + row * self.span_batches // B
            span, offset = divmod(k, self.span_batches)
            reset[out] = offset == 0 or step == 0
            src, start = self._span_start(row, span)
            data = self.sources[src].train
            begin = start + offset * T
            idx = np.arange(begin, begin + T + 1) % len(data)
            chunk[out] = data[idx]
            if self.lowercase_frac > 0:
                chunk[out] = self._lowercase(src, idx, chunk[out])
        inputs, targets = chunk[:, :-1].copy(), chunk[:, 1:].copy()
        inputs[inputs == BREAK] = self.newline
        targets[targets == BREAK] = -1
        return inputs, targets, reset
