"""Learned initial state (Petrov 2019, ch. 6): optimise (h0, c0) with the weights frozen on the
first characters of message and sentence starts, early-stopping on held-out starts.

A zero state makes the first characters of every message expensive; feeding a fake prefix
does not fix it for an RNN. Learning the state the network should be in at a message start does.
A multilingual model learns one such state for each language it writes, on that language's own starts
(``learn_language_states``).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from dasher_rnn.alphabet import BREAK
from dasher_rnn.lm.corpus import Corpus
from dasher_rnn.lm.rnn import LN2, CharRNN


def start_positions(data: np.ndarray, newline: int, sentence_ends: list[int], space: int, length: int) -> np.ndarray:
    """Indices where a message (after a newline or a break) or a sentence (after '. ', '? ', '! ') starts."""
    data = np.asarray(data)
    if len(data) <= length + 2:
        return np.zeros(0, np.int64)
    prev, prev2 = data[1:-1], data[:-2]
    line_start = (prev == newline) | (prev == BREAK)
    sentence_start = (prev == space) & np.isin(prev2, sentence_ends)
    idx = np.flatnonzero(line_start | sentence_start) + 2
    idx = idx[idx + length <= len(data)]
    window = np.asarray(data)[idx[:, None] + np.arange(length)[None, :]] if len(idx) else np.zeros((0, length))
    ok = ~np.isin(window, [BREAK, newline]).any(axis=1) if len(idx) else np.zeros(0, bool)
    return idx[ok]


def sample_starts(corpus: Corpus, split: str, count: int, length: int, seed: int) -> np.ndarray:
    """(count, length) symbol windows at message/sentence starts, drawn across sources by weight."""
    a = corpus.alphabet
    newline, space = a.index("\n"), a.index(" ")
    ends = [a.index(c) for c in ".?!" if c in a]
    rng = np.random.default_rng(seed)
    weights = np.array([s.weight for s in corpus.sources], dtype=np.float64)
    per_source = np.floor(count * weights / weights.sum()).astype(int)
    windows = []
    for src, n in zip(corpus.sources, per_source, strict=True):
        data = np.asarray(getattr(src, split)[: 20_000_000])
        idx = start_positions(data, newline, ends, space, length)
        if len(idx) == 0 or n == 0:
            continue
        pick = rng.choice(idx, size=min(n, len(idx)), replace=False)
        windows.append(data[pick[:, None] + np.arange(length)[None, :]])
    if not windows:
        raise ValueError(f"no message or sentence starts found in the {split} corpus")
    return np.concatenate(windows).astype(np.int64)


def lowercase_first(windows: np.ndarray, alphabet, fraction: float, seed: int) -> np.ndarray:
    """Lower-case the first letter of ``fraction`` of the windows: people writing by eye often skip
    the capital, and a state sure of a capital makes every such message start expensive."""
    upper = {alphabet.index(c): alphabet.index(c.lower()) for c in alphabet.symbols if c.isupper() and c != "I"}
    if not upper or fraction <= 0:
        return windows
    windows = windows.copy()
    pick = np.random.default_rng(seed).random(len(windows)) < fraction
    for row in np.flatnonzero(pick):
        windows[row, 0] = upper.get(int(windows[row, 0]), windows[row, 0])
    return windows


def start_loss(model: CharRNN, windows: torch.Tensor, learned: bool = True) -> torch.Tensor:
    """Mean bits per character over the windows, the first character predicted from the initial state alone."""
    logp, _ = model.score(windows, model.initial_state(windows.shape[0], learned=learned))
    nll = F.nll_loss(logp.reshape(-1, logp.shape[-1]), windows.reshape(-1))
    return nll / LN2


def learn_initial_state(model: CharRNN, corpus: Corpus, length: int = 10, train_count: int = 20_000,
                        val_count: int = 3_000, batch_size: int = 256, lr: float = 0.02, max_epochs: int = 12,
                        patience: int = 2, lowercase_fraction: float = 0.3, seed: int = 0, log=print) -> dict:
    """Fit ``model.h0``/``model.c0`` in place; returns the held-out bits/char before and after."""
    device = model.h0.device
    a = corpus.alphabet
    train_starts = sample_starts(corpus, "train", train_count, length, seed)
    val_starts = sample_starts(corpus, "val", val_count, length, seed + 1)
    train = torch.from_numpy(lowercase_first(train_starts, a, lowercase_fraction, seed)).to(device)
    val = torch.from_numpy(lowercase_first(val_starts, a, lowercase_fraction, seed + 1)).to(device)
    for p in model.parameters():
        p.requires_grad_(False)
    model.h0.requires_grad_(True)
    model.c0.requires_grad_(True)
    optimizer = torch.optim.Adam([model.h0, model.c0], lr=lr)
    model.eval()
    with torch.no_grad():
        zero_bpc = start_loss(model, val, learned=False).item()
        best = start_loss(model, val).item()
    best_state = (model.h0.detach().clone(), model.c0.detach().clone())
    log(f"initial state: held-out start bits/char zero state {zero_bpc:.3f}, current {best:.3f}")
    generator = torch.Generator().manual_seed(seed)
    bad_epochs = 0
    for epoch in range(max_epochs):
        order = torch.randperm(len(train), generator=generator)
        for i in range(0, len(train), batch_size):
            with model.gradable():
                loss = start_loss(model, train[order[i : i + batch_size]])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            val_bpc = start_loss(model, val).item()
        log(f"initial state epoch {epoch + 1}: held-out start bits/char {val_bpc:.3f}")
        if val_bpc < best - 1e-4:
            best, bad_epochs = val_bpc, 0
            best_state = (model.h0.detach().clone(), model.c0.detach().clone())
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                break
    with torch.no_grad():
        model.h0.copy_(best_state[0])
        model.c0.copy_(best_state[1])
    for p in model.parameters():
        p.requires_grad_(True)
    return {"start_length": length, "zero_state_bpc": round(zero_bpc, 4), "learned_state_bpc": round(best, 4),
            "train_starts": len(train), "val_starts": len(val), "epochs": epoch + 1,
            "lowercase_fraction": lowercase_fraction}


def learn_language_states(model: CharRNN, corpus: Corpus, sources_by_language: dict[str, list[str]], seed: int = 0,
                          log=print) -> tuple[dict[str, torch.Tensor], dict]:
    """A learned initial state for each language (``{code: [source names]}``), each fitted from the model's shared
    state on the starts of that language's sources alone; the model keeps its own ``h0``/``c0``. Returns the
    tensors (``CODE.h0``, ``CODE.c0``) and, by language, its sources and held-out start figures."""
    shared = (model.h0.detach().clone(), model.c0.detach().clone())
    tensors: dict[str, torch.Tensor] = {}
    info: dict[str, dict] = {}
    for code, names in sources_by_language.items():
        unknown = sorted(set(names) - {s.name for s in corpus.sources})
        if unknown:
            raise ValueError(f"language {code}: no training source named {', '.join(unknown)}")
        with torch.no_grad():
            model.h0.copy_(shared[0])
            model.c0.copy_(shared[1])
        own = Corpus(corpus.alphabet, [s for s in corpus.sources if s.name in names])
        log(f"initial state for {code} ({', '.join(names)}):")
        info[code] = {"sources": list(names), **learn_initial_state(model, own, seed=seed, log=log)}
        tensors[f"{code}.h0"], tensors[f"{code}.c0"] = model.h0.detach().clone(), model.c0.detach().clone()
    with torch.no_grad():
        model.h0.copy_(shared[0])
        model.c0.copy_(shared[1])
    return tensors, info
