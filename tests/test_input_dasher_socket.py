"""Dasher's socket input: the parser against Dasher's ParseMessage and glibc's sscanf, and the source end to
end over loopback UDP."""

import ctypes
import ctypes.util
import math
import socket
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dasher_rnn.input.dasher_socket import (
    DEFAULT_PORT,
    MAX_READ,
    DasherSocketSource,
    SocketParser,
    check_label,
    check_range,
    scan_double,
)
from dasher_rnn.input.gaze import GazeSourceError
from tests.helpers import wait_for

# What glibc 2.36's sscanf("%lf") gave for each (checked with a C program when this was written).
SSCANF = {
    b" 0.5": 0.5, b"0.5abc": 0.5, b"1e": 1.0, b"1ex": 1.0, b"1e+": 1.0, b"1e5x": 1e5, b"100ergs": 100.0,
    b"0x": None, b"0x ": None, b"0xg": None, b"0xp1": None, b"-0x": None, b"0xinf": None, b"0x.": 0.0,
    b"0x.g": 0.0, b"0x1p3": 8.0, b"0x1.8": 1.5, b"0x1e": 30.0, b"0x1p": 1.0, b"0X1P-2": 0.25, b"0x.8p1": 1.0,
    b"+0x1": 1.0, b"00x1": 0.0, b".": None, b"-.": None, b".e5": None, b".5": 0.5, b"-.5e-1": -0.05,
    b"1.": 1.0, b"1.e5": 1e5, b"1.5.5": 1.5, b"1,5": 1.0, b"1_0": 1.0, b"inf": math.inf, b"+inf": math.inf,
    b"iNf": math.inf, b"INFINITY": math.inf, b"infinity5": math.inf, b"infx": math.inf, b"infi": None,
    b"infin": None, b"infinite": None, b"in": None, b"i": None, b"+": None, b"-": None, b"- 1": None,
    b"+-1": None, b"": None, b"  ": None, b"e5": None, b"abc": None, b"\xff1": None,
    b"\t\r\v\f 2": 2.0, b"0.5\r": 0.5, b"1" * 400: math.inf, b"1e400": math.inf, b"-1e400": -math.inf,
    b"1e-400": 0.0, b"0x1p99999": math.inf,
}


@pytest.mark.parametrize("text", list(SSCANF))
def test_scan_double_reads_what_sscanf_reads(text):
    assert scan_double(text) == SSCANF[text]


@pytest.mark.parametrize("text", [b"nan", b"NaN", b"-nan", b"nan(abc)", b"nan(", b"nanx"])
def test_scan_double_reads_nan(text):
    assert math.isnan(scan_double(text))


def _libc_sscanf():
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    if not hasattr(libc, "gnu_get_libc_version"):
        return None

    def sscanf(text: bytes) -> float | None:
        out = ctypes.c_double()
        return out.value if libc.sscanf(ctypes.c_char_p(text), b"%lf", ctypes.byref(out)) == 1 else None

    return sscanf


LIBC_SSCANF = _libc_sscanf()
NUMBERISH = st.binary(max_size=16).map(lambda b: b.replace(b"\0", b"")) | st.text(
    " \t\r\v\f+-.0123456789eExXpPabcdfinINFtyT()_,", max_size=16).map(str.encode)


@pytest.mark.skipif(LIBC_SSCANF is None, reason="needs glibc's sscanf to compare with")
@settings(max_examples=1500, deadline=None)
@given(NUMBERISH)
def test_scan_double_agrees_with_the_c_library(text):
    ours, theirs = scan_double(text), LIBC_SSCANF(text)
    if theirs is not None and math.isnan(theirs):
        assert ours is not None and math.isnan(ours)
    else:
        assert ours == theirs


def test_lines_set_the_axes_through_their_ranges():
    parser = SocketParser("XCoordinate", "YCoordinate", (-100.0, 100.0), (0.0, 512.0))
    reading = parser.parse(b"XCoordinate 50\nYCoordinate 128\nOtherData 12s\n")  # the protocol note's example
    assert (reading.x, reading.y, reading.ignored, reading.bad) == (0.75, 0.25, 1, [])
    assert (parser.parse(b"YCoordinate 512\n").x, parser.parse(b"YCoordinate 512\n").y) == (None, 1.0)


