"""API sessions: one per user profile, each a Writer with the context handles a client holds. No web
framework here, so it can be driven and tested directly.

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
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeVar

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.adapt.profiles import ProfileError
from dasher_rnn.adapt.writer import Context, Writer, WriterError
from dasher_rnn.alphabet import Alphabet
from dasher_rnn.normalise import normalise
from dasher_rnn.predictor.service import Distribution, ServiceClosed
from dasher_rnn.predictor.tree import Node, NodeError

log = logging.getLogger(__name__)

T = TypeVar("T")
EXPIRED_KEPT = 1000  # ids of expired sessions remembered, to answer them with session_expired


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
    idle_timeout_s: float = 1800.0  # a session unused this long is closed (its profile saved); 0: never
    request_timeout_s: float = 30.0  # a prediction request running longer is stopped (503 timeout); 0: never

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


async def within(limits: Limits, work: Awaitable[T]) -> T:
    """``work`` under the request time limit: past it, the work is cancelled (what the predictor has not started is
    dropped, a long context stops at its next chunk) and the client gets a 503 ``timeout``."""
    if not limits.request_timeout_s > 0:
        return await work
    try:
        return await asyncio.wait_for(work, limits.request_timeout_s)
    except TimeoutError:
        raise ApiError(503, "timeout", f"the request took over {limits.request_timeout_s:g} s and was stopped: ask for "
                                       "fewer or shorter contexts at once") from None


def release_when_done(futures: list[Future], release: Callable[[Context], None]) -> None:
    """Cancel ``futures`` of contexts nobody will use (a request stopped or failed), releasing those that come."""
    def done(future: Future) -> None:
        if not future.cancelled() and future.exception() is None:
            try:
                release(future.result())
            except (ServiceClosed, NodeError):
                pass

    for future in futures:
        if not future.cancel():
            future.add_done_callback(done)


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
    """One client's session: integer handles on the contexts of its Writer.

    Operations on one session are serialised (``lock``); anything that may block (reading a context,
    learning the mixing weights, saving) runs on a worker thread, so the event loop stays free."""

    def __init__(self, sid: str, writer: Writer, limits: Limits, adapt: bool, profile: str | None,
                 clock: Callable[[], float] = time.monotonic):
        self.id, self.writer, self.limits = sid, writer, limits
        self.profile, self.adapt, self.model = profile, adapt, writer.model
        self.learns = adapt or profile is not None  # takes commits (learning them unless paused)
        self.alphabet = writer.alphabet
        self.handles: dict[int, Context] = {}
        self._by_node: dict[int, int] = {}  # id(tree node) -> its handle: one handle per RNN context
        self.roots: set[int] = set()
        self._ids = itertools.count(1)
        self._nodes = 0  # contexts under live roots, counted up on creation and recounted at the limit
        self.lock = asyncio.Lock()
        self.created = time.time()
        self.clock = clock  # seconds, for the idle timeout
        self.last_used = clock()
        self.active = 0  # requests in progress
        self.connections = 0  # open WebSockets
        self.closed = False

    @contextmanager
    def in_use(self) -> Iterator[ApiSession]:
        """Marks a request in progress: the session is not idle while it runs, nor until the idle timeout after."""
        self.active += 1
        self.touch()
        try:
            yield self
        finally:
            self.active -= 1
            self.touch()

    def touch(self) -> None:
        """The session was used now: its idle time starts again."""
        self.last_used = self.clock()

    def idle_for(self, now: float) -> float:
        """Seconds since the session was last used; 0 while a request runs or a WebSocket is open."""
        return 0.0 if self.active or self.connections else max(0.0, now - self.last_used)

    @property
    def notice(self) -> str | None:
        """What the user should know about this session's saved state (e.g. a profile set aside)."""
        return self.writer.status().notice

    def info(self) -> dict:
        status = self.writer.status()
        out = {"session": self.id, "profile": self.profile, "model": self.model, "adapt": self.adapt,
               "contexts": len(self.handles), "backend": status.backend, "weights_version": status.weights_version}
        if status.can_adapt:  # the session's own fields already say model, backend and weights version
            out["adaptation"] = {k: v for k, v in status.to_json().items() if k not in ("model", "backend", "weights_version")}
        return out

    # -- handles ---------------------------------------------------------------------
    def _live(self, context: Context) -> bool:
        return context.node is None or not context.node.released

    def node(self, handle: int) -> Context:
        context = self.handles.get(handle)
        if context is None or not self._live(context):
            if self.handles.pop(handle, None) is not None and context.node is not None \
                    and self._by_node.get(id(context.node)) == handle:
                del self._by_node[id(context.node)]
            raise ApiError(404, "unknown_context", f"no context {handle} in session {self.id} "
                                                   "(never created, released, or under a released context)")
        return context

    def _register(self, context: Context, root: bool = False) -> int:
        key = id(context.node) if context.node is not None else None
        handle = self._by_node.get(key) if key is not None else None
        if handle is not None and self.handles.get(handle) is not None and self.handles[handle].node is context.node:
            return handle  # the context already has a handle
        handle = next(self._ids)
        self.handles[handle] = context
        if key is not None:
            self._by_node[key] = handle
        if root:
            self.roots.add(handle)
        return handle

    async def _make_room(self, handles: int, nodes: int) -> None:
        if len(self.handles) + handles > self.limits.max_handles:
            self.handles = {h: c for h, c in self.handles.items() if self._live(c)}
            self._by_node = {id(c.node): h for h, c in self.handles.items() if c.node is not None}
            self.roots &= self.handles.keys()
            if len(self.handles) + handles > self.limits.max_handles:
                raise ApiError(429, "too_many_handles", f"session {self.id} holds {len(self.handles)} contexts; the limit "
                                                        f"is {self.limits.max_handles}: release some first")
        if self._nodes + nodes > self.limits.max_nodes:
            roots = [self.handles[h].node for h in self.roots if h in self.handles]
            if all(r is not None for r in roots):
                self._nodes = await asyncio.to_thread(lambda: sum(_subtree_size(r) for r in roots))
            else:  # PPM and uniform contexts hold no state: count handles
                self._nodes = len(self.handles)
            if self._nodes + nodes > self.limits.max_nodes:
                raise ApiError(429, "too_many_nodes", f"session {self.id} has {self._nodes} context nodes; the limit "
                                                      f"is {self.limits.max_nodes}: release contexts first")

    async def create_roots(self, texts: list[str], reject_unknown: bool = True) -> list[int]:
        texts = [check_text(t, self.alphabet, self.limits, "context text", reject_unknown) for t in texts]
        async with self.lock:
            await self._make_room(len(texts), len(texts))
            futures = [self._call(self.writer.root_async, t) for t in texts]
            try:
                contexts = [await wait(f) for f in futures]
            except BaseException:  # stopped (the time limit) or failed: none of them gets a handle
                release_when_done(futures, self.writer.release)
                raise
            self._nodes += len(contexts)
            return [self._register(c, root=True) for c in contexts]

    async def create_children(self, specs: list[tuple[int, str]]) -> list[int]:
        """Contexts ``symbols`` below each ``parent`` handle."""
        async with self.lock:
            parents = []
            for parent, symbols in specs:
                if len(symbols) > self.limits.max_symbols:
                    raise ApiError(413, "too_many_symbols", f"{len(symbols)} symbols below a parent in one step; the "
                                                            f"limit is {self.limits.max_symbols} (start a new root instead)")
                check_text(symbols, self.alphabet, self.limits, "symbols", normalised=False)
                parents.append(self.node(parent))
            fresh = sum(not self._has_handle(self._existing(p, sy)) for p, (_, sy) in zip(parents, specs, strict=True))
            await self._make_room(fresh, sum(len(s) for _, s in specs))
            out = []
            for (_, symbols), parent in zip(specs, parents, strict=True):
                context = parent
                for ch in symbols:
                    existing = self._existing(context, ch)
                    context = self._call(self.writer.child, context, ch)
                    self._nodes += existing is None or existing is not context.node
                out.append(self._register(context))
            return out

    def _existing(self, context: Context, symbols: str):
        """The tree node of ``symbols`` below ``context`` if it exists (None for PPM and uniform contexts)."""
        node = context.node
        for ch in symbols:
            node = node.children.get(self.alphabet.index(ch)) if node is not None else None
            if node is None or node.released:
                return None
        return node

    def _has_handle(self, node) -> bool:
        handle = self._by_node.get(id(node), -1) if node is not None else -1
        return handle in self.handles and self.handles[handle].node is node

    def release(self, handle: int) -> None:
        context = self.node(handle)
        del self.handles[handle]
        if context.node is not None:
            self._by_node.pop(id(context.node), None)
        self.roots.discard(handle)
        self._call(self.writer.release, context)

    def forget(self, handles: list[int]) -> None:
        """Drop handles made by a request that did not answer: its roots are released; a child's node stays (it may
        lie between other contexts) and only loses its handle."""
        for handle in handles:
            context = self.handles.get(handle)
            if context is None:
                continue
            if handle in self.roots:
                try:
                    self.release(handle)
                except ApiError:
                    pass
            else:
                del self.handles[handle]
                if context.node is not None and self._by_node.get(id(context.node)) == handle:
                    del self._by_node[id(context.node)]

    async def distributions(self, handles: list[int], priority: float = 0.0) -> list[Distribution]:
        check_count(len(handles), self.limits.max_contexts, "contexts")
        async with self.lock:
            contexts = [self.node(h) for h in handles]
            return await wait(self._call(self.writer.request, contexts, priority))

    def _call(self, fn, *args):
        try:
            return fn(*args)
        except NodeError as exc:
            raise ApiError(404, "unknown_context", f"a requested context is gone: {exc}") from None
        except ServiceClosed:
            raise ApiError(409, "session_closed", f"session {self.id} was closed") from None

    async def _in_thread(self, fn, *args):
        try:
            return await asyncio.to_thread(self._call, fn, *args)
        except RuntimeError as exc:  # the tree's state budget cannot hold one request
            if "budget" in str(exc):
                raise ApiError(413, "budget_exceeded", f"{exc}: commit less text at once") from None
            raise

    # -- adaptation ----------------------------------------------------------------------
    def _check_learning(self) -> None:
        if not self.learns:
            raise ApiError(409, "not_adapting", f"session {self.id} was opened without adaptation or profile")

    async def _settle(self, wait_: bool) -> None:
        if wait_:
            await asyncio.to_thread(self.writer.flush)

    async def commit(self, text: str, wait_: bool = False, reject_unknown: bool = True) -> None:
        self._check_learning()
        text = check_text(text, self.alphabet, self.limits, "committed text", reject_unknown)
        async with self.lock:
            await self._in_thread(self.writer.commit, text)
            await self._settle(wait_)

    async def delete(self, count: int, wait_: bool = False) -> None:
        self._check_learning()
        if not 1 <= count <= self.limits.max_text:
            raise ApiError(422, "bad_count", f"delete count must be 1..{self.limits.max_text}, not {count}")
        async with self.lock:
            self.writer.delete(count)
            await self._settle(wait_)

    async def reset(self, wait_: bool = False) -> None:
        """A message boundary: what is committed next starts a new message."""
        self._check_learning()
        async with self.lock:
            self.writer.new_message()
            await self._settle(wait_)

    async def set_adapting(self, enabled: bool) -> None:
        self._check_learning()
        async with self.lock:
            try:
                self.writer.set_adapting(enabled)
            except WriterError as exc:
                raise ApiError(409, "not_adapting", str(exc)) from None
            self.adapt = enabled
            await self._settle(True)

    async def save_profile(self) -> dict:
        self._check_learning()
        if self.profile is None:
            raise ApiError(409, "no_profile", f"session {self.id} has no profile to save")
        async with self.lock:
            try:
                await asyncio.to_thread(self.writer.save)
            except ProfileError as exc:
                raise ApiError(507, "save_failed", str(exc)) from None
        status = self.writer.status()
        return {"profile": self.profile, "characters_adapted": status.characters_adapted if "rnn" in status.learns else None}

    def close(self, save: bool = True) -> None:
        """Blocking: save the profile (when asked and there is one) and stop the Writer's threads. A save that
        fails raises ``ApiError`` 507 and leaves the session open: nothing learned is lost."""
        try:
            self.writer.close(save=save)
        except ProfileError as exc:
            raise ApiError(507, "save_failed", str(exc)) from None
        self.closed = True


