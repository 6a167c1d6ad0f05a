"""The predictor service: a worker thread that owns the context tree and answers in batches.

Callers never wait on the model: ``child`` only creates a handle, ``request`` returns a
``Future`` (and optionally calls back), and everything that touches states runs on the worker.
Pending requests are merged into one batch per round, highest priority (box size) first, up to
``max_batch`` nodes; cancelled requests are dropped. A root whose text is longer than ``root_chunk``
symbols is read ``root_chunk`` symbols per round, in one batched step with every other long root being
read, so that requests and short roots are served between its chunks (a long context never holds up
the others) and a cancelled one stops at the next chunk. Blocking conveniences (``root``,
``distributions``, ``predict_texts``) just wait on those futures.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dasher_rnn.alphabet import Alphabet
from dasher_rnn.lm.protocol import DASHER_FLOOR, quantise
from dasher_rnn.predictor.backends import Backend, make_backend
from dasher_rnn.predictor.tree import ContextTree, Node, RootRead

if TYPE_CHECKING:
    from dasher_rnn.lm.state_adapter import AdapterSpec


class ServiceClosed(RuntimeError):
    """The predictor was shut down."""


@dataclass(frozen=True)
class Distribution:
    """A next-symbol distribution in alphabet order: float32 log-probabilities and Dasher's integers."""

    log_probs: np.ndarray
    counts: np.ndarray  # int64, sums exactly to 65536, every symbol at least the floor

    @cached_property
    def probs(self) -> np.ndarray:
        return np.exp(self.log_probs.astype(np.float64))


def make_distributions(log_probs: list[np.ndarray], floor: float) -> list[Distribution]:
    if not log_probs:
        return []
    stacked = np.stack(log_probs)
    counts = quantise(np.exp(stacked.astype(np.float64)), floor)
    out = []
    for lp, ct in zip(stacked, counts, strict=True):
        lp.setflags(write=False)
        ct.setflags(write=False)
        out.append(Distribution(lp, ct))
    return out


@dataclass(order=True)
class _Request:
    sort_key: tuple[float, int]
    nodes: list[Node]
    future: Future
    callback: Callable[[list[Distribution]], None] | None


@dataclass(eq=False)
class _Root:
    text: str
    future: Future
    read: RootRead | None = None
    weights_version: int = 0  # of the weights it is read with: a swap starts the read again

    @property
    def reading(self) -> RootRead:
        """The read under way (the worker starts it before it reads or finishes the root)."""
        assert self.read is not None
        return self.read


_STOP = object()


