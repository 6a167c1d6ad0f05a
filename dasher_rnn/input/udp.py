"""The socket and receiver thread shared by the UDP inputs (gaze over UDP, Dasher's socket input).

A subclass says what one datagram means in ``_handle``. The receiver loop outlives anything a datagram
can do: an exception from ``_handle`` is counted and reported (``GazeSource._fail``), never raised, and
an error from the socket itself is reported and retried; only ``close()`` ends the thread. ``problems()``
also says if the thread has stopped for any other reason, so the status bar never shows a silent pause.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

from dasher_rnn.input.gaze import GazeSample, GazeSource, GazeSourceError
from dasher_rnn.input.one_euro import OneEuroFilter

RECV_BYTES = 65536  # more than any UDP payload: a datagram is never cut short here, parsers judge its length
_POLL = 0.1  # seconds between checks for close() while no datagram arrives


class UDPSource(GazeSource):
    """A gaze source fed by datagrams to ``host:port`` on a daemon thread; ``port=0`` picks a free port."""

    listens_for = "data"  # in messages: "cannot listen for <this> on ...", "Listening for <this> on UDP port ..."

    def __init__(self, host: str, port: int, smoothing: OneEuroFilter | None = None, stale_after: float = 0.5,
                 on_sample: Callable[[GazeSample], None] | None = None) -> None:
        super().__init__(smoothing, stale_after, on_sample)
        self._sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self._sock.bind((host, port))
        except (OSError, OverflowError, TypeError) as exc:
            self._sock.close()
            raise GazeSourceError(f"cannot listen for {self.listens_for} on {host}:{port}: {exc}") from exc
        self._sock.settimeout(_POLL)
        self.host, self.port = host, self._sock.getsockname()[1]
        self.receive_errors = 0  # errors from the socket itself (not from the data)
        self.last_receive_error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"{type(self).__name__}:{self.port}", daemon=True)
        self._thread.start()

    @property
    def description(self) -> str:
        return f"Listening for {self.listens_for} on UDP port {self.port}"

    @property
    def alive(self) -> bool:
        """Whether the receiver thread is running."""
        return self._thread.is_alive()

    def problems(self) -> str:
        text = super().problems()
        if self.receive_errors:
            text = (text + "; " if text else "") + (f"{self.label}: {self.receive_errors} receive errors "
                                                    f"(last: {self.last_receive_error})")
        if not self.alive and not self._stop.is_set():
            text = (text + "; " if text else "") + f"{self.label}: stopped receiving, restart this input"
        return text

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data = self._sock.recv(RECV_BYTES)
            except TimeoutError:
                continue
            except OSError as exc:
                if self._stop.is_set() or self._sock.fileno() < 0:  # closed under us: close() is ending the loop
                    break
                self.receive_errors += 1
                self.last_receive_error = str(exc)
                self._stop.wait(_POLL)  # a socket that keeps failing must not spin
                continue
            try:
                self._handle(data)
            except Exception as exc:  # one datagram must never end the input
                self._fail(exc)

    def _handle(self, data: bytes) -> None:
        """Process one datagram (on the receiver thread): call ``_push``, ``_lost`` or ``_reject``."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop the receiver thread and close the socket (idempotent)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        self._sock.close()
