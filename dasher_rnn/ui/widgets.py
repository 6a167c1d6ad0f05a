"""Controls large enough for gaze, dwell and a head mouse, used by the dialogs (Preferences, Profile, Help).

No control here needs a keyboard or a precise click: a number is changed with large − and + buttons, an
on/off choice is one large button, a choice among a few is a row of large buttons. ``wrap_tip`` keeps a tooltip
narrow, so that it is never cut off at the edge of the window or the screen.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QButtonGroup,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

BUTTON_PX = 56  # the smallest side of a button in the dialogs: a comfortable dwell target
TIP_WIDTH = 60  # characters per line of a tooltip
DIALOG_STYLE = f"""
QDialog, QWidget {{ font-size: 14pt; }}
QPushButton {{ min-height: {BUTTON_PX}px; min-width: {BUTTON_PX}px; padding: 6px 18px; font-size: 15pt; }}
QPushButton:checked {{ background: #1f6fb2; color: white; border: 3px solid #0b3a63; }}
QTabBar::tab {{ min-height: {BUTTON_PX}px; min-width: 110px; padding: 6px 12px; font-size: 15pt; }}
QScrollBar:vertical {{ width: 40px; }}
QLabel#title {{ font-size: 15pt; font-weight: bold; }}
QLabel#explanation {{ font-size: 12pt; }}
"""


def wrap_tip(text: str, width: int = TIP_WIDTH) -> str:
    """``text`` broken into lines of at most ``width`` characters (a plain-text tooltip never wraps by itself)."""
    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False)) if text else ""


def make_action(host: QWidget, text: str, slot: Callable[..., object], shortcut: QKeySequence | str | None = None,
                tip: str = "", checkable: bool = False) -> QAction:
    """An action of ``host`` (a window): its shortcut works whichever of the window's widgets has the focus, and
    its tooltip is wrapped so that it is never cut off."""
    action = QAction(text, host)
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
    if tip:
        action.setToolTip(wrap_tip(tip))
        action.setStatusTip(tip)
    action.setCheckable(checkable)
    action.triggered.connect(slot)
    host.addAction(action)
    return action


def _big(button: QPushButton) -> QPushButton:
    button.setMinimumSize(BUTTON_PX, BUTTON_PX)
    button.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)
    button.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
    return button


class Stepper(QWidget):
    """A number between ``low`` and ``high`` changed by ``step`` with a large − and a large + button."""

    changed = Signal(float)

    def __init__(self, low: float, high: float, step: float, value: float, decimals: int = 1, suffix: str = "",
                 zero_text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.low, self.high, self.step, self.decimals, self.suffix = low, high, step, decimals, suffix
        self.zero_text = zero_text  # shown instead of 0 (e.g. "never")
        self.minus = _big(QPushButton("−"))
        self.plus = _big(QPushButton("+"))
        self.minus.setAccessibleName("less")
        self.plus.setAccessibleName("more")
        self.label = QLabel()
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.label.setMinimumWidth(150)
        self.label.setStyleSheet("font-size: 16pt; font-weight: bold;")
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.minus)
        row.addWidget(self.label)
        row.addWidget(self.plus)
        row.addStretch(1)
        self.minus.clicked.connect(lambda: self.set_value(self._value - self.step, emit=True))
        self.plus.clicked.connect(lambda: self.set_value(self._value + self.step, emit=True))
        self._value = math.nan
        self.set_value(value)

    def value(self) -> float:
        return self._value

    def set_value(self, value: float, emit: bool = False) -> None:
        """Show ``value`` (clamped, rounded to the step's decimals); ``emit`` says so through ``changed``."""
        value = round(min(max(float(value), self.low), self.high), self.decimals)
        if self.decimals == 0:
            value = float(int(value))
        moved = value != self._value
        self._value = value
        shown = f"{value:.{self.decimals}f}{self.suffix}"
        self.label.setText(self.zero_text if value == 0 and self.zero_text else shown)
        self.minus.setEnabled(value > self.low)
        self.plus.setEnabled(value < self.high)
        if emit and moved:
            self.changed.emit(value)


class Toggle(QPushButton):
    """On or off in one large button that says which."""

    def __init__(self, on: bool = False, on_text: str = "On", off_text: str = "Off",
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.on_text, self.off_text = on_text, off_text
        _big(self)
        self.setCheckable(True)
        self.setMinimumWidth(160)
        self.toggled.connect(self._show)
        self.setChecked(on)
        self._show(on)

    def _show(self, on: bool) -> None:
        self.setText(self.on_text if on else self.off_text)


class Choice(QWidget):
    """One of a few values, each a large button; ``chosen`` gives the value picked."""

    chosen = Signal(str)

    def __init__(self, options: Sequence[tuple[str, str]], value: str, columns: int = 4,
                 parent: QWidget | None = None) -> None:
        """``options``: (value, label) pairs."""
        super().__init__(parent)
        self.group = QButtonGroup(self)
        self.group.setExclusive(True)
        self.buttons: dict[str, QPushButton] = {}
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        row: QHBoxLayout | None = None
        for i, (name, label) in enumerate(options):
            if i % columns == 0:
                row = QHBoxLayout()
                outer.addLayout(row)
            button = _big(QPushButton(label))
            button.setCheckable(True)
            button.clicked.connect(lambda _checked=False, n=name: self._pick(n))
            self.group.addButton(button)
            self.buttons[name] = button
            row.addWidget(button)
        if row is not None:
            row.addStretch(1)
        self.set_value(value)

    def value(self) -> str:
        return next((name for name, b in self.buttons.items() if b.isChecked()), "")

    def set_value(self, value: str) -> None:
        button = self.buttons.get(value)
        if button is not None:
            button.setChecked(True)

    def _pick(self, name: str) -> None:
        self.set_value(name)
        self.chosen.emit(name)


def setting_row(title: str, explanation: str, control: QWidget) -> QWidget:
    """A titled control with a sentence or two saying what it does."""
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 2, 0, 6)
    layout.setSpacing(2)
    heading = QLabel(title)
    heading.setObjectName("title")
    text = QLabel(explanation)
    text.setObjectName("explanation")
    text.setWordWrap(True)
    layout.addWidget(heading)
    layout.addWidget(text)
    if isinstance(control, QLabel):
        layout.addWidget(control)  # wrapped text takes the width
    else:
        layout.addWidget(control, 0, Qt.AlignmentFlag.AlignLeft)
    return box
