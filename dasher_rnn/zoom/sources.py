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

    # Optional: ``flush()`` waits until learning and unlearning have reached the predictions (used by rewind).

    def close(self) -> None: ...


def uniform_counts(n_symbols: int) -> np.ndarray:
    return quantise(np.ones(n_symbols), DASHER_FLOOR)


def case_pairs(alphabet: Alphabet) -> tuple[np.ndarray, np.ndarray]:
    """Indices of each capital letter in ``alphabet`` and of its lower-case letter (where both are symbols)."""
    upper, lower = [], []
    for i, ch in enumerate(alphabet.symbols):
        low = ch.lower()
        if ch.isupper() and low != ch and len(low) == 1 and low in alphabet:
            upper.append(i)
            lower.append(alphabet.index(low))
    return np.array(upper, np.int64), np.array(lower, np.int64)


def lower_case_prior(probs: np.ndarray, pairs: tuple[np.ndarray, np.ndarray], share: float) -> np.ndarray:
    """Move ``share`` (0..1) of each capital letter's probability to its lower-case letter (a copy; the total is
    unchanged). At a message start the models favour capitals so much that lower case is hard to reach."""
    p = np.array(probs, dtype=np.float64)
    upper, lower = pairs
    moved = p[upper] * min(max(share, 0.0), 1.0)
    p[upper] -= moved
    np.add.at(p, lower, moved)
    return p


class WriterSource:
    """The zoom's source over a Writer: its contexts are the handles, answers arrive on the predictor's
    thread (at once for PPM and uniform), and committed characters are learned with their contexts.

    ``start_lower_share`` is a prior on the box sizes at a message start (the model itself is untouched): that
    share of each capital's probability goes to its lower-case letter before the distribution becomes Dasher's
    integers, so that a message can begin in lower case without hunting for a sliver (docs/history/writing-and-app.md
    gives its cost in bits per character)."""

    def __init__(self, writer, start_lower_share: float = 0.0):
        self.writer, self.alphabet, self.name = writer, writer.alphabet, writer.model
        self.start_lower_share = min(max(float(start_lower_share), 0.0), 1.0)
        self._pairs = case_pairs(self.alphabet)
        self._floor = float(getattr(writer, "floor", DASHER_FLOOR))
        self._message_starts: list[object] = []  # handles of message starts (few: one per message shown)

    def start(self, context: str) -> object:
        handle = self.writer.root(context)  # a message start is the cached initial state; a text runs once
        if context == "" and self.start_lower_share > 0:
            self._message_starts.append(handle)
        return handle

    def _at_message_start(self, handle: object) -> bool:
        return any(h is handle for h in self._message_starts)

    def box_counts(self, distribution, message_start: bool) -> np.ndarray:
        """Dasher's integers for the boxes from one of the Writer's distributions (the prior at a message start)."""
        if not message_start or self.start_lower_share <= 0 or not len(self._pairs[0]):
            return distribution.counts
        return quantise(lower_case_prior(distribution.probs, self._pairs, self.start_lower_share), self._floor)

    def child(self, handle: object, symbol: int) -> object:
        return self.writer.child(handle, symbol)

    def request(self, handle: object, priority: float, deliver: Deliver) -> None:
        future = self.writer.request([handle], priority)
        start = self._at_message_start(handle)
        future.add_done_callback(lambda f: deliver(None if f.exception() else self.box_counts(f.result()[0], start)))

    def release(self, handle: object) -> None:
        self._message_starts = [h for h in self._message_starts if h is not handle]
        self.writer.release(handle)

    def commit(self, symbol: int, context: object | None = None) -> None:
        self.writer.commit_symbol(symbol, context)

    def uncommit(self, count: int) -> None:
        self.writer.delete(count)

    def new_message(self) -> None:
        self.writer.new_message()

    def flush(self) -> None:
        """Wait until what was learned and unlearned has reached the predictor (boxes asked for from now on use
        it: after an undo, the rebuilt view must not be laid out by the weights being rolled back)."""
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class PracticeSource(WriterSource):
    """The boxes of a Writer that learns nothing from them: practice (the tutorial) writes with the user's own
    model, but what is committed, backed out of or finished never reaches the Writer, so its RNN weights, PPM
    counts, mixing weights and message stream stay exactly as they were. ``close`` lets go of the contexts it
    made and leaves the Writer open (it belongs to the window)."""

    def __init__(self, writer, start_lower_share: float = 0.0):
        super().__init__(writer, start_lower_share)
        self._roots: list[object] = []

    def start(self, context: str) -> object:
        handle = super().start(context)
        self._roots.append(handle)
        return handle

    def release(self, handle: object) -> None:
        self._roots = [h for h in self._roots if h is not handle]
        super().release(handle)

    def commit(self, symbol: int, context: object | None = None) -> None:
        pass

    def uncommit(self, count: int) -> None:
        pass

    def new_message(self) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        for handle in self._roots:
            self.writer.release(handle)
        self._roots.clear()
        self._message_starts.clear()
