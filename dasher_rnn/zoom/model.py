"""Dasher's zooming model in plain Python (``ZoomModel``): the box tree (``boxes.py``) moved by its dynamics
(``dynamics.py``), and here what it writes: output, commit, going back (``mark``, ``rewind``) and control mode.

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

import itertools
import os
from collections import deque

import numpy as np

from dasher_rnn.lm.protocol import DASHER_TOTAL
from dasher_rnn.zoom.boxes import Box, Frame, Mark, ZoomSettings
from dasher_rnn.zoom.control import (
    CONFIRMED,
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
from dasher_rnn.zoom.dynamics import Dynamics
from dasher_rnn.zoom.geometry import MAX_Y, ORIGIN_X, ORIGIN_Y
from dasher_rnn.zoom.sources import PredictionSource

# sizing a root that starts again after an action (``ZoomModel._start_zoomed_out``): the largest share of it a child is
# taken to have before the model answers (the most a letter can have in control mode, the control box taking the
# rest), and at most once it has (a model sure of one letter still leaves the root past the crosshair: 4096 / 1.98)
UNKNOWN_SHARE = 1.0 - CONTROL_SHARE
MOST_SHARE = 0.98


class ZoomModel(Dynamics):
    """Dasher's zoom over a prediction source: the box tree (``boxes.py``) moved by its dynamics (``dynamics.py``),
    with the text it outputs and commits, going back, and control mode."""

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
        self._schedule = None
        self._dropped_zoom = False  # a scheduled zoom was dropped (``cancel_zoom``) since the last step
        self._held_action: Box | None = None  # the action box a dropped zoom left the crosshair in (not acted on)
        self._fitting: Box | None = None  # the box started smaller than the view, to be sized when the model answers
        self._fit_height = MAX_Y  # its height now
        self.acting = True  # an action box the crosshair enters acts (the controller says no while a gaze rests)
        self.reset(context)

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
