"""The output panel: shows the text written so far, touched only where it changed.

Rewriting the whole document every frame would reset selections and cost time as the text grows, so an
update replaces only what follows the common prefix, then scrolls to the end.

The text is kept in logical order (the order it was written), and Qt lays it out (bidi): for a right to left
alphabet (Arabic, Hebrew, Persian) ``set_orientation("rtl")`` makes every paragraph right to left, so a message
reads from the right edge even where it starts with a digit or a mark, and the scroll bar moves to the left.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QPalette, QTextCursor, QTextOption
from PySide6.QtWidgets import QPlainTextEdit, QWidget

PLACEHOLDER = ("What you write appears here. Write by steering into the boxes below; this panel is for reading "
               "(Copy all, Save or Speak take the text elsewhere).")


class OutputPanel(QPlainTextEdit):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setPlaceholderText(PLACEHOLDER)
        self.setAccessibleName("The text you wrote")  # what a screen reader calls it
        self.setAccessibleDescription(PLACEHOLDER)
        self._text = ""
        self._default_palette = QPalette(self.palette())
        self._default_option = QTextOption(self.document().defaultTextOption())
        self.orientation = "ltr"

    def set_orientation(self, orientation: str) -> None:
        """Lay paragraphs out in the alphabet's direction of writing: right to left for ``"rtl"``; otherwise as
        Qt does by default."""
        self.orientation = orientation
        option = QTextOption(self._default_option)
        if orientation == "rtl":
            self.setLayoutDirection(Qt.LayoutDirection.RightToLeft)
            option.setTextDirection(Qt.LayoutDirection.RightToLeft)
            option.setAlignment(Qt.AlignmentFlag.AlignRight)  # the plain text layout does not flip AlignLeft itself
        else:
            self.unsetLayoutDirection()
        self.document().setDefaultTextOption(option)

    def show_text(self, text: str) -> None:
        if text == self._text:
            return
        common = 0
        limit = min(len(text), len(self._text))
        while common < limit and text[common] == self._text[common]:
            common += 1
        cursor = QTextCursor(self.document())
        cursor.setPosition(len(text[:common].encode("utf-16-le")) // 2)  # Qt counts UTF-16 units
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(text[common:])  # replaces the selection (the old tail)
        self._text = text
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def set_font_size(self, points: int) -> None:
        font = QFont(self.font())
        font.setPointSize(points)
        self.setFont(font)

    def set_scheme(self, scheme: str) -> None:
        if scheme == "high-contrast":
            palette = QPalette(self._default_palette)
            palette.setColor(QPalette.ColorRole.Base, QColor("#000000"))
            palette.setColor(QPalette.ColorRole.Text, QColor("#ffffff"))
            palette.setColor(QPalette.ColorRole.PlaceholderText, QColor("#c0c0c0"))
            self.setPalette(palette)
        else:
            self.setPalette(self._default_palette)
        font = QFont(self.font())
        font.setBold(scheme == "high-contrast")
        self.setFont(font)
