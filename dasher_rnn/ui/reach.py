"""Buttons reached without a click or a keyboard: a gaze dwells on one, switches scan them (issue 46).

``ButtonReach`` serves a screen whose buttons change (the tutorial's pages): each frame it is told the buttons there
are now, where the gaze is (in global pixels, or None) and how much time went by.

- **Gaze**: the gaze point is hit-tested against the buttons (each grown by ``MARGIN_PX``: a tracker's error at a
  button's edge still counts); resting on one for ``dwell_s`` clicks it, while a fill grows across it from the left.
  As the canvas's dwell does, it fires once per visit: after a click the gaze must first leave that button, and a
  new page's button under a resting gaze is not clicked until the gaze has left it.
- **Switches**: one button at a time is marked with a thick ring. With one switch (``auto``) the ring moves on by
  itself every ``scan_s`` and a press clicks the marked button; with two, the first switch (Space) moves it and the
  second (Enter) clicks. The keyboard's Space and Enter act the same way for anyone.

The marks are ``TargetMark`` children drawn over the buttons, transparent to the mouse.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QAbstractButton, QWidget

MARGIN_PX = 12  # a gaze this close to a button is on it
RING_PX = 6  # the scan ring's width: seen from across a room
FILL = QColor(0, 138, 0, 110)  # the dwell's fill (the tutorial's green, see-through)
RING = QColor("#ff8c00")  # the scan ring: orange, apart from the green path and the red cross


class TargetMark(QWidget):
    """Drawn over a button: the dwell's fill (``progress``, 0..1, from the left) and the scan ring (``ringed``)."""

    def __init__(self, button: QAbstractButton) -> None:
        super().__init__(button)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground, True)
        self.progress = 0.0
        self.ringed = False
        self.setGeometry(button.rect())
        self.hide()

    def show_state(self, progress: float, ringed: bool) -> None:
        if (progress, ringed) == (self.progress, self.ringed):
            return
        self.progress, self.ringed = progress, ringed
        parent = self.parentWidget()
        if parent is not None:
            self.setGeometry(parent.rect())
        self.setVisible(progress > 0 or ringed)
        self.raise_()
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        try:
            if self.progress > 0:
                painter.fillRect(QRectF(0, 0, self.width() * min(self.progress, 1.0), self.height()), FILL)
            if self.ringed:
                painter.setPen(QPen(RING, RING_PX))
                painter.setBrush(Qt.BrushStyle.NoBrush)
                half = RING_PX / 2
                painter.drawRect(QRectF(half, half, self.width() - RING_PX, self.height() - RING_PX))
        finally:
            painter.end()


