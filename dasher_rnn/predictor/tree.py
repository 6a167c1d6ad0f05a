"""The tree of contexts the interface shows, with each node's recurrent state in a preallocated pool.

A node is a context: its parent's context plus one symbol. Its state and next-symbol
distribution come from one batched step of its parent's state. States live in one pair of
(layers, budget, width) arrays; when the budget is used up the least recently used
state is dropped (a node without a state is recomputed from its nearest ancestor that has
one when it is needed again). Roots (a message start, or a given text) are pinned.

Not thread-safe: ``PredictorService`` runs it on its worker thread.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from dasher_rnn.alphabet import Alphabet
from dasher_rnn.normalise import normalise
from dasher_rnn.predictor.backends import Backend


class NodeError(ValueError):
    """A node handle that was released or belongs to another tree."""


@dataclass(eq=False)
class Node:
    """A handle on one context. Create children with ``PredictorService.child``."""

    tree: ContextTree = field(repr=False)
    parent: Node | None = field(repr=False)
    symbol: int
    depth: int
    children: dict[int, Node] = field(default_factory=dict, repr=False)
    slot: int = -1
    log_probs: np.ndarray | None = field(default=None, repr=False)
    released: bool = False
    releasing: bool = False  # a release is queued for the worker: ``child`` must not hand this node out again
    pinned: bool = False


@dataclass(eq=False)
class RootRead:
    """A root's context text being read, a chunk at a time (``ContextTree.start_root``, ``advance``, ``finish_root``)."""

    symbols: np.ndarray  # int64: the symbols still to read start at ``pos``
    h: np.ndarray  # (layers, hidden): the state after ``symbols[:pos]``
    c: np.ndarray
    log_probs: np.ndarray  # after ``symbols[:pos]``
    pos: int = 0

    @property
    def remaining(self) -> int:
        return len(self.symbols) - self.pos


