"""Gaze points from a Gazepoint eye tracker (GP3, GP3 HD) through Gazepoint's Open Gaze API, over TCP.

Gazepoint Control (the tracker's own program, which must be running) is a TCP server, by default on port 4242 of the
machine it runs on. A client sends it configuration commands, one XML element each, ended by CR LF::

    <SET ID="ENABLE_SEND_TIME" STATE="1" />
    <SET ID="ENABLE_SEND_POG_BEST" STATE="1" />
    <SET ID="ENABLE_SEND_DATA" STATE="1" />

and the server answers each with ``<ACK ID="ENABLE_SEND_TIME" STATE="1" />``, then streams one record per camera
frame (60 or 150 Hz), each an empty XML element ended by CR LF, holding the fields enabled::

    <REC TIME="38.41262" BPOGX="0.43701" BPOGY="0.81848" BPOGV="1" />

What this reads (Open Gaze API v2.0, section 5 "Data Record"; the record layout checked against Gazepoint's example
clients and published logs of real servers, e.g. ``<REC TIME="38.41262" FPOGX="0.41352" FPOGY="0.80682" FPOGS=...
FPOGD=... FPOGID="93" FPOGV="1" BPOGX="0.43701" BPOGY="0.81848" BPOGV="1" />``):

- ``BPOGX``, ``BPOGY``: the "best" point of gaze, the average of the left and right eyes' points when both are found,
  else the one eye's, as a fraction of the screen Gazepoint Control is set up for: (0, 0) its top left, (1, 1) its
  bottom right, as GazeSample wants. ``BPOGV``: 1 if valid, 0 if not (a blink, the eyes lost): a lost sample.
- ``TIME``: seconds since Gazepoint Control started, the sample time (a record without it is timed on arrival).
- With ``pog="fixation"`` the fixation filter's point ``FPOGX``, ``FPOGY``, ``FPOGV`` is read instead
  (``ENABLE_SEND_POG_FIX``).

Why the best point and not the fixation point by default: the fixation point is the mean position over the current
fixation, held until the tracker's fixation filter decides that a new one has started, so it moves in steps and lags
each saccade by the detection time. Steering Dasher is following boxes that move as they zoom (smooth pursuit), which
a fixation filter turns into a staircase; the best point follows the eye sample by sample, and the 1-euro filter here
smooths it at rest without lagging fast moves. The fixation point is there for trackers too jittery for that.

The stream is framed here, not by one XML parser over the whole connection (the stream is a sequence of documents,
not one): an element runs from ``<`` to the first ``>`` outside quotes. Since a record never holds a line end or a
``<``, both end a broken element (truncated by the server, or garbage) so that the next record is read; an element
longer than 64 KiB (``MAX_RECORD``) is refused and the bytes up to the next ``<`` or line end skipped, so a record that
never ends cannot use up memory. Each element is then parsed alone with the standard library's expat parser, which
never sees a DTD (an element must start with a name, so ``<!DOCTYPE``, ``<!ENTITY`` and ``<?xml`` are refused before
parsing, and the parser is also told to refuse any DTD, entity declaration or external entity): no entity expansion,
no external entities (XXE). Only the five predefined entities and character references are read; anything else is a
bad record.

Bad records (not XML, not an empty element, a point of gaze missing, a valid flag other than 0 or 1, numbers that are
not finite decimals) are counted in ``rejected``, logged once per kind and shown in ``problems()``; records of other
types (the server's ``ACK`` and ``CAL`` messages) are counted in ``other_messages``. Nothing in the stream can end
the input: the connection is retried with backoff (0.25 s doubling to 5 s) when the server is not there yet, closes,
resets, or sends nothing for ``idle_timeout`` seconds, and ``description`` and ``problems()`` say which for the status
bar. The client never turns the server's data off on leaving (other clients may be reading it): it closes its socket.
"""

from __future__ import annotations

import logging
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any
from xml.parsers import expat

from dasher_rnn.input.gaze import GazeSample, GazeSource, GazeSourceError
from dasher_rnn.input.one_euro import OneEuroFilter

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 4242
MAX_RECORD = 64 * 1024  # bytes of one element: real records are under 1 KiB even with every field enabled
RECV_BYTES = 65536
POG_FIELDS = {"best": ("BPOG", "ENABLE_SEND_POG_BEST"), "fixation": ("FPOG", "ENABLE_SEND_POG_FIX")}
BACKOFF = (0.25, 5.0)  # seconds before the first retry, and the most between retries
_POLL = 0.1  # seconds between checks for close() while nothing arrives
_WHITESPACE = b" \t\r\n"


