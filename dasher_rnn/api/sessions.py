"""API sessions: one per user profile, each a Writer with the context handles a client holds. No web
framework here, so it can be driven and tested directly.

This module holds the session and its calls into the Writer (``ApiSession``) and the mapping of the
Writer's and the predictor's errors onto API errors (``wait``, ``release_when_done``). The pieces it is
built from live beside it: the handle table in ``handles.py``, idle time and the request deadline in
``lifetime.py``, limits, text checks and ``ApiError`` in ``limits.py``; the server's table of sessions
is ``registry.py``. ``Limits`` and ``ApiError`` are importable from here too.

All methods are called from the event loop's thread (the handle tables are not locked); anything that
blocks (learning, saving a profile, waiting on the predictor) runs on a worker thread or is awaited as a
future. Errors a client can cause raise ``ApiError`` with an HTTP status.

A session ends once (``end``): after the operation running on it (a commit is learned, then saved), with one
close that every caller of ``end`` meanwhile shares. A save that fails leaves it open, with its Writer, its
threads and its profile, and its ``notice`` says so until a save works or the client closes it without saving.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from contextlib import asynccontextmanager
from typing import Any

from dasher_rnn.adapt.profile_files import ProfileError
from dasher_rnn.adapt.writer import Context, Writer, WriterError
from dasher_rnn.api import memory
from dasher_rnn.api.handles import HandleTable, existing_node
from dasher_rnn.api.lifetime import Usage
from dasher_rnn.api.limits import ApiError, Limits, check_count, check_text
from dasher_rnn.predictor.service import Distribution, ServiceClosed
from dasher_rnn.predictor.tree import NodeError

__all__ = ["ApiSession", "release_when_done", "wait"]

log = logging.getLogger(__name__)


_BACKGROUND: set[asyncio.Future] = set()  # commits answered at the wait limit and still running


def _finished_in_background(work: asyncio.Future) -> None:
    """A commit that went on after its answer has finished: what went wrong, if anything, is logged."""
    _BACKGROUND.discard(work)
    if not work.cancelled() and work.exception() is not None:
        exc = work.exception()
        if isinstance(exc, ApiError):
            log.warning("a commit that went on after its answer (202) failed: %s", exc.message)
        else:
            log.error("a commit that went on after its answer (202) failed", exc_info=exc)


async def wait(future: Future) -> Any:
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


class ApiSession(Usage):
    """One client's session: integer handles (``handles``) on the contexts of its Writer.

    Operations on one session are serialised (``lock``); anything that may block (reading a context,
    learning the mixing weights, saving) runs on a worker thread, so the event loop stays free. When it
    was last used, and whether it is in use, is ``Usage``'s (the registry closes it after the idle timeout)."""

    def __init__(self, sid: str, writer: Writer, limits: Limits, adapt: bool, profile: str | None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)  # seconds, for the idle timeout
        self.id, self.writer, self.limits = sid, writer, limits
        self.profile, self.adapt, self.model = profile, adapt, writer.model
        self.learns = adapt or profile is not None  # takes commits (learning them unless paused)
        self.alphabet = writer.alphabet
        self.handles = HandleTable(sid, limits.max_handles, limits.max_nodes)
        self.lock = asyncio.Lock()
        self.created = time.time()
        self.closed = False
        self.saved = False  # whether closing saved the profile
        self.save_error: str | None = None  # why the latest save failed, until one works
        self._ending: asyncio.Future | None = None  # the close in progress, shared by every caller of end()

    @property
    def notice(self) -> str | None:
        """What the user should know about this session's saved state (e.g. a profile set aside, a failed save)."""
        notices = [self.writer.status().notice]
        if self.save_error is not None:
            notices.append(f"the profile could not be saved ({self.save_error}); nothing is lost: the session stays "
                           "open until a save works (save it again, or close it) or it is closed with save=false")
        return "; ".join(n for n in notices if n) or None

    @asynccontextmanager
    async def _locked(self) -> AsyncIterator[None]:
        """The session's lock, for one operation; a 409 when the session was closed while the operation waited."""
        async with self.lock:
            if self.closed:
                raise ApiError(409, "session_closed", f"session {self.id} was closed")
            yield

    def info(self) -> dict:
        status = self.writer.status()
        out = {"session": self.id, "profile": self.profile, "model": self.model, "adapt": self.adapt,
               "contexts": len(self.handles), "backend": status.backend, "weights_version": status.weights_version}
        if status.can_adapt:  # the session's own fields already say model, backend and weights version
            out["adaptation"] = {k: v for k, v in status.to_json().items() if k not in ("model", "backend", "weights_version")}
        return out

    # -- contexts --------------------------------------------------------------------
    def node(self, handle: int) -> Context:
        """The context of ``handle``; a 404 when it is unknown or gone."""
        return self.handles.get(handle)

    async def create_roots(self, texts: list[str], reject_unknown: bool = True) -> list[int]:
        texts = [check_text(t, self.alphabet, self.limits, "context text", reject_unknown) for t in texts]
        async with self._locked():
            await self.handles.make_room(len(texts), len(texts))
            futures = [self._call(self.writer.root_async, t) for t in texts]
            try:
                contexts = [await wait(f) for f in futures]
            except BaseException:  # stopped (the time limit) or failed: none of them gets a handle
                release_when_done(futures, self.writer.release)
                raise
            self.handles.nodes += len(contexts)
            return [self.handles.add(c, root=True) for c in contexts]

    async def create_children(self, specs: list[tuple[int, str]]) -> list[int]:
        """Contexts ``symbols`` below each ``parent`` handle."""
        async with self._locked():
            parents = []
            for parent, symbols in specs:
                if len(symbols) > self.limits.max_symbols:
                    raise ApiError(413, "too_many_symbols", f"{len(symbols)} symbols below a parent in one step; the "
                                                            f"limit is {self.limits.max_symbols} (start a new root instead)")
                check_text(symbols, self.alphabet, self.limits, "symbols", normalised=False)
                parents.append(self.node(parent))
            fresh = sum(not self.handles.has_handle(existing_node(p, sy, self.alphabet))
                        for p, (_, sy) in zip(parents, specs, strict=True))
            await self.handles.make_room(fresh, sum(len(s) for _, s in specs))
            out = []
            for (_, symbols), parent in zip(specs, parents, strict=True):
                context = parent
                for ch in symbols:
                    existing = existing_node(context, ch, self.alphabet)
                    context = self._call(self.writer.child, context, ch)
                    self.handles.nodes += existing is None or existing is not context.node
                out.append(self.handles.add(context))
            return out

    def release(self, handle: int) -> None:
        """Release ``handle`` and everything below it."""
        self._call(self.writer.release, self.handles.take(handle))

    def forget(self, handles: list[int]) -> None:
        """Drop handles made by a request that did not answer: its roots are released; a child's node stays (it may
        lie between other contexts) and only loses its handle."""
        for handle in handles:
            if handle not in self.handles:
                continue
            if self.handles.is_root(handle):
                try:
                    self.release(handle)
                except ApiError:
                    pass
            else:
                self.handles.discard(handle)

    async def distributions(self, handles: list[int], priority: float = 0.0) -> list[Distribution]:
        check_count(len(handles), self.limits.max_contexts, "contexts")
        async with self._locked():
            contexts = [self.node(h) for h in handles]
            return await wait(self._call(self.writer.request, contexts, priority))

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except NodeError as exc:
            raise ApiError(404, "unknown_context", f"a requested context is gone: {exc}") from None
        except ServiceClosed:
            raise ApiError(409, "session_closed", f"session {self.id} was closed") from None

    async def _in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
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

    def _wait_limit(self) -> float | None:
        """How long a request with wait waits for learning (the request time limit; None when it is 0: no limit)."""
        return self.limits.request_timeout_s if self.limits.request_timeout_s > 0 else None

    async def _settle(self, wait_: bool, limit: float | None = None) -> bool | None:
        """With ``wait_``, wait for the learner to apply everything committed so far, up to ``limit`` seconds (by
        default the wait limit): whether it caught up. None without ``wait_``. Learning a long commit can take longer
        than any client waits (10,000 characters: a minute or more on two cores); it goes on, and the client hears
        that it has not caught up yet, and how to wait again, instead of an error."""
        if not wait_:
            return None
        if limit is None:
            limit = self._wait_limit()
        try:
            await asyncio.to_thread(self.writer.flush, limit)
        except TimeoutError:
            return False
        return True

    async def commit(self, text: str, wait_: bool = False, reject_unknown: bool = True) -> bool | None:
        """Learn ``text``; with ``wait_``, whether learning caught up within the wait limit (``_settle``), counted
        from now: in a hybrid session the mixing weights learn the text on the request's own time (a minute for
        10,000 characters), so past the limit the answer is given and that goes on in the background, holding the
        session's lock. An empty text commits nothing: with ``wait_`` it waits again."""
        self._check_learning()
        text = check_text(text, self.alphabet, self.limits, "committed text", reject_unknown)
        limit = self._wait_limit()
        if not wait_ or limit is None:
            return await self._commit(text, wait_, limit)
        work = asyncio.ensure_future(self._commit(text, True, limit, asyncio.get_running_loop().time() + limit))
        try:
            return await asyncio.wait_for(asyncio.shield(work), limit)
        except TimeoutError:
            _BACKGROUND.add(work)
            work.add_done_callback(_finished_in_background)
            return False

    async def _commit(self, text: str, wait_: bool, limit: float | None, deadline: float | None = None) -> bool | None:
        async with self._locked():
            if text:
                await self._in_thread(self.writer.commit, text)
            if deadline is not None:
                limit = max(0.0, deadline - asyncio.get_running_loop().time())
            return await self._settle(wait_, limit)

    async def delete(self, count: int, wait_: bool = False) -> bool | None:
        self._check_learning()
        if not 1 <= count <= self.limits.max_text:
            raise ApiError(422, "bad_count", f"delete count must be 1..{self.limits.max_text}, not {count}")
        async with self._locked():
            self.writer.delete(count)
            return await self._settle(wait_)

    async def reset(self, wait_: bool = False) -> bool | None:
        """A message boundary: what is committed next starts a new message."""
        self._check_learning()
        async with self._locked():
            self.writer.new_message()
            return await self._settle(wait_)

    async def set_adapting(self, enabled: bool) -> bool:
        """Pause or resume learning; whether the learner caught up with it within the wait limit."""
        self._check_learning()
        async with self._locked():
            try:
                self.writer.set_adapting(enabled)
            except WriterError as exc:
                raise ApiError(409, "not_adapting", str(exc)) from None
            self.adapt = enabled
            return bool(await self._settle(True))

    async def save_profile(self) -> dict:
        self._check_learning()
        if self.profile is None:
            raise ApiError(409, "no_profile", f"session {self.id} has no profile to save")
        async with self._locked():
            try:
                await asyncio.to_thread(self.writer.save)
            except ProfileError as exc:
                self.save_error = str(exc)
                raise ApiError(507, "save_failed", str(exc)) from None
            self.save_error = None
        status = self.writer.status()
        return {"profile": self.profile, "characters_adapted": status.characters_adapted if "rnn" in status.learns else None}

    async def end(self, save: bool = True) -> bool:
        """Close the session: wait for the operation running on it (a commit being learned), save the profile (when
        asked and there is one), stop the Writer's threads and let the profile go; True when the profile was saved.

        Callers while a close is in progress share it and its answer (a second DELETE neither saves again nor
        waits for anything else); once closed, the answer is given at once. A save that fails raises ``ApiError``
        507 and leaves the session open: nothing learned is lost, and a later ``end`` tries again."""
        if self.closed:
            return self.saved
        if self._ending is None:
            self._ending = asyncio.ensure_future(self._end(save))
            self._ending.add_done_callback(self._ended)
        return await asyncio.shield(self._ending)

    def _ended(self, ending: asyncio.Future) -> None:
        if ending.cancelled() or ending.exception() is not None:
            self._ending = None  # still open: a later end() tries again

    async def _end(self, save: bool) -> bool:
        async with self._locked():
            try:
                await asyncio.to_thread(self.writer.close, save)
            except ProfileError as exc:
                self.save_error = str(exc)
                raise ApiError(507, "save_failed", str(exc)) from None
            self.closed, self.saved = True, bool(save and self.profile is not None)
            self.save_error = None
        memory.trim_soon()  # what its threads freed goes back to the system (memory.py says why)
        return self.saved
