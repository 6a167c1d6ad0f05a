"""Dasher's zooming model in plain Python: boxes, dynamics, output, commit and lazy expansion.

Every box is a context; its children split its height in alphabet order by the model's integer
distribution (65536ths, uniform floor included). Only the root's absolute range is stored;
children's ranges follow from their parents' cumulative counts, so refining a distribution
when the model answers just moves the boxes below it.

One ``step`` per frame: apply the answers that arrived, zoom towards the pointer, move the root
(down when a child covers the whole view, up when reversing past the root), walk the visible
boxes largest first within the node budget (asking the source for distributions of boxes big
enough to show children, dropping the subtrees of boxes that went out of view), and report
what was typed, deleted, committed and uncommitted. Nothing here waits for the model.

Output and commit follow Dasher: the text is the path to the deepest box that contains the
crosshair and reaches past it (height > ``ORIGIN_X``); a character is committed (learned) only
when its box becomes the parent of the root, and uncommitted when reversing undoes that.

Control mode (``ZoomSettings.control``, see ``control.py``): every letter box ends with a control box of a
fixed share, whose children are actions of equal size. Control boxes add no character to the text. Entering
an action's box (as a character would be output) reports it in the frame (``Frame.action``), makes the text
edit it stands for (deletions, with what was learned of the deleted text taken back exactly through the
source's ``uncommit``; a new message), and starts the view again from the text. The control box's last box holds
the quick phrases (``set_phrases``), each sized by its uses: entering one writes its text into the message as if it
had been written (typed, then learned as the view moves on), and says so in ``Frame.phrase``.

After an action nothing more is output until the user steers. The view starts again as Dasher's does when it jumps
(``CDasherModel::SetNode``): the box of the text's last character centred on the crosshair, ``MAX_Y / (1 + p)``
high, ``p`` being the share of its likeliest child, so that it reaches past the crosshair (its text stays output)
and none of its children does, however likely the next letter. (Started filling the view, the likeliest child of a
box whose next letter is likelier than about a half reached past the crosshair and was output in the very next
frame: a deleted "e" after "W" came straight back.) Above and below it, as the view reverses into it, is the parent
rebuilt from the text. At the start of a message there is none, and the view shows empty space around the root, as
Dasher's does at a start; the empty space does not grow (the root cannot be zoomed out there) and goes as the user
zooms in. The alternative, the root filling the view there, would let a likely first letter be written by itself.
The model answers for the new root a frame or more later: until then ``p`` is the most a letter can have in control
mode (0.95), and when it answers the view is sized again for the real ``p``, unless the user has moved it by then.
Switching control mode on or off (not an action) starts the view again filling it, as at a message start.

Switch access (``switch_modes.py``) moves the view in two more ways, as Dasher's button modes do: a scheduled zoom
(``schedule_zoom``, Dasher's ``ScheduleZoom``) that brings a range of the view to fill it over a set time, followed
by ``step`` instead of the pointer while it lasts; and a shift of the view (``offset``, Dasher's ``Offset``).
A scheduled zoom sweeps the crosshair through the boxes between it and the range selected, growing them, so no action
acts while it lasts: only where it ends (the action box the crosshair is then in, if wide enough), as a scanning user
selected. An action box that a dropped zoom (``cancel_zoom``: a stop) leaves the crosshair in does not act until the
crosshair has left it and entered it again.
"""

from __future__ import annotations

import heapq
import itertools
import math
import os
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from dasher_rnn.lm.protocol import DASHER_TOTAL
from dasher_rnn.zoom.control import (
    CONFIRMED,
    CONTROL_BOX,
    CONTROL_ITEMS,
    CONTROL_SHARE,
    DELETIONS,
    NO_PHRASES,
    PHRASES_BOX,
    Action,
    ControlItem,
    deletion,
    phrase_item,
)
from dasher_rnn.zoom.geometry import MAX_Y, ORIGIN_X, ORIGIN_Y, VISIBLE_MAX, VISIBLE_MIN
from dasher_rnn.zoom.sources import PredictionSource, uniform_counts

