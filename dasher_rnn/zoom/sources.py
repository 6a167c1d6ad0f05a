"""Where the zoom model gets its boxes' sizes from, and where committed text goes to be learned: a Writer.

A source hands out opaque context handles (``start`` for a message start or a text, ``child``
for one more symbol) and answers ``request`` by calling ``deliver`` with Dasher's integer
distribution (summing to 65536, floor included) -- later and from any thread for the RNN
service, at once for PPM. The zoom model never waits for an answer: until it arrives a box's
children are laid out from the uniform fallback.
"""

from __future__ import annotations

from collections.abc import Callable
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


class WriterSource:
    """The zoom's source over a Writer: its contexts are the handles, answers arrive on the predictor's
    thread (at once for PPM and uniform), and committed characters are learned with their contexts."""

    def __init__(self, writer):
        self.writer, self.alphabet, self.name = writer, writer.alphabet, writer.model

    def start(self, context: str) -> object:
        return self.writer.root(context)  # a message start is the cached initial state; a text runs once

    def child(self, handle: object, symbol: int) -> object:
        return self.writer.child(handle, symbol)

    def request(self, handle: object, priority: float, deliver: Deliver) -> None:
        future = self.writer.request([handle], priority)
        future.add_done_callback(lambda f: deliver(None if f.exception() else f.result()[0].counts))

    def release(self, handle: object) -> None:
        self.writer.release(handle)

    def commit(self, symbol: int, context: object | None = None) -> None:
        self.writer.commit_symbol(symbol, context)

    def uncommit(self, count: int) -> None:
        self.writer.delete(count)

    def new_message(self) -> None:
        self.writer.new_message()

    def close(self) -> None:
        self.writer.close()