def test_labels_match_as_prefixes_and_values_end_where_the_number_ends():
    parser = SocketParser()
    assert parser.parse(b"x0.25\n").x == 0.25
    assert parser.parse(b"x \t0.25 pixels\r\n").x == 0.25
    reading = parser.parse(b"xy 0.5\n")  # starts with "x": an x line whose value does not parse
    assert reading.x is None and reading.bad == [("no number after the label", "'xy 0.5'")]
    assert parser.parse(b" x 0.5\n").ignored == 1  # a leading space: neither label
    assert parser.parse(b"X 0.5\n").ignored == 1  # labels are case-sensitive


def test_one_label_can_drive_both_axes_and_the_last_line_wins():
    reading = SocketParser("pos", "pos").parse(b"pos 0.2\npos 0.3\n")
    assert (reading.x, reading.y) == (0.3, 0.3)
    reading = SocketParser("x", "xy").parse(b"xy 0.6\n")  # a failed x line, but a good y line: not bad
    assert (reading.x, reading.y, reading.bad) == (None, 0.6, [])


def test_out_of_range_values_are_clipped_and_swapped_ranges_invert():
    parser = SocketParser(x_range=(0.0, 10.0), y_range=(10.0, 0.0))
    reading = parser.parse(b"x 12\ny 12\n")
    assert (reading.x, reading.y, reading.clipped) == (1.0, 0.0, 2)
    reading = parser.parse(b"x -inf\ny 2.5\n")
    assert (reading.x, reading.y, reading.clipped) == (0.0, 0.75, 1)


def test_bad_lines_are_reported_and_the_good_ones_still_count():
    reading = SocketParser().parse(b"x nan\nx\ny 0.5\n\n\r\ngarbage\xff\nx 0.1")
    assert reading.y == 0.5 and reading.x is None and reading.ignored == 1
    assert [kind for kind, _ in reading.bad] == ["value is NaN", "no number after the label", "no newline at the end"]


def test_a_nul_ends_the_datagram_and_only_4095_bytes_are_read():
    parser = SocketParser()
    assert parser.parse(b"x 0.5\n\0y 0.5\n").y is None
    assert parser.parse(b"x 0.5\0\n").bad[0][0] == "no newline at the end"
    line = b"y 0.5\n"
    exact = b" " * (MAX_READ - len(line)) + b"\n" + line[:-1]  # the y line's newline is byte 4096: never read
    assert len(exact) == MAX_READ and SocketParser().parse(exact + b"\n").y is None
    reading = parser.parse(b"x 0.5\n" + b"y" * MAX_READ + b"\ny 0.5\n")
    assert reading.x == 0.5 and reading.y is None and [kind for kind, _ in reading.bad] == ["too long", "no newline at the end"]


def test_unusable_labels_and_ranges_are_refused():
    for label in ("", "a\nb", "tab\there", "é" * 65, 3):
        with pytest.raises(ValueError):
            check_label(label)
    assert check_label("Gaze X") == "Gaze X" and check_label("é" * 64) == "é" * 64
    for low, high in ((0.5, 0.5), (0, math.nan), (0, math.inf), (-3e6, 0), (True, 1), ("0", 1)):
        with pytest.raises(ValueError):
            check_range(low, high)
    assert check_range(1, 0) == (1.0, 0.0)
    with pytest.raises(GazeSourceError, match="both 2"):
        DasherSocketSource(port=0, x_range=(2, 2))


# -- end to end over loopback UDP ---------------------------------------------------------------

@pytest.fixture
def source():
    with DasherSocketSource(port=0, x_label="gx", y_label="gy", x_range=(0, 1920), y_range=(1080, 0),
                            stale_after=60.0) as src:
        yield src


def send(sock, src, payload: bytes):
    sock.sendto(payload, ("127.0.0.1", src.port))


