"""Adapt a profile to a user's own corpus before first use (``dasher-rnn adapt``).

1. Read and clean the text (``user_corpus``), split it into messages (lines).
2. Score every message with the starting weights; drop messages mostly outside the alphabet and
   extremely improbable ones (garbage, tables, encodings) that would make the weights explode.
3. Hold out a deterministic tenth of the messages; fine-tune on the rest in mini-batches of
   parallel streams (Adam, gradient clipping, a decay prior toward the starting weights), scoring
   the held-out messages after every epoch; keep the best weights, stop when held-out stops
   improving or a loss is not finite.
4. Save the profile atomically with held-out bits/char before and after, per source.
A checkpoint after every epoch lets ``--resume`` continue an interrupted run; the profile itself
is only written at the end, so an interrupted run leaves the previous profile untouched.

The arithmetic (scoring, and a training step of Adam with clipping and the decay) is an engine's: torch's
(``adapt/corpus_torch.py``: every cell, CPU or CUDA) or numpy's (``adapt/corpus_numpy.py``: a plain LSTM, for an
installation without PyTorch), with the same steps to float rounding; ``corpus_engine`` picks one as
``evaluation.choose_engine`` does. This module, the procedure, needs no torch.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from tqdm import tqdm

from dasher_rnn.adapt.evaluation import LN2, AdaptConfig, choose_engine
from dasher_rnn.adapt.profiles import ProfileStore, encode_weights
from dasher_rnn.adapt.user_corpus import MAX_CHARS, Document
from dasher_rnn.alphabet import BREAK, Alphabet
from dasher_rnn.files import atomic_write
from dasher_rnn.lm.corpus import document_hash
from dasher_rnn.lm.model_io import load_arrays
from dasher_rnn.normalise import normalise

if TYPE_CHECKING:
    from dasher_rnn.lm.model_io import ModelFolder


@dataclass
class CorpusAdaptConfig:
    epochs: int = 6
    lr: float = 1e-3
    lam: float = 0.02  # decay toward the starting weights, per step (tuned: keeps general English within 5%)
    batch_size: int = 128  # parallel streams: big enough batches keep both CPU cores busy
    seq_len: int = 64
    clip: float = 1.0
    held_out: float = 0.1
    max_bits: float = 6.0  # messages above this many bits/char under the starting weights are dropped
    max_unknown: float = 0.3  # messages with more than this fraction outside the alphabet are dropped
    patience: int = 1
    seed: int = 0
    max_chars: int = MAX_CHARS  # characters of the user's writing read (``user_corpus.read_user_corpus``)


DRY_RUN_CHARS = 200_000  # characters a dry run scores at most (a sample of the corpus beyond)


@dataclass
class Message:
    source: str
    text: str
    symbols: np.ndarray  # uint8 symbol ids (characters outside the alphabet left out): a byte a character


def split_messages(documents: list[Document], alphabet: Alphabet, max_unknown: float) -> tuple[list[Message], dict]:
    """Non-empty lines as messages; characters outside the alphabet are skipped, mostly-foreign lines dropped."""
    messages, dropped = [], 0
    for doc in documents:
        for line in normalise(doc.text, alphabet).split("\n"):
            line = line.strip()
            if not line:
                continue
            symbols = alphabet.encode(line)
            symbols = symbols[symbols != BREAK]
            if len(symbols) < (1 - max_unknown) * len(line):
                dropped += 1
                continue
            messages.append(Message(doc.source, line, symbols))
    return messages, {"mostly_outside_alphabet": dropped}


class CorpusEngine(Protocol):
    """The arithmetic of corpus adaptation over a copy of the network: the weights it changes (``names``, by
    ``CharRNN``'s names), scoring, and a training step on parallel streams that carries their state."""

    name: str  # "torch" or "numpy"
    names: list[str]

    def bits(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Total bits of each of a batch of messages from the learned initial state: ``ids`` (B, T) symbol ids,
        ``mask`` (B, T) 1 where a message has a symbol, 0 after its end."""
        ...

    def start_epoch(self, rows: int) -> None:
        """``rows`` parallel streams start from the learned initial state."""
        ...

    def train_step(self, inputs: np.ndarray, targets: np.ndarray) -> float:
        """One step on (rows, n) symbol ids, each target predicted after its input, from the streams' state (a
        constant) which moves on: the mean NLL (nats), the gradients clipped to ``clip``, Adam, then the decay
        toward the starting weights. Returns the loss before the step."""
        ...

    def weights(self) -> dict[str, np.ndarray]:
        """A float32 copy of the weights being adapted, by name."""
        ...

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        ...


def corpus_engine(folder: ModelFolder, config: CorpusAdaptConfig, engine: str = "auto", device: str = "auto",
                  threads: int | None = None) -> CorpusEngine:
    """The engine that adapts ``folder``'s network: numpy when asked for, or with ``auto`` where PyTorch is not
    installed (a plain LSTM on the CPU; ``threads`` BLAS threads while it runs); else torch on ``device`` (auto: CUDA
    when there is a GPU). A research cell without PyTorch raises ``TorchMissing``, naming the extra."""
    cell = folder.config["architecture"].get("cell", "lstm")
    if choose_engine(cell, AdaptConfig(), engine) == "numpy":
        if device not in ("auto", "cpu"):
            raise ValueError(f"the numpy engine adapts on the CPU, not {device!r}")
        from dasher_rnn.adapt.corpus_numpy import NumpyCorpusEngine

        return NumpyCorpusEngine(folder.weights, config.lr, config.clip, config.lam, threads)
    from dasher_rnn.adapt.corpus_torch import TorchCorpusEngine
    from dasher_rnn.lm.train import pick_device

    return TorchCorpusEngine(folder.network(), config.lr, config.clip, config.lam, pick_device(device))


def message_bits(engine: CorpusEngine, messages: list[Message], batch: int = 256, progress: bool = False,
                 desc: str = "scoring") -> np.ndarray:
    """Total bits of each message from the learned initial state, in padded batches of similar lengths."""
    out = np.zeros(len(messages))
    order = np.argsort([len(m.symbols) for m in messages])  # similar lengths together: little padding
    for i in tqdm(range(0, len(order), batch), desc=desc, unit="batch", disable=not progress, leave=False):
        idx = order[i : i + batch]
        length = max(len(messages[j].symbols) for j in idx)
        if length == 0:
            continue
        ids = np.zeros((len(idx), length), np.int64)
        mask = np.zeros((len(idx), length), np.float32)
        for row, j in enumerate(idx):
            s = messages[j].symbols
            ids[row, : len(s)] = s
            mask[row, : len(s)] = 1
        out[idx] = engine.bits(ids, mask)
    return out


def bits_per_char(bits: np.ndarray, messages: list[Message]) -> dict[str, float]:
    """Held-out bits/char overall and per source file."""
    per_bits: defaultdict[str, float] = defaultdict(float)
    per_chars: defaultdict[str, int] = defaultdict(int)
    for b, m in zip(bits, messages, strict=True):
        source = m.source.split("#")[0]
        per_bits[source] += float(b)
        per_chars[source] += len(m.text)
    result = {s: round(per_bits[s] / per_chars[s], 4) for s in per_bits}
    chars = sum(per_chars.values())
    result["overall"] = round(float(np.sum(bits)) / chars, 4) if chars else float("nan")
    return result


def streams(messages: list[Message], newline: int, rows: int, seq_len: int) -> tuple[np.ndarray, np.ndarray]:
    """(inputs, targets) of shape (rows, n): the messages joined by newlines, cut into parallel streams."""
    sep = np.array([newline], np.uint8)
    flat = np.concatenate([part for m in messages for part in (m.symbols, sep)]).astype(np.int64)
    rows = max(1, min(rows, len(flat) // (seq_len + 1)))
    n = (len(flat) - 1) // rows
    idx = np.arange(rows)[:, None] * n + np.arange(n + 1)[None, :]
    data = flat[idx]
    return data[:, :-1], data[:, 1:]


class Interrupted(Exception):
    """Ctrl-C during adaptation: the profile was left as it was."""


def adapt_to_corpus(engine: CorpusEngine, alphabet: Alphabet, documents: list[Document], store: ProfileStore,
                    profile: str, base_hash: str, config: CorpusAdaptConfig, resume: bool = False,
                    dry_run: bool = False, progress: bool = True, log=print) -> dict:
    """Run the whole procedure with ``engine`` (``corpus_engine``); returns the report (also stored in the
    profile)."""
    newline = alphabet.index("\n")
    messages, dropped = split_messages(documents, alphabet, config.max_unknown)
    if not messages:
        raise ValueError("the corpus has no usable text (empty, or mostly outside the alphabet)")
    sample = None
    total = sum(len(m.text) for m in messages)
    if dry_run and total > DRY_RUN_CHARS:  # a dry run answers promptly: it scores every k-th message, and says so
        step = -(-total // DRY_RUN_CHARS)
        sample = {"every": step, "messages": -(-len(messages) // step), "of_messages": len(messages),
                  "of_characters": total}
        messages = messages[::step]
        sample["characters"] = sum(len(m.text) for m in messages)
        log(f"dry run: scoring every {step}th message ({sample['characters']:,} of {total:,} characters)")
    before_all = message_bits(engine, messages, progress=progress, desc="scoring the corpus")
    improbable = [b / max(1, len(m.text)) > config.max_bits for b, m in zip(before_all, messages, strict=True)]
    dropped["improbable"] = int(sum(improbable))
    kept = [(m, b) for m, b, bad in zip(messages, before_all, improbable, strict=True) if not bad]
    is_held = [document_hash(m.source + "\n" + m.text) < config.held_out for m, _ in kept]
    if not any(is_held) and len(kept) > 1:
        is_held[-1] = True
    held = [(m, b) for (m, b), h in zip(kept, is_held, strict=True) if h]
    train = [m for (m, _), h in zip(kept, is_held, strict=True) if not h]
    held_msgs = [m for m, _ in held]
    # the starting weights already scored every message above: no second pass for the "before" figure
    before = bits_per_char(np.array([b for _, b in held]), held_msgs) if held_msgs else {}
    report: dict[str, Any] = {
        "messages": len(messages), "dropped": dropped, "train_messages": len(train), "held_out_messages": len(held_msgs),
        "train_chars": sum(len(m.text) + 1 for m in train), "held_out_bpc_before": before, "config": asdict(config),
    }
    if sample is not None:
        report["sample"] = sample  # the counts and figures above are the sample's
    if dry_run or not train or not held_msgs:
        if not train:
            log("nothing left to adapt on after filtering")
        elif not held_msgs and not dry_run:  # one message: nothing to check the new weights on, so none are kept
            log("too little text to check that adapting helps (one message, and none held out): the RNN's weights are "
                "left as they are; give two messages or more")
        return report

    inputs, targets = streams(train, newline, config.batch_size, config.seq_len)
    names = engine.names
    best_bpc, best_weights, bad_epochs, first_epoch = before.get("overall", math.inf), engine.weights(), 0, 0
    resume_dir = store.folder / f".{profile}.adapt-resume"
    if resume and (resume_dir / "state.json").is_file():
        saved = json.loads((resume_dir / "state.json").read_text())
        arrays = load_arrays(resume_dir / "weights.safetensors")
        engine.set_weights({n: arrays[f"now.{n}"] for n in names})
        best_weights = {n: arrays[f"best.{n}"] for n in names}
        best_bpc, bad_epochs, first_epoch = saved["best_bpc"], saved["bad_epochs"], saved["epoch"]
        log(f"resuming at epoch {first_epoch + 1}")
    steps_per_epoch = math.ceil(inputs.shape[1] / config.seq_len)
    bar = tqdm(total=config.epochs * steps_per_epoch, initial=first_epoch * steps_per_epoch, disable=not progress,
               unit="step", dynamic_ncols=True)
    history, t0, chars_done, step_seconds = [], time.perf_counter(), 0, 0.0
    try:
        for epoch in range(first_epoch, config.epochs):
            engine.start_epoch(inputs.shape[0])
            for t in range(0, inputs.shape[1], config.seq_len):
                t_step = time.perf_counter()
                x = inputs[:, t : t + config.seq_len]
                loss = engine.train_step(x, targets[:, t : t + config.seq_len])
                chars_done += x.size
                step_seconds += time.perf_counter() - t_step
                bar.set_postfix(bpc=f"{loss / LN2:.3f}", chars_s=f"{chars_done / (time.perf_counter() - t0):,.0f}")
                bar.update(1)
            bits = message_bits(engine, held_msgs)
            now = bits_per_char(bits, held_msgs)["overall"]
            history.append({"epoch": epoch + 1, "held_out_bpc": now})
            bar.write(f"epoch {epoch + 1}: held-out {now:.4f} bits/char (before adapting {before['overall']:.4f})",
                      file=sys.stderr)
            if not math.isfinite(now):
                bar.write("held-out loss is not finite: keeping the best weights so far", file=sys.stderr)
                break
            current = engine.weights()
            if now < best_bpc - 1e-4:
                best_bpc, best_weights, bad_epochs = now, current, 0
            else:
                bad_epochs += 1
            _save_resume(resume_dir, current, best_weights, epoch + 1, best_bpc, bad_epochs)
            if bad_epochs > config.patience:
                break
    except KeyboardInterrupt:
        bar.close()
        raise Interrupted(f"interrupted: profile {profile!r} unchanged; `--resume` continues from the last epoch") from None
    bar.close()
    elapsed = time.perf_counter() - t0
    engine.set_weights(best_weights)
    after = bits_per_char(message_bits(engine, held_msgs), held_msgs)
    report.update({"held_out_bpc_after": after, "history": history, "adapt_seconds": round(elapsed, 1),
                   "chars_per_second": round(chars_done / elapsed) if elapsed else None,
                   "training_chars_per_second": round(chars_done / step_seconds) if step_seconds else None,
                   "sources": sorted({m.source.split("#")[0] for m in train})})
    previous = store.load(profile)
    info = previous.info if previous is not None else {}
    store.save(profile, {"rnn": encode_weights(engine.weights())}, {
        **info,
        "characters_adapted": (previous.characters_adapted if previous is not None else 0) + report["train_chars"],
        "corpus_adaptation": report,
    }, base_hash)
    for f in resume_dir.glob("*"):
        f.unlink()
    if resume_dir.exists():
        resume_dir.rmdir()
    return report


def _save_resume(folder: Path, now: dict[str, np.ndarray], best: dict[str, np.ndarray], epoch: int, best_bpc: float,
                 bad_epochs: int) -> None:
    """The weights after the last epoch and the best so far (float32 safetensors, either engine's), and where the
    run was."""
    from safetensors.numpy import save

    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    arrays = {f"now.{n}": np.ascontiguousarray(w, dtype=np.float32) for n, w in now.items()}
    arrays.update({f"best.{n}": np.ascontiguousarray(w, dtype=np.float32) for n, w in best.items()})
    atomic_write(folder / "weights.safetensors", save(arrays))
    atomic_write(folder / "state.json",
                 json.dumps({"epoch": epoch, "best_bpc": best_bpc, "bad_epochs": bad_epochs}).encode())