REFERENCE_ZOOM_BITS = math.log2(4096 / 1600)  # Dasher: steps per zoom = fps * log2(4096/1600) / bit rate
# sizing a root that starts again after an action (``ZoomModel._start_zoomed_out``): the largest share of it a child is
# taken to have before the model answers (the most a letter can have in control mode, the control box taking the
# rest), and at most once it has (a model sure of one letter still leaves the root past the crosshair: 4096 / 1.98)
UNKNOWN_SHARE = 1.0 - CONTROL_SHARE
MOST_SHARE = 0.98


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
class _ScheduledZoom:
    """A zoom under way (``ZoomModel.schedule_zoom``): the part of the view at its start that fills the view
    when ``done`` of its time has gone. Its height shrinks geometrically with an eased time (fast, then slowing: Dasher's
    steps of n, n-1, ... frames), about the point that the whole zoom keeps in place."""

    y1: float
    y2: float
    seconds: float
    done: float = 0.0  # the share of the time gone

    def advance(self, dt: float) -> None:
        self.done = 1.0 if self.seconds <= 0 else min(self.done + max(dt, 0.0) / self.seconds, 1.0)

    def window(self) -> tuple[float, float]:
        u = self.done
        e = u * (2.0 - u)
        height = self.y2 - self.y1
        if abs(height - MAX_Y) < 1e-9:  # a shift
            return self.y1 * e, MAX_Y + self.y1 * e
        k = (height / MAX_Y) ** e
        fixed = self.y1 / (1.0 - height / MAX_Y)
        return fixed - fixed * k, fixed + (MAX_Y - fixed) * k


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


