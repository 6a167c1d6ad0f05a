"""How long the API's sessions and requests live: the idle timeout and the request deadline.

- ``Usage``: when a session was last used, and whether it is in use now (a request running, a WebSocket open);
- ``Lifetime``: closing the sessions left unused for the idle timeout, remembering the ids of the sessions that
  ended and how (so a late request hears ``session_expired`` or ``session_closed``, saying whether the profile was
  saved), and ``reap``, the task that looks for them. A session whose save fails is not closed: it goes back among
  the open sessions, and the save is tried again after another idle timeout;
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
from typing import Generic, Protocol, Self, TypeVar

from dasher_rnn.api.limits import ApiError, Limits

log = logging.getLogger(__name__)

T = TypeVar("T")
ENDED_KEPT = 1000  # ids of ended sessions remembered, to answer them with session_expired or session_closed


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

    def touch(self) -> None: ...

    async def end(self, save: bool = True) -> bool:
        """Close (saving when asked): True when the profile was saved; raises when the save failed (the session
        then stays open)."""
        ...


def how_it_ended(profile: str | None, saved: bool) -> str:
    """What became of a closed session's profile, for a person."""
    if profile is None:
        return "it had no profile"
    return f"its profile {profile!r} was saved" if saved else f"its profile {profile!r} was not saved (save=false)"


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


S = TypeVar("S", bound=Expirable)


class Lifetime(Generic[S]):
    """Closing sessions left unused for ``timeout`` seconds (0: never) by ``clock``.

    ``closing`` holds the expired sessions being saved and closed (they keep their slot and their profile until
    then), ``ended`` the latest ``ENDED_KEPT`` ended sessions' ids with the 404 that a later request gets. A session
    whose save fails goes back into the server's table, open, with its idle time starting again: its client can go
    on, save it once the fault is fixed, or close it with ``save=false``, and the save is tried again after another
    idle timeout. It is never dropped unsaved, and no answer says it was saved."""

    def __init__(self, timeout: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout, self.clock = timeout, clock
        self.ended: OrderedDict[str, ApiError] = OrderedDict()  # id -> the 404 a request to it gets
        self.closing: dict[str, S] = {}
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

    def remember(self, sid: str, error: ApiError) -> None:
        """``sid`` ended: a request to it gets ``error`` (a 404)."""
        self.ended[sid] = error
        self.ended.move_to_end(sid)
        while len(self.ended) > ENDED_KEPT:
            self.ended.popitem(last=False)

    def remember_expired(self, sid: str, seconds: float, profile: str | None) -> None:
        """``sid`` was closed after ``seconds`` unused, its profile (if any) saved."""
        self.remember(sid, ApiError(404, "session_expired", f"session {sid!r} was closed after {seconds:.0f} s unused "
                                                            f"(the idle timeout is {self.timeout:g} s); "
                                                            f"{how_it_ended(profile, True)}: open a new session"))

    def remember_closed(self, sid: str, profile: str | None, saved: bool) -> None:
        """``sid`` was closed by its client."""
        self.remember(sid, ApiError(404, "session_closed", f"session {sid!r} was closed by its client; "
                                                           f"{how_it_ended(profile, saved)}"))

    def check_ended(self, sid: str) -> None:
        """The remembered 404 (``session_expired``, ``session_closed``) when ``sid`` is an ended session's id."""
        if sid in self.ended:
            raise self.ended[sid]

    async def expire_idle(self, sessions: Callable[[], MutableMapping[str, S]],
                          now: float | None = None) -> list[str]:
        """Close every session of ``sessions()`` unused for the timeout (saving its profile) and take it out of that
        table; the ids closed. A session whose save fails is put back, its idle time starting again. ``sessions``
        is read again after each close, since the server may have replaced its table meanwhile. ``now``: a
        reading of the clock (by default, now)."""
        timeout = self.timeout
        if timeout <= 0:
            return []
        now = self.clock() if now is None else now
        closed = []
        for sid in [sid for sid, s in sessions().items() if s.idle_for(now) >= timeout]:
            session = sessions().get(sid)
            seconds = session.idle_for(now) if session is not None else 0.0
            if session is None or seconds < timeout:  # closed, or used again, while an earlier one was closing
                continue
            del sessions()[sid]
            self.closing[sid] = session  # keeps its slot and its profile until saved and closed
            try:
                await session.end(True)
            except Exception as exc:  # kept open: nothing it learned is lost
                sessions()[sid] = session
                session.touch()
                if isinstance(exc, ApiError):
                    log.warning("session %s was unused for %.0f s but is kept open: %s. Its save is tried again "
                                "after another %g s unused", sid[:4], seconds, exc.message, timeout)
                else:
                    log.exception("closing idle session %s (profile %s) failed: it stays open", sid[:4],
                                  session.profile)
                continue
            finally:
                del self.closing[sid]
            self.remember_expired(sid, seconds, session.profile)
            closed.append(sid)
            log.info("closed session %s after %.0f s unused (profile %s saved)", sid[:4], seconds, session.profile)
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
