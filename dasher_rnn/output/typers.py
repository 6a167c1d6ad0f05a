"""Synthetic key presses into the window that has the keyboard focus, through maintained libraries.

- X11 (Linux and the BSDs, and XWayland under Wayland): the X server's XTEST extension through python-xlib,
  the pure-Python X client library (pynput and xdotool do the same underneath). A character that is on the
  keyboard map is typed with its key (and Shift); one that is not gets a spare keycode mapped to it for as long
  as we run, as xdotool and pynput do. Programs cannot tell these presses from real ones.
- Windows and macOS: pynput (SendInput with Unicode characters; Quartz keyboard events).
- Wayland without XWayland: nothing can type into other programs (Wayland has no protocol for a client to
  inject input), so ``open_typer`` says so.

A key goes through the modifiers in effect: with Caps Lock on, "Hello" would arrive as "hELLO"; with Shift held,
"5." as "%>"; with Ctrl latched by sticky keys, "a" is Ctrl+A (select all) and the next letter replaces the
program's whole text. So on X11 every run of keys (``Typer.typing``) first sets the user's modifiers aside and
puts them back after its last key, as ``xdotool type --clearmodifiers`` does: a held modifier key is released and
pressed again, a latched or locked modifier (sticky keys, Caps Lock) is unlatched or unlocked through XKB and
latched or locked again, and a second layout in effect gives way to the first. Num Lock stays: it changes only
the keypad, whose keys are never pressed here. What cannot be set aside (a modifier key held on a real keyboard,
whose release the X server may ignore when it comes through XTEST; on Windows and macOS any modifier) makes the
run raise TypingError saying which, before any key: direct output waits, says why in the status bar, and tries
again a second later. The text is never typed through a modifier.

pynput is not used on Linux because it requires evdev there, which has no binary wheels: installing it needs a
C compiler and the kernel and Python headers, which a laptop usually lacks.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from dasher_rnn.output.xkb import KeyboardState, Xkb

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

    def typing(self) -> contextlib.AbstractContextManager[None]:
        """A run of keys: the user's modifiers (held, latched, locked) are set aside before its first key and put
        back after its last, so each key types exactly its character. Raises TypingError, sending nothing, when
        one cannot be set aside (saying which). A key sent outside a run sets them aside for itself."""
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


# what the user calls the keys of each modifier (the eight core modifiers: Shift, Lock, Control, Mod1 to Mod5)
_MODIFIER_KEY_NAMES = {"Shift_L": "Shift", "Shift_R": "Shift", "Caps_Lock": "Caps Lock", "Shift_Lock": "Shift Lock",
                       "Control_L": "Ctrl", "Control_R": "Ctrl", "Alt_L": "Alt", "Alt_R": "Alt", "Meta_L": "Alt",
                       "Meta_R": "Alt", "Super_L": "Super", "Super_R": "Super", "Hyper_L": "Hyper", "Hyper_R": "Hyper",
                       "ISO_Level3_Shift": "AltGr", "Mode_switch": "AltGr", "ISO_Level5_Shift": "Level 5 Shift",
                       "ISO_Level3_Lock": "AltGr Lock", "Num_Lock": "Num Lock", "Scroll_Lock": "Scroll Lock"}
_CORE_MODIFIER_NAMES = ("Shift", "Caps Lock", "Ctrl", "Mod1", "Mod2", "Mod3", "Mod4", "Mod5")


@dataclass(frozen=True)
class _SetAside:
    """What ``XTestTyper`` changed to make a run of keys type plain characters, so that it can be put back."""

    released: tuple[int, ...] = ()  # modifier keys that were held down: pressed again after the run
    latched: int = 0  # modifier masks unlatched and unlocked: latched and locked again after it
    locked: int = 0
    locked_group: int | None = None  # the group locks and latch moved to the first group, to go back to
    latched_group: int | None = None


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
        self._X, self._XK, self._xtest = X, XK, xtest
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
        from dasher_rnn.output.xkb import Xkb, XkbUnavailable

        try:  # the keyboard's state, latches and locks; without XKB only held keys can be set aside
            self._xkb: Xkb | None = Xkb(self._display)
        except (XkbUnavailable, *self._failures):
            self._xkb = None
        self._in_run = False
        self.display_name = name

    def _load_mapping(self) -> None:
        d = self._display
        first = d.display.info.min_keycode
        count = d.display.info.max_keycode - first + 1
        self._mapping = {first + i: list(row) for i, row in enumerate(d.get_keyboard_mapping(first, count))}
        self._modifier_keys: list[list[int]] = [[kc for kc in keys if kc] for keys in d.get_modifier_mapping()]
        num_lock = d.keysym_to_keycode(self._XK.string_to_keysym("Num_Lock"))
        self._kept = sum(1 << i for i, keys in enumerate(self._modifier_keys) if num_lock and num_lock in keys)

    # -- the user's modifiers ------------------------------------------------------------------------------
    def keyboard_state(self) -> KeyboardState:
        """The modifiers and group in effect, and why (held, latched, locked: XKB's state; without XKB only the
        core protocol's sum, as ``mods``)."""
        from dasher_rnn.output.xkb import KeyboardState

        if self._xkb is not None:
            return self._xkb.state()
        mask = self._display.screen().root.query_pointer().mask  # the core state: the modifiers, and the group
        return KeyboardState(mods=mask & 0xFF, base=0, latched=0, locked=0, group=(mask >> 13) & 3,
                             locked_group=0, latched_group=0)

    def _set_aside(self) -> _SetAside:
        """Release, unlatch and unlock the modifiers in effect (all but Num Lock) and go back to the first group;
        TypingError, with everything put back, when something stays in effect."""
        state = self.keyboard_state()
        clear = 0xFF & ~self._kept
        if not state.mods & clear and not state.group:
            return _SetAside()
        down = self._display.query_keymap()
        released = tuple(kc for i in range(8) if state.mods & clear & (1 << i) for kc in self._modifier_keys[i]
                         if down[kc // 8] & (1 << kc % 8))
        for keycode in released:
            self._xtest.fake_input(self._display, self._X.KeyRelease, keycode)
        aside = _SetAside(released, state.latched & clear, state.locked & clear, state.locked_group or None,
                          state.latched_group or None)
        if self._xkb is not None and (aside.latched or aside.locked or aside.locked_group or aside.latched_group):
            self._xkb.latch_lock(affect_locks=aside.locked, locks=0, affect_latches=aside.latched, latches=0,
                                 group_lock=None if aside.locked_group is None else 0,
                                 group_latch=None if aside.latched_group is None else 0)
        self._display.sync()
        after = self.keyboard_state()
        if after.mods & clear or after.group:
            self._put_back(aside)
            raise TypingError(self._why_not(after, clear))
        return aside

    def _why_not(self, state: KeyboardState, clear: int) -> str:
        """What stays in effect after the modifiers were set aside, for the status bar."""
        held, latched, locked = state.base & clear, state.latched & clear, state.locked & clear
        other = state.mods & clear & ~(held | latched | locked)
        parts = [f"{self._modifier_names(mask)} {what}" for mask, what in (
            (held, "held down (by a key this program could not release)"), (latched, "latched"), (locked, "locked on"),
            (other, "in effect")) if mask]
        if state.group:
            parts.append(f"keyboard layout {state.group + 1} in effect")
        return "; ".join(parts) + ": typing waits until that is off, so that no key becomes a shortcut"

    def _modifier_names(self, mask: int) -> str:
        """The modifiers of ``mask`` as the user knows their keys ("Ctrl and Caps Lock")."""
        names: list[str] = []
        for i in range(8):
            if mask & (1 << i):
                found = (_MODIFIER_KEY_NAMES.get(self._keysym_name(self._mapping.get(kc, [0])[0]), "")
                         for kc in self._modifier_keys[i])
                name = next((n for n in found if n), _CORE_MODIFIER_NAMES[i])
                if name not in names:
                    names.append(name)
        return " and ".join(names)

    def _keysym_name(self, keysym: int) -> str:
        return next((name for name in _MODIFIER_KEY_NAMES if self._XK.string_to_keysym(name) == keysym), "")

    def _put_back(self, aside: _SetAside) -> None:
        """Undo ``_set_aside``: the user's modifiers as they were."""
        if self._xkb is not None and (aside.latched or aside.locked or aside.locked_group or aside.latched_group):
            self._xkb.latch_lock(affect_locks=aside.locked, locks=aside.locked, affect_latches=aside.latched,
                                 latches=aside.latched, group_lock=aside.locked_group, group_latch=aside.latched_group)
        for keycode in aside.released:
            self._xtest.fake_input(self._display, self._X.KeyPress, keycode)
        self._display.sync()

    @contextlib.contextmanager
    def typing(self) -> Iterator[None]:
        if self._in_run:
            yield
            return
        try:
            aside = self._set_aside()
        except self._failures as exc:
            raise TypingError(f"could not read or set aside the keyboard's modifiers ({exc})") from exc
        self._in_run = True
        try:
            yield
        except BaseException:
            self._in_run = False
            with contextlib.suppress(*self._failures):
                self._put_back(aside)
            raise
        self._in_run = False
        try:
            self._put_back(aside)
        except self._failures as exc:
            raise TypingError(f"could not put the keyboard's modifiers back ({exc})") from exc

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
        with self.typing():
            self._tap(*found)

    def backspace(self) -> None:
        found = self._find(self._backspace)
        if found is None:
            raise TypingError("the keyboard map has no Backspace key")
        with self.typing():
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
    """pynput's keyboard controller (SendInput on Windows, Quartz events on macOS).

    pynput knows only the modifiers it pressed itself, and the system applies the user's to what it sends: on
    Windows a letter goes as its virtual key, which Caps Lock and a held or sticky Ctrl change; on macOS the
    user's held modifiers are merged into posted events. Neither system lets a program reliably release a key
    the user holds, nor tells a sticky latch from a held key in a way that can be put back, so a run of keys
    does not start while Shift, Ctrl, Alt, the Windows or Command key, or Caps Lock is in effect: it raises
    TypingError naming them, and direct output waits and says why. (Not tested here: there is no Windows or
    macOS machine in the test suite; the X11 typer, which sets them aside, is tested under Xvfb.)
    """

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
        self._in_run = False

    def focus(self) -> object:
        return None  # pynput cannot tell which window has the focus

    @contextlib.contextmanager
    def typing(self) -> Iterator[None]:
        if self._in_run:
            yield
            return
        active = _system_modifiers()
        if active:
            raise TypingError(f"{' and '.join(active)} {'is' if len(active) == 1 else 'are'} on (held, sticky or "
                              f"locked): typing waits until {'it is' if len(active) == 1 else 'they are'} off, so "
                              f"that no key becomes a shortcut")
        self._in_run = True
        try:
            yield
        finally:
            self._in_run = False

    def type_char(self, char: str) -> None:
        with self.typing():
            try:
                self._keyboard.type(char)
            except Exception as exc:  # InvalidCharacterException, ValueError for characters beyond one UTF-16 unit
                raise TypingError(f"cannot type {char!r} ({exc})") from exc

    def backspace(self) -> None:
        with self.typing():
            try:
                self._keyboard.tap(self._key.backspace)
            except Exception as exc:
                raise TypingError(f"cannot press Backspace ({exc})") from exc

    def close(self) -> None:
        pass


def _system_modifiers() -> list[str]:
    """The modifiers in effect on Windows or macOS (held, sticky or locked), as the user names their keys."""
    if sys.platform == "win32":
        import ctypes

        user32 = ctypes.windll.user32  # type: ignore[attr-defined]
        held = [name for vk, name in ((0x10, "Shift"), (0x11, "Ctrl"), (0x12, "Alt"), (0x5B, "Windows key"),
                                      (0x5C, "Windows key")) if user32.GetAsyncKeyState(vk) & 0x8000]
        if user32.GetKeyState(0x14) & 1:  # VK_CAPITAL toggled on
            held.append("Caps Lock")
        return list(dict.fromkeys(held))
    if sys.platform == "darwin":
        try:
            import Quartz
        except ImportError:  # pynput needs it: without it nothing is typed anyway
            return []
        flags = Quartz.CGEventSourceFlagsState(Quartz.kCGEventSourceStateCombinedSessionState)
        return [name for mask, name in ((Quartz.kCGEventFlagMaskShift, "Shift"),
                                        (Quartz.kCGEventFlagMaskControl, "Control"),
                                        (Quartz.kCGEventFlagMaskAlternate, "Option"),
                                        (Quartz.kCGEventFlagMaskCommand, "Command"),
                                        (Quartz.kCGEventFlagMaskAlphaShift, "Caps Lock")) if flags & mask]
    return []


def _macos_trusted() -> bool:
    """Whether macOS lets this process post keyboard events (it drops them silently otherwise)."""
    try:
        from ApplicationServices import AXIsProcessTrusted
    except ImportError:
        return True  # cannot tell; pynput will try
    return bool(AXIsProcessTrusted())
