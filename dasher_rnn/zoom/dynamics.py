"""The zoom's dynamics: the view zoomed towards the pointer at a capped speed (``_zoom``), along a scheduled zoom
(``schedule_zoom``: switch access, Dasher's ``ScheduleZoom``) or shifted (``offset``: Dasher's ``Offset``), kept filled
where it cannot reverse, and the root moved down when a child covers the whole view and up when reversing past it.
``ZoomModel`` (``model.py``) adds the text, the commits and control mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dasher_rnn.lm.protocol import DASHER_TOTAL
from dasher_rnn.zoom.boxes import Box, BoxTree
from dasher_rnn.zoom.geometry import MAX_Y, ORIGIN_X, ORIGIN_Y

REFERENCE_ZOOM_BITS = math.log2(4096 / 1600)  # Dasher: steps per zoom = fps * log2(4096/1600) / bit rate


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



class Dynamics(BoxTree):
    """The box tree moving: zooms, scheduled zooms, shifts and the root's moves (``ZoomModel``'s second floor)."""

    context: str  # the message's starting context
    root_text: str  # the context and the text down to the root
    _schedule: _ScheduledZoom | None
    _dropped_zoom: bool
    _fitting: Box | None

    def _new_root(self, context: str) -> Box:
        raise NotImplementedError

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


__all__ = ["REFERENCE_ZOOM_BITS", "Dynamics"]
