"""Adapt a profile to a user's own corpus before first use (``dasher-rnn adapt``).

1. Read and clean the text (``user_corpus``), split it into messages (lines).
2. Score every message with the starting weights; drop messages mostly outside the alphabet and
   extremely improbable ones (garbage, tables, encodings) that would make the weights explode.
3. Hold out a deterministic tenth of the messages; fine-tune on the rest in mini-batches of
   parallel streams (Adam, gradient clipping, a decay prior toward the starting weights), scoring
   the held-out messages after every epoch; keep the best weights, stop when held-out stops
   improving or a loss is not finite.
4. Save the profile atomically with held-out bits/char before and after, per source: after every epoch that
   improved on the held-out messages, and at the end.
What is learned is kept as it goes (``resume_folder``): the starting weights' scores, and the weights every
``checkpoint_s`` and after every epoch, so Ctrl-C loses at most a minute of training and ``--resume`` goes on
without scoring the corpus again. Before it starts, the caller is told what will be done and about how long it takes
(``Plan``, from the engine's speed on a sample of the messages).

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
from collections.abc import Callable
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
    epochs: int = 1  # on a 281 KB SMS history the first epoch gave 90% of three epochs' held-out gain (docs/BENCHMARKS.md)
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
    checkpoint_s: float = 60.0  # within an epoch, what was learned is saved this often (Ctrl-C loses at most this)


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
    """Ctrl-C during adaptation; the message says what was kept and what ``--resume`` does."""


RESUME_SUFFIX = ".adapt-resume"
TRAIN_COST = 3.5  # a character trained (forward and backward) costs about this many scored in the sample (measured)
HISTORY_COST = 2.5  # a character learned by PPM and the mixing weights, with the RNN's batched pass (measured)


@dataclass
class Plan:
    """What ``adapt_to_corpus`` will do and about how long it takes, for the user before it starts."""

    messages: int
    characters: int
    epochs: int
    resuming: str | None  # where an interrupted run goes on from, in words; None: from the start
    scoring_s: float  # 0 when the scores are kept from an interrupted run
    epoch_s: float
    history_s: float  # PPM and the mixing weights (the caller's part; 0 when it has none)
    remaining_epochs: int

    @property
    def total_s(self) -> float:
        return self.scoring_s + self.remaining_epochs * self.epoch_s + self.history_s

    def describe(self) -> str:
        what = f"{self.messages:,} messages, {self.characters:,} characters: "
        steps = []
        if self.scoring_s:
            steps.append(f"score them with the starting weights (~{_duration(self.scoring_s)})")
        if self.remaining_epochs:
            many = self.remaining_epochs != 1
            steps.append(f"train the RNN for {self.remaining_epochs} epoch{'s' if many else ''} (~{_duration(self.epoch_s)}"
                         f"{' each' if many else ''}) on most of them, checking it on the ones kept aside")
        if self.history_s:
            steps.append(f"teach PPM and the mixing weights (~{_duration(self.history_s)})")
        start = f"resuming {self.resuming}; " if self.resuming else ""
        return f"{start}{what}{', then '.join(steps) or 'nothing left to do'}: about {_duration(self.total_s)} in all"


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def _fingerprint(messages: list[Message], config: CorpusAdaptConfig, base_hash: str) -> str:
    """What a saved run depends on: the writing, the settings that shape the training (not the epochs) and the model."""
    import hashlib

    digest = hashlib.sha256(base_hash.encode())
    settings = {k: v for k, v in asdict(config).items() if k not in ("epochs", "patience", "checkpoint_s")}
    digest.update(json.dumps(settings, sort_keys=True).encode())
    for m in messages:
        digest.update(m.source.encode() + b"\0" + m.text.encode() + b"\n")
    return digest.hexdigest()


def resume_folder(store: ProfileStore, profile: str) -> Path:
    """Where an adaptation of ``profile`` keeps what it learned until it finishes (``--resume`` reads it)."""
    return store.folder / f".{profile}{RESUME_SUFFIX}"


def clear_resume(store: ProfileStore, profile: str) -> None:
    """The run finished: nothing is left to resume."""
    folder = resume_folder(store, profile)
    for f in folder.glob("*"):
        f.unlink()
    if folder.exists():
        folder.rmdir()


def _saved_run(folder: Path, fingerprint: str) -> dict | None:
    try:
        saved = json.loads((folder / "state.json").read_text())
    except (OSError, ValueError):
        return None
    return saved if isinstance(saved, dict) and saved.get("fingerprint") == fingerprint else None


def adapt_to_corpus(engine: CorpusEngine, alphabet: Alphabet, documents: list[Document], store: ProfileStore,
                    profile: str, base_hash: str, config: CorpusAdaptConfig, resume: bool = False,
                    dry_run: bool = False, progress: bool = True, log=print, history: bool = False,
                    plan: Callable[[Plan], None] | None = None,
                    on_step: Callable[[int, int], None] | None = None) -> dict:
    """Run the whole procedure with ``engine`` (``corpus_engine``); returns the report (also stored in the profile).

    What is learned is kept as it goes (``resume_folder``): the scores of the starting weights once they are known,
    the weights every ``config.checkpoint_s`` within an epoch and after each epoch, and the profile gets the best
    weights after each epoch that improved on the held-out messages. So Ctrl-C (``Interrupted``, whose message says
    what was kept) loses at most ``checkpoint_s`` of training, and ``resume`` goes on from there without scoring the
    corpus again. ``history``: the caller teaches PPM and the mixing weights next, so the saved run is kept (its
    phase ``history``) until it calls ``clear_resume``; on ``resume`` after training finished, the report of the run
    comes back at once. ``plan`` is told what will be done and about how long it takes, before the work starts;
    ``on_step(epoch, step)`` is called after every training step (0-based)."""
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
    folder, fingerprint = resume_folder(store, profile), _fingerprint(messages, config, base_hash)
    saved = _saved_run(folder, fingerprint) if resume and not dry_run else None
    if resume and not dry_run and saved is None:
        log("nothing to resume for this writing and these settings: starting from the beginning"
            if (folder / "state.json").exists() else "no interrupted run to resume: starting from the beginning")
    if saved is not None and saved.get("phase") == "history":
        if plan is not None:
            plan(Plan(len(messages), sum(len(m.text) for m in messages), config.epochs, "after the RNN's training "
                      "(it finished)", 0.0, 0.0, _history_seconds(saved.get("rate", 0.0), messages, history), 0))
        if not history:  # the caller teaches PPM nothing this time: nothing is left to resume
            clear_resume(store, profile)
        return saved["report"]

    chars = sum(len(m.text) for m in messages)
    if saved is not None:
        before_all = load_arrays(folder / "scores.safetensors")["bits"].astype(np.float64)
        rate = float(saved["rate"])
        scoring_s = 0.0
    else:
        try:
            rate = _scoring_rate(engine, messages)
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted before any work: profile {profile!r} unchanged") from None
        scoring_s = padded_symbols(messages) / rate
    epoch_s = (TRAIN_COST * (1 - config.held_out) + config.held_out) * chars / rate
    first_epoch, first_step = (saved["epoch"], saved["step"]) if saved is not None else (0, 0)
    train_epochs = 0 if dry_run else max(0, config.epochs - first_epoch)
    if plan is not None:
        where = None
        if saved is not None:
            where = f"epoch {first_epoch + 1}" + (f" at step {first_step + 1}" if first_step else "") + \
                    " with the scores of the starting weights kept"
        plan(Plan(len(messages), chars, config.epochs, where, scoring_s, epoch_s,
                  0.0 if dry_run else _history_seconds(rate, messages, history), train_epochs))
    if saved is None:
        try:
            before_all = message_bits(engine, messages, progress=progress, desc="scoring")
        except KeyboardInterrupt:
            raise Interrupted(f"interrupted while scoring your writing, before any training: profile {profile!r} "
                              "unchanged and nothing saved to resume from") from None
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
        if not dry_run:
            clear_resume(store, profile)
        return report

    inputs, targets = streams(train, newline, config.batch_size, config.seq_len)
    names = engine.names
    previous = store.load(profile)
    run: dict[str, Any] = {
        "fingerprint": fingerprint, "rate": rate, "phase": "training", "epoch": 0, "step": 0,
        "best_bpc": before.get("overall", math.inf), "bad_epochs": 0, "history": [], "best_epoch": 0,
        "characters_before": previous.characters_adapted if previous is not None else 0,
    }
    best_weights = engine.weights()
    if saved is not None:
        arrays = load_arrays(folder / "weights.safetensors")
        engine.set_weights({n: arrays[f"now.{n}"] for n in names})
        best_weights = {n: arrays[f"best.{n}"] for n in names}
        run.update({k: saved[k] for k in run if k in saved and k not in ("fingerprint", "rate", "phase")})
        log(f"resuming at epoch {first_epoch + 1}" + (f", step {first_step + 1}" if first_step else ""))
    else:
        _save_scores(folder, before_all)
        _save_resume(folder, run, engine.weights(), best_weights)
    steps_per_epoch = math.ceil(inputs.shape[1] / config.seq_len)
    bar = tqdm(total=config.epochs * steps_per_epoch, initial=first_epoch * steps_per_epoch + first_step,
               disable=not progress, unit="step", dynamic_ncols=True, desc="training")
    t0, chars_done, step_seconds, last_save = time.perf_counter(), 0, 0.0, time.monotonic()
    held_bits: dict[int, dict[str, float]] = {}
    try:
        for epoch in range(run["epoch"], config.epochs):
            if run["bad_epochs"] > config.patience:
                break
            engine.start_epoch(inputs.shape[0])
            for step, t in enumerate(range(0, inputs.shape[1], config.seq_len)):
                if epoch == first_epoch and step < first_step:
                    continue  # done before the interruption (the streams start again from the learned state)
                t_step = time.perf_counter()
                x = inputs[:, t : t + config.seq_len]
                loss = engine.train_step(x, targets[:, t : t + config.seq_len])
                chars_done += x.size
                step_seconds += time.perf_counter() - t_step
                bar.set_postfix(bpc=f"{loss / LN2:.3f}", chars_s=f"{chars_done / (time.perf_counter() - t0):,.0f}")
                bar.update(1)
                if time.monotonic() - last_save >= config.checkpoint_s and step + 1 < steps_per_epoch:
                    run.update(epoch=epoch, step=step + 1)
                    _save_resume(folder, run, engine.weights(), best_weights)
                    last_save = time.monotonic()
                if on_step is not None:
                    on_step(epoch, step)
            bits = message_bits(engine, held_msgs, progress=progress, desc="checking")
            now = bits_per_char(bits, held_msgs)
            run["history"].append({"epoch": epoch + 1, "held_out_bpc": now["overall"]})
            bar.write(f"epoch {epoch + 1}: held-out {now['overall']:.4f} bits/char (before adapting "
                      f"{before['overall']:.4f})", file=sys.stderr)
            if not math.isfinite(now["overall"]):
                bar.write("held-out loss is not finite: keeping the best weights so far", file=sys.stderr)
                run.update(epoch=config.epochs, step=0)
                break
            current = engine.weights()
            if now["overall"] < run["best_bpc"] - 1e-4:
                best_weights, run["best_epoch"], run["bad_epochs"] = current, epoch + 1, 0
                run["best_bpc"], held_bits[epoch + 1] = now["overall"], now
                _save_profile(store, profile, base_hash, previous, run, best_weights, report, now)
            else:
                run["bad_epochs"] += 1
            run.update(epoch=epoch + 1, step=0)
            _save_resume(folder, run, current, best_weights)
            last_save = time.monotonic()
    except KeyboardInterrupt:
        bar.close()
        raise Interrupted(_interrupted(profile, run, steps_per_epoch)) from None
    bar.close()
    elapsed = time.perf_counter() - t0
    engine.set_weights(best_weights)
    if run["best_epoch"] in held_bits:  # scored after that epoch: no second pass
        after = held_bits[run["best_epoch"]]
    else:
        after = bits_per_char(message_bits(engine, held_msgs, progress=progress, desc="checking"), held_msgs)
    report.update({"held_out_bpc_after": after, "history": run["history"], "adapt_seconds": round(elapsed, 1),
                   "chars_per_second": round(chars_done / elapsed) if elapsed else None,
                   "training_chars_per_second": round(chars_done / step_seconds) if step_seconds else None,
                   "sources": sorted({m.source.split("#")[0] for m in train})})
    _save_profile(store, profile, base_hash, previous, run, engine.weights(), report, after)
    if history:
        run.update(phase="history", report=report)
        _save_resume(folder, run, engine.weights(), best_weights)
    else:
        clear_resume(store, profile)
    return report


def _interrupted(profile: str, run: dict, steps_per_epoch: int) -> str:
    """What Ctrl-C leaves, truthfully."""
    epoch, step = run["epoch"], run["step"]
    if run["best_epoch"]:
        kept = f"profile {profile!r} has the RNN's best weights so far (after epoch {run['best_epoch']}, held-out " \
               f"{run['best_bpc']:.4f} bits/char); PPM and the mixing weights have not learned this writing yet"
    else:
        kept = f"profile {profile!r} unchanged"
    if epoch == 0 and step == 0:
        where = "no training step was saved; `--resume` starts the training again without scoring your writing again"
    else:
        where = f"`--resume` goes on from epoch {epoch + 1}" + (f", step {step + 1} of {steps_per_epoch}" if step else "") \
                + " without scoring your writing again"
    return f"interrupted: {kept}; {where}"


def _save_profile(store: ProfileStore, profile: str, base_hash: str, previous, run: dict,
                  weights: dict[str, np.ndarray], report: dict, after: dict) -> None:
    """The profile with ``weights`` as its RNN, counted once however often it is saved in a run."""
    info = previous.info if previous is not None else {}
    store.save(profile, {"rnn": encode_weights(weights)}, {
        **info,
        "characters_adapted": run["characters_before"] + report["train_chars"],
        "corpus_adaptation": {**report, "held_out_bpc_after": after, "history": run["history"]},
    }, base_hash)


def _scoring_rate(engine: CorpusEngine, messages: list[Message], sample: int = 64) -> float:
    """Symbols the engine scores a second (padding included), timed on ``sample`` messages of about the median
    length."""
    by_length = sorted(messages, key=lambda m: len(m.symbols))
    middle = max(0, len(by_length) // 2 - sample // 2)
    picked = by_length[middle : middle + sample]
    message_bits(engine, picked[:2])  # the first call sets the engine up (threads, buffers): not timed
    t = time.perf_counter()
    message_bits(engine, picked)
    return max(1.0, padded_symbols(picked) / max(1e-6, time.perf_counter() - t))


def padded_symbols(messages: list[Message], batch: int = 256) -> int:
    """The symbols ``message_bits`` steps through for ``messages``, the padding of its batches included."""
    lengths = np.sort([len(m.symbols) for m in messages])
    return int(sum(len(lengths[i : i + batch]) * lengths[i : i + batch].max() for i in range(0, len(lengths), batch)))


def _history_seconds(rate: float, messages: list[Message], history: bool) -> float:
    return HISTORY_COST * sum(len(m.text) for m in messages) / rate if history and rate else 0.0


def _save_scores(folder: Path, bits: np.ndarray) -> None:
    from safetensors.numpy import save

    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(folder / "scores.safetensors", save({"bits": np.ascontiguousarray(bits, dtype=np.float64)}))


def _save_resume(folder: Path, run: dict, now: dict[str, np.ndarray], best: dict[str, np.ndarray]) -> None:
    """The weights now and the best so far (float32 safetensors, either engine's), and where the run is (JSON)."""
    from safetensors.numpy import save

    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    arrays = {f"now.{n}": np.ascontiguousarray(w, dtype=np.float32) for n, w in now.items()}
    arrays.update({f"best.{n}": np.ascontiguousarray(w, dtype=np.float32) for n, w in best.items()})
    atomic_write(folder / "weights.safetensors", save(arrays))
    atomic_write(folder / "state.json", json.dumps(run).encode())
