"""API sessions: one per user profile, each a predictor service plus (when adapting) a writing session,
with the context handles a client holds. No web framework here, so it can be driven and tested directly.

All methods are called from the event loop's thread (the registry and handle maps are not locked);
anything that blocks (loading a model, saving a profile, waiting on the predictor) runs on a worker
thread or is awaited as a future. Errors a client can cause raise ``ApiError`` with an HTTP status.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
import threading
import time
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from dasher_rnn.alphabet import Alphabet
from dasher_rnn.normalise import normalise
from dasher_rnn.predictor.service import Distribution, PredictorService, ServiceClosed, make_distributions
from dasher_rnn.predictor.tree import Node, NodeError

log = logging.getLogger(__name__)

MIXER_CONTEXT = 500  # characters of the message before a commit that the hybrid's weight update conditions on
MIXER_CHUNK = 256  # committed characters scored per request for the hybrid's weight update


@dataclass(frozen=True)
class Limits:
    """What one client may ask for (``dasher-rnn serve`` options)."""

    max_body_bytes: int = 256 * 1024  # one HTTP body or WebSocket message
    max_contexts: int = 256  # contexts in one request (distributions, batch creation, predict)
    max_sessions: int = 8
    max_handles: int = 10_000  # context handles one session holds
    max_nodes: int = 100_000  # tree nodes under one session's live roots (handles and the nodes between them)
    max_text: int = 10_000  # characters of one text (a root's context, a commit)
    max_symbols: int = 64  # symbols appended below a parent in one context creation

    def to_json(self) -> dict:
        return asdict(self)


class ApiError(Exception):
    """An error to hand back to the client: HTTP status, a stable code and a message saying what is wrong."""

    def __init__(self, status: int, code: str, message: str, **extra):
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra

    def body(self) -> dict:
        return {"error": {"code": self.code, "message": self.message, **self.extra}}


def check_text(text: str, alphabet: Alphabet, limits: Limits, what: str = "text", reject_unknown: bool = True,
               normalised: bool = True) -> str:
    """``text`` (normalised unless ``normalised`` is false); a 413 when too long, a 422 naming the first
    character outside the alphabet unless ``reject_unknown`` is false."""
    if len(text) > limits.max_text:
        raise ApiError(413, "text_too_long", f"{what} has {len(text)} characters; the limit is {limits.max_text}")
    if normalised:
        text = normalise(text)
    if reject_unknown:
        for i, ch in enumerate(text):
            if ch not in alphabet:
                raise ApiError(
                    422, "unknown_character",
                    f"{what}: character {ch!r} (U+{ord(ch):04X}) at position {i} is not in "
                    f"alphabet {alphabet.name!r}, whose symbols are {alphabet.symbols!r}",
                    character=ch, position=i, alphabet=alphabet.name, symbols=alphabet.symbols)
    return text


def check_count(count: int, limit: int, what: str) -> None:
    if count > limit:
        raise ApiError(413, "too_many_contexts", f"{count} {what} in one request; the limit is {limit}")


async def wait(future: Future) -> object:
    """Await a predictor or session future, mapping its errors onto API errors."""
    try:
        return await asyncio.wrap_future(future)
    except NodeError as exc:
        raise ApiError(404, "unknown_context", f"a requested context is gone: {exc}") from None
    except ServiceClosed:
        raise ApiError(409, "session_closed", "the session was closed") from None
    except RuntimeError as exc:  # the tree's state budget cannot hold one request
        if "budget" in str(exc):
            raise ApiError(413, "budget_exceeded", f"{exc}: ask for fewer or shallower contexts at once") from None
        raise


def _subtree_size(node: Node) -> int:
    """Nodes in a subtree, read while the worker may drop evicted leaves (``list`` snapshots each dict)."""
    count, stack = 0, [node]
    while stack:
        n = stack.pop()
        if not n.released:
            count += 1
            stack.extend(list(n.children.values()))
    return count


class ApiSession:
    """One client's session: handles (integers) on nodes of its predictor's context tree.

    A hybrid session (``mixer`` given) also keeps each handle's PPM context, mixes PPM into every
    distribution, and lets PPM and the mixing weights learn committed text and forget deleted text;
    a PPM session serves PPM's distributions alone (the tree's nodes then only name contexts)."""

    def __init__(self, sid: str, profile: str | None, adapt: bool, service: PredictorService, writing, limits: Limits,
                 mixer=None, mixer_file: Path | None = None, model: str = "rnn"):
        self.id, self.profile, self.adapt = sid, profile, adapt
        self.service, self.writing, self.limits = service, writing, limits
        self.mixer, self.mixer_file, self.model = mixer, mixer_file, model
        self.learns = adapt or profile is not None  # takes commits (learning them unless paused)
        self.mixer_notice: str | None = None  # a PPM state file that could not be used
        self.alphabet = service.alphabet
        self.handles: dict[int, Node] = {}
        self.ppm_contexts: dict[int, object] = {}  # handle -> PPM context (hybrid sessions)
        self._by_node: dict[int, int] = {}  # id(node) -> its handle: one handle per context
        self.roots: set[int] = set()
        self._ids = itertools.count(1)
        self._nodes = 0  # tree nodes under live roots, counted up on creation and recounted at the limit
        self.created = time.time()
        self.closed = False

    @property
    def notice(self) -> str | None:
        """What the user should know about this session's saved state (e.g. a profile set aside)."""
        writing_notice = self.writing.notice if self.writing is not None else None
        return "; ".join(filter(None, [writing_notice, self.mixer_notice])) or None

    def info(self) -> dict:
        out = {"session": self.id, "profile": self.profile, "model": self.model, "adapt": self.adapt,
               "contexts": len(self.handles),
               "backend": self.service.backend.name, "weights_version": self.service.weights_version}
        if self.writing is not None:
            out["adaptation"] = self.writing.stats()
        return out

    # -- handles ---------------------------------------------------------------------
    def node(self, handle: int) -> Node:
        node = self.handles.get(handle)
        if node is None or node.released:
            self.ppm_contexts.pop(handle, None)
            if self.handles.pop(handle, None) is not None and self._by_node.get(id(node)) == handle:
                del self._by_node[id(node)]
            raise ApiError(404, "unknown_context", f"no context {handle} in session {self.id} "
                                                   "(never created, released, or under a released context)")
        return node

    def _register(self, node: Node, root: bool = False, ppm_context=None) -> int:
        handle = self._by_node.get(id(node))
        if handle is not None and self.handles.get(handle) is node:
            return handle  # the context already has a handle
        handle = next(self._ids)
        self.handles[handle] = node
        self._by_node[id(node)] = handle
        if self.mixer is not None:
            self.ppm_contexts[handle] = ppm_context
        if root:
            self.roots.add(handle)
        return handle

    async def _make_room(self, handles: int, nodes: int) -> None:
        if len(self.handles) + handles > self.limits.max_handles:
            self.handles = {h: n for h, n in self.handles.items() if not n.released}
            self._by_node = {id(n): h for h, n in self.handles.items()}
            self.ppm_contexts = {h: c for h, c in self.ppm_contexts.items() if h in self.handles}
            self.roots &= self.handles.keys()
            if len(self.handles) + handles > self.limits.max_handles:
                raise ApiError(429, "too_many_handles", f"session {self.id} holds {len(self.handles)} contexts; the limit "
                                                        f"is {self.limits.max_handles}: release some first")
        if self._nodes + nodes > self.limits.max_nodes:
            roots = [self.handles[h] for h in self.roots if h in self.handles]
            self._nodes = await asyncio.to_thread(lambda: sum(_subtree_size(r) for r in roots))
            if self._nodes + nodes > self.limits.max_nodes:
                raise ApiError(429, "too_many_nodes", f"session {self.id} has {self._nodes} context nodes; the limit "
                                                      f"is {self.limits.max_nodes}: release contexts first")

    async def create_roots(self, texts: list[str], reject_unknown: bool = True) -> list[int]:
        texts = [check_text(t, self.alphabet, self.limits, "context text", reject_unknown) for t in texts]
        await self._make_room(len(texts), len(texts))
        futures = [self._service_call(self.service.root_async, t) for t in texts]
        nodes = [await wait(f) for f in futures]
        self._nodes += len(nodes)
        contexts = [self.mixer.context_after(t) if self.mixer else None for t in texts]
        return [self._register(n, root=True, ppm_context=c) for n, c in zip(nodes, contexts, strict=True)]

    async def create_children(self, specs: list[tuple[int, str]]) -> list[int]:
        """Contexts ``symbols`` below each ``parent`` handle."""
        parents = []
        for parent, symbols in specs:
            if len(symbols) > self.limits.max_symbols:
                raise ApiError(413, "too_many_symbols", f"{len(symbols)} symbols below a parent in one step; the limit "
                                                        f"is {self.limits.max_symbols} (start a new root instead)")
            check_text(symbols, self.alphabet, self.limits, "symbols", normalised=False)
            parents.append(self.node(parent))
        fresh = sum(not self._has_handle(self._existing(p, sy)) for p, (_, sy) in zip(parents, specs, strict=True))
        await self._make_room(fresh, sum(len(s) for _, s in specs))
        out = []
        for (parent_handle, symbols), parent in zip(specs, parents, strict=True):
            node, ppm_context = parent, self.ppm_contexts.get(parent_handle)
            for ch in symbols:
                existing = node.children.get(self.alphabet.index(ch))
                node = self._service_call(self.service.child, node, ch)
                self._nodes += existing is not node
                if self.mixer is not None:
                    ppm_context = self.mixer.entered(ppm_context, self.alphabet.index(ch))
            out.append(self._register(node, ppm_context=ppm_context))
        return out

    def _existing(self, node: Node | None, symbols: str) -> Node | None:
        for ch in symbols:
            node = node.children.get(self.alphabet.index(ch)) if node is not None else None
            if node is None or node.released:
                return None
        return node

    def _has_handle(self, node: Node | None) -> bool:
        return node is not None and self.handles.get(self._by_node.get(id(node), -1)) is node

    def release(self, handle: int) -> None:
        node = self.node(handle)
        del self.handles[handle]
        self.ppm_contexts.pop(handle, None)
        self._by_node.pop(id(node), None)
        self.roots.discard(handle)
        self._service_call(self.service.release, node)

    async def distributions(self, handles: list[int], priority: float = 0.0) -> list[Distribution]:
        check_count(len(handles), self.limits.max_contexts, "contexts")
        nodes = [self.node(h) for h in handles]
        if self.mixer is None:
            return await wait(self._service_call(self.service.request, nodes, priority))
        contexts = [self.ppm_contexts[h] for h in handles]
        if self.model == "ppm":
            probs = [self.mixer.ppm.probs_at(c) for c in contexts]
        else:
            dists = await wait(self._service_call(self.service.request, nodes, priority))
            probs = [self.mixer.mix(d.probs, c) for d, c in zip(dists, contexts, strict=True)]
        return make_distributions([np.log(p).astype(np.float32) for p in probs], self.service.floor)

    def _service_call(self, fn, *args):
        try:
            return fn(*args)
        except NodeError as exc:
            raise ApiError(404, "unknown_context", f"a requested context is gone: {exc}") from None
        except ServiceClosed:
            raise ApiError(409, "session_closed", f"session {self.id} was closed") from None

    # -- adaptation ----------------------------------------------------------------------
    def _check_learning(self) -> None:
        if not self.learns:
            raise ApiError(409, "not_adapting", f"session {self.id} was opened without adaptation or profile")

    async def _settle(self, wait_: bool) -> None:
        if wait_ and self.writing is not None:
            await asyncio.to_thread(self.writing.flush)

    async def commit(self, text: str, wait_: bool = False, reject_unknown: bool = True) -> None:
        self._check_learning()
        text = check_text(text, self.alphabet, self.limits, "committed text", reject_unknown)
        if self.mixer is not None:
            await self._mixer_commit(text)
        if self.writing is not None:
            self.writing.commit(text)
        await self._settle(wait_)

    async def _mixer_commit(self, text: str) -> None:
        """PPM learns ``text``; a character outside the alphabet ends the message, as in the RNN's writing
        session."""
        runs, current = [], []
        for ch in text:
            if ch in self.alphabet:
                current.append(ch)
            else:
                runs += ["".join(current), None]
                current = []
        for run in [*runs, "".join(current)]:
            if run is None:
                self.mixer.new_message()
            elif run:
                await self._mixer_learn(run)

    async def _mixer_learn(self, run: str) -> None:
        """The mixing weights learn from the RNN's probability of each character of ``run`` after the
        message so far (its last ``MIXER_CONTEXT`` characters), asked for in one batched request."""
        mixer = self.mixer
        if not self.adapt or self.model == "ppm":  # no RNN probabilities needed (or nothing learns: paused)
            for ch in run:
                mixer.commit(self.alphabet.index(ch), learn=self.adapt)
            return
        for start in range(0, len(run), MIXER_CHUNK):  # a chunk's contexts fit in the tree's state budget
            chunk = run[start : start + MIXER_CHUNK]
            context = self.alphabet.decode(mixer.message[-MIXER_CONTEXT:])
            root = await wait(self._service_call(self.service.root_async, context))
            try:
                nodes = [root]
                for ch in chunk[:-1]:
                    nodes.append(self._service_call(self.service.child, nodes[-1], ch))
                dists = await wait(self._service_call(self.service.request, nodes))
            finally:
                self._service_call(self.service.release, root)
            for ch, dist in zip(chunk, dists, strict=True):
                symbol = self.alphabet.index(ch)
                mixer.commit(symbol, float(dist.probs[symbol]), learn=self.adapt)

    async def delete(self, count: int, wait_: bool = False) -> None:
        self._check_learning()
        if not 1 <= count <= self.limits.max_text:
            raise ApiError(422, "bad_count", f"delete count must be 1..{self.limits.max_text}, not {count}")
        if self.mixer is not None:
            self.mixer.uncommit(count)
        if self.writing is not None:
            self.writing.delete(count)
        await self._settle(wait_)

    async def reset(self, wait_: bool = False) -> None:
        """A message boundary: what is committed next starts a new message."""
        self._check_learning()
        if self.writing is not None:
            self.writing.new_message()
        if self.mixer is not None:
            self.mixer.new_message()
        await self._settle(wait_)

    async def set_adapting(self, enabled: bool) -> None:
        self._check_learning()
        if self.writing is not None:
            self.writing.resume() if enabled else self.writing.pause()
        self.adapt = enabled
        await self._settle(True)

    async def save_profile(self) -> dict:
        self._check_learning()
        if self.profile is None:
            raise ApiError(409, "no_profile", f"session {self.id} has no profile to save")
        if self.writing is not None:
            await asyncio.wrap_future(self.writing.save_profile())
        if self.mixer_file is not None:
            await asyncio.to_thread(self.mixer.save, self.mixer_file)
        adapted = self.writing.characters_adapted if self.writing is not None else None
        return {"profile": self.profile, "characters_adapted": adapted}

    def close(self, save: bool = True) -> None:
        """Blocking: save the profile (when asked and there is one) and stop both workers."""
        self.closed = True
        try:
            if self.writing is not None:
                self.writing.close(save=save)
            if save and self.mixer_file is not None:
                self.mixer.save(self.mixer_file)
        finally:
            self.service.close()


