"""The zooming view: paints the controller's last frame and reports where the pointer is.

It holds no writing logic; the window asks it for ``pointer_screen`` each frame and hands it back a Frame.
Gaze input (and scripted screenshots) set a pointer override, which takes the mouse's place.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QMouseEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import QWidget

from dasher_rnn.alphabet import Alphabet
from dasher_rnn.ui.paint import MIN_LABEL_PX, ConfirmTarget, paint_confirm, paint_frame, paint_switch
from dasher_rnn.zoom.boxes import Frame
from dasher_rnn.zoom.geometry import Viewport
from dasher_rnn.zoom.switching import SwitchView


class DasherView(QWidget):
    """Draws boxes; emits ``clicked`` on a mouse press (the window decides whether that starts writing)."""

    clicked = Signal()
    frame_painted = Signal()  # after each paint of a frame of boxes (`app --exit-after-first-frame` waits for one)

    def __init__(self, alphabet: Alphabet, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.alphabet = alphabet
        self.frame: Frame | None = None
        self.scheme = "default"
        self.dwell_progress = 0.0
        self.switch: SwitchView | None = None  # what a switch mode shows over the boxes (None: no switch mode)
        self.confirm: ConfirmTarget | None = None  # an action waiting for its confirmation
        self.hint = ""  # a line drawn at the top left (right to left: right) while writing is stopped ("click to start")
        self.min_label_px = MIN_LABEL_PX  # boxes smaller than this get no label until they grow
        self._mouse: tuple[float, float] | None = None
        self._override: tuple[float, float] | None = None
        self.use_mouse = True  # False while gaze drives the pointer: a lost gaze must not fall back to the mouse
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)  # paint_frame fills every pixel
        self.setMinimumSize(200, 150)

    def sizeHint(self) -> QSize:
        return QSize(900, 600)

    # -- pointer --------------------------------------------------------------------
    @property
    def pointer_screen(self) -> tuple[float, float] | None:
        """The pointer in view pixels: the override when set, else the mouse; None after it left the view."""
        if self._override is not None:
            return self._override
        return self._mouse if self.use_mouse else None

    def set_pointer_override(self, pos: tuple[float, float] | QPointF | None) -> None:
        """Point from somewhere other than the mouse (gaze, scripts); None gives the mouse back."""
        if isinstance(pos, QPointF):
            pos = (pos.x(), pos.y())
        self._override = None if pos is None else (float(pos[0]), float(pos[1]))

    def viewport(self) -> Viewport:
        """Dasher's coordinates on this view, in the alphabet's direction of writing (mirrored for right to left)."""
        return Viewport(self.width(), self.height(), self.alphabet.orientation)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        pos = event.position()
        self._mouse = (pos.x(), pos.y())

    def enterEvent(self, event) -> None:
        pos = event.position()
        self._mouse = (pos.x(), pos.y())

    def leaveEvent(self, event) -> None:
        self._mouse = None

    def mousePressEvent(self, event: QMouseEvent) -> None:
        pos = event.position()
        self._mouse = (pos.x(), pos.y())
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit()

    # -- drawing ----------------------------------------------------------------------
    def set_frame(self, frame: Frame, dwell_progress: float = 0.0) -> None:
        self.frame, self.dwell_progress = frame, dwell_progress
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        try:
            if self.frame is None:
                painter.fillRect(self.rect(), QColor("#000000" if self.scheme == "high-contrast" else "#ffffff"))
            else:
                paint_frame(painter, self.frame, self.viewport(), self.alphabet, self.scheme, self.pointer_screen,
                            self.dwell_progress, self.min_label_px)
                if self.switch is not None:
                    paint_switch(painter, self.switch, self.viewport(), self.scheme)
                if self.confirm is not None:
                    paint_confirm(painter, self.confirm, self.viewport(), self.scheme)
            if self.hint:
                self._paint_hint(painter)
        finally:
            painter.end()
        if self.frame is not None:
            self.frame_painted.emit()

    def _paint_hint(self, painter: QPainter) -> None:
        font = painter.font()
        font.setPixelSize(max(12, self.height() // 30))
        font.setBold(True)
        painter.setFont(font)
        high = self.scheme == "high-contrast"
        rect = QRectF(8, 8, self.width() - 16, font.pixelSize() * 1.8)
        # over the history (left, or right when the view is mirrored), not over the choices
        side = Qt.AlignmentFlag.AlignRight if self.alphabet.orientation == "rtl" else Qt.AlignmentFlag.AlignLeft
        align = side | Qt.AlignmentFlag.AlignVCenter
        bounds = painter.boundingRect(rect, align, self.hint).adjusted(-6, -2, 6, 2)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(0, 0, 0, 200) if high else QColor(255, 255, 255, 210))
        painter.drawRoundedRect(bounds, 4, 4)
        painter.setPen(QColor("#ffff00" if high else "#202020"))
        painter.drawText(rect, align, self.hint)