class BadRecord(ValueError):
    """An element of the stream that is not a usable record; kind groups the warnings."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


def check_address(host: str, port: int) -> tuple[str, int]:
    """(host, port) if usable for a connection; ValueError saying why not."""
    if not isinstance(host, str) or not host.strip() or any(ch.isspace() or ord(ch) < 32 for ch in host):
        raise ValueError(f"the host must be a name or address without spaces, got {str(host)[:60]!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"the port must be a whole number from 1 to 65535, got {str(port)[:20]}")
    return host, port


def _show(data: bytes, limit: int = 60) -> str:
    return repr(data[:limit].decode("utf-8", "replace")) + ("..." if len(data) > limit else "")


# -- framing: the byte stream into elements ------------------------------------------------------------------------

_IN_TAG = re.compile(rb"[<>\r\n\"']")
_IN_QUOTE = {ord('"'): re.compile(rb'[<\r\n"]'), ord("'"): re.compile(rb"[<\r\n']")}
_RESYNC = re.compile(rb"[<\r\n]")


class RecordFramer:
    """Cuts a byte stream into elements ``<...>`` however it was split into reads; see the module docstring.

    ``feed(data)`` returns, in stream order, each complete element (bytes, from ``<`` to ``>``) and a BadRecord for
    each broken element or run of garbage. It holds at most ``MAX_RECORD`` bytes between calls.
    """

    def __init__(self, max_record: int = MAX_RECORD) -> None:
        self.max_record = max_record
        self.reset()

    def reset(self) -> None:
        """Forget any partial element (a new connection starts afresh)."""
        self._tag = bytearray()  # the element being read, from its "<"; empty when between elements
        self._quote: int | None = None  # the quote character of the attribute value being read
        self._skipping = False  # after an over-long element: dropping bytes up to the next "<" or line end
        self._garbage = 0  # bytes of the current run of garbage between elements already reported (0: none)

    def feed(self, data: bytes) -> list[bytes | BadRecord]:
        out: list[bytes | BadRecord] = []
        i, n = 0, len(data)
        while i < n:
            if self._skipping:
                m = _RESYNC.search(data, i)
                if m is None:
                    break
                self._skipping = False
                i = m.start() if data[m.start()] == ord("<") else m.start() + 1
            elif not self._tag:
                j = data.find(b"<", i)
                end = n if j < 0 else j
                self._between(data[i:end], out)
                if j < 0:
                    break
                self._garbage = 0
                self._tag += b"<"
                i = j + 1
            else:
                i = self._in_tag(data, i, out)
        return out

    def _between(self, stretch: bytes, out: list[bytes | BadRecord]) -> None:
        """Bytes between elements: line ends and spaces are the protocol's, anything else is garbage, reported once
        per run (and again per ``max_record`` bytes of it, so that a stream of garbage keeps showing)."""
        junk = stretch.strip(_WHITESPACE)
        if not junk:
            return
        if self._garbage == 0 or self._garbage + len(stretch) > self.max_record:
            out.append(BadRecord("garbage", f"{_show(junk)} between records"))
            self._garbage = 1
        self._garbage += len(stretch)

    def _in_tag(self, data: bytes, i: int, out: list[bytes | BadRecord]) -> int:
        pattern = _IN_TAG if self._quote is None else _IN_QUOTE[self._quote]
        m = pattern.search(data, i)
        end = len(data) if m is None else m.start()
        self._tag += data[i:end]
        if len(self._tag) > self.max_record:
            out.append(BadRecord("too long", f"an element of over {self.max_record} bytes without its end "
                                              f"({_show(bytes(self._tag[:60]))}): skipped"))
            self._tag.clear()
            self._quote = None
            self._skipping = not (m is not None and data[end] == ord(">"))
            return end + 1 if m is not None and data[end] == ord(">") else end
        if m is None:
            return end
        ch = data[end]
        if ch == ord("<") or ch in b"\r\n":
            # a record never holds "<" nor a line end: the element was cut short; read on from here
            out.append(BadRecord("truncated", f"{_show(bytes(self._tag))} ended by {_show(data[end:end + 1])}"))
            self._tag.clear()
            self._quote = None
            return end if ch == ord("<") else end + 1
        self._tag.append(ch)
        if ch == ord(">"):
            out.append(bytes(self._tag))
            self._tag.clear()
        elif self._quote is None:
            self._quote = ch
        elif ch == self._quote:
            self._quote = None
        return end + 1


# -- one element: safe XML -----------------------------------------------------------------------------------------

_ELEMENT_START = re.compile(rb"<[A-Za-z_][A-Za-z0-9_.:-]*(?:[ \t/>]|$)")


def _refuse(*_args: Any) -> Any:
    raise BadRecord("not a record", "a DTD, entity declaration or external entity")


def parse_element(element: bytes) -> tuple[str, dict[str, str]]:
    """(name, attributes) of one empty element ``<NAME A="1" ... />``; BadRecord for anything else, never another
    exception. No DTD is ever read: see the module docstring."""
    if len(element) > MAX_RECORD:
        raise BadRecord("too long", f"{len(element)} bytes, at most {MAX_RECORD}")
    if not _ELEMENT_START.match(element):
        raise BadRecord("not a record", f"{_show(element)} is not an element")
    if not element.endswith(b"/>"):
        raise BadRecord("not a record", f"{_show(element)} is not an empty element (<NAME ... />)")
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse
    parser.EntityDeclHandler = _refuse
    parser.ExternalEntityRefHandler = _refuse
    found: list[tuple[str, dict[str, str]]] = []
    parser.StartElementHandler = lambda name, attributes: found.append((name, attributes))
    try:
        parser.Parse(element, True)
    except BadRecord:
        raise
    except expat.ExpatError as exc:
        raise BadRecord("not XML", f"{expat.ErrorString(exc.code)}: {_show(element)}") from None
    except Exception as exc:  # a defect of the parser must cost one record, not the input
        raise BadRecord("not XML", f"{type(exc).__name__}: {str(exc)[:80]}") from exc
    if len(found) != 1:
        raise BadRecord("not a record", _show(element))
    return found[0]


_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


def _number(text: str, name: str) -> float:
    """A record's number: a decimal (what the server writes, e.g. "0.43701"), finite."""
    value = text.strip()
    if not _DECIMAL.match(value):
        try:
            odd = float(value)  # what float() alone would take: nan, inf, 1_0
        except ValueError:
            raise BadRecord("bad number", f"{name}={_show(text.encode())}") from None
        raise BadRecord("non-finite" if not math.isfinite(odd) else "bad number", f"{name}={_show(text.encode())}")
    number = float(value)
    if not math.isfinite(number):
        raise BadRecord("non-finite", f"{name}={_show(text.encode())} is too large")
    return number


