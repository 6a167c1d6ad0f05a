"""The integer handles one API session gives its client, each on a Writer context.

A ``HandleTable`` is bookkeeping only: it never calls the Writer. It gives one handle per context (asking
again for a context that has a handle answers that handle), knows which handles are roots, forgets a
handle whose tree node is gone, and holds a session to ``max_handles`` handles and ``max_nodes`` tree
nodes under its roots. Not locked: its session serialises the calls.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator

from dasher_rnn.adapt.writer import Context
from dasher_rnn.alphabet import Alphabet
from dasher_rnn.api.limits import ApiError
from dasher_rnn.predictor.tree import Node


def live(context: Context) -> bool:
    """Whether the context can still be used: its tree node is not released (PPM and uniform contexts have none)."""
    return context.node is None or not context.node.released


def subtree_size(node: Node) -> int:
    """Nodes in a subtree, read while the worker may drop evicted leaves (``list`` snapshots each dict)."""
    count, stack = 0, [node]
    while stack:
        n = stack.pop()
        if not n.released:
            count += 1
            stack.extend(list(n.children.values()))
    return count


def existing_node(context: Context, symbols: str, alphabet: Alphabet) -> Node | None:
    """The tree node of ``symbols`` below ``context`` if it exists (None for PPM and uniform contexts)."""
    node = context.node
    for ch in symbols:
        node = node.children.get(alphabet.index(ch)) if node is not None else None
        if node is None or node.released:
            return None
    return node


class HandleTable:
    """Integer handles on Writer contexts, for the session ``owner`` (named in its errors).

    Iterating it, ``len`` and ``in`` see the handles. ``nodes`` counts the tree nodes under live roots: the
    session adds what it creates, and ``make_room`` counts them again when they would go over the limit."""

    def __init__(self, owner: str, max_handles: int, max_nodes: int) -> None:
        self.owner, self.max_handles, self.max_nodes = owner, max_handles, max_nodes
        self.contexts: dict[int, Context] = {}
        self.roots: set[int] = set()
        self.nodes = 0  # contexts under live roots, counted up on creation and recounted at the limit
        self._by_node: dict[int, int] = {}  # id(tree node) -> its handle: one handle per RNN context
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self.contexts)

    def __iter__(self) -> Iterator[int]:
        return iter(self.contexts)

    def __contains__(self, handle: object) -> bool:
        return handle in self.contexts

    def get(self, handle: int) -> Context:
        """The context of ``handle``; a 404 when there is none, or its node was released (the handle goes)."""
        context = self.contexts.get(handle)
        if context is None or not live(context):
            if self.contexts.pop(handle, None) is not None and context.node is not None \
                    and self._by_node.get(id(context.node)) == handle:
                del self._by_node[id(context.node)]
            raise ApiError(404, "unknown_context", f"no context {handle} in session {self.owner} "
                                                   "(never created, released, or under a released context)")
        return context

    def add(self, context: Context, root: bool = False) -> int:
        """The handle of ``context``: the one it has, or a new one."""
        key = id(context.node) if context.node is not None else None
        handle = self._by_node.get(key) if key is not None else None
        if handle is not None and self.contexts.get(handle) is not None and self.contexts[handle].node is context.node:
            return handle  # the context already has a handle
        handle = next(self._ids)
        self.contexts[handle] = context
        if key is not None:
            self._by_node[key] = handle
        if root:
            self.roots.add(handle)
        return handle

    def has_handle(self, node: Node | None) -> bool:
        """Whether the tree node ``node`` has a handle."""
        handle = self._by_node.get(id(node), -1) if node is not None else -1
        return handle in self.contexts and self.contexts[handle].node is node

    def is_root(self, handle: int) -> bool:
        return handle in self.roots

    def take(self, handle: int) -> Context:
        """Remove ``handle`` (a 404 as ``get`` when it is not there) and give its context, for the Writer to release."""
        context = self.get(handle)
        del self.contexts[handle]
        if context.node is not None:
            self._by_node.pop(id(context.node), None)
        self.roots.discard(handle)
        return context

    def discard(self, handle: int) -> None:
        """Remove ``handle`` alone, if it is there: its context stays in the tree (it may lie between others)."""
        context = self.contexts.pop(handle, None)
        if context is None:
            return
        if context.node is not None and self._by_node.get(id(context.node)) == handle:
            del self._by_node[id(context.node)]
        self.roots.discard(handle)

    def prune(self) -> None:
        """Forget the handles whose nodes were released (under a released context, or evicted)."""
        self.contexts = {h: c for h, c in self.contexts.items() if live(c)}
        self._by_node = {id(c.node): h for h, c in self.contexts.items() if c.node is not None}
        self.roots &= self.contexts.keys()

    async def make_room(self, handles: int, nodes: int) -> None:
        """A 429 unless ``handles`` more handles and ``nodes`` more tree nodes fit; before refusing, the dead
        handles are forgotten and the nodes under the roots counted again (on a worker thread)."""
        if len(self.contexts) + handles > self.max_handles:
            self.prune()
            if len(self.contexts) + handles > self.max_handles:
                raise ApiError(429, "too_many_handles", f"session {self.owner} holds {len(self.contexts)} contexts; "
                                                        f"the limit is {self.max_handles}: release some first")
        if self.nodes + nodes > self.max_nodes:
            roots = [self.contexts[h].node for h in self.roots if h in self.contexts]
            if all(r is not None for r in roots):
                self.nodes = await asyncio.to_thread(lambda: sum(subtree_size(r) for r in roots))
            else:  # PPM and uniform contexts hold no state: count handles
                self.nodes = len(self.contexts)
            if self.nodes + nodes > self.max_nodes:
                raise ApiError(429, "too_many_nodes", f"session {self.owner} has {self.nodes} context nodes; the limit "
                                                      f"is {self.max_nodes}: release contexts first")
