"""The socket and receiver thread shared by the UDP inputs (gaze over UDP, Dasher's socket input).

A subclass says what one datagram means in ``_handle``. The receiver loop outlives anything a datagram
can do: an exception from ``_handle`` is counted and reported (``GazeSource._fail``), never raised, and
an error from the socket itself is reported and retried; only ``close()`` ends the thread. ``problems()``
also says if the thread has stopped for any other reason, so the status bar never shows a silent pause.

Who may send: any program on this machine can send a datagram to a loopback port, and a datagram moves the
pointer, which writes, and with direct output types into the focused program. With an **input token** (a shared
secret, ``token``) a datagram counts only if it carries the token (each protocol says where: a ``"token"`` key
in gaze JSON, a ``token`` line in Dasher's socket input); the others are ignored, counted in ``refused`` and said
once in the log and in ``problems()``. Without one (the default) every local sender counts, because the
protocols' existing bridges and Dasher's own trackers send no token (docs/ARCHITECTURE.md, "Who may send input").
"""

from __future__ import annotations

import hmac
import logging
import re
import socket
import threading
from collections.abc import Callable

from dasher_rnn.input.gaze import GazeSample, GazeSource, GazeSourceError
from dasher_rnn.input.one_euro import OneEuroFilter

log = logging.getLogger(__name__)

RECV_BYTES = 65536  # more than any UDP payload: a datagram is never cut short here, parsers judge its length
_POLL = 0.1  # seconds between checks for close() while no datagram arrives
MAX_TOKEN = 128


# a token in a datagram as shown: a JSON "token" value (whole, or cut short), a "token SECRET" line or word
_SHOWN_TOKEN = re.compile(r'(?i)("token"\s*:\s*)"(?:[^"\\]|\\.)*("?)|(\btoken\s+)\S+')


def hide_tokens(text: str, token: bytes | None = None) -> str:
    """``text`` (part of a datagram, shown in the status bar and the log) with every input token hidden: the value
    of a "token" key or a "token" line, and ``token`` (the one set) wherever else it appears."""
    text = _SHOWN_TOKEN.sub(lambda m: f'{m[1]}"(hidden){m[2]}' if m[1] is not None else f"{m[3]}(hidden)", text)
    if token:
        secret = token.decode("ascii", "replace")
        text = text.replace(secret, "(hidden)").replace(repr(secret)[1:-1], "(hidden)")
    return text


def check_token(token: str) -> str:
    """The input token if usable (1 to 128 printable ASCII characters, no spaces); ValueError saying why not."""
    if not isinstance(token, str) or not 1 <= len(token) <= MAX_TOKEN:
        raise ValueError(f"an input token has 1 to {MAX_TOKEN} characters")
    if not all("!" <= ch <= "~" for ch in token):
        raise ValueError("an input token has only printable ASCII characters, without spaces")
    return token


class UDPSource(GazeSource):
    """A gaze source fed by datagrams to ``host:port`` on a daemon thread; ``port=0`` picks a free port."""

    listens_for = "data"  # in messages: "cannot listen for <this> on ...", "Listening for <this> on UDP port ..."

    def __init__(self, host: str, port: int, smoothing: OneEuroFilter | None = None, stale_after: float = 0.5,
                 on_sample: Callable[[GazeSample], None] | None = None, token: str | None = None) -> None:
        """``token``: the input token a datagram must carry to count (None: every local sender counts)."""
        super().__init__(smoothing, stale_after, on_sample)
        try:
            self._token = None if token is None else check_token(token).encode("ascii")
        except ValueError as exc:
            raise GazeSourceError(str(exc)) from exc
        self.refused = 0  # datagrams without the input token (from a sender that does not know it), ignored
        self.last_refused_from: str | None = None  # host:port of the newest one
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
        token = ", only from senders with the input token" if self._token is not None else ""
        return f"Listening for {self.listens_for} on UDP port {self.port}{token}"

    @property
    def alive(self) -> bool:
        """Whether the receiver thread is running."""
        return self._thread.is_alive()

    def problems(self) -> str:
        text = super().problems()
        if self.refused:
            text = (text + "; " if text else "") + (f"{self.label}: {self.refused} datagram"
                                                    f"{'s' if self.refused != 1 else ''} without the input token "
                                                    f"ignored (the last from {self.last_refused_from})")
        if self.receive_errors:
            text = (text + "; " if text else "") + (f"{self.label}: {self.receive_errors} receive errors "
                                                    f"(last: {self.last_receive_error})")
        if not self.alive and not self._stop.is_set():
            text = (text + "; " if text else "") + f"{self.label}: stopped receiving, restart this input"
        return text

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data, sender = self._sock.recvfrom(RECV_BYTES)
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
                self._handle(data, sender)
            except Exception as exc:  # one datagram must never end the input
                self._fail(exc)

    def _handle(self, data: bytes, sender: tuple) -> None:
        """Process one datagram from ``sender`` (host, port...) on the receiver thread: check it with
        ``_authorised``, then call ``_push``, ``_lost`` or ``_reject``."""
        raise NotImplementedError

    def _reject(self, kind: str, detail: str) -> None:
        """As every source's, but a token in what is shown of the datagram (the status bar, the log) is hidden."""
        super()._reject(kind, hide_tokens(detail, self._token))

    def _authorised(self, token: bytes | None, sender: tuple) -> bool:
        """Whether a datagram carrying ``token`` (None: none) counts; one that does not is counted, and the first
        is logged."""
        if self._token is None or (token is not None and hmac.compare_digest(token, self._token)):
            return True
        self.refused += 1
        self.last_refused_from = f"{sender[0]}:{sender[1]}"
        if self.refused == 1:
            log.warning("%s: ignoring a datagram without the input token from %s (further ones are counted, not "
                        "logged)", self.label, self.last_refused_from)
        return False

    def close(self) -> None:
        """Stop the receiver thread and close the socket (idempotent)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        self._sock.close()
