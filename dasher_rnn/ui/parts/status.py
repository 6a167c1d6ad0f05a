"""The status bar: the writing figures, what learns and into which profile, and one notice per topic.

The notices have a line of their own under the figures, as wide as the window, and wrap there: a long notice
(the command that adds a voice, a file's path) is read whole in a narrow window and never widens the window past
the screen's edge.
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QStatusBar, QVBoxLayout, QWidget

from dasher_rnn.adapt.writer import WriterStatus
from dasher_rnn.ui.widgets import wrap_tip
from dasher_rnn.zoom.figures import Stats

# what learns (``WriterStatus.learns``), in the words of someone who writes
LEARNERS = {"rnn": "the letter predictor", "ppm": "the memory of your words",
            "mixing weights": "the balance between the two"}


class Notices(Protocol):
    """What a part may say in the status bar: a lasting notice per topic, or a message for a few seconds."""

    def set_notice(self, key: str, text: str) -> None: ...

    def show_message(self, text: str, ms: int = 4000) -> None: ...


class WrappingLabel(QLabel):
    """A label as wide as its place whose text wraps there, and as tall as the wrapped text (a layout asks a
    wrapping label for its size hint, whose height is for a width of its own choosing, not the one it gets)."""

    def __init__(self) -> None:
        super().__init__()
        self.setWordWrap(True)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)  # never widens the window

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        super().setText(text)
        self._fit()
        self.setVisible(bool(text))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        self._fit()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        return QSize(super().sizeHint().width(), self.minimumHeight())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        return QSize(0, self.minimumHeight())

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt's name)
        return False  # its height is set above, for the width it has

    def _fit(self) -> None:
        height = self.heightForWidth(self.width()) if self.text() else 0
        if height != self.minimumHeight():
            self.setMinimumHeight(height)


class StatusPart:
    def __init__(self, bar: QStatusBar) -> None:
        self.bar = bar
        self.speed_label = QLabel()
        self.rate_label = QLabel()
        self.cpm_label = QLabel()
        self.adaptation_label = QLabel()
        self.profile_label = QLabel()
        self.notice_label = WrappingLabel()
        self.notice_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notice_label.hide()
        figures = QHBoxLayout()
        for label in (self.speed_label, self.rate_label, self.cpm_label, self.adaptation_label, self.profile_label):
            figures.addWidget(label)
        figures.addStretch(1)
        area = QWidget()  # the figures' line, and the notices' line under it
        column = QVBoxLayout(area)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addLayout(figures)
        column.addWidget(self.notice_label)
        bar.addWidget(area, 1)
        self._notices: dict[str, str] = {}

    def set_notice(self, key: str, text: str) -> None:
        """Keep one notice per topic (settings, profile, input...); empty text removes it."""
        if self._notices.get(key, "") == text:
            return
        if text:
            self._notices[key] = text
        else:
            self._notices.pop(key, None)
        joined = "  ·  ".join(self._notices.values())
        self.notice_label.setText(joined)
        self.notice_label.setToolTip(wrap_tip(joined, 100))

    @property
    def notice(self) -> str:
        """Every notice shown now."""
        return self.notice_label.text()

    def show_message(self, text: str, ms: int = 4000) -> None:
        self.bar.showMessage(text, ms)

    def show_figures(self, stats: Stats, status: WriterStatus | None) -> None:
        """The speed, the rate of writing, what learns and the profile (``status`` None: no Writer)."""
        self.speed_label.setText(f"Speed {stats.speed_bps:.1f} bits/s")
        # stopped or paused nothing is written now; a rate that rounds to nothing is 0.0, never "-0.0" (a pause's
        # last frames backing out a hair)
        rate = stats.bits_per_second if stats.running and round(stats.bits_per_second, 1) != 0 else 0.0
        self.rate_label.setText(f"{rate:.1f} bits/s now")
        self.cpm_label.setText(f"{stats.chars_per_minute:.0f} chars/min")
        if status is None or not status.adapting:
            self.adaptation_label.setText("adaptation off")
        elif "rnn" in status.learns:
            self.adaptation_label.setText(f"adapting: {status.updates} updates, {status.rollbacks} rollbacks")
        else:
            self.adaptation_label.setText(f"adapting: {' and '.join(LEARNERS.get(x, x) for x in status.learns)}")
        profile = status.profile if status is not None else None
        self.profile_label.setText(f"profile: {profile}" if profile else "profile: none")
        if status is not None and status.notice:
            self.set_notice("profile", status.notice)
