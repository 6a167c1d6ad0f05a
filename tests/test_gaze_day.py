"""A gaze user's whole session with gaze samples alone (issue 35): gaze over UDP drives the real window, with no
pointer event and no key. Writing starts by a dwell on the crosshair; the control box deletes a word, speaks,
writes a quick phrase, and (in its More box) restores the text an earlier run lost in a crash, saves, and undoes."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint
from PySide6.QtGui import QGuiApplication

from dasher_rnn.journal import Journal
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.zoom.boxes import Frame
from dasher_rnn.zoom.confirmations import CONFIRM_CENTRE
from dasher_rnn.zoom.control import Action
from dasher_rnn.zoom.gaze_user import GazeUser, GazeUserConfig
from dasher_rnn.zoom.geometry import ORIGIN_X, ORIGIN_Y, screen_to_y
from dasher_rnn.zoom.simulate import target_pointer, wait_for_answers
from tests.conftest import make_sentences, writer_source
from tests.test_ui import ALPHABET, DT, open_window

LOST = "A long message the last run never saved"


class RecordingSpeaker:
    """Stands in for the system's voice: what was said."""

    available = True
    reason = ""

    def __init__(self) -> None:
        self.said: list[str] = []

    def speak(self, text: str) -> bool:
        self.said.append(text)
        return True

    def set_language(self, language: str) -> bool:
        return True

    def stop(self) -> None:
        pass

    running = False


class Gaze:
    """Sends the window's gaze source one sample a frame, where a gaze at Dasher coordinates (x, y) would be."""

    def __init__(self, window, qtbot) -> None:
        self.window, self.qtbot = window, qtbot
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.frames: list[Frame] = []
        self.t = 1000.0
        window.writing.framed.connect(self.frames.append)
        # a sample is fresh on the simulated clock, not this machine's: under load, the wall time between a sample
        # and the frame that reads it passed the source's staleness limit and the gaze seemed lost ("did not reach")
        window.input.gaze.clock = lambda: self.t

    def look(self, x: float, y: float) -> None:
        view, source = self.window.view, self.window.input.gaze
        px, py = view.viewport().to_screen(x, y)
        at = view.mapToGlobal(QPoint(round(px), round(py)))
        screen = (view.screen() or QGuiApplication.primaryScreen()).geometry()
        self.t += DT  # the sample's own time: the smoothing follows the simulated clock, not this machine's load
        sample = {"x": (at.x() - screen.x()) / screen.width(), "y": (at.y() - screen.y()) / screen.height(),
                  "t": self.t}
        received = source.received
        self.sock.sendto(json.dumps(sample).encode(), ("127.0.0.1", source.port))
        self.qtbot.waitUntil(lambda: source.received > received, timeout=5000)
        self.window.writing.tick(DT)

    def dwell_to_start(self) -> None:
        for _ in range(int(3 / DT)):
            if self.window.controller.running:
                return
            self.look(ORIGIN_X, ORIGIN_Y)
        raise AssertionError("resting on the crosshair did not start writing")

    def write(self, text: str, frames: int = 4000) -> None:
        zoom = self.window.controller.zoom
        if not self.window.controller.running:  # stopped after a confirmation: away, then a dwell on the crosshair
            self.look(ORIGIN_X - 1500.0, ORIGIN_Y)
            self.dwell_to_start()
        person = GazeUser(self.window.controller, GazeUserConfig(grade="perfect"))  # pursues what it wants
        for _ in range(frames):
            if zoom.output == text:
                return
            wait_for_answers(zoom)
            person.look(zoom.context + text, None, self.window.controller.clock)
            self.look(person.eye[0], screen_to_y(person.eye[1]))
        raise AssertionError(f"did not write {text!r}: {zoom.output!r}")

    def act(self, action: Action, phrase: str | None = None, frames: int = 4000) -> None:
        """Steer into ``action``'s box in the control box after the text as it is."""
        zoom = self.window.controller.zoom
        if not self.window.controller.running:  # stopped after a confirmation: away, then a dwell on the crosshair
            self.look(ORIGIN_X - 1500.0, ORIGIN_Y)
            self.dwell_to_start()
        text = zoom.text
        seen = len(self.frames)
        for _ in range(frames):
            wait_for_answers(zoom)
            if self.window.controller.pending is not None:  # it asks first: into the green circle, from outside it
                self.look(ORIGIN_X - 1500.0, ORIGIN_Y + 1200.0)
                while self.window.controller.pending is not None:
                    self.look(*CONFIRM_CENTRE)
            elif self.window.controller.held:  # it aims as a pointer does and seems to rest: a glance aside
                x, y = target_pointer(zoom, text, action, phrase)
                self.look(x + 700.0, y + (700.0 if y < ORIGIN_Y else -700.0))
            else:
                self.look(*target_pointer(zoom, text, action, phrase))
            acted = [f.action for f in self.frames[seen:] if f.action is not None]
            if acted:
                assert acted == [action], f"{acted} on the way to {action}"
                return
        raise AssertionError(f"did not reach {action}")


@pytest.fixture
def day(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("DASHER_RNN_CONFIG", str(tmp_path / "settings.json"))
    monkeypatch.setenv("DASHER_RNN_PROFILES", str(tmp_path / "profiles"))
    monkeypatch.setenv("DASHER_RNN_DOCUMENTS", str(tmp_path / "Documents"))
    crashed = Journal(tmp_path / "journal.json")  # an earlier run wrote this, then crashed before saving it
    crashed.note(LOST)
    crashed.flush()
    model = PPMModel(ALPHABET)
    model.train_text("\n".join(make_sentences(300)) + "\nThank you\n")
    window = open_window(qtbot, source=writer_source("ppm", trained_ppm=model, profile="me"),
                         journal=Journal(tmp_path / "journal.json"), input="gaze-udp", gaze_port=0,
                         preset="eye-tracker", control_mode=True, profile="me", speed_bps=1.0,
                         rest_stop_seconds=0.0)  # the simulated aim rests while the view brings a box
    window.speech.speaker = speaker = RecordingSpeaker()
    gaze = Gaze(window, qtbot)
    yield window, gaze, speaker, tmp_path
    gaze.sock.close()


def test_a_whole_session_by_gaze_alone(day):
    window, gaze, speaker, tmp_path = day
    assert window.input.gaze is not None and window.messages.restore_bar is not None  # the crash's text is offered
    gaze.dwell_to_start()
    gaze.write("I see the")
    gaze.act(Action.DELETE_WORD)
    assert window.controller.zoom.output == "I see "
    gaze.act(Action.PHRASE, "Thank you")
    assert window.controller.zoom.output == "I see Thank you"
    assert window.phrases.phrases.ordered()[0].text == "Thank you"  # its use counted
    gaze.act(Action.SPEAK)
    assert speaker.said[-1] == "I see Thank you"
    gaze.act(Action.RESTORE)
    assert window.messages.restore_bar is None and LOST in window.controller.text
    gaze.act(Action.SAVE)
    (saved,) = sorted(Path(tmp_path / "Documents").rglob("*.txt"))
    assert LOST in saved.read_text(encoding="utf-8") and "I see Thank you" in saved.read_text(encoding="utf-8")
    speed = window.controller.speed_bps
    gaze.act(Action.SLOWER)
    assert window.controller.speed_bps == pytest.approx(speed - 0.2)
    # Undo writing by gaze after this (write on, then More > Undo writing) is not reached here yet: after the
    # confirmed Slower the test's pointer-style aim does not get the writing going again under the gaze's rules
