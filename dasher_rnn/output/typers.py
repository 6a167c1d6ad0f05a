"""Synthetic key presses into the window that has the keyboard focus, through maintained libraries.

- X11 (Linux and the BSDs, and XWayland under Wayland): the X server's XTEST extension through python-xlib,
  the pure-Python X client library (pynput and xdotool do the same underneath). A character that is on the
  keyboard map is typed with its key (and Shift); one that is not gets a spare keycode mapped to it for as long
  as we run, as xdotool and pynput do. Programs cannot tell these presses from real ones.
- Windows and macOS: pynput (SendInput with Unicode characters; Quartz keyboard events).
- Wayland without XWayland: nothing can type into other programs (Wayland has no protocol for a client to
  inject input), so ``open_typer`` says so.

pynput is not used on Linux because it requires evdev there, which has no binary wheels: installing it needs a
C compiler and the kernel and Python headers, which a laptop usually lacks.
"""

from __future__ import annotations

import os
import sys
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Protocol

# Programs reload the keyboard map when told it changed; a key pressed before they have done so is lost (seen
# with Qt under Xvfb: 0 ms lost it, 20 ms did not). Only the first use of a character off the keyboard map waits.
BORROW_SETTLE_SECONDS = 0.05


class OutputUnavailable(RuntimeError):
    """Nothing can type into other programs here (no display, Wayland only, no library, no permission)."""


class TypingError(RuntimeError):
    """A key could not be sent now (no focused window, a broken connection, a character that cannot be typed)."""


class Typer(Protocol):
    """Sends keys to the window that has the keyboard focus."""

    name: str

    def focus(self) -> object:
        """An identifier of the window that will receive the keys (``None`` where that cannot be known).

        Raises TypingError when no window has the keyboard focus."""
        ...

    def type_char(self, char: str) -> None:
        """Press and release the key(s) that type ``char`` ("\\n" is Return); raises TypingError."""
        ...

    def backspace(self) -> None:
        """Press and release Backspace; raises TypingError."""
        ...

    def close(self) -> None:
        ...


def wayland_only(env: Mapping[str, str] | None = None) -> bool:
    """A Wayland session with no X server (XWayland) to reach."""
    values = os.environ if env is None else env
    return bool(values.get("WAYLAND_DISPLAY")) and not values.get("DISPLAY")


def on_wayland(env: Mapping[str, str] | None = None) -> bool:
    values = os.environ if env is None else env
    return bool(values.get("WAYLAND_DISPLAY")) or values.get("XDG_SESSION_TYPE") == "wayland"


def open_typer(display: str | None = None) -> Typer:
    """The typer for this platform; raises OutputUnavailable with a message for the user."""
    if sys.platform in ("win32", "darwin"):
        return PynputTyper()
    if display is None and wayland_only():
        raise OutputUnavailable("this Wayland session has no XWayland, and Wayland lets no program type into others")
    return XTestTyper(display)


# -- X11 ----------------------------------------------------------------------------------------------

_SPECIAL_KEYSYMS = {"\n": "Return", "\r": "Return", "\t": "Tab", "\b": "BackSpace"}


def char_to_keysym(char: str) -> int:
    """The X keysym of one character: Latin-1 keysyms are the code points, the rest are 0x01000000 + code point."""
    from Xlib import XK

    if char in _SPECIAL_KEYSYMS:
        return XK.string_to_keysym(_SPECIAL_KEYSYMS[char])
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    if code < 0x20 or 0x7F <= code < 0xA0:
        raise TypingError(f"{char!r} is a control character")
    return 0x01000000 + code