class ZoomModel:
    def __init__(self, source: PredictionSource, config: ZoomSettings | None = None, context: str = ""):
        self.source = source
        self.alphabet = source.alphabet
        self.config = config or ZoomSettings()
        self.n = len(self.alphabet)
        self.control_symbol = self.n  # the control box's index among a letter box's children
        self._control_cum = self._equal_cum(len(CONTROL_ITEMS))
        self._phrase_items: tuple[ControlItem, ...] = (NO_PHRASES,)
        self._phrases_cum = np.array([0.0, DASHER_TOTAL])
        self._set_layout()
        self._inbox: deque[tuple[Box, np.ndarray | None]] = deque()  # None: the request failed
        self._order = itertools.count()
        self._expanded: set[Box] = set()
        self._asked = self._answered = 0
        # handles from ``source.start`` by id, released at the next reset (unless released before: a root rebuilt
        # from the text becomes a child when reversing past it, and may then be dropped like any child)
        self._started: dict[int, object] = {}
        self.bits_total = 0.0
        self._schedule: _ScheduledZoom | None = None
        self._dropped_zoom = False  # a scheduled zoom was dropped (``cancel_zoom``) since the last step
        self._held_action: Box | None = None  # the action box a dropped zoom left the crosshair in (not acted on)
        self._fitting: Box | None = None  # the box started smaller than the view, to be sized when the model answers
        self._fit_height = MAX_Y  # its height now
        self.acting = True  # an action box the crosshair enters acts (the controller says no while a gaze rests)
        self.reset(context)

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

    def set_control(self, on: bool) -> Frame:
        """Control mode on or off; the view starts again from the text (the boxes' layouts change). The frame
        says what that committed or uncommitted, for a front end that mirrors the commits."""
        frame = Frame()
        if bool(on) != self.config.control:
            self.config.control = bool(on)
            self._set_layout()
            self._rebuild(self.text, 0.0, MAX_Y)  # filling the view, as at a message start (not an action)
            self._sync_commits(frame)
            frame.boxes = self._walk()
        return frame

    def set_phrases(self, phrases: list[tuple[str, int]]) -> None:
        """The quick phrases in the control box's Phrases box, each ``(text, uses)``, sized by ``uses + 1``; a
        phrase with a character outside the alphabet is left out (phrases are folded onto it when stored)."""
        usable = [(text, max(int(uses), 0)) for text, uses in phrases
                  if text and all(ch in self.alphabet for ch in text)]
        self._phrase_items = tuple(phrase_item(text) for text, _ in usable) or (NO_PHRASES,)
        weights = np.array([uses + 1.0 for _, uses in usable] or [1.0])
        cum = np.zeros(len(weights) + 1)
        np.cumsum(weights, out=cum[1:])
        self._phrases_cum = cum * (DASHER_TOTAL / cum[-1])
        for box in [b for b in self._expanded if b.item is PHRASES_BOX]:
            self._drop_children(box, keep=None)  # laid out again from the new list

    def phrase_index(self, text: str) -> int | None:
        """Where the quick phrase ``text`` is in the Phrases box (None: not there)."""
        return next((i for i, item in enumerate(self._phrase_items) if item.text == text and text), None)

    # -- message --------------------------------------------------------------------
    def reset(self, context: str = "") -> None:
        """Start a message (``""``) or continue after ``context``; nothing is committed or output."""
        for handle in self._started.values():
            self.source.release(handle)  # with everything below it
        self._started.clear()
        self._expanded.clear()
        self.context = context
        self.root = self._new_root(context)
        self.root_lo, self.root_hi = 0.0, MAX_Y
        self.root_text = context  # the text up to and including the root's symbol
        self.text = context  # the text up to the output box: context + what is output now
        self._output_box: Box | None = self.root  # None: the text runs past the known boxes
        self._committed = len(context)
        self._schedule = None
        self._held_action = self._fitting = None
        self._dropped_zoom = False
        self._pinned = False  # the text stays as a rewind left it until the view moves

    def _new_root(self, context: str) -> Box:
        """A box for the model's context after ``context`` (a message start or a rebuilt parent)."""
        box = Box(-1, len(context), None, self.source.start(context))
        self._started[id(box.handle)] = box.handle
        self._ask(box, MAX_Y)
        return box

    def finish_message(self) -> str:
        """The user is done with this message: commit what is still only output, then start a new one."""
        rest = self.text[self._committed :]
        self._commit(rest, self._output_box)
        self.source.new_message()
        self.reset()
        return rest

    @property
    def output(self) -> str:
        """What this message added to the context (typed and not backed out of)."""
        return self.text[len(self.context) :]

    # -- going back ---------------------------------------------------------------------
    def mark(self) -> Mark:
        """Where the writing stands now (e.g. when the user starts a run of writing)."""
        return Mark(self.context, self.text, self.root_text, self.root_lo, self.root_hi, self._committed)

    def rewind(self, mark: Mark) -> Frame | None:
        """Go back to ``mark`` (taken in this message): the source unlearns what was committed since (exactly,
        through ``uncommit``), relearns what was backed out of since, and the view is rebuilt where it was. The text is
        the marked text again, exactly, and stays so until the view moves: the rebuilt boxes are laid out by a model
        that may have learned meanwhile (what was written before the mark), so the marked view need not show the
        marked text at the crosshair. The frame says what that uncommitted and committed, for a front end that mirrors
        the commits. None (nothing done) for a mark from another message."""
        if mark.context != self.context:
            return None
        frame = Frame()
        learned = self.text[: self._committed]
        target = mark.text[: mark.committed]
        common = 0
        limit = min(len(learned), len(target))
        while common < limit and learned[common] == target[common]:
            common += 1
        if self._committed > common:
            self.source.uncommit(self._committed - common)
            frame.uncommitted = self._committed - common
        if mark.committed > common:
            frame.committed = target[common:]
            self._commit(frame.committed, None)  # learned before, backed out of during the run: learn it again
        self._committed = mark.committed
        flush = getattr(self.source, "flush", None)
        if flush is not None:
            flush()  # the rebuilt boxes are laid out by the model as it was at the mark, not as it is rolling back
        shown = self.text
        # drop the boxes of the view now, and rebuild the one the mark was taken in
        self._rebuild(mark.root_text, mark.root_lo, mark.root_hi)
        self.text = mark.text
        self._pinned = True
        common = len(os.path.commonprefix([shown, mark.text]))
        frame.deleted, frame.typed = len(shown) - common, mark.text[common:]
        frame.flow = None  # the picture started again
        rebuilt = Frame()  # the rebuilt root is a letter box even where the mark's was the control box
        self._sync_commits(rebuilt)
        frame.add_commits(rebuilt)
        return frame

    def _rebuild(self, root_text: str, lo: float, hi: float) -> None:
        """Drop every box and make a new root for ``root_text`` spanning ``lo``..``hi`` (commits are not touched)."""
        top = self.root
        while top.parent is not None:
            top = top.parent
        self._drop_children(top, keep=None)
        self._expanded.clear()
        root = self._new_root(root_text)
        if len(root_text) > len(self.context) and root_text[-1] in self.alphabet:
            root.symbol = self.alphabet.index(root_text[-1])
        self.root, self.root_lo, self.root_hi, self.root_text = root, lo, hi, root_text
        self.text = root_text
        self._output_box = root
        self._schedule = None  # the view starts again: a zoom under way is over
        self._held_action = self._fitting = None
        self._dropped_zoom = False
        self._pinned = False

    def _reroot(self, text: str, frame: Frame) -> None:
        """Start the view again from ``text`` (a prefix of the text, or the text itself): the box of ``text``'s last
        character centred on the crosshair, zoomed out so that nothing more is output until the user steers
        (``_start_zoomed_out``). What is no longer above the root is unlearned (exactly, through ``uncommit``)."""
        self._rebuild(text, 0.0, MAX_Y)
        self._start_zoomed_out()
        self._sync_commits(frame)

    def _start_zoomed_out(self) -> None:
        """Shrink the root, which fills the view, to Dasher's size for a view started again (``CDasherModel::SetNode``):
        centred on the crosshair, ``MAX_Y / (1 + p)`` high, where ``p`` is the largest share of it a child has. Then
        the root reaches past the crosshair (its text stays output) and none of its children does (nothing more is
        output), however likely the next letter. Until the model answers, ``p`` is the most a letter can have; when
        it answers, the view is sized again for the real ``p``, unless the user has moved it by then."""
        self._fit_height = self.root_hi - self.root_lo
        self._fitting = self.root
        self._fit_view()

    def _fit_view(self) -> None:
        """Scale the view about the crosshair so that the box being sized (centred on it, ``_fit_height`` high, the
        root or, once the view has reversed into its rebuilt parent, the root's child) is ``MAX_Y / (1 + p)`` high."""
        box = self._fitting
        assert box is not None
        share = UNKNOWN_SHARE if box.cum is None else min(float(np.diff(box.cum).max()) / DASHER_TOTAL, MOST_SHARE)
        height = MAX_Y / (1.0 + share)
        scale = height / self._fit_height
        self.root_lo = ORIGIN_Y + scale * (self.root_lo - ORIGIN_Y)
        self.root_hi = ORIGIN_Y + scale * (self.root_hi - ORIGIN_Y)
        self._fit_height = height
        if box.cum is not None:
            self._fitting = None  # sized for good

    # -- control mode -------------------------------------------------------------------
    def _act(self, item: ControlItem, frame: Frame) -> None:
        """The crosshair entered ``item``'s box: make its text edit, report it, and start again from the text."""
        action = item.action
        frame.action = action
        frame.flow = None
        if action == Action.NEW_MESSAGE:
            frame.finished = self.output
            self.finish_message()
            self._start_zoomed_out()  # as after any action, nothing is output until the user steers
            return
        text = self.text
        if action == Action.PHRASE:
            self._write_phrase(item.text, frame)
            return
        if action in DELETIONS:
            cut = deletion(self.output, action)  # never into the starting context
            frame.deleted += cut
            text = text[: len(text) - cut]
        self._reroot(text, frame)

    def perform(self, item: ControlItem) -> Frame:
        """Do ``item``'s action now (one that asked for a confirmation, ``Frame.confirm``, and got it), as entering
        its box would have; the frame says what it did."""
        frame = Frame()
        self._act(item, frame)
        frame.boxes = self._walk()
        return frame

    def write_phrase(self, phrase: str) -> Frame:
        """Write the quick phrase ``phrase`` into the message now, as its box in the control box does (a phrase
        chosen from a list); the frame says what was typed. ValueError for a character outside the alphabet."""
        outside = sorted({ch for ch in phrase if ch not in self.alphabet})
        if outside:
            raise ValueError(f"{phrase!r} has characters outside the alphabet: {''.join(outside)!r}")
        frame = Frame()
        self._write_phrase(phrase, frame)
        frame.boxes = self._walk()
        return frame

    def _write_phrase(self, phrase: str, frame: Frame) -> None:
        """Add ``phrase`` to the message as a word of its own and start the view again after it: it is typed now,
        and learned as the view moves on, like written text."""
        written = phrase
        if self.output and not self.output[-1].isspace() and " " in self.alphabet:
            written = " " + written
        frame.typed += written
        frame.phrase = phrase
        self.text += written
        self._reroot(self.text, frame)

    # -- answers from the source -----------------------------------------------------
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

    # -- scheduled zooms and shifts (switch access) --------------------------------------------------------
    def schedule_zoom(self, y1: float, y2: float, seconds: float) -> None:
        """Zoom so that the range ``y1``..``y2`` of the view now comes to fill the view, over the next ``seconds``
        of steps (Dasher's ``CDasherModel::ScheduleZoom``, used by its button and click modes; a range larger than
        the view zooms out). While it lasts, ``step`` follows it instead of the pointer; a new one replaces it.
        Ranges of less than one unit, or that are not numbers, are ignored."""
        if not (math.isfinite(y1) and math.isfinite(y2) and math.isfinite(seconds)) or y2 - y1 < 1.0:
            return
        self._schedule = _ScheduledZoom(float(y1), float(y2), max(float(seconds), 0.0))

    @property
    def zooming(self) -> bool:
        """A scheduled zoom is under way."""
        return self._schedule is not None

    def cancel_zoom(self) -> None:
        """Drop a scheduled zoom (Dasher's ``ClearScheduledSteps``: a stop). An action box that it leaves the
        crosshair in does not act, until the crosshair has left it and entered it again."""
        if self._schedule is not None:
            self._dropped_zoom = True
        self._schedule = None

    def offset(self, dy: float) -> None:
        """Shift the view down by ``dy`` Dasher units (up when negative): what was ``dy`` above the crosshair comes
        to it (Dasher's ``CDasherModel::Offset``, two-button dynamic mode). The next ``step`` moves the root and the
        output accordingly; at the start of the text the view stays filled (or no emptier), as when zooming."""
        if math.isfinite(dy):
            moved = (self.root_lo, self.root_hi)
            self._set_view(self.root_lo + dy, self.root_hi + dy, 0.0)
            if (self.root_lo, self.root_hi) != moved:
                self._fitting = None  # the user moved the view: it is no longer sized for them

    # -- one frame -----------------------------------------------------------------------
    def step(self, pointer_x: float, pointer_y: float, dt: float, speed_bps: float | None = None) -> Frame:
        """Advance ``dt`` seconds with the pointer at Dasher coordinates (``pointer_x`` from the right edge); while
        a scheduled zoom lasts (``schedule_zoom``), along it instead."""
        self._apply_answers()
        frame = Frame()
        if self._fitting is not None and self._fitting.cum is not None:
            self._fit_view()  # the model answered for the root started again: size it for its real children
            frame.flow = None
        moved = (self.root_lo, self.root_hi)
        if self._schedule is not None:
            frame.bits = self._scheduled(dt)
        else:
            frame.bits = self._zoom(pointer_x, pointer_y, dt, self.config.speed_bps if speed_bps is None else speed_bps)
        if (self.root_lo, self.root_hi) != moved:
            self._fitting = None  # the user moved the view: it is no longer sized for them
            if frame.flow is not None:
                scale = (self.root_hi - self.root_lo) / (moved[1] - moved[0])
                frame.flow = (scale, self.root_lo - scale * moved[0])
        self.bits_total += frame.bits
        if self._pinned and frame.bits:  # the view moves on from a rewind: the text follows it again, from the text
            self._pinned = False  # as it is (where the model, having learned since, shows another at the crosshair)
            found = self._crosshair()
            if found is not None and found[1] != self.text:
                frame.flow = None
                self._reroot(self.text, frame)
                frame.boxes = self._walk()
                return frame
        self._move_root()
        self._sync_commits(frame)
        frame.boxes = self._walk()
        if not self._pinned:
            self._update_output(frame)
        return frame

    def idle(self) -> Frame:
        """A frame without movement (paused): answers are applied and the boxes redrawn."""
        return self.step(ORIGIN_X, ORIGIN_Y, 0.0)

    def _zoom(self, px: float, py: float, dt: float, speed: float) -> float:
        """Move ``1/steps`` of the way (in log scale) from the view to the one centred on the pointer
        whose half-height is ``px``, capped at ``speed`` bits/s in and ``speed * reverse_speed`` out."""
        if dt <= 0 or speed <= 0:
            return 0.0
        px = min(max(px, 1.0), MAX_Y)
        fraction = dt * speed / REFERENCE_ZOOM_BITS
        zoom = ORIGIN_X / px  # the full step maps y -> zoom * (y - py) + ORIGIN_Y
        bits = math.log2(zoom) * fraction
        bits = min(max(bits, -speed * self.config.reverse_speed * dt), speed * dt)
        lo, hi = self.root_lo, self.root_hi
        if abs(zoom - 1.0) < 1e-9:
            shift = fraction * (ORIGIN_Y - py)
            lo, hi = lo + shift, hi + shift
        else:
            fixed = (ORIGIN_Y - zoom * py) / (1.0 - zoom)
            scale = 2.0**bits
            lo, hi = fixed + scale * (lo - fixed), fixed + scale * (hi - fixed)
        return self._set_view(lo, hi, bits)

    def _scheduled(self, dt: float) -> float:
        """One step of the scheduled zoom: the view moves from where the schedule had it to where it has it
        ``dt`` later (a map of the screen, so it holds whichever box is the root)."""
        schedule = self._schedule
        assert schedule is not None
        a1, a2 = schedule.window()
        schedule.advance(dt)
        b1, b2 = schedule.window()
        if schedule.done >= 1.0:
            self._schedule = None
        # the screen point s showed window position a1 + s * (a2 - a1) / MAX_Y, now shown at MAX_Y * (y - b1) / (b2 - b1)
        scale = (a2 - a1) / (b2 - b1)

        def move(s: float) -> float:
            return (a1 + s * (a2 - a1) / MAX_Y - b1) * MAX_Y / (b2 - b1)

        return self._set_view(move(self.root_lo), move(self.root_hi), math.log2(scale))

    def _set_view(self, lo: float, hi: float, bits: float) -> float:
        """Put the root at ``lo``..``hi``, keeping the view filled where it cannot reverse (or, where the root is
        already smaller than the view, from showing more of the empty space around it); the bits zoomed."""
        if not self._can_reverse() and (lo > 0 or hi < MAX_Y):
            # at the start of the text (or waiting for the parent's distribution)
            if self.root_hi - self.root_lo < MAX_Y:  # smaller than the view now (started again after an action, or
                # reversing): it may grow and move, but not zoom out or uncover more of the empty space around it
                top, bottom = max(self.root_lo, 0.0), min(self.root_hi, MAX_Y)
                height = max(hi - lo, self.root_hi - self.root_lo)
                lo = min(max(lo, bottom - height), top)
                hi = lo + height
            elif hi - lo <= MAX_Y:  # filling the view now: keep it filled
                lo, hi = 0.0, MAX_Y
            elif lo > 0:
                lo, hi = 0.0, hi - lo
            else:
                lo, hi = MAX_Y - (hi - lo), MAX_Y
            bits = math.log2((hi - lo) / (self.root_hi - self.root_lo))
        self.root_lo, self.root_hi = lo, hi
        return bits

    def _can_reverse(self) -> bool:
        """A parent with a known distribution, or one that can be rebuilt from the text (never into the context)."""
        if self.root.parent is not None:
            return self.root.parent.cum is not None
        return self.root.symbol >= 0 and self.root.depth > len(self.context)

    def _move_root(self) -> None:
        while True:  # down: a child covers the whole view
            if self.root.action is not None or self._unknown(self.root):
                break  # an action's box has no children; an unknown layout's are placeholders: wait for the model
            sym, y1, y2 = self._child_at_crosshair(self.root, self.root_lo, self.root_hi)
            if not (y1 <= 0 and y2 >= MAX_Y) or self.root.item is not None:  # an action happens, never becomes root
                break
            self._descend(self._child(self.root, sym), y1, y2)
        while (self.root_lo > 0 or self.root_hi < MAX_Y) and self._can_reverse():  # up: reversing
            self._ascend()

    def _descend(self, child: Box, y1: float, y2: float) -> None:
        old = self.root
        self._drop_children(old, keep=child.symbol)
        self._expanded.discard(old)
        self.root, self.root_lo, self.root_hi = child, y1, y2
        if child.is_letter:
            self.root_text += self.alphabet.symbols[child.symbol]
        # bound the chain kept for reversing; the cut is rebuilt from the text if ever needed
        top, count = child, 0
        while top.parent is not None and count < self.config.keep_ancestors:
            top, count = top.parent, count + 1
        if top.parent is not None:
            top.parent = None

    def _ascend(self) -> None:
        child = self.root
        parent = child.parent
        parent_text = self.root_text[:-1] if child.is_letter else self.root_text  # a control box adds no character
        if parent is None:  # rebuild the parent from the text; usable once its distribution arrives
            parent = self._new_root(parent_text)
            if len(parent_text) > len(self.context) and parent_text[-1] in self.alphabet:
                parent.symbol = self.alphabet.index(parent_text[-1])
            parent.children[child.symbol] = child
            child.parent = parent
            return
        cum = self.layout(parent)
        height = (self.root_hi - self.root_lo) * DASHER_TOTAL / (cum[child.symbol + 1] - cum[child.symbol])
        self.root_lo -= height * cum[child.symbol] / DASHER_TOTAL
        self.root_hi = self.root_lo + height
        self.root = parent
        self.root_text = parent_text

    def _sync_commits(self, frame: Frame) -> None:
        """Committed = the text above the root (never the starting context; all of it under a control box)."""
        committed = max(len(self.context), len(self.root_text) - (1 if self.root.is_letter else 0))
        if committed > self._committed:
            new = self.root_text[self._committed : committed]
            self._commit(new, self.root.parent)
            frame.committed += new
        elif committed < self._committed:
            self.source.uncommit(self._committed - committed)
            frame.uncommitted += self._committed - committed
        self._committed = committed

    def _commit(self, text: str, last: Box | None) -> None:
        """Hand ``text`` to the source to learn, each character with the context it was predicted in
        (the parent of its box; ``last`` is the box of the last character) where that box is still known."""
        contexts: list[object | None] = []
        box = last
        while len(contexts) < len(text) and box is not None and box.symbol >= 0 and box.parent is not None:
            contexts.append(box.parent.handle)
            box = box.parent
        contexts += [None] * (len(text) - len(contexts))
        for ch, context in zip(text, reversed(contexts), strict=True):
            self.source.commit(self.alphabet.index(ch), context)

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

    def _crosshair(self) -> tuple[Box, str] | None:
        """The deepest box containing the crosshair that reaches past it, and the text up to it (a control box adds no
        character). None where that path runs into a box the model has not answered for while the text goes on
        from there: the text waits for the model (a placeholder's character never enters it)."""
        box, y1, y2 = self.root, self.root_lo, self.root_hi
        while box.action is None:
            if self._unknown(box):
                text = self.root_text + "".join(self._path_to(box))
                if self.text.startswith(text) and len(self.text) > len(text):
                    return None
                break
            sym, c1, c2 = self._child_at_crosshair(box, y1, y2)
            if c2 - c1 <= ORIGIN_X:
                break
            box, y1, y2 = self._child(box, sym), c1, c2
        letter = box
        while not letter.is_letter and letter is not self.root:  # control boxes add no character
            assert letter.parent is not None  # below the root: it has one
            letter = letter.parent
        return box, self.root_text + "".join(self._path_to(letter))

    def _update_output(self, frame: Frame) -> None:
        """The text is the path to the deepest box containing the crosshair that reaches past it (``_crosshair``)."""
        found = self._crosshair()
        if found is None:
            self._output_box = None  # the text goes on past the view's known boxes: nothing changes yet
            return
        box, text = found
        letter = box
        while not letter.is_letter and letter is not self.root:
            assert letter.parent is not None
            letter = letter.parent
        # the box of the last character output (the one above the root when the root is a control box)
        self._output_box = letter if letter.is_letter or letter.parent is None else letter.parent
        common = 0
        limit = min(len(text), len(self.text))
        while common < limit and text[common] == self.text[common]:
            common += 1
        frame.deleted += len(self.text) - common
        frame.typed += text[common:]
        self.text = text
        if self._dropped_zoom:  # a zoom was dropped with the crosshair in this box, not entered by steering
            self._dropped_zoom = False
            self._held_action = box if box.action is not None else None
        if box.action is None or box is not self._held_action:
            self._held_action = None
        # an action acts when the crosshair enters its box as the user steers, or where a scheduled zoom ends: not
        # in boxes that a zoom under way (a switch user's selection) passes through
        if (box.item is not None and box.action is not None and self._schedule is None and self._held_action is None
                and self.acting):
            if self.config.confirm and box.action in CONFIRMED:
                frame.confirm = box.item
                frame.flow = None
                self._reroot(self.text, frame)  # nothing done: the view starts again from the text
            else:
                self._act(box.item, frame)
            frame.boxes = self._walk()  # the view as it starts again
