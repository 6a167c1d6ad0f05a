"""A picture of progress: characters per minute and bits per character per message, over the messages
of one profile, so the user and a clinician see the writing speed up and the model learn the person.

``render_progress`` draws the picture with a QPainter on a QImage (no window, no plotting library): the
Progress view in the app shows it, and ``dasher-rnn stats`` saves it as a PNG. Each message is a dot;
the line is the average over the last ``AVERAGE`` messages (characters over time, bits over characters),
so one slow or odd message does not hide the trend.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import platformdirs
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPainterPath, QPen, QPixmap, QResizeEvent
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from dasher_rnn.adapt.progress import MessageRecord

AVERAGE = 10  # messages in the moving average
SIZE = (1200, 800)  # the PNG's default size
BUTTON_STYLE = "QPushButton { font-size: 16pt; padding: 10px 24px; min-height: 56px; }"


def _nice_step(span: float, ticks: int = 5) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving about ``ticks`` ticks over ``span``."""
    raw = max(span, 1e-9) / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def moving_average(records: Sequence[MessageRecord], value: Callable[[Sequence[MessageRecord]], float],
                   window: int = AVERAGE) -> list[float]:
    """``value`` of each record together with the ``window - 1`` before it."""
    return [value(records[max(0, i + 1 - window): i + 1]) for i in range(len(records))]


def rate(records: Sequence[MessageRecord]) -> float:
    """Characters per minute over these records."""
    seconds = sum(r.seconds for r in records)
    return 60.0 * sum(r.characters for r in records) / seconds if seconds > 0 else 0.0


def cost(records: Sequence[MessageRecord]) -> float:
    """Bits per character over these records."""
    chars = sum(r.characters for r in records)
    return max(0.0, sum(r.bits for r in records)) / chars if chars else 0.0


def _plural(n: float, word: str, digits: int = 0) -> str:
    return f"{n:.{digits}f} {word}" + ("" if round(n, digits) == 1 else "s")


def summary(records: Sequence[MessageRecord]) -> str:
    """Two lines a person can read: how much was written, and the first messages compared with the latest."""
    if not records:
        return "No messages recorded yet."
    minutes = sum(r.seconds for r in records) / 60
    text = (f"{_plural(sum(r.messages for r in records), 'message')}, "
            f"{_plural(sum(r.characters for r in records), 'character')}, "
            f"{_plural(minutes, 'minute', 0 if minutes >= 10 else 1)} of writing.\n")
    if len(records) <= AVERAGE:
        return text + f"{rate(records):.1f} characters a minute, {cost(records):.2f} bits a character."
    first, last = records[:AVERAGE], records[-AVERAGE:]
    return text + (f"First {len(first)}: {rate(first):.1f} characters a minute, {cost(first):.2f} bits a character; "
                   f"latest {len(last)}: {rate(last):.1f} characters a minute, {cost(last):.2f} bits a character.")


def _date(stamp: str) -> str:
    return stamp[:10]


def _panel(painter: QPainter, area: QRectF, xs: list[float], values: list[float], averages: list[float],
           x_max: float, title: str, colour: QColor, font: QFont) -> None:
    """One chart: dots per message, the moving average as a line, a y axis from 0 with round ticks."""
    top = max(max(values, default=0.0), max(averages, default=0.0))
    step = _nice_step(top or 1.0)
    y_max = step * max(1, math.ceil((top or 1.0) / step))
    metrics_h = font.pixelSize()
    plot = area.adjusted(8 * metrics_h * 0.6, metrics_h * 2.2, -metrics_h, -metrics_h * 1.8)

    def at(x: float, y: float) -> QPointF:  # x: message number; message k sits in the middle of slot k
        return QPointF(plot.left() + plot.width() * ((x - 0.5) / x_max if x_max else 0.5),
                       plot.bottom() - plot.height() * (y / y_max))

    painter.setFont(font)
    painter.setPen(QColor("#202020"))
    painter.drawText(QRectF(area.left(), area.top(), area.width(), metrics_h * 1.8),
                     Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, title)
    grid = QPen(QColor("#d8d8d8"))
    tick = 0.0
    while tick <= y_max + 1e-9:
        y = at(0, tick).y()
        painter.setPen(grid)
        painter.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y))
        painter.setPen(QColor("#404040"))
        label = f"{tick:g}"
        painter.drawText(QRectF(area.left(), y - metrics_h, plot.left() - area.left() - 6, 2 * metrics_h),
                         Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, label)
        tick += step
    x_step = max(1, round(_nice_step(x_max, 8)))
    painter.setPen(QColor("#404040"))
    for number in [1, *range(x_step, int(x_max) + 1, x_step)]:
        x = at(number, 0).x()
        painter.drawLine(QPointF(x, plot.bottom()), QPointF(x, plot.bottom() + metrics_h * 0.3))
        painter.drawText(QRectF(x - 3 * metrics_h, plot.bottom() + metrics_h * 0.3, 6 * metrics_h, metrics_h * 1.4),
                         Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop, str(number))
    painter.setPen(QPen(QColor("#404040"), 1.5))
    painter.drawLine(plot.bottomLeft(), plot.bottomRight())
    painter.drawLine(plot.bottomLeft(), plot.topLeft())
    light = QColor(colour)
    light.setAlpha(110)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(light)
    radius = max(2.5, min(6.0, plot.width() / max(1, len(xs)) / 3))
    for x, v in zip(xs, values, strict=True):
        painter.drawEllipse(at(x, v), radius, radius)
    if len(xs) > 1:
        path = QPainterPath(at(xs[0], averages[0]))
        for x, v in zip(xs[1:], averages[1:], strict=True):
            path.lineTo(at(x, v))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setPen(QPen(colour, 3.0))
        painter.drawPath(path)


