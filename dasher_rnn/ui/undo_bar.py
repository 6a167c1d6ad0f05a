"""A large Undo button offered for a few seconds after New message or Clear, so that a mis-aimed press with a
head mouse or a gaze dwell costs nothing: press Undo (one large target) while it shows. No confirmation to
answer before every new message, and nothing needs a keyboard."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QLabel, QToolBar, QWidget

UNDO_SECONDS = 10


class UndoBar(QToolBar):
    """``offer(text, undo)`` shows ``text`` beside a large Undo button that calls ``undo`` once; the bar hides
    after ``seconds`` or when the next offer replaces it."""

    def __init__(self, parent: QWidget | None = None, seconds: float = UNDO_SECONDS) -> None:
        super().__init__("Undo", parent)
        self.setObjectName("undo-toolbar")
        self.setMovable(False)
        self.setStyleSheet("QToolButton { font-size: 16pt; font-weight: bold; padding: 10px 40px; min-height: 48px; "
                           "border: 2px solid #1f6fb2; border-radius: 6px; background: #e8f1fb; color: #0b3a63; } "
                           "QLabel { font-size: 13pt; }")
        self.label = QLabel()
        self.addWidget(self.label)
        self.undo_action = self.addAction("Undo", self.undo)
        self.undo_action.setToolTip("Put it back as it was")
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(int(seconds * 1000))
        self.timer.timeout.connect(self.expire)
        self._undo: Callable[[], None] | None = None
        self.setVisible(False)

    @property
    def offered(self) -> bool:
        return self._undo is not None

    def offer(self, text: str, undo: Callable[[], None]) -> None:
        self._undo = undo
        self.label.setText(f" {text} ")
        self.setVisible(True)
        self.timer.start()

    def undo(self) -> bool:
        """Call the offered undo (once); False when nothing is offered."""
        undo, self._undo = self._undo, None
        self.expire()
        if undo is None:
            return False
        undo()
        return True

    def expire(self) -> None:
        self._undo = None
        self.timer.stop()
        self.setVisible(False)
