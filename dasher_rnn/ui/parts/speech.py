"""Reading the text aloud: the Speak action, and what the control box and speak-on-stop say."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from dasher_rnn.ui.parts.status import Notices
from dasher_rnn.ui.speech import Speaker
from dasher_rnn.ui.widgets import make_action, wrap_tip
from dasher_rnn.zoom.control import last_sentence
from dasher_rnn.zoom.controller import WritingController


class SpeechPart:
    def __init__(self, controller: WritingController, notices: Notices, host: QWidget,
                 speaker: Speaker | None = None) -> None:
        """``host`` is the window the Speak action belongs to; ``speaker`` defaults to the system's."""
        self.controller, self.notices = controller, notices
        self.speaker = speaker if speaker is not None else Speaker()
        self.set_language(controller.zoom.alphabet.language)
        self.speak_action = make_action(host, "Speak", self.speak, "Ctrl+R", "Read the current message aloud")
        if not self.speaker.available:
            self.speak_action.setEnabled(False)
            self.speak_action.setToolTip(wrap_tip(self.speaker.reason))
            self.speak_action.setStatusTip(self.speaker.reason)

    def set_language(self, language: str) -> None:
        """Speak ``language`` (the alphabet's); a notice says when the system has no voice for it."""
        self.speaker.set_language(language)
        self.notices.set_notice("speech", f"Speak: {self.speaker.language_note}." if self.speaker.language_note else "")

    @property
    def available(self) -> bool:
        return self.speaker.available

    def _last_message(self) -> str:
        return next((line for line in reversed(self.controller.history.splitlines()) if line.strip()), "")

    def speak(self) -> None:
        """Say the current message, or the last finished one right after New message."""
        self.speaker.speak(self.controller.zoom.output.strip() or self._last_message())

    def speak_sentence(self) -> None:
        """Say the current message's last sentence (or the last finished message's)."""
        self.speaker.speak(last_sentence(self.controller.zoom.output) or last_sentence(self._last_message()))

    def say_why_not(self, what: str) -> bool:
        """True when speech is available; otherwise a notice that ``what`` cannot speak, and False."""
        if self.speaker.available:
            return True
        self.notices.set_notice("speech", f"{what}: {self.speaker.reason}.")
        return False

    def stop(self) -> None:
        self.speaker.stop()