class PredictorService:
    def __init__(self, backend: Backend, alphabet: Alphabet, budget: int = 3000, floor: float = DASHER_FLOOR,
                 max_batch: int = 256, root_chunk: int = 64):
        if root_chunk < 1:
            raise ValueError("root_chunk must be at least 1")
        self.backend, self.alphabet, self.floor, self.max_batch = backend, alphabet, floor, max_batch
        self.root_chunk = root_chunk
        self._reads: list[_Root] = []  # long roots being read, a chunk per round
        self.tree = ContextTree(backend, alphabet, budget)
        self.weights_version = 0
        self._commands: queue.Queue = queue.Queue()
        self._pending: list[_Request] = []
        self._order = itertools.count()
        self._closed = False
        self._worker = threading.Thread(target=self._run, name="predictor", daemon=True)
        self._worker.start()

    @classmethod
    def from_dir(cls, model_dir: str | Path, backend: str = "auto", threads: int | None = None,
                 **kwargs) -> PredictorService:
        """A service for a model folder (the composition root, ``dasher_rnn.adapt.compose``, builds one from a folder
        it has already read; this is the stand-alone shortcut)."""
        from dasher_rnn.lm.model_io import read_checked_config

        _, alphabet = read_checked_config(Path(model_dir))
        return cls(make_backend(model_dir, backend, threads), alphabet, **kwargs)

    # -- calls from any thread ---------------------------------------------------
    def child(self, node: Node, symbol: int | str) -> Node:
        self._check_open()
        return self.tree.child(node, symbol)

    def request(self, nodes: list[Node], priority: float = 0.0,
                callback: Callable[[list[Distribution]], None] | None = None) -> Future:
        """Distributions of ``nodes`` (in order) as a Future; larger ``priority`` is served first."""
        self._check_open()
        for node in nodes:
            self.tree.check(node)
        future: Future = Future()
        self._commands.put(_Request((-priority, next(self._order)), list(nodes), future, callback))
        return future

    def root_async(self, text: str = "") -> Future:
        """A root node for a message start (``""``) or the context ``text``. Cancelling the future stops reading a
        long text at its next chunk."""
        self._check_open()
        future: Future = Future()
        self._commands.put(_Root(text, future))
        return future

    def release(self, node: Node) -> None:
        """Free a node and its subtree; their handles become invalid."""
        self._check_open()
        self.tree.check(node)
        node.releasing = True  # from now on ``child`` makes a fresh node for this context
        self._call(self.tree.release, node)

    def set_weights(self, state_dict: dict, adapter: AdapterSpec | None = None) -> Future:
        """Use new weights for every expansion from now on; distributions already handed out keep theirs.
        ``adapter``: the ``AdapterSpec`` of the state adapter whose parameters ``state_dict`` includes. The backend
        prepares them on the calling thread (the onnxruntime backend builds its new session here) and may read
        ``state_dict`` later on the worker (torch), so the caller hands over a copy it no longer changes; call it
        from one thread, so that the swaps happen in the order of the calls."""
        self._check_open()
        if not getattr(self.backend, "can_swap_weights", False):
            raise NotImplementedError(f"the {self.backend.name} backend cannot swap weights; use a torch backend")
        install = self.backend.prepare_weights(state_dict, adapter)  # on the caller's thread: the worker serves on

        def swap():
            install()
            self.tree.new_weights()
            self.weights_version += 1
            return self.weights_version

        return self._call(swap)

    def message_probs(self, messages: list[np.ndarray]) -> Future:
        """The probability of each symbol of each message after the symbols before it, every message read from a
        message start, all in one batched pass on the worker (``ContextTree.message_probs``): a list of float64
        arrays as a Future. The tree's nodes are untouched; the requests queued meanwhile wait for the pass, so the
        caller keeps batches to what it can wait for."""
        return self._call(self.tree.message_probs, [np.asarray(m, np.int64) for m in messages])

    # -- blocking conveniences ---------------------------------------------------
    def root(self, text: str = "") -> Node:
        return self.root_async(text).result()

    def distributions(self, nodes: list[Node], priority: float = 0.0) -> list[Distribution]:
        return self.request(nodes, priority).result()

    def predict_texts(self, texts: list[str]) -> list[Distribution]:
        """Stateless use: the next-symbol distribution after each context string."""
        roots = [self.root(t) for t in texts]
        try:
            return self.distributions(roots)
        finally:
            for r in roots:
                self.release(r)

    def close(self, timeout: float | None = 10.0) -> None:
        """Stop the worker; requests still pending fail with ``ServiceClosed``."""
        if self._closed:
            return
        self._closed = True
        self._commands.put(_STOP)
        self._worker.join(timeout)

    def __enter__(self) -> PredictorService:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- worker ------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise ServiceClosed("the predictor service was shut down")

    def _call(self, fn, *args) -> Future:
        self._check_open()
        future: Future = Future()
        self._commands.put((fn, args, future))
        return future

    def _run(self) -> None:
        stop = False
        while not stop:
            items = [self._commands.get()] if not self._pending and not self._reads else []
            while True:
                try:
                    items.append(self._commands.get_nowait())
                except queue.Empty:
                    break
            for item in items:
                if item is _STOP:
                    stop = True
                elif isinstance(item, _Request):
                    heapq.heappush(self._pending, item)
                elif isinstance(item, _Root):
                    self._start_root(item)
                else:
                    fn, args, future = item
                    if future.set_running_or_notify_cancel():
                        try:
                            future.set_result(fn(*args))
                        except Exception as exc:  # handed to the caller through the future
                            future.set_exception(exc)
            if not stop:
                self._serve_batch()
                self._read_roots()
        unfinished: list[_Request | _Root] = [*self._pending, *self._reads]
        for request in unfinished:
            if not request.future.done():
                request.future.set_exception(ServiceClosed("the predictor service was shut down"))
        self._pending.clear()
        self._reads.clear()
        while True:  # fail whatever arrived after the stop
            try:
                item = self._commands.get_nowait()
            except queue.Empty:
                break
            future = item.future if isinstance(item, (_Request, _Root)) else item[2] if isinstance(item, tuple) else None
            if future is not None and not future.done():
                future.set_exception(ServiceClosed("the predictor service was shut down"))

    def _start_root(self, job: _Root) -> None:
        if job.future.cancelled():
            return
        try:
            job.read = self.tree.start_root(job.text)
            job.weights_version = self.weights_version
            if job.read.remaining <= self.root_chunk:  # short: read now, in order with the other commands
                self.tree.advance([job.read], self.root_chunk)
                self._finish_root(job)
            else:
                self._reads.append(job)
        except Exception as exc:
            job.future.set_exception(exc)

    def _finish_root(self, job: _Root) -> None:
        if job.future.set_running_or_notify_cancel():  # False when the caller cancelled it
            try:
                job.future.set_result(self.tree.finish_root(job.reading))
            except Exception as exc:
                job.future.set_exception(exc)

    def _read_roots(self) -> None:
        """One chunk of every long root being read (dropping cancelled ones, restarting any whose weights changed)."""
        if not self._reads:
            return
        jobs = []
        for job in self._reads:
            if job.future.cancelled():
                continue
            if job.weights_version != self.weights_version:
                job.read, job.weights_version = self.tree.start_root(job.text), self.weights_version
            jobs.append(job)
        try:
            self.tree.advance([job.reading for job in jobs], self.root_chunk)
        except Exception as exc:
            for job in jobs:
                if job.future.set_running_or_notify_cancel():
                    job.future.set_exception(exc)
            jobs = []
        self._reads = []
        for job in jobs:
            if job.reading.remaining:
                self._reads.append(job)
            else:
                self._finish_root(job)

    def _serve_batch(self) -> None:
        batch: list[_Request] = []
        size = 0
        while self._pending and (not batch or size + len(self._pending[0].nodes) <= self.max_batch):
            request = heapq.heappop(self._pending)
            if request.future.set_running_or_notify_cancel():  # False when the caller cancelled it
                batch.append(request)
                size += len(request.nodes)
        if not batch:
            return
        try:
            results = self._expand([n for r in batch for n in r.nodes])
            start = 0
            for r in batch:
                self._resolve(r, results[start : start + len(r.nodes)])
                start += len(r.nodes)
        except Exception:  # one bad request (e.g. a released ancestor) must not fail the others
            for r in batch:
                try:
                    self._resolve(r, self._expand(r.nodes))
                except Exception as exc:
                    r.future.set_exception(exc)

    def _expand(self, nodes: list[Node]) -> list[Distribution]:
        return make_distributions(self.tree.expand(nodes), self.floor)

    @staticmethod
    def _resolve(request: _Request, result: list[Distribution]) -> None:
        request.future.set_result(result)
        if request.callback is not None:
            try:
                request.callback(result)
            except Exception:  # a broken callback must not stop the service
                logging.getLogger(__name__).exception("predictor callback failed")
