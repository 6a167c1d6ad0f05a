"""The writing controller's figures: what the status bar shows (``Stats``), how a message was written
(``MessageStats``, kept in a profile's record of progress), and the tally of the message being written (``Tally``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Stats:
    speed_bps: float  # the speed now (auto speed and turbo included)
    bits_per_second: float  # how fast the user is actually zooming in
    chars_per_minute: float
    characters: int
    running: bool


@dataclass(frozen=True)
class MessageStats:
    """How one message was written: what the profile's record of progress keeps when it is finished."""

    characters: int  # the message's length as finished
    seconds: float  # time spent writing it (running, not stopped or paused)
    bits: float  # net zoom in bits while writing it (backing out counts against it; an undone run is taken off)
    corrections: int  # characters backed out of or undone


@dataclass
class Tally:
    """The message being written, so far."""

    seconds: float = 0.0  # writing (running, not stopped or paused)
    bits: float = 0.0  # net zoom
    corrections: int = 0  # characters backed out of or undone

    def stats(self, characters: int) -> MessageStats:
        return MessageStats(characters, self.seconds, self.bits, self.corrections)


__all__ = ["MessageStats", "Stats", "Tally"]
