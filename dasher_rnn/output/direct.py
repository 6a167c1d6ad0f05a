"""Direct output: what the user writes is typed into the window that has the keyboard focus.

Characters are typed when they are **committed** (their box has become the parent of the root, so the zoom has
gone past them), not when the crosshair first enters their box. A gaze user's crosshair jitters across box
edges, and Dasher's output follows it: typing at output would send a character and a Backspace for every such
wobble. Backspace is not an exact undo in other programs (autocomplete, auto-correct, a chat that sends on a key,
shortcuts in a web page that reacts to single letters), so only settled text is sent; the live, uncommitted
tail is always visible in our own panel. When the user **stops**, the whole message so far is sent, so
nothing waits in our window while they read or think; if they start again and back out of it, Backspace
removes it from the other program.

The engine is a mirror: ``sent`` is what the other window has received from us, ``wanted`` what it should
have. Each ``sync`` sends the Backspaces and characters that take one to the other. A key that fails stops the
sync there (``sent`` stays exact), the reason becomes ``problem`` for the status bar, and the next sync (when
the text changes, or a second later) tries again: no text is lost, and it is in our panel in any case.
Backspace never reaches back past a finished message, nor into a window that lost the focus since we typed
into it. Each sync is one run of keys (``Typer.typing``): the user's Caps Lock, held Shift or latched Ctrl is set
aside for it and put back after it, so the other program receives exactly the text, never a shortcut; a modifier
that cannot be set aside is a ``problem`` like any other, and nothing is typed until it is off.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from dasher_rnn.output.typers import Typer, TypingError

RETRY_SECONDS = 1.0


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class DirectOutput:
    """Mirrors the committed text into another program through a ``Typer``."""

    def __init__(self, typer: Typer, clock: Callable[[], float] = time.monotonic,
                 retry_seconds: float = RETRY_SECONDS) -> None:
        self.typer = typer
        self._clock = clock
        self._retry_seconds = retry_seconds
        self.base = ""  # finished messages not yet all delivered (never backspaced over)
        self.committed = ""  # the current message's committed text
        self.sent = ""  # what the target has received (from base onwards)
        self.floor = 0  # Backspace never goes below this many characters of ``sent``
        self.problem = ""  # why the last sync could not finish ("" when all was delivered)
        self.typed = 0  # characters typed, and Backspaces sent, since the start (for tests and the curious)
        self.backspaces = 0
        self._target: object = None
        self._retry_at = -float("inf")
        self._failed_wanted: str | None = None

    # -- what should be there -----------------------------------------------------------------------------
    def track(self, committed: str, uncommitted: int) -> None:
        """A frame's commits: ``uncommitted`` characters were taken back, then ``committed`` added."""
        if uncommitted:
            self.committed = self.committed[: max(0, len(self.committed) - uncommitted)]
        self.committed += committed

    def wanted(self, output: str | None = None) -> str:
        """The text the target should have: the committed text, or all of ``output`` when given (stopped)."""
        return self.base + (output if output is not None else self.committed)

    def finish_message(self, output: str) -> None:
        """The message is finished with ``output`` (all of it is final): deliver it, and never delete it."""
        self.base += output
        self.committed = ""
        self.sync()
        if self.sent == self.base:
            self.base, self.sent, self.floor = "", "", 0
        else:
            self.floor = min(self.floor, len(self.sent))

    def discard(self) -> None:
        """Clear: what was not delivered is thrown away; what was delivered stays where it is."""
        self.base, self.committed, self.sent, self.floor = "", "", "", 0
        self.problem = ""
        self._failed_wanted = None

    # -- sending --------------------------------------------------------------------------------------------
    def sync(self, output: str | None = None, blocked: str = "") -> str:
        """Send what takes the target from ``sent`` to ``wanted(output)``; ``blocked`` (a reason) sends nothing.

        Returns ``problem``: "" when the target is up to date."""
        wanted = self.wanted(output)
        if wanted == self.sent:
            self.problem = ""
            self._failed_wanted = None
            return ""
        if blocked:
            self.problem = blocked
            return self.problem
        if wanted == self._failed_wanted and self._clock() < self._retry_at:
            return self.problem  # the same keys failed a moment ago: do not hammer the target
        try:
            self._check_target()
            common = _common_prefix(self.sent, wanted)
            if common < self.floor:  # those characters are in a window we no longer type into
                self.sent, self.floor = self.sent[:common], common
            with self.typer.typing():  # the user's modifiers set aside, or a TypingError saying which stays
                while len(self.sent) > common:
                    self.typer.backspace()
                    self.sent = self.sent[:-1]
                    self.backspaces += 1
                for char in wanted[len(self.sent):]:
                    self.typer.type_char(char)
                    self.sent += char
                    self.typed += 1
        except TypingError as exc:
            left = len(wanted) - _common_prefix(self.sent, wanted)
            self.problem = f"Direct output: {exc}; {left} character{'s' if left != 1 else ''} waiting (kept in the panel)"
            self._failed_wanted = wanted
            self._retry_at = self._clock() + self._retry_seconds
            return self.problem
        self.problem = ""
        self._failed_wanted = None
        return ""

    def _check_target(self) -> None:
        """A different window has the focus since we last typed: what that one got is out of Backspace's reach."""
        target = self.typer.focus()
        if target is not None and self._target is not None and target != self._target:
            self.floor = len(self.sent)
        if target is not None:
            self._target = target

    def close(self) -> None:
        self.typer.close()
