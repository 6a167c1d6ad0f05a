"""The preferences in effect: every part remembers its changes here, and they are saved once they settle."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer

from dasher_rnn.settings import Preferences, SettingsError, SettingsStore
from dasher_rnn.ui.parts.status import Notices

SAVE_DELAY_MS = 500  # a spin box held down changes many times a second: save once it settles


class PrefsKeeper(QObject):
    def __init__(self, store: SettingsStore, prefs: Preferences, notices: Notices,
                 parent: QObject | None = None) -> None:
        """``prefs`` are what ``store`` loaded (with the command line's overrides)."""
        super().__init__(parent)
        self.store, self.prefs, self.notices = store, prefs, notices
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SAVE_DELAY_MS)
        self._timer.timeout.connect(self.save)
        if store.notice:
            notices.set_notice("settings", store.notice)

    def remember(self, **changes: object) -> None:
        """The user changed preferences: keep them, and save soon."""
        self.prefs = self.prefs.updated(**changes)
        self._timer.start()

    def save(self) -> None:
        """Save now (a failure is a notice: the preferences stay in effect)."""
        self._timer.stop()
        try:
            self.store.save(self.prefs)
        except SettingsError as exc:
            self.notices.set_notice("settings", str(exc))
