"""Where a switch user's presses come from, besides the window's own keys and mouse buttons: a game controller's
buttons and a socket message. Each gives ``SwitchEvent``s (which switch, pressed or released, when) that the app
drains once a frame and hands to the switch mode (zoom/switch_modes.py).

- ``JoystickSwitches``: a game controller (or a switch interface that shows up as one, as most USB switch
  adapters do) through Linux's joystick interface, ``/dev/input/js0``: 8-byte events (time in ms, value, type,
  number), button events of type 1, the initial-state events flagged 0x80 skipped. Controller button
  ``buttons[i]`` is switch ``i``. Other systems have no such file: the source says so when it cannot start.
- ``UDPSwitches``: a program on this machine (a switch interface's driver, a BCI, a test) sends datagrams of
  lines ``down N``, ``up N`` or ``press N`` (N = 1 or 2: the first or second switch), with a ``token TOKEN``
  line when the input token is set, to UDP port 5578. The receiver is the UDP inputs' (input/udp.py): floods,
  bad datagrams and the token are handled there.

Nothing here raises out of a receiver thread; bad data is counted in ``problems()`` as for gaze.
"""

from __future__ import annotations

import os
import select
import struct
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dasher_rnn.input.gaze import GazeSource, GazeSourceError
from dasher_rnn.input.udp import UDPSource

SWITCHES = 2  # the modes use one or two switches
# where presses come from besides the window's keys and mouse buttons (which always work): nothing else, a game
# controller, the switch socket
SWITCH_SOURCES = ("keys", "controller", "socket")
MAX_PENDING = 256  # events kept between two frames: a flood cannot grow memory
REPEAT_GAP_S = 0.03  # a key's release and press this close are its repeat while held (``KeyRepeat``) ...
REPEAT_DELAY_S = 0.15  # ... once it has been held this long (servers start repeating after 200-660 ms)
DEFAULT_JOYSTICK = "/dev/input/js0"
DEFAULT_SWITCH_PORT = 5578
_JS_EVENT = struct.Struct("<IhBB")  # struct js_event: time (ms), value, type, number
_JS_BUTTON, _JS_INIT = 0x01, 0x80
_POLL = 0.1


@dataclass(frozen=True)
class SwitchEvent:
    switch: int  # 0: the first switch, 1: the second
    down: bool  # pressed (True) or released
    t: float  # time.monotonic() when it arrived


class _Events:
    """A bounded, thread-safe queue of switch events: a receiver thread appends, the UI drains each frame."""

    def __init__(self) -> None:
        self._events: deque[SwitchEvent] = deque(maxlen=MAX_PENDING)
        self._lock = threading.Lock()

    def add(self, switch: int, down: bool) -> None:
        with self._lock:
            self._events.append(SwitchEvent(switch, down, time.monotonic()))

    def drain(self) -> list[SwitchEvent]:
        with self._lock:
            events = list(self._events)
            self._events.clear()
        return events


class JoystickSwitches(GazeSource):
    """Switches from a game controller's buttons (Linux joystick interface); see the module docstring."""

    label = "Game controller"
    bad_unit = "event"

    def __init__(self, device: str = DEFAULT_JOYSTICK, buttons: tuple[int, ...] = (0, 1)) -> None:
        super().__init__()
        self.device, self.buttons = device, buttons
        self.queue = _Events()
        try:
            self._fd = os.open(device, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            reason = "not found" if isinstance(exc, FileNotFoundError) else exc.strerror or str(exc)
            raise GazeSourceError(f"no game controller at {device} ({reason}); plug one in, or choose the "
                                  "keyboard or the mouse buttons as switches") from None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="JoystickSwitches", daemon=True)
        self._thread.start()

    @property
    def description(self) -> str:
        return f"Switches: buttons {', '.join(str(b + 1) for b in self.buttons)} of the game controller at {self.device}"

    def events(self) -> list[SwitchEvent]:
        """The presses and releases since the last call."""
        return self.queue.drain()

    def _run(self) -> None:
        pending = b""
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self._fd], [], [], _POLL)
                if not ready:
                    continue
                data = os.read(self._fd, 64 * _JS_EVENT.size)
            except BlockingIOError:
                continue
            except OSError as exc:  # unplugged: say so once, and stop reading
                if not self._stop.is_set():
                    self._reject("device", f"{self.device}: {exc.strerror or exc}")
                return
            if not data:  # the writer went away (a FIFO in tests; a device never ends)
                self._stop.wait(_POLL)
                continue
            pending += data
            whole = len(pending) - len(pending) % _JS_EVENT.size
            for offset in range(0, whole, _JS_EVENT.size):
                try:
                    self._handle(*_JS_EVENT.unpack_from(pending, offset))
                except Exception as exc:  # one event must never end the input
                    self._fail(exc)
            pending = pending[whole:]

    def _handle(self, _ms: int, value: int, kind: int, number: int) -> None:
        if kind & _JS_INIT or not kind & _JS_BUTTON:  # the state at opening, axes: not presses
            return
        if number in self.buttons:
            self.queue.add(self.buttons.index(number), value != 0)
            self.received += 1

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)
        try:
            os.close(self._fd)
        except OSError:
            pass


