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
