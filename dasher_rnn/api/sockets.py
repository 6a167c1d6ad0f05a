"""The open WebSockets: how many each session and each client holds, and which one makes room for a new one.

A WebSocket stays open until its client closes it, and each holds one of the server's connections. Without a
bound, one client could hold them all (512 WebSockets on one anonymous session gave every other client 503 for as
long as they stayed open). So ``SocketTable`` counts them per session (``max_session_websockets``) and per client
address (``max_client_websockets``; on loopback every local program is one client). At either limit, the
WebSocket of that session or client idle longest (no message being answered) is closed to make room, with close
code ``CLOSE_CODE`` and a reason saying so; the new one is refused (the same code, after an error message) only
when every one of them is answering a message. The connection limit (``connections.py``) likewise closes the
WebSocket idle longest, server-wide, before it refuses anyone a connection.

Called on the event loop's thread only (not locked).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from dasher_rnn.api.limits import ApiError

CLOSE_CODE = 4429  # a WebSocket closed to make room for another, or refused: too many open


@dataclass(eq=False)
class Socket:
    """One open WebSocket: its session, its client's address, how to close it, and when it was last used."""

    session: str
    client: str
    close: Callable[[int, str], None]  # (code, reason): closes it from the event loop (schedules the close)
    last_used: float = 0.0
    busy: int = 0  # messages being answered
    closing: bool = field(default=False)


class SocketTable:
    """The open WebSockets, at most ``per_session`` on one session and ``per_client`` from one client address."""

    def __init__(self, per_session: int, per_client: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_session, self.per_client, self.clock = per_session, per_client, clock
        self.open: list[Socket] = []
        self.evicted = 0  # closed to make room (for tests and benchmarks)

    def __len__(self) -> int:
        return sum(not s.closing for s in self.open)

    def admit(self, session: str, client: str, close: Callable[[int, str], None]) -> Socket:
        """A new WebSocket of ``session`` from ``client``. At a limit the one idle longest of that session (or client)
        is closed to make room; when all of them are busy, an ``ApiError`` 429 ``too_many_websockets``."""
        for mine, limit, whose in ((lambda s: s.session == session, self.per_session, "this session"),
                                   (lambda s: s.client == client, self.per_client, "this client address")):
            holding = [s for s in self.open if not s.closing and mine(s)]
            if len(holding) >= limit and not self._close_idlest(
                    holding, f"{whose} has {limit} WebSockets open, the limit; this one was idle longest and was "
                             "closed to make room"):
                raise ApiError(429, "too_many_websockets", f"{whose} has {limit} WebSockets open, the limit, and "
                                                           "every one is answering a message: close one, or try again")
        socket = Socket(session, client, close, self.clock())
        self.open.append(socket)
        return socket

    def remove(self, socket: Socket) -> None:
        """``socket`` has closed."""
        if socket in self.open:
            self.open.remove(socket)

    @contextmanager
    def answering(self, socket: Socket) -> Iterator[None]:
        """``socket`` is answering a message: it is not idle meanwhile."""
        socket.busy += 1
        try:
            yield
        finally:
            socket.busy -= 1
            socket.last_used = self.clock()

    def close_idle(self, idle_for: float = 0.0) -> bool:
        """Close the WebSocket idle longest, server-wide, if it has been idle at least ``idle_for`` seconds (for the
        connection limit); False when none has."""
        now = self.clock()
        return self._close_idlest([s for s in self.open if not s.closing and now - s.last_used >= idle_for],
                                  "the server holds as many connections as it may and needed this one for "
                                  "another client; it was the WebSocket idle longest")

    def _close_idlest(self, sockets: list[Socket], reason: str) -> bool:
        idle = [s for s in sockets if not s.busy and not s.closing]
        if not idle:
            return False
        oldest = min(idle, key=lambda s: s.last_used)
        oldest.closing = True
        self.evicted += 1
        oldest.close(CLOSE_CODE, reason[:120])
        return True