def read_record(attributes: dict[str, str], pog: str = "best") -> tuple[float, float, float | None] | None:
    """(x, y, TIME or None) from a REC record's attributes, None for a sample the tracker marks invalid; BadRecord
    when the point of gaze is missing or malformed."""
    prefix, command = POG_FIELDS[pog]
    valid = attributes.get(prefix + "V")
    if valid is None:
        raise BadRecord("no point of gaze", f"a record without {prefix}V (the server did not take {command}?)")
    if valid.strip() == "0":
        return None
    if valid.strip() != "1":
        raise BadRecord("bad valid flag", f"{prefix}V={_show(valid.encode())}, not 0 or 1")
    if prefix + "X" not in attributes or prefix + "Y" not in attributes:
        raise BadRecord("no point of gaze", f"a valid record without {prefix}X or {prefix}Y")
    x = _number(attributes[prefix + "X"], prefix + "X")
    y = _number(attributes[prefix + "Y"], prefix + "Y")
    t = attributes.get("TIME")
    return x, y, None if t is None else _number(t, "TIME")


def command_ids(pog: str = "best") -> tuple[str, ...]:
    """The IDs of the commands the client sends after connecting, in order."""
    return ("ENABLE_SEND_TIME", POG_FIELDS[pog][1], "ENABLE_SEND_DATA")


def commands(pog: str = "best") -> bytes:
    """What the client sends after connecting: the fields it reads, then the data stream on."""
    return b"".join(f'<SET ID="{name}" STATE="1" />\r\n'.encode("ascii") for name in command_ids(pog))


