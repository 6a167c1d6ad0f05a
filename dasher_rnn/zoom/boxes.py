"""The zoom's box tree: its boxes (``Box``), what a frame reports (``Frame``, ``DrawnBox``), a place to go back to
(``Mark``), the zoom's settings (``ZoomSettings``), and the tree itself (``BoxTree``): each box's children laid out
from the model's integers, asked for and applied as the answers arrive, grown where a box is big enough and dropped
where it left the view. ``ZoomModel`` (``model.py``) is this tree moved by its dynamics (``dynamics.py``).

Every box is a context; its children split its height in alphabet order by the model's integer distribution (65536ths,
uniform floor included). Only the root's absolute range is stored; children's ranges follow from their parents'
cumulative counts, so refining a distribution when the model answers just moves the boxes below it.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from dasher_rnn.alphabet import Alphabet
from dasher_rnn.lm.protocol import DASHER_TOTAL
from dasher_rnn.zoom.control import CONTROL_BOX, CONTROL_SHARE, PHRASES_BOX, Action, ControlItem
from dasher_rnn.zoom.geometry import ORIGIN_Y, VISIBLE_MAX, VISIBLE_MIN
from dasher_rnn.zoom.sources import PredictionSource, uniform_counts


@dataclass(eq=False)
class Box:
    """One context on screen. ``cum`` (cumulative counts, length n+1) is None until the model answers."""

    symbol: int  # -1 for a root
    depth: int  # characters from the start of the message (including the starting context)
    parent: Box | None = field(repr=False)
    handle: object = field(repr=False)
    cum: np.ndarray | None = field(default=None, repr=False)
    requested: bool = False
    children: dict[int, Box] = field(default_factory=dict, repr=False)
    item: ControlItem | None = None  # control mode: the control box (its symbol is the alphabet's size) or an action

    @property
    def is_letter(self) -> bool:
        """A character's box (or a root): not part of the control mode."""
        return self.item is None

    @property
    def action(self) -> Action | None:
        return self.item.action if self.item is not None else None

@dataclass
class DrawnBox:
    box: Box
    y1: float
    y2: float

@dataclass
class Frame:
    """What one step changed (the UI applies it to the text panel; learning already went to the source)."""

    typed: str = ""
    deleted: int = 0
    committed: str = ""
    uncommitted: int = 0
    bits: float = 0.0  # log2 of this frame's zoom (negative when reversing)
    boxes: list[DrawnBox] = field(default_factory=list)
    action: Action | None = None  # control mode: the action whose box the crosshair entered (already applied
    # to the text); the front end carries out the rest (stop, speak, copy)
    finished: str | None = None  # a message was finished in this frame (the control box's New message): its output
    phrase: str | None = None  # a quick phrase was written in this frame (the control box's Phrases): its text
    confirm: ControlItem | None = None  # an action that asks for a confirmation (``ZoomSettings.confirm``) was
    # reached: nothing was done, and the view started again from the text; ``ZoomModel.perform`` does it once confirmed
    flow: tuple[float, float] | None = (1.0, 0.0)  # how the picture moved: what was at Dasher (x, y) is now at
    # (a * x, a * y + b) for flow (a, b); None where it started again (an action) rather than moved

    def add_commits(self, later: Frame) -> None:
        """Fold a later frame's commits into this one, so a front end that mirrors the commits sees both."""
        keep = len(self.committed) - later.uncommitted
        if keep >= 0:
            self.committed = self.committed[:keep] + later.committed
        else:  # the later frame took back more than this one committed
            self.uncommitted -= keep
            self.committed = later.committed

@dataclass(frozen=True)
class Mark:
    """Where the writing stood at one moment (``ZoomModel.mark``), to go back to with ``ZoomModel.rewind``."""

    context: str  # the message's starting context: a mark is only good within its message
    text: str  # context + what was output
    root_text: str
    root_lo: float
    root_hi: float
    committed: int  # characters of ``text`` learned

