"""Whether the model learns from what is written (the Adapt box), and keeping what it learned: a timer that lets the
Writer save its profile in the background (``Writer.autosave``), so a crash loses at most the last
``AUTOSAVE_S`` of learning."""

from __future__ import annotations

from PySide6.QtCore import QObject, QSignalBlocker, QTimer, Signal
from PySide6.QtWidgets import QCheckBox

from dasher_rnn.adapt.writer import Writer
from dasher_rnn.ui.parts.prefs import PrefsKeeper
from dasher_rnn.ui.parts.status import LEARNERS, Notices
from dasher_rnn.ui.widgets import wrap_tip

AUTOSAVE_CHECK_MS = 5000  # how often the Writer is asked whether a background save is due



class LearningPart(QObject):
    changed = Signal()  # learning was switched on or off

    def __init__(self, writer: Writer | None, keeper: PrefsKeeper, notices: Notices,
                 parent: QObject | None = None) -> None:
        """``writer`` None: a model with nothing to learn (the box is greyed out)."""
        super().__init__(parent)
        self.writer, self.keeper, self.notices = writer, keeper, notices
        self.adapt_box = QCheckBox("Adapt")
        self.adapt_box.toggled.connect(self.set_adapting)
        self.autosave_timer = QTimer(self)
        self.autosave_timer.setInterval(AUTOSAVE_CHECK_MS)
        self.autosave_timer.timeout.connect(self.autosave)
        self.autosave_timer.start()

    def autosave(self) -> None:
        """Let the Writer save what it learned in the background when a save is due (after writing stopped too)."""
        if self.writer is not None:
            self.writer.autosave()

    def apply_prefs(self, writer: Writer | None = None) -> None:
        """Show whether the model learns, and why it cannot; switch learning off when the preferences say so.
        ``writer``: a new Writer to follow (the language changed)."""
        if writer is not None:
            self.writer = writer
        writer = self.writer
        can_adapt = writer is not None and writer.can_adapt
        with QSignalBlocker(self.adapt_box):
            self.adapt_box.setChecked(self.keeper.prefs.adaptation and can_adapt)
        if writer is None or not writer.can_adapt:
            why = "This model does not learn while you write" if writer is None or writer.model == "uniform" \
                else "Adaptation was off when the app started: tick to turn it on from the next start"
            self.adapt_box.setToolTip(wrap_tip(why))
            self.adapt_box.setEnabled(writer is not None and writer.model != "uniform")
        else:
            learns = [LEARNERS.get(part, part) for part in writer.status().learns]
            said = ", ".join(learns[:-1]) + (" and " if len(learns) > 1 else "") + learns[-1] if learns else "it"
            self.adapt_box.setToolTip(wrap_tip(f"Learn from what you write. What learns: {said}."))
            if not self.keeper.prefs.adaptation:
                writer.set_adapting(False)

    def set_adapting(self, on: bool) -> None:
        """Learn from now on, or stop (a Writer built without adaptation learns from the next start)."""
        with QSignalBlocker(self.adapt_box):
            self.adapt_box.setChecked(on)
        self.keeper.remember(adaptation=on)
        writer = self.writer
        if writer is not None and writer.can_adapt:
            writer.set_adapting(on)
        elif on:
            self.notices.set_notice("adaptation", "Adaptation will be on from the next start.")
        self.changed.emit()
