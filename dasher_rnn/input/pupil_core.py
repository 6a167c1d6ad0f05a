"""Gaze points from a Pupil Core headset through Pupil Capture's network API (Pupil Remote, ZeroMQ and msgpack).

Needs the optional packages ``pyzmq`` and ``msgpack`` (the ``pupil`` extra: ``pip install 'dasher-rnn[pupil]'``); they
are imported only when a PupilCoreSource is made, and without them it raises GazeSourceError with that one line, so
the app runs without them.

A head-mounted tracker sees the world through its scene camera, not the screen: Pupil Capture maps gaze onto the
screen with its **Surface Tracker** plugin, which finds AprilTag markers shown at the screen's corners and publishes
gaze on each surface the user defined. So the setup is: markers on the screen's edges, the Surface Tracker on, a
surface defined on them and named like ``surface`` ("screen" by default), the surface's corners on the screen's.

What this reads (pupil-labs/pupil ``shared_modules/surface_tracker/surface_tracker.py``, ``on_notify``/
``_create_surface_events``, and ``surface_utils.map_gaze_and_fixation_event``; pupil-labs/pupil-helpers
``python/filter_gaze_on_surface.py``):

- Pupil Remote: a ZeroMQ REP socket, by default on TCP port 50020 of the machine running Capture. The request
  ``SUB_PORT`` is answered with the port of Capture's publisher (a number as text; it changes when Capture restarts).
- The publisher (ZeroMQ PUB) sends multipart messages, a topic then a msgpack map. Here a SUB socket subscribes to
  ``surfaces.<surface>`` and reads only messages whose topic is exactly that (``surfaces.screen2`` is another
  surface). The map has ``gaze_on_surfaces``: a list of ``{"norm_pos": [x, y], "confidence": c, "on_surf": bool,
  "timestamp": t, ...}``, ``norm_pos`` normalised to the surface with (0, 0) its **bottom** left (Pupil's convention;
  pupil-helpers' ``mouse_control.py`` flips y too), ``timestamp`` in seconds on Pupil's clock.
- Each datum is a sample, in order, with y flipped to the screen's top-to-bottom; one with ``confidence`` below
  ``min_confidence`` (0.6, Pupil Labs' recommended threshold) is a lost sample (a blink, a bad pupil detection).
  Gaze off the surface (``on_surf`` false) is still a point, outside 0..1: the app pauses outside its window.
- No message arrives while the surface is not detected (markers out of the camera's view): the app then pauses
  after ``stale_after`` as with any tracker that stops.

Hostile or broken data never ends the input: a message that is not two frames, not msgpack, not a map with a list
``gaze_on_surfaces`` of data with finite numbers, is a bad message (counted in ``rejected``, logged once per kind,
shown in ``problems()``). What the input holds is bounded, and what it drops is said (``problems()``):

- a message over ``MAX_MESSAGE`` (256 KiB) is refused by ZeroMQ itself (``MAXMSGSIZE``, which drops that connection
  for good): each drop of the publisher's connection is seen by a monitor, counted (``disconnections``) and said, and
  the input connects anew;
- ZeroMQ queues at most ``QUEUE`` (8) messages for the input (``RCVHWM``, and a 256 KiB kernel buffer, ``RCVBUF``):
  beyond them new ones are dropped, so at most about 2 MiB are ever held;
- the newest message wins: each time the input wakes it takes every queued message and uses only the newest of its
  surface (``superseded`` counts the older ones, never steered with);
- a sample older than ``MAX_AGE`` (1 s) is stale and dropped (``stale``): its age is its delay over the smallest
  delay seen this connection (Pupil's clock is not ours, so the delay is measured against the freshest sample);
  when every sample has been stale for ``REBASE_S`` (5 s), Pupil's clock is taken to have jumped and is followed.

When Pupil Remote does not answer (Capture not started yet, quit, or its network API plugin off) the request is
retried with backoff; when no message has arrived for ``idle_timeout`` seconds, Pupil Remote is asked again, and if
its publisher moved (Capture restarted), the subscription follows it. ``description`` and ``problems()`` say which.
"""

from __future__ import annotations

