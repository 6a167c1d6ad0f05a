"""A picture of progress: per-message figures recorded with the profile, surviving a restart, drawn in the
Progress view and by `dasher-rnn stats`."""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import json
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtGui import QImage

from dasher_rnn.adapt.progress import PROGRESS_FILE, MessageRecord, ProgressLog
from dasher_rnn.cli import main
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.ui.stats_view import StatsDialog, render_progress, summary
from dasher_rnn.zoom.controller import WritingController
from tests.conftest import make_sentences, writer_source
from tests.test_ui import ALPHABET, DT, open_window, ppm_source, steer


def record(i: int, chars: int = 20, seconds: float = 30.0, bits: float = 50.0) -> MessageRecord:
    return MessageRecord(f"2026-11-{1 + i // 10:02d}T10:00:00+0000", chars, seconds, bits, i % 3, speed_bps=1.5)


def profile_source(folder, name: str = "me"):
    model = PPMModel(ALPHABET)
    model.train_text("\n".join(make_sentences(300)) + "\n")
    return writer_source("ppm", trained_ppm=model, profile=name, profiles_dir=folder)


def test_the_controller_measures_each_message_and_an_undone_run_is_taken_off(qapp):
    from dasher_rnn.zoom.simulate import target_pointer

    controller = WritingController(ppm_source())
    controller.start()
    zoom = controller.zoom
    for _ in range(3000):
        controller.frame(target_pointer(zoom, "I want"), DT)
        if zoom.output == "I want":
            break
    first = controller.message_stats()
    assert first.characters == 6 and first.seconds > 0 and first.bits > 0
    controller.stop()
    controller.start()
    for _ in range(3000):
        controller.frame(target_pointer(zoom, "I want some"), DT)
        if zoom.output == "I want some":
            break
    assert controller.message_stats().bits > first.bits
    assert controller.undo_run() and zoom.output == "I want"
    undone = controller.message_stats()
    assert undone.bits == pytest.approx(first.bits) and undone.corrections >= first.corrections + 5
    assert undone.seconds > first.seconds  # the time spent is still the user's
    controller.new_message()
    assert controller.message_stats().characters == 0 and controller.message_stats().seconds == 0
    controller.close()


def test_the_log_appends_skips_torn_lines_and_stays_bounded_without_losing_the_start(tmp_path):
    log = ProgressLog(tmp_path / "me", max_bytes=4000)
    assert log.read() == []
    for i in range(100):
        log.record(record(i, chars=10 + i))
    with open(log.path, "ab") as f:
        f.write(b'{"time": "2026-12-01", "characters": 5, "seco')  # a crash in the middle of a line
    records = log.read()
    assert log.path.stat().st_size <= 4000 + 200 and len(records) < 100
    assert sum(r.messages for r in records) == 100  # merged, not dropped
    assert sum(r.characters for r in records) == sum(10 + i for i in range(100))
    assert records[0].time.startswith("2026-11-01") and records[-1].characters == 109
    assert oct(log.path.stat().st_mode & 0o777) == oct(0o600)
    log.record(record(100))
    assert log.read()[-1].characters == 20  # the torn line is skipped, the file goes on


def test_figures_are_recorded_per_message_and_survive_a_restart(qtbot, settings_path, tmp_path):  # noqa: F811
    profiles = tmp_path / "profiles"
    window = open_window(qtbot, profile_source(profiles))
    window.writing.toggle_running()
    steer(window, "I want some water.")
    window.messages.new_message()  # the toolbar's New message
    if not window.controller.running:
        window.writing.toggle_running()
    steer(window, "We need")
    window.writing.toggle_running()
    window.messages.clear_text()
    window.close()  # nothing written since: nothing more recorded
    lines = (profiles / "me" / PROGRESS_FILE).read_text().splitlines()
    assert [json.loads(line)["characters"] for line in lines] == [len("I want some water."), len("We need")]

    window = open_window(qtbot, profile_source(profiles))  # the next start, the same profile
    records = window.progress.log.read()
    assert [r.characters for r in records] == [18, 7]
    assert all(r.seconds > 0 and r.bits > 0 and r.speed_bps == 4.0 for r in records)
    dialog = window.progress.open_progress()  # View > Progress
    qtbot.addWidget(dialog)
    assert dialog.isVisible() and len(dialog.records) == 2
    assert window.progress.progress_action in next(a.menu() for a in window.menuBar().actions() if a.text() == "&View").actions()
    dialog.folder = tmp_path / "documents"
    saved = dialog.save_picture()  # a large button, no file dialog
    assert saved is not None and QImage(str(saved)).width() == 1200 and str(saved) in dialog.message.text()


