"""The webcam head pointer's preview: the camera's newest frame with what the tracker found on it, and Recentre.

A small window beside the main one while the head-pointer input runs (``parts/input.py`` opens it). It polls the
source's ``preview()`` (input/webcam.py: plain data, no lock) a few times a second and paints, over the frame:

- the face's box (green), the tracked points on the face (cyan dots), the anchor whose movement steers (yellow) and
  the centre it is measured from (a white ring), joined by a line: the head's movement at a glance;
- an inset screen in the corner with the pointer where the head puts it (before smoothing) and the centre's cross;
- what the tracker is doing (following, looking for the face, lost), the head's yaw and pitch, and the frame's
  processing time.

The frame is shown as a mirror (as people expect to see their own face) unless the camera already mirrors. The
Recentre button is large, for a dwell click or a head mouse; turning away from the camera for a few seconds and back
recentres as well (``HeadPointerSource.recentre_after``), which needs no click at all.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from dasher_rnn.input.webcam import HeadPreview

REFRESH_MS = 66  # about 15 paints a second: enough to see the tracking, cheap beside the 30 fps tracking itself
BUTTON_PX = 80  # the Recentre button's height: a large dwell target

BACKGROUND = QColor(32, 32, 32)
BOX = QColor(60, 220, 90)
POINTS = QColor(40, 220, 255)
ANCHOR = QColor(255, 215, 0)
CENTRE = QColor(255, 255, 255)
POINTER = QColor(255, 80, 60)
LOST = QColor(255, 170, 40)
TEXT = QColor(255, 255, 255)

STATES = {"tracking": "Following your head", "searching": "Looking for your face", "lost": "Face lost"}


class PreviewSource(Protocol):
    """What the preview needs of a head pointer (``HeadPointerSource``)."""

    def preview(self) -> HeadPreview | None: ...

    def recentre(self) -> None: ...


def frame_image(frame: np.ndarray) -> QImage | None:
    """The frame (grey, BGR or BGRA, uint8) as a QImage that owns its pixels; None for anything else."""
    if frame.dtype != np.uint8 or frame.ndim not in (2, 3) or min(frame.shape[:2]) < 1:
        return None
    if frame.ndim == 3:
        if frame.shape[2] not in (3, 4):
            return None
        frame = frame[:, :, :3]  # BGRA's alpha is not shown
    frame = np.ascontiguousarray(frame)
    height, width = frame.shape[:2]
    fmt = QImage.Format.Format_Grayscale8 if frame.ndim == 2 else QImage.Format.Format_BGR888
    return QImage(frame.data, width, height, frame.strides[0], fmt).copy()  # copy: the array may go away


def paint_preview(painter: QPainter, area: QRectF, preview: HeadPreview | None, note: str = "") -> None:
    """Paint ``preview`` into ``area``: the frame fitted (its aspect kept) and what was found on it (module
    docstring); ``note`` (why the camera stopped) is written under the state, or alone when there is no frame."""
    painter.save()
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.fillRect(area, BACKGROUND)
        image = frame_image(preview.frame) if preview is not None else None
        if preview is None or image is None:
            _text(painter, area.adjusted(12, 12, -12, -12), note or "Waiting for the camera…", TEXT,
                  Qt.AlignmentFlag.AlignCenter)
            return
        scale = min(area.width() / image.width(), area.height() / image.height())
        target = QRectF(0, 0, image.width() * scale, image.height() * scale)
        target.moveCenter(area.center())
        flip = not preview.mirrored  # show a mirror image, as people expect of their own face

        def at(x: float, y: float) -> QPointF:
            return QPointF(target.left() + (1 - x if flip else x) * target.width(), target.top() + y * target.height())

        painter.save()
        if flip:
            painter.translate(target.right(), target.top())
            painter.scale(-1, 1)
            painter.drawImage(QRectF(0, 0, target.width(), target.height()), image)
        else:
            painter.drawImage(target, image)
        painter.restore()
        unit = max(2.0, target.width() / 160)  # line widths and dot sizes follow the picture's size
        if preview.box is not None:
            x, y, w, h = preview.box
            corners = (at(x, y), at(x + w, y + h))
            painter.setPen(QPen(BOX, unit))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(QRectF(corners[0], corners[1]).normalized())
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(POINTS)
        for px, py in preview.points:
            painter.drawEllipse(at(float(px), float(py)), unit, unit)
        if preview.centre is not None:
            centre = at(*preview.centre)
            if preview.anchor is not None:
                painter.setPen(QPen(ANCHOR, unit * 0.75))
                painter.drawLine(centre, at(*preview.anchor))
            painter.setPen(QPen(CENTRE, unit))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawEllipse(centre, 3 * unit, 3 * unit)
        if preview.anchor is not None:
            painter.setPen(QPen(Qt.GlobalColor.black, unit / 2))
            painter.setBrush(ANCHOR)
            painter.drawEllipse(at(*preview.anchor), 2.2 * unit, 2.2 * unit)
        _inset_screen(painter, target, preview.pointer, unit)
        state = STATES.get(preview.state, preview.state)
        lines = [state]
        if preview.pose is not None:
            lines.append(f"yaw {preview.pose[0]:+.0f}°  pitch {preview.pose[1]:+.0f}°")
        lines.append(f"{preview.seconds * 1000:.0f} ms a frame")
        if note:
            lines.append(note)
        colour = TEXT if preview.state == "tracking" and not note else LOST
        _text(painter, target.adjusted(8, 6, -8, -6), "\n".join(lines), colour,
              Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
    finally:
        painter.restore()


def _inset_screen(painter: QPainter, target: QRectF, pointer: tuple[float, float] | None, unit: float) -> None:
    """A small screen in the bottom right corner with the pointer where the head puts it."""
    width = target.width() / 4
    screen = QRectF(0, 0, width, width * 9 / 16)
    screen.moveBottomRight(target.bottomRight() - QPointF(8, 8))
    painter.setPen(QPen(TEXT, max(1.0, unit / 2)))
    painter.setBrush(QColor(0, 0, 0, 160))
    painter.drawRect(screen)
    middle = screen.center()
    painter.setPen(QPen(QColor(255, 255, 255, 140), max(1.0, unit / 3)))
    painter.drawLine(QPointF(middle.x(), screen.top()), QPointF(middle.x(), screen.bottom()))
    painter.drawLine(QPointF(screen.left(), middle.y()), QPointF(screen.right(), middle.y()))
    if pointer is not None:
        x, y = (min(max(v, 0.0), 1.0) for v in pointer)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(POINTER)
        painter.drawEllipse(QPointF(screen.left() + x * screen.width(), screen.top() + y * screen.height()),
                            1.8 * unit, 1.8 * unit)


def _text(painter: QPainter, area: QRectF, text: str, colour: QColor, align: Qt.AlignmentFlag) -> None:
    font = QFont(painter.font())
    font.setPointSizeF(max(9.0, area.width() / 40))
    font.setBold(True)
    painter.setFont(font)
    painter.setPen(QColor(0, 0, 0, 200))
    flags = int(align) | int(Qt.TextFlag.TextWordWrap)
    painter.drawText(area.translated(1.5, 1.5), flags, text)  # a shadow: readable over any picture
    painter.setPen(colour)
    painter.drawText(area, flags, text)


def legend() -> str:
    """What the marks on the picture mean, as rich text with their colours."""
    marks = ((BOX, "&#9633;", "your face"), (POINTS, "&#9679;", "points followed"), (ANCHOR, "&#9679;", "your head"),
             (CENTRE, "&#9675;", "the centre"), (POINTER, "&#9679;", "the pointer (bottom right)"))
    return " &nbsp; ".join(f'<span style="color: {c.name()}; background: #202020;">&nbsp;{sign}&nbsp;</span> {text}'
                           for c, sign, text in marks)


def render_preview(preview: HeadPreview | None, width: int = 640, height: int = 480) -> QImage:
    """The preview painted into a new image (needs a QGuiApplication), as the window paints it."""
    image = QImage(width, height, QImage.Format.Format_ARGB32_Premultiplied)
    painter = QPainter(image)
    try:
        paint_preview(painter, QRectF(0, 0, width, height), preview)
    finally:
        painter.end()
    return image


class PreviewView(QWidget):
    """The painted frame; ``show_preview`` hands it a new one."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.preview: HeadPreview | None = None
        self.note = ""
        self.setMinimumSize(320, 240)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)

    def show_preview(self, preview: HeadPreview | None, note: str = "") -> None:
        self.preview, self.note = preview, note
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt's name)
        painter = QPainter(self)
        try:
            paint_preview(painter, QRectF(self.rect()), self.preview, self.note)
        finally:
            painter.end()


