"""The profile's record of progress: how each message was written, kept and shown as a picture. Nothing here
stops the window from closing or the profile from being saved: a record that cannot be kept is a notice."""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from dasher_rnn.adapt.progress import MessageRecord, ProgressLog
from dasher_rnn.adapt.progress import now as progress_now
from dasher_rnn.ui.parts.status import Notices
from dasher_rnn.ui.stats_view import StatsDialog
from dasher_rnn.ui.widgets import make_action
from dasher_rnn.zoom.controller import WritingController
from dasher_rnn.zoom.figures import MessageStats

log = logging.getLogger(__name__)


class ProgressPart:
    def __init__(self, controller: WritingController, notices: Notices, host: QWidget) -> None:
        """A record is kept when the controller's Writer has a profile; ``host`` is the window the picture
        opens over."""
        self.controller, self.notices, self.host = controller, notices, host
        self.log: ProgressLog | None = None
        self.follow_writer()
        self.progress_action = make_action(host, "Progress", lambda: self.open_progress(), None,
                                           "Characters per minute and bits per character of your messages over time")

    def follow_writer(self) -> None:
        """Keep the record of the controller's Writer's profile (again after the Writer changed)."""
        writer = self.controller.writer
        self.log = ProgressLog.for_profile(writer.store, writer.profile) \
            if writer is not None and writer.profile and getattr(writer, "store", None) is not None else None

    def record(self, stats: MessageStats | None = None) -> None:
        """Keep how a message was written: ``stats`` of one just finished, or (None) the current one, which is
        about to be cleared or closed. The tutorial's are never kept: it has its own controller."""
        stats = stats if stats is not None else self.controller.message_stats()
        if self.log is None or stats.characters == 0 or stats.seconds <= 0:
            return
        record = MessageRecord(progress_now(), stats.characters, round(stats.seconds, 3), round(stats.bits, 3),
                               stats.corrections, speed_bps=round(self.controller.speed_bps, 2))
        try:
            self.log.record(record)
        except OSError as exc:
            self.notices.set_notice("progress", f"Could not keep this message's figures ({exc.strerror or exc})")
            return
        except Exception as exc:  # anything at all: this runs as the window closes, and the profile is saved after it
            log.exception("keeping a message's figures")
            self.notices.set_notice("progress", f"Could not keep this message's figures ({type(exc).__name__}: {exc})")
            return
        self.notices.set_notice("progress", self.log.notice or "")

    def open_progress(self) -> StatsDialog:
        """View > Progress: the picture, and what is wrong with the record when anything is."""
        records = self.log.read() if self.log is not None else []
        notice = self.log.notice if self.log is not None else None
        self.notices.set_notice("progress", notice or "")
        writer = self.controller.writer
        dialog = StatsDialog(records, writer.profile if writer is not None else None, self.host, notice=notice)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.setGeometry(self.host.geometry())
        dialog.show()
        return dialog
