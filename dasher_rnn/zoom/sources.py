"""Where the zoom model gets its boxes' sizes from, and where committed text goes to be learned.

A source hands out opaque context handles (``start`` for a message start or a text, ``child``
for one more symbol) and answers ``request`` by calling ``deliver`` with Dasher's integer
distribution (summing to 65536, floor included) -- later and from any thread for the RNN
service, at once for PPM. The zoom model never waits for an answer: until it arrives a box's
children are laid out from the uniform fallback.
"""

from __future__ import annotations

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
    """A context in both models, and (once answered) the RNN's next-symbol probabilities there."""

    __slots__ = ("node", "ppm_context", "p_rnn")

    def __init__(self, node, ppm_context):
        self.node, self.ppm_context = node, ppm_context
        self.p_rnn: np.ndarray | None = None


class HybridSource:
    """The RNN service mixed with an adaptive PPM (``lm.hybrid.HybridMixer``): PPM's part and the mixing
    weight are computed on the calling (UI) thread, where PPM also learns, so PPM is never touched from
    the worker; the worker's callback only mixes arrays. Deleting committed text takes PPM's counts and
    the mixing weights back exactly; the RNN rolls back through its writing session."""

    name = "hybrid"

    def __init__(self, rnn: ServiceSource, ppm, gate=None, floor: float = DASHER_FLOOR, state_file: Path | None = None):
        from dasher_rnn.lm.hybrid import HybridMixer

        self.rnn, self.alphabet, self.floor = rnn, rnn.alphabet, floor
        self.mixer = HybridMixer(ppm, gate)
        self.ppm, self.gate = ppm, self.mixer.gate
        self.state_file = state_file
        self.notice = self.mixer.load(state_file) if state_file is not None else None

    @property
    def session(self):
        """The RNN's writing session (adaptation state for the status bar, pause and resume)."""
        return self.rnn.session

    def save_state(self) -> None:
        """PPM's counts (training text and the user's) and the mixing weights, with the profile."""
        if self.state_file is not None:
            self.mixer.save(self.state_file)

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
            handle.p_rnn = p_rnn
            deliver(quantise(w * p_rnn + (1 - w) * p_ppm, self.floor))

        future = self.rnn.service.request([handle.node], priority)
        future.add_done_callback(lambda f: mix(None if f.exception() else f.result()[0].log_probs))

    def release(self, handle: object) -> None:
        self.rnn.release(handle.node)

    def commit(self, symbol: int, context: object | None = None) -> None:
        """``context``: the committed box's parent context, whose RNN answer (when it came) teaches the gate."""
        p_rnn = context.p_rnn if context is not None else None
        learn = self.session is not None and not self.session.paused  # PPM learns when, and only when, the RNN does
        self.mixer.commit(symbol, None if p_rnn is None else p_rnn[symbol], learn)
        self.rnn.commit(symbol)

    def uncommit(self, count: int) -> None:
        self.mixer.uncommit(count)
        self.rnn.uncommit(count)

    def new_message(self) -> None:
        self.mixer.new_message()
        self.rnn.new_message()

    def close(self) -> None:
        self.save_state()
        self.rnn.close()
