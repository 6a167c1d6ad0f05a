"""Where the zoom model gets its boxes' sizes from, and where committed text goes to be learned.

A source hands out opaque context handles (``start`` for a message start or a text, ``child``
for one more symbol) and answers ``request`` by calling ``deliver`` with Dasher's integer
distribution (summing to 65536, floor included) -- later and from any thread for the RNN
service, at once for PPM. The zoom model never waits for an answer: until it arrives a box's
children are laid out from the uniform fallback.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np

from dasher_rnn.alphabet import Alphabet
from dasher_rnn.lm.protocol import DASHER_FLOOR, quantise

Deliver = Callable[[np.ndarray | None], None]  # None: the request failed (e.g. the source closed)


class PredictionSource(Protocol):
    alphabet: Alphabet
    name: str

    def start(self, context: str) -> object:
        """A handle for a message start (``""``) or for the context ``context``."""

    def child(self, handle: object, symbol: int) -> object:
        """The handle for ``handle``'s context plus ``symbol`` (cheap, creates no state)."""

    def request(self, handle: object, priority: float, deliver: Deliver) -> None:
        """Ask for the next-symbol counts after ``handle``; larger priority first. ``deliver`` is called
        exactly once per request."""

    def release(self, handle: object) -> None:
        """``handle`` and everything below it are no longer needed."""

    def commit(self, symbol: int, context: object | None = None) -> None:
        """A character became part of the text for good (Dasher's commit rule): learn it. ``context`` is the
        handle it was predicted after, when the zoom still has it."""

    def uncommit(self, count: int) -> None:
        """The user reversed back through ``count`` committed characters."""

    def new_message(self) -> None:
        """The next commit starts a new message."""

    def close(self) -> None: ...


def uniform_counts(n_symbols: int) -> np.ndarray:
    return quantise(np.ones(n_symbols), DASHER_FLOOR)


class UniformSource:
    """Every symbol equally likely: the fallback layout, and a model-free source for tests."""

    name = "uniform"

    def __init__(self, alphabet: Alphabet):
        self.alphabet = alphabet
        self._counts = uniform_counts(len(alphabet))

    def start(self, context: str) -> object:
        return context

    def child(self, handle: object, symbol: int) -> object:
        return f"{handle}{self.alphabet.symbols[symbol]}"

    def request(self, handle: object, priority: float, deliver: Deliver) -> None:
        deliver(self._counts)

    def release(self, handle: object) -> None: ...

    def commit(self, symbol: int, context: object | None = None) -> None: ...

    def uncommit(self, count: int) -> None: ...

    def new_message(self) -> None: ...

    def close(self) -> None: ...


class PPMSource:
    """Dasher's PPM: answers at once, learns every committed character (deletions are not unlearned, as in Dasher)."""

    name = "ppm"

    def __init__(self, model, floor: float = DASHER_FLOOR):
        self.model, self.alphabet, self.floor = model, model.alphabet, floor

    def start(self, context: str) -> object:
        return self.model.context_after(context)

    def child(self, handle: object, symbol: int) -> object:
        return self.model.entered(handle, symbol)

    def request(self, handle: object, priority: float, deliver: Deliver) -> None:
        deliver(self.model.dasher_distribution_at(handle, self.floor))

    def release(self, handle: object) -> None: ...

    def commit(self, symbol: int, context: object | None = None) -> None:
        self.model.learn(symbol)

    def uncommit(self, count: int) -> None: ...

    def new_message(self) -> None:
        self.model.reset()

    def close(self) -> None: ...


class ServiceSource:
    """The RNN through ``PredictorService`` (answers on its worker thread), learning through a
    ``WritingSession`` when one is given (adaptation on)."""

    name = "rnn"

    def __init__(self, service, session=None):
        self.service, self.session, self.alphabet = service, session, service.alphabet

    def start(self, context: str) -> object:
        return self.service.root(context)  # a message start is the cached initial state; a text runs once

    def child(self, handle: object, symbol: int) -> object:
        return self.service.child(handle, symbol)

    def request(self, handle: object, priority: float, deliver: Deliver) -> None:
        future = self.service.request([handle], priority)
        future.add_done_callback(lambda f: deliver(None if f.exception() else f.result()[0].counts))

    def release(self, handle: object) -> None:
        self.service.release(handle)

    def commit(self, symbol: int, context: object | None = None) -> None:
        if self.session is not None:
            self.session.commit(self.alphabet.symbols[symbol])

    def uncommit(self, count: int) -> None:
        if self.session is not None:
            self.session.delete(count)

    def new_message(self) -> None:
        if self.session is not None:
            self.session.new_message()

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
        self.service.close()