def test_without_a_profile_nothing_is_recorded(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot)
    assert window.progress.log is None
    window.writing.toggle_running()
    steer(window, "We need")
    window.messages.new_message()
    dialog = window.progress.open_progress()
    qtbot.addWidget(dialog)
    assert not dialog.save_button.isEnabled()


def test_the_picture_shows_the_figures_over_time(qapp):
    records = [record(i, chars=20, seconds=60.0 - i, bits=60.0 - i) for i in range(40)]
    image = render_progress(records, 900, 600, "Progress of profile 'me'")
    assert (image.width(), image.height()) == (900, 600)
    assert len({image.pixel(x, y) for x in range(0, 900, 7) for y in range(0, 600, 7)}) > 10  # drawn, not blank
    text = summary(records)
    assert "40 messages" in text and "First 10: 21.6 characters a minute" in text  # 200 characters in 555 s
    assert "latest 10: 47.1 characters a minute, 1.27 bits a character" in text  # 200 in 255 s, 255 bits
    empty = render_progress([], 400, 300)
    assert (empty.width(), empty.height()) == (400, 300)


def test_stats_command_writes_a_png_and_says_when_there_is_nothing(tmp_path, capsys):
    profiles = tmp_path / "profiles"
    out = tmp_path / "progress.png"
    assert main(["stats", "--profile", "nobody", "--profiles-dir", str(profiles), "--out", str(out)]) == 2
    assert "no profile named 'nobody'" in capsys.readouterr().err

    (profiles / "me").mkdir(parents=True)
    assert main(["stats", "--profile", "me", "--profiles-dir", str(profiles), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "no recorded messages yet" in err and "No picture written" in err and not out.exists()

    log = ProgressLog(profiles / "me")
    for i in range(12):
        log.record(record(i))
    assert main(["stats", "--profile", "me", "--profiles-dir", str(profiles), "--out", str(out),
                 "--size", "640x480"]) == 0
    printed = capsys.readouterr().out
    assert "12 messages" in printed and f"wrote {out} (640x480)" in printed
    image = QImage(str(out))
    assert (image.width(), image.height()) == (640, 480)
    with pytest.raises(SystemExit):
        main(["stats", "--profile", "me", "--size", "big"])


def test_the_stats_dialog_opens_offscreen(qtbot, tmp_path):
    dialog = StatsDialog([record(i) for i in range(5)], "me", folder=tmp_path)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    assert dialog.picture.pixmap() is not None and not dialog.picture.pixmap().isNull()


def test_the_record_goes_with_an_exported_and_imported_profile(tmp_path):
    from dasher_rnn.adapt.profiles import ProfileStore

    store = ProfileStore(tmp_path / "profiles")
    store.save("home", {}, {"model": "ppm"})
    ProgressLog.for_profile(store, "home").record(record(0))
    exported = store.export("home", tmp_path / "usb")
    other = ProfileStore(tmp_path / "other-machine")
    other.import_(exported, "moved")
    assert ProgressLog.for_profile(other, "moved").read() == [record(0)]


def test_new_message_from_the_control_box_is_recorded_too(qtbot, settings_path, tmp_path):  # noqa: F811
    from dasher_rnn.settings import SettingsStore
    from dasher_rnn.ui.window import MainWindow
    from dasher_rnn.zoom.control import Action
    from tests.test_control_ui import steer as steer_to

    store = SettingsStore()
    prefs = store.load().updated(speed_bps=4.0, auto_speed=False, control_mode=True)
    window = MainWindow(WritingController(profile_source(tmp_path / "profiles"), prefs.controller_config()), store,
                        prefs, start_timer=False)
    qtbot.addWidget(window)
    window.resize(760, 700)
    window.show()
    qtbot.waitExposed(window)
    window.writing.toggle_running()
    steer_to(window, "I see")
    steer_to(window, "I see", Action.NEW_MESSAGE)  # no click, no toolbar: the control box finishes it
    records = window.progress.log.read()
    assert [r.characters for r in records] == [5] and records[0].seconds > 0 and records[0].bits > 0