class HeadPreviewWindow(QWidget):
    """The preview window of one running head pointer (module docstring); ``refresh`` shows its newest frame."""

    def __init__(self, source: PreviewSource, parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Tool)  # above the main window, no taskbar entry of its own
        self.source = source
        self.setWindowTitle("Head pointer")
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)  # the main window keeps the keyboard
        self.view = PreviewView()
        self.recentre_button = QPushButton("&Recentre")
        self.recentre_button.setMinimumHeight(BUTTON_PX)
        self.recentre_button.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.recentre_button.setStyleSheet("font-size: 20pt; font-weight: bold;")
        self.recentre_button.setToolTip("Make the way your head is now the centre: the pointer rests there")
        self.recentre_button.clicked.connect(self.recentre)
        self.hint = QLabel("Or turn away from the camera for a few seconds and back: that recentres too.")
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet("font-size: 12pt;")
        self.legend = QLabel(legend())
        self.legend.setWordWrap(True)
        self.legend.setStyleSheet("font-size: 11pt;")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.recentre_button)
        layout.addWidget(self.legend)
        layout.addWidget(self.hint)
        self.resize(480, 480)
        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        self._shown: HeadPreview | None = None

    def recentre(self) -> None:
        self.source.recentre()

    def refresh(self) -> None:
        """Show the source's newest frame, if it has a new one (a stopped source says why)."""
        preview = self.source.preview()
        note = getattr(self.source, "stopped", None) or ""
        if preview is self._shown and note == self.view.note:
            return
        self._shown = preview
        self.view.show_preview(preview, note)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        self.refresh()
        self.timer.start()

    def hideEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        self.timer.stop()
        super().hideEvent(event)