class XTestTyper:
    """XTEST fake key events on an X display (``$DISPLAY`` by default)."""

    name = "X11 XTEST"

    def __init__(self, display: str | None = None, spare_limit: int = 32) -> None:
        try:
            from Xlib import XK, X, error
            from Xlib import display as xdisplay
            from Xlib.ext import xtest
        except ImportError as exc:  # a dependency on Linux; missing only in a broken install
            raise OutputUnavailable(f"python-xlib is not installed ({exc}): pip install python-xlib") from exc
        self._X, self._xtest = X, xtest
        # what a request can raise: the server's error reply, or a connection that closed or broke
        self._failures = (error.XError, error.ConnectionClosedError, error.DisplayError, OSError)
        name = display or os.environ.get("DISPLAY")
        if not name:
            raise OutputUnavailable("there is no X display to type into (DISPLAY is not set)")
        try:
            self._display = xdisplay.Display(name)
        except Exception as exc:  # DisplayNameError, DisplayConnectionError, ConnectionRefusedError...
            raise OutputUnavailable(f"cannot connect to the X display {name} ({exc})") from exc
        if not self._display.has_extension("XTEST"):
            self._display.close()
            raise OutputUnavailable(f"the X server of {name} has no XTEST extension, which typing into other programs needs")
        self._shift = self._display.keysym_to_keycode(XK.string_to_keysym("Shift_L"))
        self._backspace = XK.string_to_keysym("BackSpace")
        self._borrowed: OrderedDict[int, int] = OrderedDict()  # keysym -> spare keycode mapped to it, oldest first
        self._spare_limit = spare_limit
        self._load_mapping()
        self.display_name = name

    def _load_mapping(self) -> None:
        d = self._display
        first = d.display.info.min_keycode
        count = d.display.info.max_keycode - first + 1
        self._mapping = {first + i: list(row) for i, row in enumerate(d.get_keyboard_mapping(first, count))}

    def _find(self, keysym: int) -> tuple[int, bool] | None:
        """(keycode, needs Shift) for ``keysym`` on the first group of the keyboard map."""
        for keycode, row in self._mapping.items():
            if row[:1] == [keysym]:
                return keycode, False
        for keycode, row in self._mapping.items():
            if len(row) > 1 and row[1] == keysym and self._shift:
                return keycode, True
        return None

    def _borrow(self, keysym: int) -> int:
        """Map a spare keycode (one with no symbols) to ``keysym``, recycling the oldest borrowed one."""
        if keysym in self._borrowed:
            self._borrowed.move_to_end(keysym)
            return self._borrowed[keysym]
        spare = [kc for kc, row in self._mapping.items() if not any(row) and kc not in self._borrowed.values()]
        if spare and len(self._borrowed) < self._spare_limit:
            keycode = spare[-1]
        elif self._borrowed:
            _, keycode = self._borrowed.popitem(last=False)
        else:
            raise TypingError("the keyboard map has no spare key for this character")
        width = len(self._mapping[keycode]) or 2
        self._display.change_keyboard_mapping(keycode, [(keysym,) * width])
        self._display.sync()
        self._mapping[keycode] = [keysym] * width
        self._borrowed[keysym] = keycode
        time.sleep(BORROW_SETTLE_SECONDS)
        return keycode

    def _tap(self, keycode: int, shift: bool = False) -> None:
        X, fake = self._X, self._xtest.fake_input
        try:
            if shift:
                fake(self._display, X.KeyPress, self._shift)
            fake(self._display, X.KeyPress, keycode)
            fake(self._display, X.KeyRelease, keycode)
            if shift:
                fake(self._display, X.KeyRelease, self._shift)
            self._display.sync()
        except self._failures as exc:
            raise TypingError(f"could not send the key to the X display ({exc})") from exc

    def focus(self) -> object:
        try:
            focus = self._display.get_input_focus().focus
        except self._failures as exc:
            raise TypingError(f"could not ask the X display which window has the focus ({exc})") from exc
        if focus in (self._X.NONE, 0):
            raise TypingError("no window has the keyboard focus")
        return focus if isinstance(focus, int) else focus.id

    def type_char(self, char: str) -> None:
        keysym = char_to_keysym(char)
        found = self._find(keysym)
        if found is None:
            try:
                found = (self._borrow(keysym), False)
            except self._failures as exc:
                raise TypingError(f"cannot map a key to {char!r} ({exc})") from exc
        self._tap(*found)

    def backspace(self) -> None:
        found = self._find(self._backspace)
        if found is None:
            raise TypingError("the keyboard map has no Backspace key")
        self._tap(*found)

    def close(self) -> None:
        """Give the borrowed keys back their empty mapping, and disconnect."""
        try:
            for keycode in self._borrowed.values():
                self._display.change_keyboard_mapping(keycode, [(0,) * len(self._mapping[keycode])])
            self._display.sync()
            self._display.close()
        except Exception:  # already disconnected: nothing to give back
            pass
        self._borrowed.clear()


# -- Windows and macOS ----------------------------------------------------------------------------------

class PynputTyper:
    """pynput's keyboard controller (SendInput on Windows, Quartz events on macOS)."""

    name = "pynput"

    def __init__(self) -> None:
        try:
            from pynput.keyboard import Controller, Key
        except ImportError as exc:  # also what pynput raises when its backend cannot start
            raise OutputUnavailable(f"pynput cannot start here ({exc})") from exc
        if sys.platform == "darwin" and not _macos_trusted():
            raise OutputUnavailable("macOS does not allow this program to type into others: allow it in System "
                                    "Settings > Privacy & Security > Accessibility, then restart it")
        self._keyboard, self._key = Controller(), Key

    def focus(self) -> object:
        return None  # pynput cannot tell which window has the focus

    def type_char(self, char: str) -> None:
        try:
            self._keyboard.type(char)
        except Exception as exc:  # InvalidCharacterException, ValueError for characters beyond one UTF-16 unit
            raise TypingError(f"cannot type {char!r} ({exc})") from exc

    def backspace(self) -> None:
        try:
            self._keyboard.tap(self._key.backspace)
        except Exception as exc:
            raise TypingError(f"cannot press Backspace ({exc})") from exc

    def close(self) -> None:
        pass


def _macos_trusted() -> bool:
    """Whether macOS lets this process post keyboard events (it drops them silently otherwise)."""
    try:
        from ApplicationServices import AXIsProcessTrusted
    except ImportError:
        return True  # cannot tell; pynput will try
    return bool(AXIsProcessTrusted())