def test_labelled_lines_move_the_pointer_to_the_mapped_point(source, sender):
    assert DEFAULT_PORT == 20320 and source.port > 0 and source.latest() is None
    assert "UDP port" in source.description and "'gx' 0 to 1920" in source.description
    send(sender, source, b"gx 480\ngy 270\n")
    wait_for(lambda: source.received == 1)
    sample = source.latest()
    assert (sample.x, sample.y, sample.space) == (0.25, 0.75, "view")
    send(sender, source, b"gx 1920\n")  # only x: y stays
    wait_for(lambda: source.received == 2)
    assert (source.latest().x, source.latest().y) == (1.0, 0.75)
    send(sender, source, b"gy 5000\n")  # clipped to the range
    wait_for(lambda: source.received == 3)
    assert (source.latest().x, source.latest().y, source.clipped) == (1.0, 0.0, 1)
    assert source.problems() == ""


def test_a_first_coordinate_alone_starts_from_the_centre(source, sender):
    send(sender, source, b"gy 1080\n")
    wait_for(lambda: source.received == 1)
    assert (source.latest().x, source.latest().y) == (0.5, 0.0)


def test_garbage_and_unknown_labels_are_counted_and_the_input_goes_on(source, sender):
    send(sender, source, b"\xff\xfe garbage\n")
    wait_for(lambda: source.ignored == 1)
    assert "lines without the labels 'gx' or 'gy'" in source.problems()
    for payload in (b"gx nan\n", b"gx\n", b"gx 10", b"gy " + b"9" * 5000 + b"\n", b"\0gx 1\n"):
        send(sender, source, payload)
    send(sender, source, b"gx 960\ngy 540\nOtherData 12s\n")
    wait_for(lambda: source.received == 1)
    assert source._thread.is_alive()
    assert source.rejected == 5 and source.ignored == 2  # the over-long line: too long, and no newline
    assert (source.latest().x, source.latest().y) == (0.5, 0.5)
    assert source.problems().startswith("Dasher socket input: 5 bad lines ignored (last: ")


def test_port_in_use_is_a_clear_error(source):
    with pytest.raises(GazeSourceError, match="cannot listen for Dasher socket input"):
        DasherSocketSource(port=source.port)


def test_close_frees_the_port():
    src = DasherSocketSource(port=0)
    port = src.port
    src.close()
    src.close()
    assert not src.alive and src.problems() == ""
    DasherSocketSource(port=port).close()


def test_with_an_input_token_a_datagram_without_its_line_is_ignored_counted_and_said_once(sender, caplog):
    """The token travels as one more labelled line, which Dasher itself ignores: a bridge sending it drives both.
    Without it (or with a wrong one) a datagram is ignored whole, counted and said once."""
    with DasherSocketSource(port=0, x_label="t", y_label="y", stale_after=60.0, token="k3y") as src:
        send(sender, src, b"t 0.25\ny 0.75\n")  # no token
        send(sender, src, b"token nope\nt 0.25\ny 0.75\n")  # a wrong one
        send(sender, src, b"t 0.25\ny 0.75\ntoken k3y")  # no newline: not a line, as in Dasher
        wait_for(lambda: src.refused == 3)
        assert src.received == 0 and src.rejected == 0 and src.ignored == 0 and src.latest() is None
        assert "3 datagrams without the input token ignored (the last from 127.0.0.1:" in src.problems()
        assert len([r for r in caplog.records if "without the input token" in r.getMessage()]) == 1
        send(sender, src, b"token k3y\r\nt 0.25\ny 0.75\nOtherData 12s\n")  # read first, never as the x label "t"
        wait_for(lambda: src.received == 1)
        assert (src.latest().x, src.latest().y, src.ignored, src.rejected) == (0.25, 0.75, 1, 0)


def test_without_an_input_token_a_token_line_is_other_data_as_in_dasher(source, sender):
    send(sender, source, b"token k3y\ngx 480\ngy 270\n")
    wait_for(lambda: source.received == 1)
    assert source.ignored == 1 and source.refused == 0