class _HybridContext:
    """A context in both models, and (once answered) both models' next-symbol probabilities there."""

    __slots__ = ("node", "ppm_context", "p_rnn", "p_ppm")

    def __init__(self, node, ppm_context):
        self.node, self.ppm_context = node, ppm_context
        self.p_rnn: np.ndarray | None = None
        self.p_ppm: np.ndarray | None = None


class HybridSource:
    """The RNN service mixed with an adaptive PPM (``lm.hybrid``): PPM's part and the mixing weight are
    computed on the calling (UI) thread, where PPM also learns, so PPM is never touched from the worker;
    the worker's callback only mixes arrays. Deleting committed text takes PPM's counts and the mixing
    weights back exactly; the RNN rolls back through its writing session."""

    name = "hybrid"

    def __init__(self, rnn: ServiceSource, ppm, gate=None, floor: float = DASHER_FLOOR, state_file: Path | None = None):
        from dasher_rnn.lm.hybrid import OrderGate

        self.rnn, self.ppm, self.alphabet, self.floor = rnn, ppm, rnn.alphabet, floor
        self.gate = gate or OrderGate(ppm.max_order)
        self._learned: list[tuple[object, tuple[int, float] | None]] = []  # for undo: PPM's record, gate (order, weight)
        self.state_file, self.notice = state_file, None
        if state_file is not None and state_file.exists():
            self._load_state()

    @property
    def session(self):
        """The RNN's writing session (adaptation state for the status bar, pause and resume)."""
        return self.rnn.session

    # -- persistence with the profile: PPM's counts (training text and the user's) and the mixing weights --
    def save_state(self) -> None:
        from safetensors.numpy import save_file

        if self.state_file is None:
            return
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_file.with_name(self.state_file.name + ".tmp")
        save_file({**self.ppm.snapshot(), "gate": self.gate.w}, str(tmp))
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, self.state_file)

    def _load_state(self) -> None:
        from safetensors.numpy import load_file

        try:
            arrays = load_file(str(self.state_file))
            gate = arrays.pop("gate")
            if gate.shape != self.gate.w.shape or not np.all((gate > 0) & (gate < 1)):
                raise ValueError("mixing weights of the wrong shape or outside (0, 1)")
            self.ppm.restore(arrays)
            self.gate.w = gate.astype(np.float64)
        except Exception as exc:  # corrupt or foreign: set it aside and start from the trained PPM
            aside = self.state_file.with_name(f"{self.state_file.name}.bad-{int(time.time())}")
            os.replace(self.state_file, aside)
            self.notice = f"{self.state_file} could not be used ({exc}); moved to {aside.name}"
            logging.getLogger(__name__).warning(self.notice)

    def start(self, context: str) -> object:
        return _HybridContext(self.rnn.start(context), self.ppm.context_after(context))

    def child(self, handle: object, symbol: int) -> object:
        return _HybridContext(self.rnn.child(handle.node, symbol), self.ppm.entered(handle.ppm_context, symbol))

    def request(self, handle: object, priority: float, deliver: Deliver) -> None:
        p_ppm = self.ppm.probs_at(handle.ppm_context)
        w = self.gate.weight(handle.ppm_context.order)

        def mix(log_probs_or_none) -> None:
            if log_probs_or_none is None:
                deliver(None)
                return
            p_rnn = np.exp(log_probs_or_none.astype(np.float64))
            p_rnn /= p_rnn.sum()
            handle.p_rnn, handle.p_ppm = p_rnn, p_ppm
            deliver(quantise(w * p_rnn + (1 - w) * p_ppm, self.floor))

        future = self.rnn.service.request([handle.node], priority)
        future.add_done_callback(lambda f: mix(None if f.exception() else f.result()[0].log_probs))

    def release(self, handle: object) -> None:
        self.rnn.release(handle.node)

    def commit(self, symbol: int, context: object | None = None) -> None:
        row = None
        if context is not None and context.p_rnn is not None:
            order = context.ppm_context.order
            row = (order, self.gate.weight(order))
            self.gate.update(order, float(context.p_rnn[symbol]), float(context.p_ppm[symbol]))
        self._learned.append((self.ppm.learn(symbol), row))
        self.rnn.commit(symbol)

    def uncommit(self, count: int) -> None:
        for _ in range(min(count, len(self._learned))):
            record, row = self._learned.pop()
            self.ppm.unlearn(record)
            if row is not None:
                self.gate.w[row[0]] = row[1]
        self.rnn.uncommit(count)

    def new_message(self) -> None:
        self._learned.clear()  # deletions never reach back past a message (as in the RNN's session)
        self.ppm.reset()
        self.rnn.new_message()

    def close(self) -> None:
        self.save_state()
        self.rnn.close()