class ButtonReach:
    """Dwell and switch scanning over the buttons given each frame (see the module docstring)."""

    def __init__(self, dwell_s: float, scan_s: float, auto: bool, scanning: bool) -> None:
        """``dwell_s``: a gaze's rest that clicks; ``scan_s`` and ``auto``: with one switch, the ring moves on by
        itself every ``scan_s``; ``scanning``: a switch input (the ring shows from the start; otherwise only once
        Space is pressed)."""
        self.dwell_s, self.scan_s, self.auto, self.scanning = dwell_s, scan_s, auto, scanning
        self.buttons: list[QAbstractButton] = []
        self._marks: dict[QAbstractButton, TargetMark] = {}
        self._on: QAbstractButton | None = None  # the button the gaze is on
        self._dwelt = 0.0
        self._armed = True
        self._hold: QAbstractButton | None = None  # while not armed: the button the gaze must leave first
        self._gaze: QPointF | None = None  # where the gaze was last frame
        self._scan = True  # the buttons now are scanned (not only dwelt on)
        self.ring = 0 if scanning else -1  # the marked button's index (-1: none)
        self._ring_for = 0.0  # how long the ring has been on it

    @property
    def progress(self) -> float:
        """The dwell on the button under the gaze so far (0..1)."""
        return 0.0 if self._on is None or not self._armed else min(1.0, self._dwelt / self.dwell_s)

    @property
    def ringed(self) -> QAbstractButton | None:
        return self.buttons[self.ring] if 0 <= self.ring < len(self.buttons) else None

    def set_buttons(self, buttons: Sequence[QAbstractButton], scan: bool = True) -> None:
        """The buttons to reach now, in scanning order (only the visible, enabled ones count); a new set starts the
        ring at its first. ``scan`` False: only by dwell (the switches do something else there)."""
        shown = [b for b in buttons if b.isVisible() and b.isEnabled()]
        if shown != self.buttons or scan != self._scan:
            self.buttons, self._scan = shown, scan
            # a new page: a button that comes under a resting gaze is not clicked by it
            self._hold = self.hit(self._gaze)
            self._armed = self._hold is None
            self.ring = 0 if self.scanning and scan and shown else -1
            self._ring_for = 0.0
            if self._on not in shown:
                self._on, self._dwelt = None, 0.0
        self._show()

    def hit(self, point: QPointF | None) -> QAbstractButton | None:
        """The button at ``point`` (global pixels), its edge grown by ``MARGIN_PX``."""
        if point is None:
            return None
        for button in self.buttons:
            corner = button.mapToGlobal(button.rect().topLeft())
            area = QRect(corner, button.size()).adjusted(-MARGIN_PX, -MARGIN_PX, MARGIN_PX, MARGIN_PX)
            if QRectF(area).contains(point):
                return button
        return None

    def tick(self, gaze: QPointF | None, dt: float) -> QAbstractButton | None:
        """A frame ``dt`` seconds after the last, with the gaze at ``gaze`` (global pixels; None: no gaze): the
        button clicked by a dwell, if one was."""
        clicked = None
        on, self._gaze = self.hit(gaze), gaze
        if not self._armed and on is not self._hold:
            self._armed = True  # it left the button: the next visit may click
        if on is not self._on:
            self._on, self._dwelt = on, 0.0
        if on is not None and self._armed:
            self._dwelt += dt
            if self._dwelt >= self.dwell_s:
                self._armed, self._hold, self._dwelt = False, on, 0.0  # once per visit
                clicked = on
        if self.auto and self.buttons and self.ring >= 0:
            self._ring_for += dt
            if self._ring_for >= self.scan_s:
                self.next()
        self._show()
        if clicked is not None:
            clicked.click()
        return clicked

    def next(self) -> None:
        """Move the ring to the next button (round to the first after the last)."""
        if self.buttons:
            self.ring = (self.ring + 1) % len(self.buttons)
            self._ring_for = 0.0
            self._show()

    def select(self) -> QAbstractButton | None:
        """Click the ringed button (none ringed yet: ring the first)."""
        button = self.ringed
        if button is None:
            if self.buttons:
                self.ring, self._ring_for = 0, 0.0
                self._show()
            return None
        button.click()
        return button

    def press(self, switch: int) -> QAbstractButton | None:
        """A switch pressed (0: Space, the first; 1: Enter, the second): with one switch any press clicks the ringed
        button; with two, the first moves the ring and the second clicks."""
        if not self._scan:
            return None
        if self.auto or switch == 1:
            return self.select()
        if self.ring < 0:
            self.ring, self._ring_for = 0, 0.0
            self._show()
        else:
            self.next()
        return None

    def clear(self) -> None:
        """No marks (the screen is not served now)."""
        self._on, self._dwelt = None, 0.0
        for mark in self._marks.values():
            mark.show_state(0.0, False)

    def _show(self) -> None:
        ringed = self.ringed
        for button in self.buttons:
            mark = self._marks.get(button)
            progress = self.progress if button is self._on else 0.0
            if mark is None:
                if progress == 0 and button is not ringed:
                    continue
                mark = self._marks[button] = TargetMark(button)
            mark.show_state(progress, button is ringed)
        for button, mark in self._marks.items():
            if button not in self.buttons:
                mark.show_state(0.0, False)