# -- the connection ------------------------------------------------------------------------------------------------

class ConnectionEnded(Exception):
    """The connection to the server ended (closed, silent too long...); the message says how, for the status bar."""


class ReconnectingSource(GazeSource):
    """A gaze source that connects to a tracker's server on a daemon thread and keeps reconnecting.

    A subclass says what one connection does in ``_session``: connect, set up, receive until the connection ends
    (raising ConnectionEnded or OSError saying why; returning when ``_stop`` is set), calling ``_connected`` once
    the connection is up and ``_push``/``_lost``/``_reject`` for the data. Nothing it raises ends the thread: an
    unexpected exception is counted (``_fail``) and the connection retried like a lost one.
    """

    server = "the tracker"  # in messages: "Connecting to <server> at host:port"

    def __init__(self, host: str, port: int, smoothing: OneEuroFilter | None = None, stale_after: float = 0.5,
                 on_sample: Callable[[GazeSample], None] | None = None, connect_timeout: float = 2.0,
                 idle_timeout: float = 5.0, backoff: tuple[float, float] = BACKOFF) -> None:
        """``connect_timeout``: seconds a connection attempt may take; ``idle_timeout``: seconds without any data
        after which a connection counts as dead and is made anew (0: never); ``backoff``: seconds before the first
        retry and the most between retries (doubling from one to the other)."""
        super().__init__(smoothing, stale_after, on_sample)
        try:
            self.host, self.port = check_address(host, port)
        except ValueError as exc:
            raise GazeSourceError(str(exc)) from exc
        if not (connect_timeout > 0 and idle_timeout >= 0 and 0 < backoff[0] <= backoff[1]):
            raise GazeSourceError(f"connect_timeout > 0, idle_timeout >= 0 and 0 < backoff[0] <= backoff[1] needed, "
                                  f"got {connect_timeout}, {idle_timeout}, {backoff}")
        self.connect_timeout, self.idle_timeout, self.backoff = connect_timeout, idle_timeout, backoff
        self.state = "connecting"  # "connecting", "connected" (no data yet), "receiving", "retrying"
        self.connections = 0  # connections made
        self.ever_connected = False
        self.last_error: str | None = None  # why the newest attempt failed or the newest connection ended
        self.retry_in = 0.0  # seconds to the next attempt, when retrying
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"{type(self).__name__}:{host}:{port}", daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def alive(self) -> bool:
        """Whether the connecting thread is running."""
        return self._thread.is_alive()

    @property
    def description(self) -> str:
        where = f"{self.server} at {self.address}"
        if self.state == "receiving":
            return f"Receiving gaze from {where}"
        if self.state == "connected":
            return f"Connected to {where}, waiting for gaze data"
        if self.state == "retrying":
            what = "connection lost" if self.ever_connected else "not reached"
            return f"{where[0].upper()}{where[1:]}: {what}, retrying ({self.last_error})"
        return f"Connecting to {where}"

    def problems(self) -> str:
        text = super().problems()
        trouble = ""
        if not self.alive and not self._stop.is_set():
            trouble = f"{self.label}: stopped, restart this input"
        elif self.state == "retrying":
            trouble = (f"{self.label}: connection lost, retrying ({self.last_error})" if self.ever_connected else
                       f"{self.label}: cannot connect to {self.address}, retrying ({self.last_error})")
        return f"{text}; {trouble}" if text and trouble else text or trouble

    def close(self) -> None:
        """Stop the thread and close the connection (idempotent)."""
        self._stop.set()
        self._interrupt()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.connect_timeout + 2.0)

    def _interrupt(self) -> None:
        """Wake the thread from a blocking call, from another thread (close); subclasses that can, do."""

    def _connected(self) -> None:
        self.connections += 1
        self.ever_connected = True
        self.state = "connected"
        self.last_error = None

    def _run(self) -> None:
        delay = self.backoff[0]
        while not self._stop.is_set():
            received = self.received + self.lost  # (while retrying, the state stays "retrying" until connected)
            try:
                self._session()
                reason = "closed"
            except ConnectionEnded as exc:
                reason = str(exc)
            except OSError as exc:
                reason = exc.strerror or str(exc) or type(exc).__name__
            except Exception as exc:  # a defect must cost a reconnection, not the input
                self._fail(exc)
                reason = f"internal error: {type(exc).__name__}"
            if self._stop.is_set():
                break
            if self.received + self.lost > received:
                delay = self.backoff[0]  # that connection worked: retry soon
            self.last_error, self.retry_in, self.state = reason, delay, "retrying"
            log.info("%s: %s (%s), retrying in %.2g s", self.label, self.address, reason, delay)
            self._stop.wait(delay)
            delay = min(delay * 2, self.backoff[1])

    def _session(self) -> None:
        raise NotImplementedError

    def _sample(self, x: float, y: float, t: float | None) -> None:
        """A point from the server (t: its clock, None: arrival)."""
        self.state = "receiving"
        self._push(x, y, time.monotonic() if t is None else t)

    def _lost_sample(self) -> None:
        self.state = "receiving"
        self._lost()


