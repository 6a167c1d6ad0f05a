"""The three requests of the X Keyboard extension (XKB) that direct output needs, which python-xlib lacks.

XKB keeps the keyboard's state: the modifiers in effect because a key is held (base), latched (sticky keys: in
effect for the next key only) and locked (Caps Lock, Num Lock), and the group (the layout, when there are
several). The core protocol shows only their sum; telling them apart, and clearing a latch or a lock without
pressing a key, takes XKB. The requests are laid out as in the protocol's specification (XKBproto.h), in
python-xlib's own request language.
"""

from __future__ import annotations

from dataclasses import dataclass

from Xlib.display import Display
from Xlib.protocol import rq

EXTENSION = "XKEYBOARD"
USE_CORE_KEYBOARD = 0x0100  # XkbUseCoreKbd: the keyboard that the core protocol's key events come from


class XkbUnavailable(RuntimeError):
    """The X server has no XKB extension (or refuses this client's version)."""


class _UseExtension(rq.ReplyRequest):
    _request = rq.Struct(rq.Card8("opcode"), rq.Opcode(0), rq.RequestLength(),
                         rq.Card16("wanted_major"), rq.Card16("wanted_minor"))
    _reply = rq.Struct(rq.ReplyCode(), rq.Bool("supported"), rq.Card16("sequence_number"), rq.ReplyLength(),
                       rq.Card16("server_major"), rq.Card16("server_minor"), rq.Pad(20))


class _GetState(rq.ReplyRequest):
    _request = rq.Struct(rq.Card8("opcode"), rq.Opcode(4), rq.RequestLength(),
                         rq.Card16("device_spec"), rq.Pad(2))
    _reply = rq.Struct(rq.ReplyCode(), rq.Card8("device_id"), rq.Card16("sequence_number"), rq.ReplyLength(),
                       rq.Card8("mods"), rq.Card8("base_mods"), rq.Card8("latched_mods"), rq.Card8("locked_mods"),
                       rq.Card8("group"), rq.Card8("locked_group"), rq.Int16("base_group"),
                       rq.Int16("latched_group"), rq.Card8("compat_state"), rq.Card8("grab_mods"),
                       rq.Card8("compat_grab_mods"), rq.Card8("lookup_mods"), rq.Card8("compat_lookup_mods"),
                       rq.Pad(1), rq.Card16("ptr_btn_state"), rq.Pad(6))


class _LatchLockState(rq.Request):
    _request = rq.Struct(rq.Card8("opcode"), rq.Opcode(5), rq.RequestLength(),
                         rq.Card16("device_spec"), rq.Card8("affect_mod_locks"), rq.Card8("mod_locks"),
                         rq.Bool("lock_group"), rq.Card8("group_lock"), rq.Card8("affect_mod_latches"),
                         rq.Card8("mod_latches"), rq.Pad(1), rq.Bool("latch_group"), rq.Int16("group_latch"))


@dataclass(frozen=True)
class KeyboardState:
    """Modifier masks (bit i is modifier i: Shift, Lock, Control, Mod1 to Mod5) and groups (0 is the first)."""

    mods: int  # all in effect: base | latched | locked
    base: int
    latched: int
    locked: int
    group: int  # in effect
    locked_group: int
    latched_group: int


class Xkb:
    """XKB on one python-xlib ``Display``."""

    def __init__(self, display: Display) -> None:
        self._display = display
        info = display.query_extension(EXTENSION)  # python-xlib has no module for it: asked of the server
        if info is None:
            raise XkbUnavailable("the X server has no XKB extension")
        self._opcode = info.major_opcode
        reply = _UseExtension(display=display.display, opcode=self._opcode, wanted_major=1, wanted_minor=0)
        if not reply.supported:
            raise XkbUnavailable(f"the X server's XKB is version {reply.server_major}.{reply.server_minor}, not 1.x")

    def state(self) -> KeyboardState:
        r = _GetState(display=self._display.display, opcode=self._opcode, device_spec=USE_CORE_KEYBOARD)
        return KeyboardState(mods=r.mods, base=r.base_mods, latched=r.latched_mods, locked=r.locked_mods,
                             group=r.group, locked_group=r.locked_group, latched_group=r.latched_group)

    def latch_lock(self, *, affect_locks: int = 0, locks: int = 0, affect_latches: int = 0, latches: int = 0,
                   group_lock: int | None = None, group_latch: int | None = None) -> None:
        """Set the modifiers in ``affect_locks`` to be locked as in ``locks`` (and latched likewise), and the
        locked or latched group where given. Sent, not waited for (``Display.sync`` waits)."""
        _LatchLockState(display=self._display.display, opcode=self._opcode, device_spec=USE_CORE_KEYBOARD,
                        affect_mod_locks=affect_locks, mod_locks=locks, lock_group=group_lock is not None,
                        group_lock=group_lock or 0, affect_mod_latches=affect_latches, mod_latches=latches,
                        latch_group=group_latch is not None, group_latch=group_latch or 0)