def test_the_input_token_preference_and_option(monkeypatch, capsys):
    import dasher_rnn.ui.app as app
    from dasher_rnn.cli import main
    from dasher_rnn.settings import Preferences

    assert Preferences().input_token == ""  # every local sender counts, as in Dasher: existing bridges send none
    prefs, problems = Preferences.from_dict({"input_token": "has space"})
    assert prefs.input_token == "" and len(problems) == 1
    calls = []
    monkeypatch.setattr(app, "run_app", lambda *args, **kwargs: calls.append(kwargs) or 0)
    assert main(["app", "--input-token", "k3y"]) == 0 and calls[-1]["prefs_overrides"] == {"input_token": "k3y"}
    assert main(["app", "--input-token", ""]) == 0 and calls[-1]["prefs_overrides"] == {"input_token": ""}
    with pytest.raises(SystemExit):
        main(["app", "--input-token", "two words"])
    assert "without spaces" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["gaze-udp", "dasher-socket"])
def test_the_registry_opens_each_udp_input_with_the_input_token(kind):
    from dasher_rnn.input.presets import PRESETS
    from dasher_rnn.input.registry import open_source
    from dasher_rnn.settings import Preferences

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    prefs = Preferences(input_token="k3y", gaze_port=free, socket_port=free)
    with open_source(kind, prefs.model_dump(), next(iter(PRESETS.values()))) as src:
        assert "only from senders with the input token" in src.description
    with open_source(kind, prefs.model_copy(update={"input_token": ""}).model_dump(), next(iter(PRESETS.values()))) as src:
        assert "input token" not in src.description


# -- preferences and the command line ------------------------------------------------------------

def test_socket_preferences_default_to_dashers_and_bad_ones_fall_back():
    from dasher_rnn.settings import Preferences

    prefs, problems = Preferences.from_dict({})
    assert (prefs.socket_port, prefs.socket_x_label, prefs.socket_y_label) == (20320, "x", "y")
    assert (prefs.socket_x_min, prefs.socket_x_max, prefs.socket_y_min, prefs.socket_y_max) == (0.0, 1.0, 0.0, 1.0)
    prefs, problems = Preferences.from_dict({"input": "dasher-socket", "socket_x_label": "a\nb", "socket_y_label": "",
                                             "socket_x_min": -100, "socket_x_max": "wide", "socket_port": 0})
    assert prefs.input == "dasher-socket" and prefs.socket_x_min == -100.0
    assert (prefs.socket_x_label, prefs.socket_y_label, prefs.socket_x_max, prefs.socket_port) == ("x", "y", 1.0, 20320)
    assert len(problems) == 4


def test_app_options_set_the_input_preferences(monkeypatch):
    import dasher_rnn.ui.app as app
    from dasher_rnn.cli import main

    calls = []
    monkeypatch.setattr(app, "run_app", lambda *args, **kwargs: calls.append(kwargs) or 0)
    assert main(["app", "--input", "dasher-socket", "--socket-port", "4444", "--socket-x-label", "XCoordinate",
                 "--socket-y-range", "512", "0"]) == 0
    assert calls[-1]["prefs_overrides"] == {"input": "dasher-socket", "socket_port": 4444,
                                            "socket_x_label": "XCoordinate", "socket_y_min": 512.0, "socket_y_max": 0.0}
    assert main(["app"]) == 0 and calls[-1]["prefs_overrides"] == {}


def test_app_options_refuse_unusable_values(monkeypatch, capsys):
    import dasher_rnn.ui.app as app
    from dasher_rnn.cli import main

    monkeypatch.setattr(app, "run_app", lambda *args, **kwargs: pytest.fail("should not start"))
    assert main(["app", "--socket-x-range", "3", "3"]) == 2
    assert "both 3.0" in capsys.readouterr().err
    for bad in (["--socket-port", "70000"], ["--socket-y-label", ""], ["--input", "keyboard"]):
        with pytest.raises(SystemExit):
            main(["app", *bad])