class UDPSwitches(UDPSource):
    """Switches from datagrams (``down N``, ``up N``, ``press N``); see the module docstring."""

    label = "Switch socket"
    listens_for = "switch presses"

    def __init__(self, port: int = DEFAULT_SWITCH_PORT, host: str = "127.0.0.1", token: str | None = None) -> None:
        self.queue = _Events()
        super().__init__(host, port, token=token)

    def events(self) -> list[SwitchEvent]:
        """The presses and releases since the last call."""
        return self.queue.drain()

    def _handle(self, data: bytes, sender: tuple) -> None:
        if len(data) > 1024:
            self._reject("too long", f"{len(data)} bytes")
            return
        try:
            lines = [line.split() for line in data.decode("ascii").splitlines() if line.strip()]
        except UnicodeDecodeError:
            self._reject("not text", repr(data[:40]))
            return
        token = next((words[1].encode() for words in lines if len(words) == 2 and words[0] == "token"), None)
        if not self._authorised(token, sender):
            return
        for words in lines:
            if words[0] == "token":
                continue
            if len(words) != 2 or words[0] not in ("down", "up", "press") or words[1] not in ("1", "2"):
                self._reject("not a switch line", " ".join(words))
                continue
            switch = int(words[1]) - 1
            if words[0] in ("down", "press"):
                self.queue.add(switch, True)
            if words[0] in ("up", "press"):
                self.queue.add(switch, False)
        self.received += 1


class KeyRepeat:
    """A held key told by time, not by a flag: an X server whose key repeat the toolkit does not flag sends a held key
    as release-press pairs, each pair at once (``REPEAT_GAP_S`` apart at most). A release is held back that long;
    a press of the same switch within it was the key still down, and both are dropped; otherwise the release goes
    through late (``due``). So a long press is a long press on every server."""

    def __init__(self, gap_s: float = REPEAT_GAP_S) -> None:
        self.gap_s = gap_s
        self._released: dict[int, float] = {}  # switch -> when its release came (time.monotonic())
        self._down: dict[int, float] = {}  # switch -> when it went down (its first press)

    def press(self, switch: int, now: float) -> list[SwitchEvent]:
        """A press came at ``now``: what it means (nothing: a repeat of a key still held; a key repeats only once it
        has been held for the repeat delay, ``REPEAT_DELAY_S``)."""
        released = self._released.pop(switch, None)
        down = self._down.get(switch)
        if released is not None and now - released <= self.gap_s and down is not None \
                and released - down >= REPEAT_DELAY_S:
            return []
        self._down[switch] = now
        late = [SwitchEvent(other, False, at) for other, at in self._released.items()]  # another switch's release
        self._released.clear()  # is no repeat of this one: it goes through first
        if released is not None:
            late.append(SwitchEvent(switch, False, released))
        return late + [SwitchEvent(switch, True, now)]

    def release(self, switch: int, now: float) -> list[SwitchEvent]:
        """A release came at ``now``: held back until ``due`` says it was no repeat."""
        self._released[switch] = now
        return []

    def flush(self) -> list[SwitchEvent]:
        """Every release held back, now (a press from elsewhere, a mouse button, comes next)."""
        return self.due(float("inf"))

    def due(self, now: float) -> list[SwitchEvent]:
        """The releases that no press followed within the gap: real ones."""
        out = [SwitchEvent(switch, False, at) for switch, at in self._released.items() if now - at > self.gap_s]
        for event in out:
            del self._released[event.switch]
        return out


def open_joystick(options: Mapping[str, Any]) -> JoystickSwitches:
    """A game controller as the options (the preferences) name it."""
    return JoystickSwitches(options.get("switch_device") or DEFAULT_JOYSTICK)


def open_udp(options: Mapping[str, Any]) -> UDPSwitches:
    """The switch socket on the options' port and input token."""
    return UDPSwitches(options.get("switch_port") or DEFAULT_SWITCH_PORT, token=options.get("input_token") or None)


def open_switch_source(options: Mapping[str, Any]) -> JoystickSwitches | UDPSwitches | None:
    """The switch source the options (the preferences' ``switch_source``) name; None for the keys alone.
    GazeSourceError with a message for the user when it cannot start."""
    source = options.get("switch_source", "keys")
    if source == "controller":
        return open_joystick(options)
    if source == "socket":
        return open_udp(options)
    return None