class Registry:
    """The server's sessions, the shared stateless predictor and the limits."""

    def __init__(self, model_dir: str | Path, limits: Limits | None = None, profiles_dir: str | Path | None = None,
                 backend: str = "auto", threads: int | None = None, budget: int = 3000, adapt_config=None,
                 ppm_train: list[str] | None = None):
        from dasher_rnn.lm.model_io import read_checked_config

        self.model_dir = Path(model_dir)
        self.config, self.alphabet = read_checked_config(self.model_dir)
        self.limits = limits or Limits()
        self.profiles_dir, self.backend, self.threads, self.budget = profiles_dir, backend, threads, budget
        self.adapt_config = adapt_config
        self.ppm_train = ppm_train or []
        self._ppm = None  # the hybrid's trained PPM, built at the first session that needs it and forked for each
        self._ppm_lock = threading.Lock()
        self.sessions: dict[str, ApiSession] = {}
        self._opening: dict[str, str] = {}  # profile -> placeholder while its session loads
        self.base: PredictorService | None = None
        self._store = None
        self.started = time.time()

    # -- lifetime --------------------------------------------------------------------
    async def start(self) -> None:
        self.base = await asyncio.to_thread(PredictorService.from_dir, self.model_dir, self.backend, self.threads,
                                            budget=self.budget)

    async def close_all(self, save: bool = True) -> None:
        sessions, self.sessions = list(self.sessions.values()), {}
        await asyncio.gather(*(asyncio.to_thread(s.close, save) for s in sessions), return_exceptions=True)
        if self.base is not None:
            self.base.close()

    # -- sessions --------------------------------------------------------------------
    @property
    def store(self):
        if self._store is None:
            from dasher_rnn.adapt.profiles import ProfileStore

            self._store = ProfileStore(self.profiles_dir)
        return self._store

    def get(self, sid: str) -> ApiSession:
        session = self.sessions.get(sid)
        if session is None:
            raise ApiError(404, "unknown_session", f"no session {sid!r} (closed, or never opened on this server)")
        return session

    def list(self) -> list[dict]:
        return [{"session": s.id, "profile": s.profile, "model": s.model, "adapt": s.adapt, "contexts": len(s.handles)}
                for s in self.sessions.values()]

    async def open(self, profile: str | None, adapt: bool = True, model: str = "hybrid") -> ApiSession:
        from dasher_rnn.adapt.profiles import ProfileError, check_name

        if profile is not None:
            try:
                check_name(profile)
            except ProfileError as exc:
                raise ApiError(422, "invalid_profile", str(exc)) from None
            for s in self.sessions.values():
                if s.profile == profile:
                    raise ApiError(409, "profile_in_use", f"profile {profile!r} is open in session {s.id}: use it, "
                                                          "or close it first", session=s.id)
            if profile in self._opening:
                raise ApiError(409, "profile_in_use", f"profile {profile!r} is being opened by another request")
        if len(self.sessions) + len(self._opening) >= self.limits.max_sessions:
            raise ApiError(429, "too_many_sessions", f"{self.limits.max_sessions} sessions are open, the limit: "
                                                     "close one first")
        key = profile if profile is not None else f"\x00{secrets.token_hex(8)}"
        self._opening[key] = key
        try:
            session = await asyncio.to_thread(self._load, profile, adapt, model)
        finally:
            del self._opening[key]
        self.sessions[session.id] = session
        return session

    def _trained_ppm(self):
        from dasher_rnn.factory import build_ppm
        from dasher_rnn.lm.hybrid import HYBRID_PPM_ORDER

        with self._ppm_lock:
            if self._ppm is None:
                self._ppm = build_ppm(self.ppm_train, self.alphabet.name, max_order=HYBRID_PPM_ORDER)[0]
            return self._ppm.fork()

    def _load(self, profile: str | None, adapt: bool, model: str = "hybrid") -> ApiSession:
        from dasher_rnn.adapt.session import WritingSession
        from dasher_rnn.factory import HYBRID_STATE_FILE
        from dasher_rnn.lm.hybrid import HybridMixer

        mixer = mixer_file = notice = None
        if model in ("hybrid", "ppm"):
            mixer = HybridMixer(self._trained_ppm())
            if profile is not None:
                mixer_file = self.store.path(profile) / HYBRID_STATE_FILE
                notice = mixer.load(mixer_file)
        stateful = (adapt or profile is not None) and model != "ppm"  # PPM alone needs no RNN writing session
        # adapted weights are swapped into the predictor, which only the torch backends can do
        backend = ("cuda" if self.backend == "cuda" else "torch") if stateful else self.backend
        service = PredictorService.from_dir(self.model_dir, backend, self.threads, budget=self.budget)
        writing = None
        if stateful:
            try:
                writing = WritingSession(self.model_dir, self.adapt_config, profile=profile,
                                         store=self.store if profile is not None else None, service=service, adapt=adapt)
            except BaseException:
                service.close()
                raise
        sid = secrets.token_hex(8)
        session = ApiSession(sid, profile, adapt, service, writing, self.limits, mixer, mixer_file, model)
        session.mixer_notice = notice
        return session

    async def close(self, sid: str, save: bool = True) -> dict:
        session = self.get(sid)
        del self.sessions[sid]
        await asyncio.to_thread(session.close, save)
        return {"session": sid, "closed": True, "saved": bool(save and session.profile is not None)}

    # -- stateless -------------------------------------------------------------------
    async def predict(self, texts: list[str], reject_unknown: bool = True) -> list[Distribution]:
        check_count(len(texts), self.limits.max_contexts, "contexts")
        texts = [check_text(t, self.alphabet, self.limits, "context text", reject_unknown) for t in texts]
        if self.base is None:
            raise ApiError(503, "starting", "the predictor is still loading")
        roots = [await wait(f) for f in [self.base.root_async(t) for t in texts]]
        try:
            return await wait(self.base.request(roots))
        finally:
            for r in roots:
                try:
                    self.base.release(r)
                except ServiceClosed:
                    break