def render_progress(records: Sequence[MessageRecord], width: int = SIZE[0], height: int = SIZE[1],
                    title: str = "Progress") -> QImage:
    """The picture of progress, ``width`` x ``height`` pixels (a QGuiApplication must exist, for the fonts)."""
    image = QImage(int(width), int(height), QImage.Format.Format_ARGB32)
    image.fill(QColor("#ffffff"))
    painter = QPainter(image)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        unit = max(10, min(width, height) // 45)
        font, big = QFont(), QFont()
        font.setPixelSize(unit)
        big.setPixelSize(int(unit * 1.5))
        big.setBold(True)
        margin = unit * 1.5
        painter.setFont(big)
        painter.setPen(QColor("#000000"))
        head = QRectF(margin, margin * 0.6, width - 2 * margin, unit * 2.2)
        painter.drawText(head, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, title)
        painter.setFont(font)
        foot = QRectF(margin, height - unit * 5.6, width - 2 * margin, unit * 5.0)
        if not records:
            painter.drawText(QRectF(0, 0, width, height), Qt.AlignmentFlag.AlignCenter,
                             "No messages recorded yet: each message is counted when it is finished (New message).")
            return image
        xs, total = [], 0
        for r in records:  # a merged record sits in the middle of the messages it holds
            xs.append(total + (r.messages + 1) / 2)
            total += r.messages
        body = QRectF(margin, head.bottom() + unit, width - 2 * margin, foot.top() - head.bottom() - 2 * unit)
        half = body.height() / 2
        _panel(painter, QRectF(body.left(), body.top(), body.width(), half - unit * 0.5), xs,
               [r.chars_per_minute for r in records], moving_average(records, rate), total,
               f"Characters per minute (line: average of the last {AVERAGE} messages)", QColor("#1f5fbf"), font)
        lower = QRectF(body.left(), body.top() + half + unit * 0.5, body.width(), half - unit * 0.5)
        _panel(painter, lower, xs, [r.bits_per_char for r in records], moving_average(records, cost), total,
               "Bits per character: lower means the model predicts your writing better", QColor("#b3541e"), font)
        painter.setPen(QColor("#404040"))
        first, last = _date(records[0].time), _date(records[-1].time)
        axis = f"Messages, oldest first: message 1 on {first}" + (f", message {total} on {last}" if total > 1 else "")
        painter.drawText(QRectF(foot.left(), foot.top(), foot.width(), unit * 1.6),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, axis)
        painter.drawText(QRectF(foot.left(), foot.top() + unit * 1.7, foot.width(), unit * 3.3),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter | Qt.TextFlag.TextWordWrap,
                         summary(records))
    finally:
        painter.end()
    return image


def progress_title(profile: str | None) -> str:
    return f"Progress of profile {profile!r}" if profile else "Progress"


class StatsDialog(QDialog):
    """The picture of progress of the profile in use, redrawn to the dialog's size; large buttons to save a
    copy into the documents folder (no file dialog, no keyboard) and to close. ``notice``: what is wrong with
    the record (a file that cannot be read, lines skipped), shown above the picture."""

    def __init__(self, records: Sequence[MessageRecord], profile: str | None, parent: QWidget | None = None,
                 folder: str | Path | None = None, notice: str | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("dasher-rnn progress")
        self.records, self.profile = list(records), profile
        self.folder = Path(folder) if folder is not None else Path(platformdirs.user_documents_dir())
        self.picture = QLabel()
        self.picture.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.picture.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Ignored)
        self.picture.setMinimumSize(400, 300)
        self.message = QLabel()
        self.notice = QLabel(notice or "")
        self.notice.setWordWrap(True)
        self.notice.setStyleSheet("QLabel { font-size: 14pt; color: #a00000; }")
        self.notice.setVisible(bool(notice))
        layout = QVBoxLayout(self)
        layout.addWidget(self.notice)
        layout.addWidget(self.picture, 1)
        buttons = QHBoxLayout()
        self.save_button = QPushButton("Save the picture")
        self.save_button.setToolTip(f"Save it as a PNG file in {self.folder}")
        self.save_button.clicked.connect(self.save_picture)
        self.save_button.setEnabled(bool(self.records))
        close = QPushButton("Close")
        close.clicked.connect(self.accept)
        for button in (self.save_button, close):
            button.setStyleSheet(BUTTON_STYLE)
        buttons.addWidget(self.save_button)
        buttons.addWidget(self.message, 1)
        buttons.addWidget(close)
        layout.addLayout(buttons)
        self.resize(1100, 800)

    def image(self) -> QImage:
        size = self.picture.size()
        return render_progress(self.records, max(400, size.width()), max(300, size.height()),
                               progress_title(self.profile))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.picture.setPixmap(QPixmap.fromImage(self.image()))

    def save_picture(self) -> Path | None:
        """Write the picture at the CLI's size into the documents folder; where it went is shown."""
        path = self.folder / f"dasher-rnn-progress-{self.profile or 'profile'}-{time.strftime('%Y%m%d-%H%M%S')}.png"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            ok = render_progress(self.records, *SIZE, progress_title(self.profile)).save(str(path))
        except OSError:
            ok = False
        self.message.setText(f"  Saved to {path}" if ok else f"  Could not save to {path}")
        return path if ok else None