class GazepointSource(ReconnectingSource):
    """Reads gaze from Gazepoint Control's Open Gaze API server (``host:port``, 127.0.0.1:4242 by default), connecting
    and reconnecting on a daemon thread; ``pog`` is "best" (``BPOG*``, the default) or "fixation" (``FPOG*``).

    Raises GazeSourceError only for unusable settings; a server that is not there yet is retried.
    """

    label = "Gazepoint"
    bad_unit = "record"
    server = "Gazepoint"

    def __init__(self, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, smoothing: OneEuroFilter | None = None,
                 stale_after: float = 0.5, on_sample: Callable[[GazeSample], None] | None = None, pog: str = "best",
                 connect_timeout: float = 2.0, idle_timeout: float = 5.0, backoff: tuple[float, float] = BACKOFF) -> None:
        if pog not in POG_FIELDS:
            raise GazeSourceError(f"pog must be one of {', '.join(POG_FIELDS)}, got {str(pog)[:40]!r}")
        self.pog = pog
        self.other_messages = 0  # elements other than REC (the server's ACK, CAL...)
        # IDs of the commands this client sent that the server acknowledged, this connection (at most those it sent:
        # an ACK of anything else is counted in other_messages, never kept, so a flood of ACKs keeps nothing)
        self.acknowledged: set[str] = set()
        self._sock: socket.socket | None = None
        self._framer = RecordFramer()
        super().__init__(host, port, smoothing, stale_after, on_sample, connect_timeout, idle_timeout, backoff)

    def _interrupt(self) -> None:
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _session(self) -> None:
        sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout)
        self._sock = sock
        try:
            if self._stop.is_set():
                return
            sock.sendall(commands(self.pog))
            self.acknowledged = set()
            self._framer.reset()
            self._connected()
            sock.settimeout(_POLL)
            last_data = time.monotonic()
            while not self._stop.is_set():
                try:
                    data = sock.recv(RECV_BYTES)
                except TimeoutError:
                    if self.idle_timeout and time.monotonic() - last_data > self.idle_timeout:
                        raise ConnectionEnded(f"nothing received for {self.idle_timeout:g} s") from None
                    continue
                if not data:
                    raise ConnectionEnded("the server closed the connection")
                last_data = time.monotonic()
                for item in self._framer.feed(data):
                    try:
                        self._handle(item)
                    except Exception as exc:  # one record must never end the input
                        self._fail(exc)
        finally:
            self._sock = None
            self.acknowledged = set()  # the connection's: gone with it
            sock.close()

    def _handle(self, item: bytes | BadRecord) -> None:
        """One element of the stream (or a broken one): a point, a lost sample, a bad record or another message."""
        try:
            if isinstance(item, BadRecord):
                raise item
            name, attributes = parse_element(item)
            if name != "REC":
                self.other_messages += 1
                if name == "ACK" and attributes.get("ID") in command_ids(self.pog):
                    self.acknowledged.add(attributes["ID"])
                return
            point = read_record(attributes, self.pog)
        except BadRecord as exc:
            self._reject(exc.kind, exc.detail)
            return
        if point is None:
            self._lost_sample()
        else:
            self._sample(*point)


def open_source(options: Mapping[str, Any], smoothing: OneEuroFilter) -> GazepointSource:
    """The registry's opener (input/registry.py): Gazepoint Control's server at the options' host and port."""
    return GazepointSource(options.get("gazepoint_host", DEFAULT_HOST), options.get("gazepoint_port", DEFAULT_PORT),
                           smoothing=smoothing)
