"""The text and its messages: Copy all, Save, Save As, Clear and New message (each undone from a large Undo
for a few seconds), and the text written in an earlier run and never saved, offered back.

``discarding`` comes before Clear throws the current message away, ``finished`` after a message became final
(its text), and ``changed`` whenever the text or the writing state changed outside a frame.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QGuiApplication, QKeySequence
from PySide6.QtWidgets import QFileDialog, QLabel, QMainWindow, QMessageBox, QToolBar

from dasher_rnn.journal import Journal
from dasher_rnn.ui.documents import documents_folder, timestamped_path
from dasher_rnn.ui.parts.status import Notices
from dasher_rnn.ui.text_panel import OutputPanel
from dasher_rnn.ui.undo_bar import UndoBar
from dasher_rnn.ui.widgets import make_action, wrap_tip
from dasher_rnn.zoom.controller import WritingController


def _above(text: str, history: str) -> str:
    """``text`` as finished messages above ``history``."""
    return text + ("" if text.endswith("\n") else "\n") + history


class MessagesPart(QObject):
    discarding = Signal()
    finished = Signal(str)
    changed = Signal()

    def __init__(self, controller: WritingController, panel: OutputPanel, notices: Notices, host: QMainWindow,
                 journal: Journal | None = None) -> None:
        """``host`` is the window the actions and the bars belong to; ``journal`` keeps the text safe on disk."""
        super().__init__(host)
        self.controller, self.panel, self.notices, self.host, self.journal = controller, panel, notices, host, journal
        self.restore_bar: QToolBar | None = None
        self.copy_action = make_action(host, "Copy all", self.copy_all, "Ctrl+Shift+C",
                                       "Copy all the text to the clipboard")
        self.clear_action = make_action(host, "Clear", self.clear_text, None, "Throw away all the text")
        self.save_action = make_action(host, "Save", lambda: self.save_text(), QKeySequence.StandardKey.Save,
                                       f"Save all the text at once into a new file in {documents_folder()}")
        self.save_as_action = make_action(host, "Save As…", self.save_text_as, QKeySequence.StandardKey.SaveAs,
                                          "Save all the text to a file you name")
        self.new_message_action = make_action(host, "New message", self.new_message, "Ctrl+N",
                                              "Finish this message and start the next (Ctrl+N)")
        self.undo_bar = UndoBar(host)  # the large Undo after New message and Clear

    def show_text(self) -> None:
        """The panel shows the text as it is now, and the journal keeps it."""
        self.panel.show_text(self.controller.text)
        if self.journal is not None:
            self.journal.note(self.controller.text)

    def copy_all(self) -> None:
        QGuiApplication.clipboard().setText(self.controller.text)

    # -- clear and new message ---------------------------------------------------------------
    def clear_text(self) -> None:
        """Throw all the text away; a large Undo puts it back for a few seconds."""
        self.discarding.emit()
        cleared = self.controller.text
        self.controller.clear()
        self.panel.show_text(self.controller.text)
        self.changed.emit()
        if cleared:
            self.undo_bar.offer("All the text was cleared.", lambda: self._restore_cleared(cleared))

    def _restore_cleared(self, text: str) -> None:
        """Undo Clear: the text comes back above whatever was written since (as finished messages)."""
        c = self.controller
        c.history = _above(text, c.history)
        self.panel.show_text(c.text)
        self.notices.show_message("The cleared text is back")

    def new_message(self) -> None:
        """Finish this message; a large Undo takes it back for a few seconds (while nothing new is written)."""
        output = self.controller.zoom.output
        self.controller.new_message()
        self.finished.emit(output)
        self.panel.show_text(self.controller.text)
        self.changed.emit()
        if output:
            self.undo_bar.offer("New message started.", self._reopen_message)

    def _reopen_message(self) -> None:
        reopened = self.controller.reopen_message()
        self.panel.show_text(self.controller.text)
        self.changed.emit()
        self.notices.show_message("Back in the last message" if reopened
                                  else "Something was written since: the new message stays")

    # -- saving --------------------------------------------------------------------------------
    def save_text(self, path: str | Path | None = None) -> bool:
        """Write all the text as UTF-8, at once: to ``path``, or (none given) to a new timestamped file in the
        documents folder, with no dialog to answer. Errors go to a message box."""
        if not path:
            folder = documents_folder()
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                QMessageBox.warning(self.host, "Save the text", f"Could not make the folder {folder}:\n{exc}")
                return False
            path = timestamped_path(folder)
        return self._write_text(Path(path))

    def save_text_as(self) -> bool:
        """Save, asking where (for keyboard users)."""
        folder = documents_folder()
        start = folder if folder.is_dir() else Path.home()
        path, _ = QFileDialog.getSaveFileName(self.host, "Save the text", str(timestamped_path(start)),
                                              "Text files (*.txt);;All files (*)")
        return self._write_text(Path(path)) if path else False

    def _write_text(self, path: Path) -> bool:
        try:
            path.write_text(self.controller.text, encoding="utf-8")
        except OSError as exc:
            QMessageBox.warning(self.host, "Save the text", f"Could not save the text to {path}:\n{exc}")
            return False
        if self.journal is not None:
            self.journal.mark_saved(self.controller.text)
        self.notices.show_message(f"Saved to {path}", 10000)
        self.notices.set_notice("saved", f"Saved to {path}")  # stays until the next save: where the file went
        return True

    # -- unsaved text from an earlier run ------------------------------------------------------
    def offer_restore(self) -> None:
        """Text written in an earlier run and never saved (a crash, a power cut, a closed window): offered back
        in a bar of large buttons until the user restores or discards it."""
        entry = self.journal.pending if self.journal is not None else None
        if entry is None:
            return
        bar = QToolBar("Unsaved text")
        bar.setObjectName("restore-toolbar")
        bar.setStyleSheet("QToolButton { font-size: 14pt; padding: 8px 16px; } QLabel { font-size: 12pt; }")
        words = len(entry.text.split())
        repaired = f"; {entry.repaired}" if entry.repaired else ""  # what the journal had to change to use it
        bar.addWidget(QLabel(f" Unsaved text from {entry.updated} ({words} words{repaired}): "))
        bar.addAction("Restore it", lambda: self.resolve_restore(True)).setToolTip(wrap_tip(entry.text[-200:]))
        bar.addAction("Discard it", lambda: self.resolve_restore(False))
        self.host.addToolBarBreak()
        self.host.addToolBar(bar)
        self.restore_bar = bar

    def resolve_restore(self, restore: bool) -> None:
        journal = self.journal
        entry = journal.pending if journal is not None else None
        if journal is not None and entry is not None:
            if restore:
                c = self.controller
                c.history = _above(entry.text, c.history)
                self.panel.show_text(c.text)
                journal.note(c.text)
                journal.flush()
            journal.resolve()
        if self.restore_bar is not None:
            self.host.removeToolBar(self.restore_bar)
            self.restore_bar.deleteLater()
            self.restore_bar = None
        self.offer_restore()  # an older one, if several runs ended unsaved
