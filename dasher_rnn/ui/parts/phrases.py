"""Quick phrases in the window: the list of the Writer's profile (adapt/phrases.py), in the control box's Phrases box
and in a dialog of large buttons (write one, add the current message, remove one), ordered by use.

A phrase written either way goes into the message as written text (``ZoomModel.write_phrase``): the panel shows it,
direct output types it, Speak says it, and the model learns it as the view moves on. Every use is counted, so the
phrases people say most get the largest boxes. Nothing here stops writing: a list that cannot be saved is a notice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout, QWidget

from dasher_rnn.adapt.phrases import PhraseError, PhraseList
from dasher_rnn.normalise import normalise
from dasher_rnn.ui.parts.status import Notices
from dasher_rnn.ui.widgets import DIALOG_STYLE, make_action
from dasher_rnn.zoom.boxes import Frame
from dasher_rnn.zoom.controller import WritingController

log = logging.getLogger(__name__)

T = TypeVar("T")


class PhrasesPart(QObject):
    wrote = Signal(object)  # a Frame: a phrase chosen in the dialog was written (the window applies it as any frame)

    def __init__(self, controller: WritingController, notices: Notices, host: QWidget) -> None:
        super().__init__(host)
        self.controller, self.notices, self.host = controller, notices, host
        self.phrases: PhraseList | None = None
        self.add_action = make_action(host, "Add as phrase", self.add_current, None,
                                      "Keep the current message as a quick phrase (in the control box's Phrases)")
        self.phrases_action = make_action(host, "Phrases", lambda: self.open_dialog(), None,
                                          "Your quick phrases: write one, add this message, remove one")
        self.follow_writer()

    # -- the list -----------------------------------------------------------------------------------
    def follow_writer(self) -> None:
        """The phrases of the controller's Writer's profile (again after the Writer changed: each language has its
        own profile, so its own phrases); none without a profile."""
        writer = self.controller.writer
        store = getattr(writer, "store", None)
        if writer is None or not writer.profile or store is None:
            self.phrases = None
        else:
            try:  # PhraseList never raises for what is on disk; whatever else goes wrong must not stop the window
                self.phrases = PhraseList(store.path(writer.profile), self.controller.zoom.alphabet.language or "en")
            except Exception as exc:
                log.exception("the quick phrases could not be read")
                self.phrases = None
                self.add_action.setEnabled(False)
                self.phrases_action.setEnabled(False)
                self.notices.set_notice("phrases", f"The quick phrases could not be read ({type(exc).__name__}: "
                                        f"{str(exc)[:120]}); they are off until the next start.")
                self.show_in_zoom()
                return
        self.add_action.setEnabled(self.phrases is not None)
        self.phrases_action.setEnabled(self.phrases is not None)
        self.notices.set_notice("phrases", self.phrases.notice if self.phrases is not None else "")
        self.show_in_zoom()

    def show_in_zoom(self) -> None:
        """The control box's Phrases box shows the list, most used first."""
        ordered = self.phrases.ordered() if self.phrases is not None else []
        self.controller.zoom.set_phrases([(p.text, p.uses) for p in ordered])

    def on_frame(self, frame: Frame) -> None:
        """A phrase was written (its box, or the dialog): count the use."""
        if frame.phrase is not None and self.phrases is not None:
            self._change(lambda phrases: phrases.use(frame.phrase or ""))

    def add_current(self) -> bool:
        """Keep the current message as a phrase; whether it was kept (if not, the status bar says why)."""
        return self.add(self.controller.zoom.output)

    def add(self, text: str) -> bool:
        if self.phrases is None:
            self.notices.show_message("Quick phrases are kept with a profile: none is in use", 5000)
            return False
        alphabet = self.controller.zoom.alphabet
        try:
            phrase = self._change(lambda phrases: phrases.add(text, fold=lambda t: normalise(t, alphabet)))
        except PhraseError as exc:
            self.notices.show_message(f"Not kept as a phrase: {exc}", 6000)
            return False
        if phrase is None:
            return False
        self.notices.show_message(f"Kept as a quick phrase: {phrase.text}", 4000)
        return True

    def remove(self, text: str) -> bool:
        return bool(self._change(lambda phrases: phrases.remove(text)))

    def write(self, text: str) -> Frame | None:
        """Write the phrase ``text`` into the message now, as its box would."""
        try:
            frame = self.controller.zoom.write_phrase(text)
        except ValueError as exc:
            self.notices.show_message(f"Cannot write that phrase here: {exc}", 6000)
            return None
        self.wrote.emit(frame)
        return frame

    def _change(self, change: Callable[[PhraseList], T]) -> T | None:
        """Make a change that saves the list; a save that fails is a notice (the change stays for this session)."""
        assert self.phrases is not None
        try:
            result = change(self.phrases)
        except OSError as exc:
            self.notices.set_notice("phrases", f"Quick phrases could not be saved ({exc.strerror or exc})")
            result = None
        else:
            self.notices.set_notice("phrases", "")
        self.show_in_zoom()
        return result

    # -- the dialog ---------------------------------------------------------------------------------
    def open_dialog(self) -> PhrasesDialog:
        dialog = PhrasesDialog(self, self.host)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog


class PhrasesDialog(QDialog):
    """The phrases, most used first, with large buttons: Write it, Add this message, Remove, Close."""

    def __init__(self, part: PhrasesPart, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.part = part
        self.setWindowTitle("Quick phrases")
        self.setStyleSheet(DIALOG_STYLE)
        self.list = QListWidget()
        self.list.setStyleSheet("QListWidget { font-size: 18pt; } QListWidget::item { padding: 10px; }")
        self.list.itemDoubleClicked.connect(lambda _item: self.write_selected())
        explanation = QLabel("Phrases you say often. Write one into your message, or reach them in the control "
                             "box's Phrases while writing; the ones you use most come first and get the largest boxes.")
        explanation.setWordWrap(True)
        explanation.setObjectName("explanation")
        buttons = QHBoxLayout()
        self.write_button = QPushButton("Write it")
        self.write_button.clicked.connect(self.write_selected)
        self.add_button = QPushButton("Add this message")
        self.add_button.clicked.connect(self.add_message)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self.remove_selected)
        close = QPushButton("Close")
        close.clicked.connect(self.accept)
        for button in (self.write_button, self.add_button, self.remove_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(explanation)
        layout.addWidget(self.list, 1)
        layout.addLayout(buttons)
        self.resize(800, 600)
        self.refresh()

    def refresh(self) -> None:
        self.list.clear()
        phrases = self.part.phrases.ordered() if self.part.phrases is not None else []
        for phrase in phrases:
            item = QListWidgetItem(phrase.text)
            item.setData(Qt.ItemDataRole.UserRole, phrase.text)
            item.setToolTip(f"used {phrase.uses} times" if phrase.uses != 1 else "used once")
            self.list.addItem(item)
        if phrases:
            self.list.setCurrentRow(0)
        self.add_button.setEnabled(bool(self.part.controller.zoom.output.strip()))
        for button in (self.write_button, self.remove_button):
            button.setEnabled(bool(phrases))

    def selected(self) -> str | None:
        item = self.list.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None

    def write_selected(self) -> None:
        text = self.selected()
        if text is not None and self.part.write(text) is not None:
            self.accept()

    def add_message(self) -> None:
        if self.part.add_current():
            self.refresh()

    def remove_selected(self) -> None:
        text = self.selected()
        if text is not None and self.part.remove(text):
            self.refresh()