import importlib
import math
import re
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from dasher_rnn.input.gaze import GazeSample, GazeSourceError
from dasher_rnn.input.gazepoint import BACKOFF, ConnectionEnded, ReconnectingSource
from dasher_rnn.input.one_euro import OneEuroFilter

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 50020  # Pupil Remote's default
DEFAULT_SURFACE = "screen"
DEFAULT_MIN_CONFIDENCE = 0.6
MAX_MESSAGE = 256 << 10  # bytes: a surface event with a few gaze data is a few KiB
QUEUE = 8  # messages ZeroMQ may hold for us before it drops new ones
RECEIVE_BUFFER = 256 << 10  # bytes the kernel may hold for the publisher's connection
MAX_AGE = 1.0  # seconds a sample may be delayed beyond the freshest delay seen before it is stale
REBASE_S = 5.0  # seconds of nothing but stale samples after which Pupil's clock is taken to have jumped
MAX_SURFACE_NAME = 200
_POLL_MS = 100
_PORT = re.compile(r"[0-9]{1,5}\Z")


def _import_libraries() -> tuple[Any, Any]:
    try:
        zmq = importlib.import_module("zmq")
        msgpack = importlib.import_module("msgpack")
    except ImportError as exc:
        raise GazeSourceError(
            f"the Pupil Capture input needs pyzmq and msgpack, not installed for this Python "
            f"({sys.version_info[0]}.{sys.version_info[1]}): pip install 'dasher-rnn[pupil]'") from exc
    return zmq, msgpack