class Registry:
    """The server's sessions, the shared stateless predictor and the limits."""

    def __init__(self, model_dir: str | Path, limits: Limits | None = None, profiles_dir: str | Path | None = None,
                 backend: str = "auto", threads: int | None = None, budget: int = 3000, adapt_config=None,
                 ppm_train: list[str] | None = None, clock: Callable[[], float] = time.monotonic):
        from dasher_rnn.lm.model_io import read_checked_config

        self.model_dir = Path(model_dir)
        self.config, self.alphabet = read_checked_config(self.model_dir)
        self.limits = limits or Limits()
        self.profiles_dir, self.backend, self.threads, self.budget = profiles_dir, backend, threads, budget
        self.adapt_config = adapt_config
        self.ppm_train = tuple(ppm_train or ())
        self._ppm: dict[str, object] = {}  # model -> PPM trained on ppm_train, built once and forked per session
        self._ppm_lock = threading.Lock()
        self.sessions: dict[str, ApiSession] = {}
        self._expired: OrderedDict[str, float] = OrderedDict()  # id -> seconds idle when it expired
        self._reaper: asyncio.Task | None = None
        self._closing: dict[str, ApiSession] = {}  # expired sessions being saved and closed
        self._opening: dict[str, str] = {}  # profile -> placeholder while its session loads
        self.base: Writer | None = None
        self.started = time.time()
        self.clock = clock  # seconds, for idle timeouts (``time.monotonic``; tests pass their own)

    def _config(self, **values) -> WriterConfig:
        extra = {"adaptation": self.adapt_config} if self.adapt_config is not None else {}
        return WriterConfig(model_dir=self.model_dir, profiles_dir=self.profiles_dir, ppm_train=self.ppm_train,
                            backend=self.backend, threads=self.threads, budget=self.budget, **extra, **values)

    # -- lifetime --------------------------------------------------------------------
    def load(self) -> None:
        """Build the stateless predictor now (blocking): ``serve`` does this before it listens, so a broken model is
        an error on the command line."""
        if self.base is None:
            self.base = build_writer(self._config(model="rnn", adapt=False))

    async def start(self) -> None:
        if self.base is None:
            await asyncio.to_thread(self.load)
        if self.limits.idle_timeout_s > 0:
            self._reaper = asyncio.create_task(self._reap(), name="idle-sessions")

    async def _reap(self) -> None:
        period = min(30.0, max(0.05, self.limits.idle_timeout_s / 4))
        while True:
            await asyncio.sleep(period)
            try:
                await self.expire_idle()
            except Exception:  # never stop reaping
                log.exception("closing idle sessions failed")

    async def expire_idle(self, now: float | None = None) -> list[str]:
        """Close every session unused for the idle timeout (saving its profile, freeing its slot and its profile
        lock); the ids closed. ``now``: a reading of the registry's clock (by default, now)."""
        timeout = self.limits.idle_timeout_s
        if timeout <= 0:
            return []
        now = self.clock() if now is None else now
        closed = []
        for sid in [sid for sid, s in self.sessions.items() if s.idle_for(now) >= timeout]:
            session = self.sessions.get(sid)
            seconds = session.idle_for(now) if session is not None else 0.0
            if seconds < timeout:  # closed, or used again, while an earlier one was closing
                continue
            del self.sessions[sid]
            closed.append(sid)
            self._expired[sid] = seconds
            while len(self._expired) > EXPIRED_KEPT:
                self._expired.popitem(last=False)
            self._closing[sid] = session  # keeps its slot and its profile until saved and closed
            try:
                await asyncio.to_thread(session.close, True)
                log.info("closed session %s after %.0f s unused (profile %s saved)", sid[:4], seconds, session.profile)
            except Exception:
                log.exception("closing idle session %s (profile %s) failed", sid[:4], session.profile)
            finally:
                del self._closing[sid]
        return closed

    async def close_all(self, save: bool = True) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        sessions, self.sessions = list(self.sessions.values()), {}
        results = await asyncio.gather(*(asyncio.to_thread(s.close, save) for s in sessions), return_exceptions=True)
        for session, result in zip(sessions, results, strict=True):
            if isinstance(result, Exception):  # the server is stopping: say what was not saved, then let go
                log.error("closing session %s: %s", session.id, result)
                session.writer.close(save=False)
        if self.base is not None:
            self.base.close(save=False)

    # -- sessions --------------------------------------------------------------------
    def get(self, sid: str) -> ApiSession:
        session = self.sessions.get(sid)
        if session is None:
            if sid in self._expired:
                raise ApiError(404, "session_expired", f"session {sid!r} was closed after {self._expired[sid]:.0f} s "
                                                       f"unused (the idle timeout is {self.limits.idle_timeout_s:g} s); "
                                                       "its profile was saved: open a new session")
            raise ApiError(404, "unknown_session", f"no session {sid!r} (closed, or never opened on this server)")
        return session

    @contextmanager
    def use(self, sid: str) -> Iterator[ApiSession]:
        """The session ``sid``, marked in use (not idle) for the duration."""
        with self.get(sid).in_use() as session:
            yield session

    def list(self) -> dict:
        """The open sessions as any client may see them: how many, and their profiles, but never their ids (an id
        is the capability to use, read and close a session, held by the client that opened it alone)."""
        now = self.clock()
        rows = [{"profile": s.profile, "model": s.model, "adapt": s.adapt, "idle_s": round(s.idle_for(now), 1)}
                for s in self.sessions.values()]
        return {"open": len(rows), "max_sessions": self.limits.max_sessions, "sessions": rows}

    async def open(self, profile: str | None, adapt: bool = True, model: str = "hybrid") -> ApiSession:
        from dasher_rnn.adapt.profiles import ProfileError, ProfileInUse, check_name

        if profile is not None:
            try:
                check_name(profile)
            except ProfileError as exc:
                raise ApiError(422, "invalid_profile", str(exc)) from None
            if any(s.profile == profile for s in self.sessions.values()):
                raise ApiError(409, "profile_in_use", self._in_use_message(profile))
            if any(s.profile == profile for s in self._closing.values()):
                raise ApiError(409, "profile_in_use", f"profile {profile!r} is being saved (its session was closed "
                                                      "after the idle timeout): try again in a moment")
            if profile in self._opening:
                raise ApiError(409, "profile_in_use", f"profile {profile!r} is being opened by another request")
        if len(self.sessions) + len(self._opening) + len(self._closing) >= self.limits.max_sessions:
            raise ApiError(429, "too_many_sessions", f"{self.limits.max_sessions} sessions are open, the limit: "
                                                     "close one first")
        key = profile if profile is not None else f"\x00{secrets.token_hex(8)}"
        self._opening[key] = key
        try:
            session = await asyncio.to_thread(self._load, profile, adapt, model)
        except ProfileInUse as exc:
            raise ApiError(409, "profile_in_use", str(exc)) from None
        finally:
            del self._opening[key]
        self.sessions[session.id] = session
        return session

    def _in_use_message(self, profile: str) -> str:
        timeout = self.limits.idle_timeout_s
        after = f"; it is closed after {timeout:g} s unused" if timeout > 0 else ""
        return (f"profile {profile!r} is open in another session of this server: the client that opened it can use "
                f"or close it{after}")

    def _trained_ppm(self, model: str):
        from dasher_rnn.adapt.compose import DASHER_PPM_ORDER, HYBRID_PPM_ORDER, build_ppm

        with self._ppm_lock:
            if model not in self._ppm:
                order = HYBRID_PPM_ORDER if model == "hybrid" else DASHER_PPM_ORDER
                self._ppm[model] = build_ppm(self.ppm_train, self.alphabet.name, order)[0]
            return self._ppm[model]

    def _load(self, profile: str | None, adapt: bool, model: str = "hybrid") -> ApiSession:
        trained = self._trained_ppm(model) if model in ("hybrid", "ppm") else None
        writer = build_writer(self._config(model=model, profile=profile, adapt=adapt), trained_ppm=trained)
        return ApiSession(secrets.token_hex(16), writer, self.limits, adapt, profile, self.clock)

    async def close(self, sid: str, save: bool = True) -> dict:
        session = self.get(sid)
        await asyncio.to_thread(session.close, save)  # a failed save keeps the session (507)
        self.sessions.pop(sid, None)
        return {"session": sid, "closed": True, "saved": bool(save and session.profile is not None)}

    # -- stateless -------------------------------------------------------------------
    async def predict(self, texts: list[str], reject_unknown: bool = True) -> list[Distribution]:
        check_count(len(texts), self.limits.max_contexts, "contexts")
        texts = [check_text(t, self.alphabet, self.limits, "context text", reject_unknown) for t in texts]
        if self.base is None:
            raise ApiError(503, "starting", "the predictor is still loading")
        futures = [self.base.root_async(t) for t in texts]
        try:
            roots = [await wait(f) for f in futures]
            return await wait(self.base.request(roots))
        finally:
            release_when_done(futures, self.base.release)
