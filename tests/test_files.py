"""``dasher_rnn.files.read_bounded``: what may stand in a file's place (a FIFO, a device, a folder, a link to
one, a huge file) is refused at once with a reason, never waited on nor read into memory."""

import os
import sys

import pytest

from dasher_rnn.files import UnreadableFile, read_bounded


def test_a_regular_file_and_a_link_to_one_are_read(tmp_path):
    (tmp_path / "a.json").write_bytes(b"{}")
    (tmp_path / "link.json").symlink_to(tmp_path / "a.json")
    assert read_bounded(tmp_path / "a.json", 10) == b"{}"
    assert read_bounded(tmp_path / "link.json", 2) == b"{}"


def test_what_is_not_a_regular_file_or_too_big_is_refused_at_once(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(UnreadableFile, match="more than the 100"):
        read_bounded(big, 100)
    with pytest.raises(UnreadableFile, match="folder"):
        read_bounded(tmp_path, 100)
    (tmp_path / "zero").symlink_to("/dev/zero")
    with pytest.raises(UnreadableFile, match="device"):
        read_bounded(tmp_path / "zero", 100)
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "missing", 100)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_with_no_writer_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "progress.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(UnreadableFile, match="FIFO"):
        read_bounded(fifo, 100)  # a blocking open would hang here for ever


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_an_unreadable_file_is_an_os_error(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    secret = tmp_path / "secret"
    secret.write_bytes(b"x")
    secret.chmod(0)
    with pytest.raises(PermissionError):
        read_bounded(secret, 10)


# -- issue 48: one reader of JSON for every file, bounded in size and depth ---------------------------------------------
DEEP = b"[" * 1000 + b"]" * 1000


@pytest.mark.parametrize("data, depth", [(b"{}", 1), (b'["[[[", {"a": [1]}]', 3), (b'"\\\\"', 0), (DEEP, 1000),
                                         (b'"\\' * 100_000, 0), (b'[' + b'"x\\"' * 1000, 1)])
def test_json_depth_counts_brackets_outside_strings_in_linear_time(data, depth):
    from dasher_rnn.files import json_depth

    assert json_depth(data) == depth


def test_read_json_refuses_what_is_too_deep_not_json_or_not_utf8_with_a_clear_error(tmp_path):
    from dasher_rnn.files import BadFile, read_json

    for name, data, said in [("deep", DEEP, "nested 1,000 deep"), ("torn", b'{"a": ', "not JSON"),
                             ("latin", b'"\xe9"', "not UTF-8")]:
        (tmp_path / name).write_bytes(data)
        with pytest.raises(BadFile, match=said):
            read_json(tmp_path / name, 1 << 20)
    (tmp_path / "ok").write_bytes(b'\xef\xbb\xbf{"a": [1, "\xc3\xa9"]}')
    assert read_json(tmp_path / "ok", 1 << 20) == {"a": [1, "é"]}


def test_every_json_reader_says_a_deeply_nested_file_is_too_deep(tmp_path):
    """Settings, the journal, the record of progress and a model's config.json go through ``files.read_json``."""
    from dasher_rnn.adapt.progress import PROGRESS_FILE, ProgressLog
    from dasher_rnn.journal import Journal
    from dasher_rnn.lm.model_io import ModelFileError, read_config
    from dasher_rnn.settings import SettingsStore

    (tmp_path / "settings.json").write_bytes(DEEP)
    store = SettingsStore(tmp_path / "settings.json")
    store.load()
    assert "nested 1,000 deep" in store.notice
    (tmp_path / "journal").mkdir()
    (tmp_path / "journal" / "journal.json").write_bytes(DEEP)
    journal = Journal(tmp_path / "journal" / "journal.json")
    assert "nested 1,000 deep" in (journal.notice or "")
    (tmp_path / PROGRESS_FILE).write_bytes(DEEP + b"\n")
    progress = ProgressLog(tmp_path)
    assert progress.read() == [] and progress.skipped == 1
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_bytes(DEEP)
    with pytest.raises(ModelFileError, match="nested 1,000 deep"):
        read_config(tmp_path / "model")
