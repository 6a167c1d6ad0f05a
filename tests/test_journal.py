"""Nothing written is lost: the journal keeps the text on disk as it grows, survives kills, and the next start
offers unsaved text back."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dasher_rnn import journal as journal_module
from dasher_rnn.journal import Journal


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_text_is_written_at_most_an_interval_late_and_saved_text_is_not_offered(tmp_path):
    clock = Clock()
    path = tmp_path / "journal.json"
    j = Journal(path, interval=1.0, clock=clock)
    assert j.pending is None
    j.note("Hel")  # the first change is written at once
    assert json.loads(path.read_text())["text"] == "Hel"
    clock.now = 0.5
    j.note("Hello")
    assert json.loads(path.read_text())["text"] == "Hel"  # batched: not yet a second since the last write
    clock.now = 1.0
    j.note("Hello")
    assert json.loads(path.read_text()) | {"updated": ""} == {"format": 1, "text": "Hello", "saved": False, "updated": ""}
    assert Journal(path).pending.text == "Hello"  # a crash now: the next start offers it back
    j2 = Journal(path, clock=clock)
    j2.note("Hello there")
    j2.mark_saved("Hello there")
    assert json.loads(path.read_text())["saved"] is True
    assert Journal(path).pending.text == "Hello"  # the crashed run's text, not the saved one


def test_writing_before_answering_never_overwrites_what_is_offered(tmp_path):
    path = tmp_path / "journal.json"
    first = Journal(path)
    first.note("A message I spent ten minutes on")
    first.flush()
    second = Journal(path)  # next start: the unsaved text is kept apart
    second.note("")
    second.note("Something new")
    second.flush()
    assert second.pending.text == "A message I spent ten minutes on"
    third = Journal(path)  # not answered, and a crash again: both are still there
    assert third.pending.text == "Something new"
    third.resolve()
    assert third.pending.text == "A message I spent ten minutes on"
    third.resolve()
    assert third.pending is None and not list(tmp_path.glob("recovered-*"))


def test_a_corrupt_journal_is_set_aside_with_a_notice(tmp_path):
    path = tmp_path / "journal.json"
    path.write_text("[" * 50_000)
    j = Journal(path)
    assert j.pending is None and "unreadable" in j.notice
    assert list(tmp_path.glob("journal.json.broken-*"))


def test_a_full_disk_keeps_the_text_in_memory_and_says_so(tmp_path, monkeypatch):
    path = tmp_path / "journal.json"
    j = Journal(path)
    j.note("first")
    real = journal_module.atomic_write

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(journal_module, "atomic_write", full)
    j.note("first words, then the disk filled")
    j.flush()
    assert "No space left on device" in j.notice and "save it to a file" in j.notice
    assert json.loads(path.read_text())["text"] == "first"  # the last good version is intact
    monkeypatch.setattr(journal_module, "atomic_write", real)
    j.flush()  # space again: the text held in memory is written
    assert j.notice is None and json.loads(path.read_text())["text"] == "first words, then the disk filled"


WRITER = """
import sys
from dasher_rnn.journal import Journal
now = [0.0]
j = Journal(sys.argv[1], interval=1.0, clock=lambda: now[0])
text = ""
for i in range(100000):
    now[0] = i * 0.01
    text += "abcdefghij klmnopqrst "[i % 22]
    print(len(text), now[0], flush=True)  # before noting: whatever the journal holds was printed
    j.note(text)
"""


def test_a_killed_writer_loses_at_most_the_last_second(tmp_path):
    """SIGKILL at random moments: the journal on disk is always whole, and holds the text of at most one
    interval (on the writer's own clock) before the last character noted."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    rng = random.Random(1)
    for attempt in range(12):
        path = tmp_path / f"journal{attempt}.json"
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, env=env, text=True)
        lines = []
        for _ in range(rng.randint(5, 400)):
            lines.append(proc.stdout.readline())
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        rest = proc.stdout.read()  # what it printed before it died; a line cut by the kill has no newline
        proc.stdout.close()
        lines += rest.split("\n")[:-1]
        noted = [(int(a), float(b)) for a, b in (line.split() for line in lines if line.strip())]
        kept = json.loads(path.read_text())["text"]  # whole JSON: never a torn write
        last_len, last_time = noted[-1]
        written_time = next(t for n, t in noted if n == len(kept))
        assert kept == ("abcdefghij klmnopqrst " * 5000)[: len(kept)]
        assert last_time - written_time <= 1.0 + 0.01


@pytest.mark.parametrize("restore", [True, False])
def test_the_window_offers_unsaved_text_back(qtbot, tmp_path, monkeypatch, restore):
    from dasher_rnn.settings import SettingsStore
    from dasher_rnn.ui.window import MainWindow
    from dasher_rnn.zoom.controller import WritingController

    from .conftest import writer_source

    monkeypatch.setenv("DASHER_RNN_CONFIG", str(tmp_path / "settings.json"))
    path = tmp_path / "journal.json"

    def window() -> MainWindow:
        store = SettingsStore()
        w = MainWindow(WritingController(writer_source("uniform")), store, store.load(), start_timer=False,
                       journal=Journal(path))
        qtbot.addWidget(w)
        return w

    first = window()
    assert first.messages.restore_bar is None
    first.controller.history = "Please call my daughter.\n"
    first.writing.tick(0.0)
    first.close()  # closed without saving: the text is offered at the next start
    second = window()
    assert second.messages.restore_bar is not None and second.panel.toPlainText() == ""
    second.messages.resolve_restore(restore)
    assert second.messages.restore_bar is None
    assert second.panel.toPlainText() == ("Please call my daughter.\n" if restore else "")
    second.close()
    third = window()
    assert (third.messages.restore_bar is not None) == restore  # restored text is unsaved again; discarded text is gone
    third.messages.save_text(tmp_path / "saved.txt") if restore else None
    third.close()
