"""The files the app keeps besides a profile's model parts (a profile's ``progress.jsonl``, ``settings.json``, the
journal) and ``adapt``'s input, when they are special, oversized or hold numbers out of range: nothing hangs,
nothing fills memory, nothing raises, nothing is wiped, and the user is told what was wrong."""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtWidgets import QLabel, QMainWindow

from dasher_rnn.adapt.progress import PROGRESS_FILE, ProgressLog
from dasher_rnn.cli import main
from dasher_rnn.journal import Journal
from dasher_rnn.settings import Preferences, SettingsStore
from tests.test_progress import profile_source, record
from tests.test_ui import DT, open_window, steer

HUGE = "1" + "0" * 400  # an integer no float can hold


@contextlib.contextmanager
def fifo_watchdog(path: Path) -> Iterator[None]:
    """Should a reader block on the FIFO at ``path`` (the fault these tests are about), open its other end after
    a generous while so the reader sees an empty file: the test then fails on what it read instead of hanging."""
    done = threading.Event()

    def unblock() -> None:
        if not done.wait(60):
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))

    thread = threading.Thread(target=unblock, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def special(kind: str, path: Path) -> None:
    """Put a FIFO or a link to /dev/zero (a file without end) where ``path`` is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


def guarded(kind: str, path: Path, read: Callable[[], object]) -> object:
    with fifo_watchdog(path) if kind == "fifo" else contextlib.nullcontext():
        return read()


# -- a profile's record of progress ----------------------------------------------------------------------------
def test_a_number_out_of_range_is_skipped_and_counted_never_raised(tmp_path):
    log = ProgressLog(tmp_path / "me")
    for i in range(3):
        log.record(record(i))
    lines = [{"time": "t", "characters": 5, "seconds": HUGE, "bits": 1}, {"characters": 5, "seconds": 1, "bits": HUGE},
             {"characters": int(HUGE), "seconds": 1, "bits": 1}, {"characters": 5, "seconds": 1e308, "bits": 1},
             {"characters": 5, "seconds": 1, "bits": 1, "messages": -3}, {"characters": 5, "seconds": 1, "bits": 1,
                                                                           "time": "x" * 10_000}]
    with open(log.path, "a") as f:
        for line in lines:
            f.write(json.dumps(line).replace(f'"{HUGE}"', HUGE) + "\n")
        f.write('{"characters": 5, "seconds": 1, "bits": 1, "speed_bps": ' + HUGE + "}\n")  # a bad speed is left out
    records = log.read()
    assert [r.characters for r in records] == [20, 20, 20, 5] and records[-1].speed_bps is None
    assert log.skipped == len(lines) and f"{len(lines)} lines were not a record" in log.notice


def test_a_bad_line_in_a_large_record_never_stops_the_profile_save(qtbot, settings_path, tmp_path):  # noqa: F811
    """One integer over 308 digits in a record past its bound made every close raise before the profile was saved."""
    profiles = tmp_path / "profiles"
    folder = profiles / "me"
    folder.mkdir(parents=True)
    old = [record(i) for i in range(60)]
    (folder / PROGRESS_FILE).write_bytes(b"".join(r.to_line() for r in old)
                                         + f'{{"time": "t", "characters": 5, "seconds": {HUGE}, "bits": 1}}\n'.encode())
    window = open_window(qtbot, profile_source(profiles))
    window.progress.log.max_bytes = 4000  # the record is past its bound: the next message compacts it
    window.writing.toggle_running()
    steer(window, "We need")
    window.close()  # records the message, compacts, then saves the profile
    assert (folder / "profile.json").is_file() and json.loads((folder / "profile.json").read_text())["files"]
    log = ProgressLog(folder)
    records = log.read()
    assert sum(r.messages for r in records) == 61 and records[-1].characters == len("We need")  # nothing lost
    assert sum(r.characters for r in records) == 60 * 20 + 7 and log.skipped == 0
    kept = list(folder.glob(PROGRESS_FILE + ".broken-*"))  # the file as it was, bad line and all
    assert len(kept) == 1 and HUGE in kept[0].read_text()
    assert "1 line was not a record" in window.status.notice


def test_a_large_record_is_compacted_in_bounded_memory_keeping_every_message(tmp_path, monkeypatch):
    from dasher_rnn.adapt import progress

    monkeypatch.setattr(progress, "MAX_RECORDS", 256)  # merged while reading, as a file of millions would be
    log = ProgressLog(tmp_path / "me", max_bytes=20_000)
    log.folder.mkdir()
    old = [record(i, chars=i % 50 + 1) for i in range(3000)]
    log.path.write_bytes(b"".join(r.to_line() for r in old))  # far past max_bytes and MAX_RECORDS
    log.record(record(3000, chars=77))
    records = log.read()
    assert log.path.stat().st_size <= 20_000 and len(records) <= 256
    assert sum(r.messages for r in records) == 3001 and records[-1].characters == 77
    assert sum(r.characters for r in records) == sum(r.characters for r in old) + 77
    assert records[0].time == old[0].time


def test_a_record_past_the_read_bound_is_kept_never_wiped(tmp_path, monkeypatch):
    """Over the bound the file was read as empty, then written back empty: every record lost, the new one too."""
    from dasher_rnn.adapt import progress

    monkeypatch.setattr(progress, "MAX_READ_BYTES", 60_000)
    log = ProgressLog(tmp_path / "me", max_bytes=20_000)
    log.folder.mkdir()
    old = b"".join(record(i).to_line() for i in range(1000))
    log.path.write_bytes(old)
    log.record(record(1000, chars=77))
    kept = list(log.folder.glob(PROGRESS_FILE + ".broken-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == old  # every record, as it was
    assert "more than the 60,000" in log.notice and "kept as" in log.notice
    assert [r.characters for r in log.read()] == [77]
    kept[0].rename(log.path)
    assert log.read() == [] and "more than the 60,000" in log.notice  # said, not silently empty


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_special_progress_file_is_refused_said_and_set_aside_at_the_next_record(tmp_path, kind):
    log = ProgressLog(tmp_path / "me")
    special(kind, log.path)
    assert guarded(kind, log.path, log.read) == [] and "not a file this program reads" in log.notice
    log.record(record(0))  # the record starts a new file; the special one is kept aside
    assert "not a file this program reads" in log.notice and "kept as" in log.notice
    assert log.read() == [record(0)] and log.path.is_file() and not log.path.is_symlink()
    assert len(list(log.folder.glob(PROGRESS_FILE + ".broken-*"))) == 1


def test_stats_and_the_progress_view_say_what_is_wrong(qtbot, tmp_path, capsys):
    from dasher_rnn.ui.parts.progress import ProgressPart
    from dasher_rnn.ui.parts.status import StatusPart
    from dasher_rnn.zoom.controller import WritingController

    profiles = tmp_path / "profiles"
    log = ProgressLog(profiles / "me")
    for i in range(3):
        log.record(record(i))
    with open(log.path, "a") as f:
        f.write(f'{{"characters": 5, "seconds": {HUGE}, "bits": 1}}\n')
    out = tmp_path / "p.png"
    assert main(["stats", "--profile", "me", "--profiles-dir", str(profiles), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "1 line was not a record" in err and out.is_file()

    log.path.unlink()
    os.mkfifo(log.path)
    with fifo_watchdog(log.path):
        assert main(["stats", "--profile", "me", "--profiles-dir", str(profiles), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "is a FIFO" in err and "No picture written" in err

    host = QMainWindow()
    qtbot.addWidget(host)
    controller = WritingController(profile_source(profiles))
    status = StatusPart(host.statusBar())
    part = ProgressPart(controller, status, host)
    with fifo_watchdog(log.path):
        dialog = part.open_progress()  # View > Progress
    qtbot.addWidget(dialog)
    assert "is a FIFO" in dialog.notice.text() and dialog.notice.isVisibleTo(dialog) and not dialog.records
    controller.close()


def test_an_imported_record_is_copied_checked(tmp_path):
    """For ``profile import`` (helper of adapt/profiles.py): only lines that are records go, a FIFO gives nothing."""
    from dasher_rnn.adapt.progress import copy_records

    source = ProgressLog(tmp_path / "from")
    for i in range(2):
        source.record(record(i))
    with open(source.path, "a") as f:
        f.write(f'{{"characters": 5, "seconds": {HUGE}, "bits": 1}}\n')
    (tmp_path / "to").mkdir()
    assert "1 line was not a record" in copy_records(source.folder, tmp_path / "to")
    assert ProgressLog(tmp_path / "to").read() == [record(0), record(1)]
    source.path.unlink()
    os.mkfifo(source.path)
    (tmp_path / "again").mkdir()
    with fifo_watchdog(source.path):
        assert "is a FIFO" in copy_records(source.folder, tmp_path / "again")
    assert not (tmp_path / "again" / PROGRESS_FILE).exists()


# -- settings.json ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_special_settings_file_is_ignored_with_a_notice_and_replaced_by_the_next_save(tmp_path, kind):
    store = SettingsStore(tmp_path / "settings.json")
    special(kind, store.path)
    assert guarded(kind, store.path, store.load) == Preferences()
    assert "not a file this program reads" in store.notice and "ignored" in store.notice
    store.save(Preferences(font_size=20))
    assert store.load().font_size == 20 and store.notice is None and not store.path.is_symlink()


def test_an_oversized_settings_file_is_set_aside(tmp_path):
    store = SettingsStore(tmp_path / "settings.json")
    store.path.write_bytes(b'{"font_size": 20, "x": "' + b"y" * (2 << 20) + b'"}')
    assert store.load() == Preferences() and "bytes, more than" in store.notice
    assert not store.path.exists() and len(list(tmp_path.glob("settings.json.broken-*"))) == 1


# -- the journal -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_special_journal_is_ignored_with_a_notice_and_replaced_by_the_next_write(tmp_path, kind):
    path = tmp_path / "journal.json"
    special(kind, path)
    journal = guarded(kind, path, lambda: Journal(path))
    assert journal.pending is None and "not a file this program reads" in journal.notice
    journal.note("Hello")
    journal.flush()
    assert json.loads(path.read_text())["text"] == "Hello" and not path.is_symlink() and journal.notice is None


def test_an_oversized_journal_is_set_aside(tmp_path, monkeypatch):
    from dasher_rnn import journal as journal_module

    monkeypatch.setattr(journal_module, "MAX_BYTES", 1000)
    path = tmp_path / "journal.json"
    path.write_text(json.dumps({"format": 1, "text": "x" * 2000, "saved": False}))
    assert Journal(path).pending is None
    assert len(list(tmp_path.glob("journal.json.broken-*"))) == 1


def test_a_lone_surrogate_in_restored_text_is_replaced_and_said(qtbot, tmp_path, settings_path):  # noqa: F811
    """JSON can hold "\\ud800", which no file can: restored, it made every frame and the close raise."""
    path = tmp_path / "journal.json"
    path.write_text(json.dumps({"format": 1, "text": "Call me \ud800 soon", "saved": False, "updated": "today"}))
    window = open_window(qtbot, journal=Journal(path))
    bar = window.messages.restore_bar
    assert bar is not None and any("lone surrogate" in label.text() for label in bar.findChildren(QLabel))
    window.messages.resolve_restore(True)
    window.writing.tick(DT)
    window.close()
    assert json.loads(path.read_text())["text"].startswith("Call me \ufffd soon")


# -- adapt's input ---------------------------------------------------------------------------------------------
def test_adapt_reads_a_bounded_amount_says_what_it_left_out_and_refuses_a_fifo(tiny_model_dir, tmp_path, capsys):
    """100 MB of writing once meant nothing printed for minutes and 1.25 GB of memory."""
    from dasher_rnn.adapt.user_corpus import read_user_corpus
    from tests.conftest import make_sentences

    folder = tmp_path / "writing"
    folder.mkdir()
    for i in range(5):
        (folder / f"{i}.txt").write_text("\n".join(make_sentences(40, seed=i)))
    whole = sum(len((folder / f"{i}.txt").read_text().strip()) for i in range(5))
    docs, report = read_user_corpus([folder], max_chars=whole // 2)
    assert report.characters == sum(len(d.text) for d in docs) <= whole // 2 and report.characters > whole // 3
    assert str(folder / "4.txt") in report.left_out and report.to_json()["left_out"] == len(report.left_out)
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    with fifo_watchdog(fifo):
        _, report = read_user_corpus([fifo, folder])
    assert "is a FIFO" in report.unreadable[str(fifo)]

    common = ["adapt", str(folder), "--profile", "me", "--model-dir", str(tiny_model_dir), "--profiles-dir",
              str(tmp_path / "p"), "--dry-run", "--no-progress"]
    assert main([*common, "--max-chars", str(whole // 2)]) == 0
    err = capsys.readouterr().err
    assert f"longer than --max-chars ({whole // 2:,} characters)" in err and "left out (" in err
    assert "characters of writing" in err
    with fifo_watchdog(fifo):
        assert main([*common[:1], str(fifo), *common[2:]]) == 2
    assert "is a FIFO" in capsys.readouterr().err
