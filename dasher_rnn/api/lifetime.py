"""How long the API's sessions and requests live: the idle timeout and the request deadline.

- ``Usage``: when a session was last used, and whether it is in use now (a request running, a WebSocket open);
- ``Lifetime``: closing the sessions left unused for the idle timeout, remembering their ids (so a late request
  hears ``session_expired``), and ``reap``, the task that looks for them;
- ``within``: a request under the request time limit.

Times come from a clock passed in (``time.monotonic`` by default), so tests can move it themselves.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Protocol, Self, TypeVar

from dasher_rnn.api.limits import ApiError, Limits

log = logging.getLogger(__name__)

T = TypeVar("T")
EXPIRED_KEPT = 1000  # ids of expired sessions remembered, to answer them with session_expired


class Usage:
    """When something (a session) was last used, by the clock ``clock`` (seconds), and how many requests
    (``active``) and WebSockets (``connections``) use it now: while any does, it is not idle."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.last_used = clock()
        self.active = 0  # requests in progress
        self.connections = 0  # open WebSockets

    @contextmanager
    def in_use(self) -> Iterator[Self]:
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


class Expirable(Protocol):
    """What ``Lifetime`` needs of a session."""

    profile: str | None

    def idle_for(self, now: float) -> float: ...

    def close(self, save: bool = True) -> None: ...


def reap_period(timeout: float) -> float:
    """How often the reaper looks for idle sessions: a quarter of the idle timeout, within 0.05-30 s."""
    return min(30.0, max(0.05, timeout / 4))


async def reap(expire: Callable[[], Awaitable[object]], period: float,
               sleep: Callable[[float], Awaitable[object]] = asyncio.sleep) -> None:
    """Every ``period`` seconds, ``expire()``; until cancelled, whatever ``expire`` raises."""
    while True:
        await sleep(period)
        try:
            await expire()
        except Exception:  # never stop reaping
            log.exception("closing idle sessions failed")


class Lifetime:
    """Closing sessions left unused for ``timeout`` seconds (0: never) by ``clock``.

    ``closing`` holds the expired sessions still being saved and closed (they keep their slot and their
    profile until then), ``expired`` the ids of the latest ``EXPIRED_KEPT`` expired sessions with the seconds
    they had been idle."""

    def __init__(self, timeout: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout, self.clock = timeout, clock
        self.expired: OrderedDict[str, float] = OrderedDict()  # id -> seconds idle when it expired
        self.closing: dict[str, Expirable] = {}
        self._reaper: asyncio.Task | None = None

    def start(self, expire: Callable[[], Awaitable[object]]) -> None:
        """Call ``expire`` now and then on the running loop, unless there is no timeout."""
        if self.timeout > 0:
            self._reaper = asyncio.create_task(reap(expire, reap_period(self.timeout)), name="idle-sessions")

    def stop(self) -> None:
        """Stop the reaper (if it is running)."""
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None

    def remember(self, sid: str, seconds: float) -> None:
        """``sid`` expired after ``seconds`` unused."""
        self.expired[sid] = seconds
        while len(self.expired) > EXPIRED_KEPT:
            self.expired.popitem(last=False)

    def check_expired(self, sid: str) -> None:
        """A 404 ``session_expired`` when ``sid`` is an expired session's id."""
        if sid in self.expired:
            raise ApiError(404, "session_expired", f"session {sid!r} was closed after {self.expired[sid]:.0f} s "
                                                   f"unused (the idle timeout is {self.timeout:g} s); "
                                                   "its profile was saved: open a new session")

    async def expire_idle(self, sessions: Callable[[], MutableMapping[str, Expirable]],
                          now: float | None = None) -> list[str]:
        """Close every session of ``sessions()`` unused for the timeout (saving its profile, on a worker thread)
        and take it out of that table; the ids closed. ``sessions`` is read again after each close, since the
        server may have replaced its table meanwhile. ``now``: a reading of the clock (by default, now)."""
        timeout = self.timeout
        if timeout <= 0:
            return []
        now = self.clock() if now is None else now
        closed = []
        for sid in [sid for sid, s in sessions().items() if s.idle_for(now) >= timeout]:
            session = sessions().get(sid)
            seconds = session.idle_for(now) if session is not None else 0.0
            if seconds < timeout:  # closed, or used again, while an earlier one was closing
                continue
            del sessions()[sid]
            closed.append(sid)
            self.remember(sid, seconds)
            self.closing[sid] = session  # keeps its slot and its profile until saved and closed
            try:
                await asyncio.to_thread(session.close, True)
                log.info("closed session %s after %.0f s unused (profile %s saved)", sid[:4], seconds, session.profile)
            except Exception:
                log.exception("closing idle session %s (profile %s) failed", sid[:4], session.profile)
            finally:
                del self.closing[sid]
        return closed


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
