"""What one client may ask of the API, the checks on what it sends, and ``ApiError``, the error it gets back.

The bottom of the API's modules: it imports none of them, and every other one may import it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from dasher_rnn.alphabet import Alphabet
from dasher_rnn.normalise import normalise


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
    max_connections: int = 512  # connections open at once (kept below the file-descriptor limit; 503 beyond)
    read_timeout_s: float = 15.0  # a client sends a whole request (headers and body) within this; 0: never
    max_session_websockets: int = 16  # WebSockets open on one session (at the limit the idlest makes room)
    max_client_websockets: int = 64  # WebSockets open from one client address (loopback: every local program)

    def to_json(self) -> dict:
        return asdict(self)


class ApiError(Exception):
    """An error to hand back to the client: HTTP status, a stable code and a message saying what is wrong."""

    def __init__(self, status: int, code: str, message: str, **extra: object) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra

    def body(self) -> dict:
        return {"error": {"code": self.code, "message": self.message, **self.extra}}


def check_text(text: str, alphabet: Alphabet, limits: Limits, what: str = "text", reject_unknown: bool = True,
               normalised: bool = True) -> str:
    """``text`` (normalised unless ``normalised`` is false); a 413 when too long, as sent or once normalised
    (``max_text`` counts the characters the model reads: one "\ufb03" is three), a 422 naming the first character
    outside the alphabet unless ``reject_unknown`` is false."""
    if len(text) > limits.max_text:
        raise ApiError(413, "text_too_long", f"{what} has {len(text)} characters; the limit is {limits.max_text}")
    if normalised:
        text = normalise(text, alphabet)
        if len(text) > limits.max_text:  # the body's size bounds the work done before this
            raise ApiError(413, "text_too_long", f"{what} has {len(text)} characters once normalised (ligatures and "
                                                 f"the like spelled out); the limit is {limits.max_text}")
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
    """A 413 when one request asks for more than ``limit`` contexts."""
    if count > limit:
        raise ApiError(413, "too_many_contexts", f"{count} {what} in one request; the limit is {limit}")