class ContextTree:
    def __init__(self, backend: Backend, alphabet: Alphabet, budget: int = 3000):
        if budget < 2:
            raise ValueError("the node budget must be at least 2")
        self.backend, self.alphabet, self.budget = backend, alphabet, budget
        self.h = np.zeros((backend.layers, budget, backend.hidden), np.float32)
        self.c = np.zeros((backend.layers, budget, backend.cell_size), np.float32)
        self._free = list(range(budget - 1, -1, -1))
        self._lru: OrderedDict[int, Node] = OrderedDict()
        self._initial = backend.initial()

    def new_weights(self) -> None:
        """The backend's weights changed: message starts from now on use its new initial state and distribution
        (an adapted head predicts the first character too). Nodes already made keep what they have."""
        self._initial = self.backend.initial()

    # -- handles -------------------------------------------------------------------
    def check(self, node: Node) -> None:
        if not isinstance(node, Node) or node.tree is not self:
            raise NodeError(f"{node!r} is not a node of this predictor")
        if node.released:
            raise NodeError(f"node at depth {node.depth} was released")

    def symbol_id(self, symbol: int | str) -> int:
        if isinstance(symbol, str):
            if symbol not in self.alphabet:
                raise ValueError(f"{symbol!r} is not in alphabet {self.alphabet.name!r}")
            return self.alphabet.index(symbol)
        if isinstance(symbol, (int, np.integer)) and 0 <= symbol < len(self.alphabet):
            return int(symbol)
        raise ValueError(f"symbol {symbol!r} is not an index of alphabet {self.alphabet.name!r}")

    def child(self, node: Node, symbol: int | str) -> Node:
        """The child of ``node`` for ``symbol`` (created without a state; cheap, any thread)."""
        self.check(node)
        sym = self.symbol_id(symbol)
        existing = node.children.get(sym)
        if existing is not None and not existing.released and not existing.releasing:
            return existing
        created = Node(self, node, sym, node.depth + 1)
        node.children[sym] = created
        return created

    # -- slots ---------------------------------------------------------------------
    def _take_slot(self, protected: set[int]) -> int:
        if self._free:
            return self._free.pop()
        for node in self._lru.values():
            if not node.pinned and id(node) not in protected:
                self._evict(node)
                return self._free.pop()
        raise RuntimeError(f"node budget ({self.budget}) too small for this request")

    def _evict(self, node: Node) -> None:
        del self._lru[node.slot]
        self._free.append(node.slot)
        node.slot = -1
        node.log_probs = None
        if not node.children and node.parent is not None and node.parent.children.get(node.symbol) is node:
            del node.parent.children[node.symbol]

    def _touch(self, node: Node) -> None:
        if node.slot >= 0:
            self._lru.move_to_end(node.slot)

    @property
    def cached_nodes(self) -> int:
        return len(self._lru)

    # -- roots and expansion -------------------------------------------------------
    def root(self, text: str = "") -> Node:
        """A pinned root for ``text`` (normalised; cut after its last character outside the alphabet)."""
        read = self.start_root(text)
        if read.remaining:
            read.log_probs, read.h, read.c = self.backend.run(read.symbols, read.h, read.c)
            read.pos = len(read.symbols)
        return self.finish_root(read)

    def start_root(self, text: str = "") -> RootRead:
        """A root's text to read (``advance``), then to make a node of (``finish_root``): long texts are read a chunk
        at a time, several at once, so that other requests are served in between."""
        text = normalise(text, self.alphabet)
        cut = max((i for i, ch in enumerate(text) if ch not in self.alphabet), default=-1)
        symbols = np.array([self.alphabet.index(ch) for ch in text[cut + 1 :]], dtype=np.int64)
        logp, h, c = self._initial
        return RootRead(symbols, h, c, logp)

    def advance(self, reads: list[RootRead], steps: int) -> None:
        """Read up to ``steps`` more symbols of every unfinished ``reads``, in batched steps of all of them."""
        active = [r for r in reads if r.remaining]
        done = 0
        while active and done < steps:
            n = min(steps - done, min(r.remaining for r in active))
            if len(active) == 1:  # alone: the backend's own sequence run (torch reads it in one call)
                r = active[0]
                r.log_probs, r.h, r.c = self.backend.run(r.symbols[r.pos : r.pos + n], r.h, r.c)
                r.pos += n
            else:
                symbols = np.stack([r.symbols[r.pos : r.pos + n] for r in active])
                h, c = np.stack([r.h for r in active], axis=1), np.stack([r.c for r in active], axis=1)
                for i in range(n):
                    logp, h, c = self.backend.step(symbols[:, i], h, c)
                for i, r in enumerate(active):
                    r.log_probs, r.h, r.c = np.array(logp[i]), np.array(h[:, i]), np.array(c[:, i])
                    r.pos += n
            done += n
            active = [r for r in active if r.remaining]

    def finish_root(self, read: RootRead) -> Node:
        """The pinned root node of a finished read."""
        if read.remaining:
            raise ValueError("the root's text is not read yet")
        node = Node(self, None, -1, 0, pinned=True)
        node.slot = self._take_slot(set())
        self.h[:, node.slot], self.c[:, node.slot] = read.h, read.c
        node.log_probs = np.asarray(read.log_probs, np.float32)
        self._lru[node.slot] = node
        return node

    def expand(self, nodes: list[Node]) -> list[np.ndarray]:
        """Next-symbol log-probs of every node, computing what is missing one depth level per batch."""
        for node in nodes:
            self.check(node)
        todo = {id(n): n for n in nodes if n.log_probs is None}
        # each parent needs a state: recompute evicted ancestors too (their distributions stay as handed out)
        for node in list(todo.values()):
            parent = node.parent
            while parent is not None and parent.slot < 0:
                if parent.released:
                    raise NodeError("an ancestor of a requested node was released")
                todo[id(parent)] = parent
                parent = parent.parent
        protected = set(todo) | {id(n.parent) for n in todo.values()}
        for depth in sorted({n.depth for n in todo.values()}):
            level = [n for n in todo.values() if n.depth == depth]
            parents: list[Node] = []
            for n in level:
                assert n.parent is not None  # a root has its distribution from the start: it is never expanded
                parents.append(n.parent)
            parent_slots = np.array([p.slot for p in parents])
            for p in parents:
                self._touch(p)
            logp, h, c = self.backend.step(np.array([n.symbol for n in level]), self.h[:, parent_slots],
                                           self.c[:, parent_slots])
            for i, n in enumerate(level):
                if n.slot < 0:
                    n.slot = self._take_slot(protected)
                    self._lru[n.slot] = n
                self.h[:, n.slot], self.c[:, n.slot] = h[:, i], c[:, i]
                if n.log_probs is None:  # a distribution once handed out never changes
                    n.log_probs = np.array(logp[i], np.float32)
        out: list[np.ndarray] = []
        for node in nodes:
            self._touch(node)
            assert node.log_probs is not None  # expanded above
            out.append(node.log_probs)
        return out

    def message_probs(self, messages: list[np.ndarray]) -> list[np.ndarray]:
        """The probability of each symbol of each message (int64 symbol ids) after the symbols before it, every
        message read from a message start: one batched step per position for all messages at once (longest first,
        a message leaving the batch where it ends), without nodes, so the budget does not bound the batch. Each
        distribution normalised as ``Distribution.probs`` over its sum (float64)."""
        logp0, h0, c0 = self._initial
        out = [np.empty(len(m), np.float64) for m in messages]
        order = sorted((i for i, m in enumerate(messages) if len(m)), key=lambda i: -len(messages[i]))
        if not order:
            return out
        first = np.exp(np.asarray(logp0, np.float32).astype(np.float64))
        first /= first.sum()
        for i in order:
            out[i][0] = first[messages[i][0]]
        lengths = np.array([len(messages[i]) for i in order])
        h = np.repeat(np.asarray(h0)[:, None, :], len(order), axis=1)
        c = np.repeat(np.asarray(c0)[:, None, :], len(order), axis=1)
        for t in range(1, int(lengths[0])):
            rows = int(np.count_nonzero(lengths > t))  # the messages with a symbol at ``t``: a prefix, longest first
            symbols = np.array([messages[i][t - 1] for i in order[:rows]], np.int64)
            logp, h, c = self.backend.step(symbols, np.ascontiguousarray(h[:, :rows]), np.ascontiguousarray(c[:, :rows]))
            probs = np.exp(np.asarray(logp, np.float32).astype(np.float64))
            targets = np.array([messages[i][t] for i in order[:rows]], np.int64)
            picked = probs[np.arange(rows), targets] / probs.sum(axis=1)
            for k, i in enumerate(order[:rows]):
                out[i][t] = picked[k]
        return out

    def release(self, node: Node) -> None:
        """Release a node and its whole subtree (their handles become invalid)."""
        if node.released:
            return
        stack = [node]
        while stack:
            n = stack.pop()
            n.released = True
            if n.slot >= 0:
                del self._lru[n.slot]
                self._free.append(n.slot)
                n.slot = -1
            stack.extend(n.children.values())
            n.children = {}
        if node.parent is not None and node.parent.children.get(node.symbol) is node:
            del node.parent.children[node.symbol]