class BadMessage(ValueError):
    """A message that is not a usable surface event; kind groups the warnings."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


def check_surface(name: str) -> str:
    """The surface name if usable (1 to 200 characters, no control characters); ValueError saying why not."""
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_SURFACE_NAME:
        raise ValueError(f"a surface name has 1 to {MAX_SURFACE_NAME} characters, got {str(name)[:40]!r}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise ValueError(f"a surface name cannot contain control characters: {name[:40]!r}")
    return name


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadMessage("bad field", f"{name} is not a number: {str(value)[:60]!r}")
    number = float(value)  # msgpack integers fit in 64 bits: no overflow
    if not math.isfinite(number):
        raise BadMessage("non-finite", f"{name} = {number!r}")
    return number


def read_surface_event(message: object, min_confidence: float = DEFAULT_MIN_CONFIDENCE
                       ) -> list[tuple[float, float, float] | None]:
    """The samples of one surface event: (x, y, t) on the screen (y from the top), None for a datum below
    ``min_confidence``; BadMessage when the event or any of its data is malformed."""
    if not isinstance(message, dict):
        raise BadMessage("not a surface event", f"a {type(message).__name__}, not a map")
    gaze = message.get("gaze_on_surfaces")
    if not isinstance(gaze, list | tuple):
        raise BadMessage("not a surface event", "no list gaze_on_surfaces")
    samples: list[tuple[float, float, float] | None] = []
    for datum in gaze:
        if not isinstance(datum, dict):
            raise BadMessage("bad gaze datum", f"a {type(datum).__name__}, not a map")
        position = datum.get("norm_pos")
        if not isinstance(position, list | tuple) or len(position) != 2:
            raise BadMessage("bad gaze datum", f"norm_pos is not [x, y]: {str(position)[:60]!r}")
        confidence = _number(datum.get("confidence"), "confidence")
        x, y = _number(position[0], "x"), _number(position[1], "y")
        t = _number(datum.get("timestamp"), "timestamp")
        samples.append(None if confidence < min_confidence else (x, 1.0 - y, t))
    return samples


def unpack(msgpack: Any, payload: bytes) -> object:
    """The msgpack payload's value; BadMessage for anything else (msgpack bounds each length by the payload's)."""
    try:
        return msgpack.unpackb(payload, raw=False)
    except Exception as exc:  # ExtraData, FormatError, StackError, UnicodeDecodeError, a bad map key...
        raise BadMessage("not msgpack", f"{type(exc).__name__}: {str(exc)[:80]}") from None


class PupilCoreSource(ReconnectingSource):
    """Reads gaze on a screen surface from Pupil Capture (Pupil Remote at ``host:port``, 127.0.0.1:50020 by default),
    connecting and reconnecting on a daemon thread; same interface as the other gaze sources.

    Raises GazeSourceError when pyzmq or msgpack is missing or a setting is unusable; a Capture that is not running
    yet is waited for.
    """

    label = "Pupil Capture"
    bad_unit = "message"
    server = "Pupil Capture"

    def __init__(self, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, surface: str = DEFAULT_SURFACE,
                 smoothing: OneEuroFilter | None = None, stale_after: float = 0.5,
                 on_sample: Callable[[GazeSample], None] | None = None,
                 min_confidence: float = DEFAULT_MIN_CONFIDENCE, connect_timeout: float = 2.0,
                 idle_timeout: float = 5.0, backoff: tuple[float, float] = BACKOFF) -> None:
        """``surface``: the name of the Surface Tracker's surface on the screen; ``min_confidence``: gaze data below it
        are lost samples; ``connect_timeout``: seconds to wait for Pupil Remote's answer; ``idle_timeout``: seconds
        without a message after which Pupil Remote is asked again where its publisher is (at least 0.5)."""
        self._zmq, self._msgpack = _import_libraries()
        try:
            self.surface = check_surface(surface)
        except ValueError as exc:
            raise GazeSourceError(str(exc)) from exc
        if isinstance(min_confidence, bool) or not isinstance(min_confidence, int | float) or not 0 <= min_confidence <= 1:
            raise GazeSourceError(f"min_confidence must be from 0 to 1, got {str(min_confidence)[:20]}")
        if not idle_timeout >= 0.5:
            raise GazeSourceError(f"idle_timeout must be at least 0.5 s, got {idle_timeout}")
        self.min_confidence = float(min_confidence)
        self.topic = f"surfaces.{surface}".encode()
        self.other_messages = 0  # messages of other surfaces (a subscription to "surfaces.screen" also gets "screen2")
        self.sub_port: int | None = None  # where Capture's publisher is, as Pupil Remote said
        self.superseded = 0  # surface events passed over because a newer one was queued behind them
        self.stale = 0  # samples dropped as older than MAX_AGE
        self.disconnections = 0  # the publisher's connection dropped (Capture quit, or a message over MAX_MESSAGE)
        self._delay: float | None = None  # the smallest delay (arrival - Pupil's timestamp) seen this connection
        self._stale_since: float | None = None  # when samples began to be nothing but stale
        super().__init__(host, port, smoothing, stale_after, on_sample, connect_timeout, idle_timeout, backoff)

    @property
    def description(self) -> str:
        text = super().description
        if self.state == "connected":
            text += (f" (no gaze on the surface {self.surface!r} yet: is the Surface Tracker on, with a surface of "
                     f"that name on the screen's markers?)")
        return text

    def problems(self) -> str:
        """What was dropped, besides bad messages and the connection's trouble."""
        text = super().problems()
        dropped = [f"{n} {what}" for n, what in (
            (self.superseded, "older queued messages passed over for the newest"),
            (self.stale, f"stale samples dropped (over {MAX_AGE:g} s late)"),
            (self.disconnections, f"dropped connections to the publisher (Capture quit, or a message over "
                                  f"{MAX_MESSAGE // 1024} KiB)")) if n]
        if not dropped:
            return text
        mine = f"{self.label}: " + ", ".join(dropped)
        return f"{text}; {mine}" if text else mine

    def _endpoint(self, port: int) -> str:
        return f"tcp://[{self.host}]:{port}" if ":" in self.host else f"tcp://{self.host}:{port}"

    def _socket(self, context: Any, kind: int, max_message: int) -> Any:
        zmq = self._zmq
        sock = context.socket(kind)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, max_message)
        if ":" in self.host:
            sock.setsockopt(zmq.IPV6, 1)
        return sock

    def _wait(self, sock: Any, seconds: float) -> bool:
        """Whether ``sock`` has a message within ``seconds`` (False at once when the source is closing)."""
        deadline = time.monotonic() + seconds
        while not self._stop.is_set():
            if sock.poll(_POLL_MS, self._zmq.POLLIN):
                return True
            if time.monotonic() > deadline:
                return False
        return False

    def _ask_sub_port(self, context: Any) -> int:
        """Pupil Remote's answer to SUB_PORT; ConnectionEnded when it does not answer, or not with a port."""
        zmq = self._zmq
        req = self._socket(context, zmq.REQ, 1024)
        try:
            req.connect(self._endpoint(self.port))
            req.send(b"SUB_PORT")
            if not self._wait(req, self.connect_timeout):
                raise ConnectionEnded(f"Pupil Remote did not answer within {self.connect_timeout:g} s")
            answer = req.recv(zmq.NOBLOCK)
        finally:
            req.close(linger=0)
        text = answer.decode("ascii", "replace").strip()
        if not _PORT.match(text) or not 1 <= int(text) <= 65535:
            raise ConnectionEnded(f"Pupil Remote answered {text[:40]!r}, not a port")
        return int(text)

    def _session(self) -> None:
        zmq = self._zmq
        context = zmq.Context()
        try:
            sub_port = self._ask_sub_port(context)
            if self._stop.is_set():
                return
            sub = self._socket(context, zmq.SUB, MAX_MESSAGE)
            monitor = None
            try:
                sub.setsockopt(zmq.RCVHWM, QUEUE)
                sub.setsockopt(zmq.RCVBUF, RECEIVE_BUFFER)
                monitor = sub.get_monitor_socket(zmq.EVENT_DISCONNECTED)
                sub.connect(self._endpoint(sub_port))
                sub.setsockopt(zmq.SUBSCRIBE, self.topic)
                self.sub_port = sub_port
                self._delay = self._stale_since = None
                self._connected()
                poller = zmq.Poller()
                poller.register(sub, zmq.POLLIN)
                poller.register(monitor, zmq.POLLIN)
                last_message = time.monotonic()
                while not self._stop.is_set():
                    ready = dict(poller.poll(_POLL_MS))
                    if monitor in ready:  # ZeroMQ does not take up a connection it dropped: a new one is made
                        self.disconnections += 1
                        raise ConnectionEnded(f"the publisher's connection dropped (Capture quit, or it sent a message "
                                              f"over {MAX_MESSAGE // 1024} KiB, which is refused)")
                    if sub in ready:
                        queued = self._drain(sub)
                        last_message = time.monotonic()
                        try:
                            self._handle_newest(queued)
                        except Exception as exc:  # one message must never end the input
                            self._fail(exc)
                    elif time.monotonic() - last_message > self.idle_timeout:
                        if self._ask_sub_port(context) != sub_port:  # (raises when Pupil Remote has gone)
                            raise ConnectionEnded("Pupil Capture's publisher moved (Capture restarted)")
                        last_message = time.monotonic()  # still there: the surface is just not in view
            finally:
                if monitor is not None:
                    sub.disable_monitor()
                    monitor.close(linger=0)
                sub.close(linger=0)
        finally:
            context.destroy(linger=0)

    def _drain(self, sub: Any) -> list[list[bytes]]:
        """Every message queued now (at most what ZeroMQ holds, and those arriving meanwhile up to as many again)."""
        queued = []
        for _ in range(2 * QUEUE + 2):
            try:
                queued.append(sub.recv_multipart(self._zmq.NOBLOCK))
            except self._zmq.Again:
                break
        return queued

    def _handle_newest(self, queued: list[list[bytes]]) -> None:
        """Every message in ``queued`` is checked (a bad one is counted as ever), and the samples of the newest good
        surface event among them are used; older good ones are passed over (``superseded``)."""
        events: list[list[tuple[float, float, float] | None]] = []
        for frames in queued:
            samples = self._read(frames)
            if samples is not None:
                events.append(samples)
        if not events:
            return
        self.superseded += len(events) - 1
        now = time.monotonic()
        for sample in events[-1]:
            if sample is None:
                self._lost_sample()
            elif not self._fresh(sample[2], now):
                self.stale += 1
            else:
                self._sample(*sample)

    def _read(self, frames: list[bytes]) -> list[tuple[float, float, float] | None] | None:
        """One message from the publisher: its samples, or None for a bad message (counted) or another surface's."""
        try:
            if len(frames) < 2:
                raise BadMessage("not a Pupil message", f"{len(frames)} frame, not a topic and a payload")
            if frames[0] != self.topic:
                self.other_messages += 1
                return None
            return read_surface_event(unpack(self._msgpack, frames[1]), self.min_confidence)
        except BadMessage as exc:
            self._reject(exc.kind, exc.detail)
            return None

    def _handle(self, frames: list[bytes]) -> None:
        """One message from the publisher: samples, lost samples, a bad message or another surface's."""
        self._handle_newest([frames])

    def _fresh(self, t: float, now: float) -> bool:
        """Whether a sample stamped ``t`` on Pupil's clock, arriving ``now``, is at most ``MAX_AGE`` later than the
        freshest sample of this connection was; after ``REBASE_S`` of nothing but stale ones, Pupil's clock jumped
        (Capture's clock was reset): the freshest delay starts again from this sample."""
        delay = now - t
        if self._delay is None or delay < self._delay:
            self._delay = delay
        if delay - self._delay <= MAX_AGE:
            self._stale_since = None
            return True
        if self._stale_since is None:
            self._stale_since = now
        elif now - self._stale_since > REBASE_S:
            self._delay, self._stale_since = delay, None
            return True
        return False


def open_source(options: Mapping[str, Any], smoothing: OneEuroFilter) -> PupilCoreSource:
    """The registry's opener (input/registry.py): Pupil Remote at the options' host and port, gaze on their surface."""
    return PupilCoreSource(options.get("pupil_host", DEFAULT_HOST), options.get("pupil_port", DEFAULT_PORT),
                           options.get("pupil_surface", DEFAULT_SURFACE), smoothing=smoothing)