@dataclass
class ZoomSettings:
    speed_bps: float = 1.0  # the maximum rate of zooming in, bits/s
    reverse_speed: float = 1.0  # zooming out is capped at speed_bps * reverse_speed
    budget: int = 3000  # most boxes walked per frame
    min_size: float = 8.0  # boxes smaller than this (Dasher units) are not drawn
    expand_size: float = 48.0  # boxes at least this high get their children (and ask the model)
    keep_ancestors: int = 1000  # boxes kept above the root for reversing; beyond, rebuilt from the text
    control: bool = False  # control mode: a control box after the letters of every box
    confirm: bool = False  # control mode's actions that reach others or lose text (``CONFIRMED``) ask first



class BoxTree:
    """The boxes below and around the root, laid out from the model's answers (``ZoomModel``'s first floor)."""

    source: PredictionSource
    alphabet: Alphabet
    config: ZoomSettings
    n: int  # symbols in the alphabet
    control_symbol: int
    root: Box
    root_lo: float
    root_hi: float
    _control_cum: np.ndarray
    _phrase_items: tuple[ControlItem, ...]
    _phrases_cum: np.ndarray
    _letters_scale: float
    _fallback_cum: np.ndarray
    _inbox: deque[tuple[Box, np.ndarray | None]]
    _order: itertools.count[int]
    _expanded: set[Box]
    _asked: int
    _answered: int
    _started: dict[int, object]

    @staticmethod
    def _equal_cum(k: int) -> np.ndarray:
        """Child boundaries of a box of ``k`` equal boxes (the control box, More)."""
        return np.arange(k + 1, dtype=np.float64) * (DASHER_TOTAL / k)

    def _set_layout(self) -> None:
        self._letters_scale = 1.0 - CONTROL_SHARE if self.config.control else 1.0
        self._fallback_cum = self._cumulative(uniform_counts(self.n))

    def _cumulative(self, counts: np.ndarray) -> np.ndarray:
        """Child boundaries of a letter box from the model's integers: the letters, then the control box."""
        cum = np.zeros(self.n + 1 + (1 if self.config.control else 0), np.float64)
        np.cumsum(counts, out=cum[1 : self.n + 1])
        if self.config.control:
            cum[1 : self.n + 1] *= self._letters_scale * DASHER_TOTAL / cum[self.n]
            cum[-1] = DASHER_TOTAL
        return cum

    def _ask(self, box: Box, priority: float) -> None:
        box.requested = True
        self._asked += 1
        def deliver(counts: np.ndarray | None) -> None:
            self._inbox.append((box, counts))

        self.source.request(box.handle, priority, deliver)

    @property
    def answers_pending(self) -> int:
        """Requests the source has not answered yet."""
        return self._asked - self._answered - len(self._inbox)

    def _apply_answers(self) -> None:
        while self._inbox:
            box, counts = self._inbox.popleft()
            self._answered += 1
            if counts is None:  # failed: ask again if the box is still shown
                box.requested = False
                continue
            box.cum = self._cumulative(counts)

    def layout(self, box: Box) -> np.ndarray:
        """Cumulative child boundaries of ``box`` in 65536ths (the fallback until the model answers)."""
        if box.item is PHRASES_BOX:
            return self._phrases_cum
        return box.cum if box.cum is not None else self._fallback_cum

    def child_range(self, box: Box, y1: float, y2: float, symbol: int) -> tuple[float, float]:
        cum = self.layout(box)
        scale = (y2 - y1) / DASHER_TOTAL
        return y1 + scale * cum[symbol], y1 + scale * cum[symbol + 1]

    def _child_at_crosshair(self, box: Box, y1: float, y2: float) -> tuple[int, float, float]:
        """The symbol of ``box``'s child at the crosshair's height, and that child's range."""
        position = (ORIGIN_Y - y1) / (y2 - y1) * DASHER_TOTAL
        cum = self.layout(box)
        sym = min(max(int(np.searchsorted(cum, position, side="right")) - 1, 0), len(cum) - 2)
        return (sym, *self.child_range(box, y1, y2, sym))

    def _child(self, box: Box, symbol: int) -> Box:
        child = box.children.get(symbol)
        if child is None:
            if box.item is PHRASES_BOX:  # a quick phrase: a leaf
                child = Box(symbol, box.depth, box, None, requested=True, item=self._phrase_items[symbol])
            elif box.item is not None:  # in a box of boxes: an action (a leaf), More or the quick phrases' box
                item = box.item.children[symbol]
                cum = self._equal_cum(len(item.children)) if item.children else None
                child = Box(symbol, box.depth, box, None, cum, requested=True, item=item)
            elif symbol == self.control_symbol:  # the control box after the letters: equal children, no model
                child = Box(symbol, box.depth, box, None, self._control_cum, requested=True, item=CONTROL_BOX)
            else:
                child = Box(symbol, box.depth + 1, box, self.source.child(box.handle, symbol))
            box.children[symbol] = child
            self._expanded.add(box)
        return child

    def _path_to(self, box: Box) -> list[str]:
        """The characters from below the root down to the letter box ``box``."""
        path = []
        while box is not self.root:
            path.append(self.alphabet.symbols[box.symbol])
            assert box.parent is not None  # below the root: it has one
            box = box.parent
        return path[::-1]

    def _walk(self) -> list[DrawnBox]:
        """Visible boxes, largest first, within the budget; children for big ones; drop what left the view."""
        s = self.config
        drawn: list[DrawnBox] = []
        visited: set[Box] = set()
        heap = [(-(self.root_hi - self.root_lo), next(self._order), self.root, self.root_lo, self.root_hi)]
        while heap and len(drawn) < s.budget:
            neg_size, _, box, y1, y2 = heapq.heappop(heap)
            drawn.append(DrawnBox(box, y1, y2))
            visited.add(box)
            size = -neg_size
            if size < s.expand_size or box.action is not None:
                self._drop_children(box, keep=None)
                continue
            if not box.requested:
                self._ask(box, size)
            ys = y1 + (y2 - y1) / DASHER_TOTAL * self.layout(box)
            lo_edge, hi_edge = ys[:-1], ys[1:]
            shown: list[int] = np.flatnonzero(
                (hi_edge > VISIBLE_MIN) & (lo_edge < VISIBLE_MAX) & (hi_edge - lo_edge >= s.min_size)).tolist()
            for sym in box.children.keys() - set(shown):
                self._drop_child(box, sym)
            for sym in shown:
                a, b = ys[sym], ys[sym + 1]
                heapq.heappush(heap, (a - b, next(self._order), self._child(box, sym), a, b))
        for box in [b for b in self._expanded if b not in visited]:
            self._drop_children(box, keep=None)
        return drawn

    def _drop_child(self, box: Box, symbol: int) -> None:
        child = box.children.pop(symbol)
        self._forget(child)
        if child.handle is not None:  # control boxes have none (what is below them is released with their parent)
            self._started.pop(id(child.handle), None)
            self.source.release(child.handle)
        if not box.children:
            self._expanded.discard(box)

    def _drop_children(self, box: Box, keep: int | None) -> None:
        for sym in [sym for sym in box.children if sym != keep]:
            self._drop_child(box, sym)

    def _forget(self, box: Box) -> None:
        """Take a dropped subtree out of the expanded set (the source releases it in one go)."""
        stack = [box]
        while stack:
            b = stack.pop()
            self._expanded.discard(b)
            stack.extend(b.children.values())
            b.children = {}

    @staticmethod
    def _unknown(box: Box) -> bool:
        """A letter box the model has not answered for yet: its children are laid out as placeholders."""
        return box.item is None and box.cum is None



__all__ = ["Box", "BoxTree", "DrawnBox", "Frame", "Mark", "ZoomSettings"]
