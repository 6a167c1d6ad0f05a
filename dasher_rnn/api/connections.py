"""The server's connections: how many it holds, and how long a client may take to send its request.

``GuardedH11Protocol`` is uvicorn's HTTP/1.1 protocol with three rules added:

- **a connection limit** (``--max-connections``) that always stays below the process's file-descriptor limit
  (``connection_limit``), so accepting never runs out of descriptors: a server out of descriptors can answer no
  one, and Python's event loop then logs the same traceback thousands of times a second;
- **room for a new client**: at the limit, the connection that has waited longest (at least ``EVICT_AFTER_S``)
  for its client to send a request, a slow client or an idle keep-alive, is closed to make room, or else the
  WebSocket idle longest (as long; ``sockets.py``); when none has, the new connection is answered 503
  ``too_many_connections`` (JSON, ``Retry-After``) and closed. So slow clients and idle WebSockets cannot shut out
  the others, and the server never holds more than the limit;
- **a read timeout** (``--read-timeout``): a client has that long to send a whole request, headers and body, from
  when its connection opened or its previous answer was sent. Past it the connection is closed, with a 408
  ``request_timeout`` when part of a request had come. Once a request is read, the request time limit
  (``--request-timeout``) is the one that applies; a WebSocket, once open, has uvicorn's pings.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from dasher_rnn.api.guard import error_bytes

log = logging.getLogger(__name__)

BACKLOG = 128  # connections the kernel queues for accepting, and the most accepted in one go (fewer: accept_backlog)
ACCEPTS_IN_FLIGHT = 4  # accept bursts the event loop can take before the first one's connections are counted
RESERVED_FDS = 32  # descriptors kept for all but connections: model and profile files, logs, the event loop (13 at rest)
EVICT_AFTER_S = 1.0  # a connection waiting for its client this long may be closed to make room for another
REFUSAL_LINGER_S = 0.5  # a refused connection waits this long for its request (read and dropped), then closes
LINGERING_MAX = 32  # refused connections waiting at once; beyond, one is closed at once


def descriptor_limit() -> int | None:
    """The process's soft limit on open files, or None where there is none (or no way to ask)."""
    try:
        import resource
    except ImportError:  # Windows: no such limit on sockets
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def accept_backlog(descriptors: int | None = None) -> int:
    """The accept backlog: ``BACKLOG``, or a sixteenth of the descriptor limit (``descriptors``, by default the
    process's) where that is less, so that a low limit still leaves room for connections. At least 4."""
    if descriptors is None:
        descriptors = descriptor_limit()
    return BACKLOG if descriptors is None else max(4, min(BACKLOG, descriptors // 16))


def connection_limit(wanted: int, descriptors: int | None = None) -> int:
    """``wanted`` connections, or fewer when the descriptor limit (``descriptors``, by default the process's) leaves
    less room. Every connection takes one; so does every refused one while it lingers (``LINGERING_MAX``); and
    asyncio accepts up to a backlog at a time, several times over (``ACCEPTS_IN_FLIGHT``) before the protocol
    counts the first of them; ``RESERVED_FDS`` stay for everything else. At least 1."""
    if descriptors is None:
        descriptors = descriptor_limit()
    if descriptors is None:
        return max(1, wanted)
    in_flight = ACCEPTS_IN_FLIGHT * accept_backlog(descriptors)
    return max(1, min(wanted, descriptors - in_flight - LINGERING_MAX - RESERVED_FDS))


def raw_response(status: int, code: str, message: str, *headers: str) -> bytes:
    """A whole HTTP/1.1 answer with the API's error body, for a connection no ASGI request runs on."""
    body = error_bytes(code, message)
    head = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", "content-type: application/json",
            f"content-length: {len(body)}", "connection: close", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


class GuardedH11Protocol(H11Protocol):
    """Uvicorn's h11 protocol with a connection limit and a read timeout (see the module's docstring). Made for
    one server by ``configured``, which sets the two class attributes."""

    max_connections: ClassVar[int] = 512
    read_timeout_s: ClassVar[float] = 15.0  # 0: never
    # closes the WebSocket idle longest if one has been idle this long (seconds); False if none (sockets.py)
    close_idle_websocket: ClassVar[Callable[[float], bool] | None] = None
    lingering: ClassVar[int] = 0  # refused connections still waiting for their request

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.waiting_since: float | None = None  # since when the connection waits for its client's request
        self._timer: asyncio.TimerHandle | None = None
        self._refused = False
        self._upgraded = False

    @classmethod
    def configured(cls, max_connections: int, read_timeout_s: float,
                   close_idle_websocket: Callable[[float], bool] | None = None) -> type[GuardedH11Protocol]:
        """The protocol class of one server: at most ``max_connections`` connections, ``read_timeout_s`` to send a
        request, and ``close_idle_websocket`` to make room among the open WebSockets."""
        return type(cls.__name__, (cls,), {"max_connections": max_connections, "read_timeout_s": read_timeout_s,
                                           "lingering": 0, "close_idle_websocket": close_idle_websocket})

    # -- uvicorn's protocol ----------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections and self._open() > self.max_connections \
                and not self._make_room():
            self._refuse()
            return
        self._track()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        if self._refused:
            self._refused = False
            type(self).lingering -= 1
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:  # its request has come: closing now resets nothing the client has yet to read
            self.transport.close()
            return
        super().data_received(data)
        self._track()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._track()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        self._upgraded = True
        self._stop_waiting()
        super().handle_websocket_upgrade(event)

    # -- waiting for the client ------------------------------------------------------------------------
    def _track(self) -> None:
        """Start the read timeout when the connection begins waiting for a request; stop it once one is read."""
        waiting = self.conn.their_state in (h11.IDLE, h11.SEND_BODY)
        if self._upgraded or self._refused or self.transport.is_closing() or not waiting:
            self._stop_waiting()
        elif self.waiting_since is None:
            self.waiting_since = time.monotonic()
            if self.read_timeout_s > 0:
                self._timer = self.loop.call_later(self.read_timeout_s, self._timed_out)

    def _stop_waiting(self) -> None:
        self.waiting_since = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        self._drop(f"the request did not arrive whole within {self.read_timeout_s:g} s (the read timeout); "
                   "send it again")

    def _drop(self, message: str) -> None:
        """Close the connection, answering 408 when part of a request has come and no answer was started."""
        self._stop_waiting()
        if self.transport.is_closing():
            return
        started = self.conn.their_state is h11.SEND_BODY or bool(self.conn.trailing_data[0])
        answering = self.cycle is not None and self.cycle.response_started and not self.cycle.response_complete
        if started and not answering:
            self.transport.write(raw_response(408, "request_timeout", message))
        self.transport.close()

    # -- the limit -------------------------------------------------------------------------------------
    def _open(self) -> int:
        """Connections open and not closing."""
        return sum(1 for c in self.connections if not _closing(c))

    def _make_room(self) -> bool:
        """Close the connection that has waited longest (over ``EVICT_AFTER_S``) for its client; False if none has."""
        now = time.monotonic()
        oldest: GuardedH11Protocol | None = None
        since = now - EVICT_AFTER_S  # waiting since then or earlier
        for c in self.connections:
            if isinstance(c, GuardedH11Protocol) and c is not self and c.waiting_since is not None \
                    and c.waiting_since <= since and not _closing(c):
                oldest, since = c, c.waiting_since
        if oldest is None:  # no HTTP connection waits for its client: the WebSocket idle longest, if any
            websocket = type(self).close_idle_websocket
            if websocket is not None and websocket(EVICT_AFTER_S):
                log.info("closed the WebSocket idle longest to make room for another connection")
                return True
            return False
        log.info("closed a connection that waited %.1f s for its request, to make room for another", now - since)
        oldest._drop(f"the server holds {self.max_connections} connections at most and needed this one for another "
                     "client: send the request whole, without pauses")
        return True

    def _refuse(self) -> None:
        self._refused = True
        self.connections.discard(self)
        cls = type(self)
        cls.lingering += 1
        log.warning("refused connections: %d are open, the limit (--max-connections, kept below the file-descriptor "
                    "limit), and none is idle", self.max_connections)
        self.transport.write(raw_response(
            503, "too_many_connections", f"the server has {self.max_connections} connections open, its limit, all "
            "busy: try again in a moment", "retry-after: 1"))
        if cls.lingering > LINGERING_MAX:
            self.transport.close()
        else:
            self.loop.call_later(REFUSAL_LINGER_S, self.transport.close)


def _closing(connection: object) -> bool:
    transport = getattr(connection, "transport", None)
    return transport is None or transport.is_closing()
