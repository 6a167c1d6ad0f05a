"""OptiKey's gaze datagrams: the parser against OptiKey's own regular expression, and the source end to end over
loopback UDP, fed by a fake tracker bridge in the test."""

from __future__ import annotations

import json
import math
import re
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dasher_rnn.input.gaze import GazeSourceError
from dasher_rnn.input.one_euro import OneEuroFilter
from dasher_rnn.input.optikey_udp import (
    DEFAULT_PORT,
    MAX_DATAGRAM,
    MAX_INSTANCE_TIME,
    BadDatagram,
    OptiKeyUDPSource,
    parse_datagram,
    token_of,
)
from tests.helpers import wait_for

# OptiKeyApp.cs, GazeTrackerUdpRegex, as OptiKey writes it (.NET syntax: (?<name>...)).
OPTIKEY_REGEX = r"^STREAM_DATA\s(?<instanceTime>\d+)\s(?<x>-?\d+(\.[0-9]+)?)\s(?<y>-?\d+(\.[0-9]+)?)"
NOW_MS = 63_871_234_567_890  # DateTime.Now.Ticks / 10000 in late 2025: what a bridge for OptiKey sends


def optikey_reads(data: bytes) -> tuple[float, float, int] | None:
    """What OptiKey's GazeTrackerSource makes of a datagram: its regex on the ASCII-decoded text (bytes over 127
    become "?"), or None where it matches nothing. .NET's \\d and \\s on ASCII text are Python's with re.ASCII."""
    text = "".join(chr(b) if b < 128 else "?" for b in data)
    match = re.match(OPTIKEY_REGEX.replace("(?<", "(?P<"), text, re.ASCII)
    if match is None:
        return None
    return float(match["x"]), float(match["y"]), int(match["instanceTime"])


def datagram(x: float | str, y: float | str, ms: int = NOW_MS) -> bytes:
    return f"STREAM_DATA {ms} {x} {y}".encode()


@pytest.fixture
def bridge():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        yield sock


@pytest.fixture
def source():
    with OptiKeyUDPSource(port=0, stale_after=60.0) as src:
        yield src


def send(sock, src, payload: bytes) -> None:
    sock.sendto(payload, ("127.0.0.1", src.port))


def at(src, x, y) -> bool:
    sample = src.latest()
    return sample is not None and math.isclose(sample.x, x) and math.isclose(sample.y, y)


def test_the_defaults_are_optikeys():
    assert DEFAULT_PORT == 6666
    with OptiKeyUDPSource(port=0) as src:
        assert src.screen_size == (1920, 1080) and src.screen_origin == (0, 0)
        assert src.description == f"Listening for OptiKey gaze on UDP port {src.port} (pixels of a 1920x1080 screen)"


def test_pixels_from_the_bridge_move_the_point_normalised_to_the_screen(source, bridge):
    for i, (x, y) in enumerate([(960, 540), (192.5, 1026), (1919, 0.5)]):
        send(bridge, source, datagram(x, y, NOW_MS + 16 * i))
        wait_for(lambda x=x, y=y: at(source, x / 1920, y / 1080))
        assert source.latest().t == pytest.approx((NOW_MS + 16 * i) / 1000)
    assert source.received == 3 and source.problems() == ""


def test_the_screen_size_and_origin_are_settings(bridge):
    with OptiKeyUDPSource(port=0, stale_after=60.0, screen_size=(2560, 1440), screen_origin=(-2560, 0)) as src:
        assert "(pixels of a 2560x1440 screen at -2560,0)" in src.description
        send(bridge, src, datagram(-1280, 360))  # a second screen left of the primary one
        wait_for(lambda: at(src, 0.5, 0.25))


def test_what_follows_y_is_ignored_as_in_optikey(source, bridge):
    send(bridge, source, b"STREAM_DATA 1000 100 200 0.95 anything\r\n")
    send(bridge, source, b"STREAM_DATA\t1001\t300.25\n400.5x")
    wait_for(lambda: source.received == 2)
    assert at(source, 300.25 / 1920, 400.5 / 1080) and source.latest().t == 1.001


def test_origin_points_and_repeats_are_lost_samples_as_optikey_drops_them(source, bridge):
    send(bridge, source, datagram(100, 100, 1))
    wait_for(lambda: source.received == 1)
    for payload in (datagram(0, 0, 2), datagram("0.0", "-0", 3), datagram(100, 100, 4), datagram("100.0", 100, 5)):
        send(bridge, source, payload)
    wait_for(lambda: source.lost == 4)
    assert source.repeated == 2 and source.received == 1 and source.rejected == 0
    send(bridge, source, datagram(0, 0, 6))  # the origin between two equal points does not make the second new
    send(bridge, source, datagram(100, 100, 7))
    wait_for(lambda: source.lost == 6)
    send(bridge, source, datagram(101, 100, 8))
    wait_for(lambda: source.received == 2)


def test_a_tracker_that_repeats_its_last_point_pauses_the_app(bridge):
    with OptiKeyUDPSource(port=0, stale_after=0.2) as src:
        send(bridge, src, datagram(500, 500, 1))
        wait_for(lambda: src.received == 1)
        for i in range(40):  # the eyes are lost: the same point, on and on
            send(bridge, src, datagram(500, 500, 2 + i))
        wait_for(lambda: src.latest() is None)  # stale, as OptiKey's point expires after its TTL
        assert src.repeated >= 1


BAD = [
    (b"", "not STREAM_DATA"),
    (b"STREAM_DATA", "bad STREAM_DATA"),
    (b"STREAM_DATA 1 2", "bad STREAM_DATA"),
    (b"STREAM_DATA  1 2 3", "bad STREAM_DATA"),  # two spaces: \s matches one character
    (b"STREAM_DATA -1 2 3", "bad STREAM_DATA"),  # a time has no sign
    (b"STREAM_DATA 1 +2 3", "bad STREAM_DATA"),
    (b"STREAM_DATA 1 2. 3", "bad STREAM_DATA"),  # "2." then ".": no \s after x
    (b"STREAM_DATA 1 .5 3", "bad STREAM_DATA"),
    (b"STREAM_DATA 1 1e3 3", "bad STREAM_DATA"),
    (b"STREAM_DATA 1 NaN 3", "bad STREAM_DATA"),
    (b"STREAM_DATA 1 inf 3", "bad STREAM_DATA"),
    (b"STREAM_DATA 1 \xd9\xa1 3", "bad STREAM_DATA"),  # an Arabic-Indic digit: OptiKey decodes ASCII, sees "??"
    (b"STREAM_DATA 1 2,5 3", "bad STREAM_DATA"),
    (b"stream_data 1 2 3", "not STREAM_DATA"),
    (b" STREAM_DATA 1 2 3", "not STREAM_DATA"),
    (b"\xff\xfe garbage", "not STREAM_DATA"),
    (b'{"x": 0.5, "y": 0.5}', "not STREAM_DATA"),
    (b"STREAM_DATA 1 " + b"9" * 400 + b" 3", "non-finite"),
    (b"STREAM_DATA 1 3 -" + b"9" * 4000, "non-finite"),
    (b"STREAM_DATA " + b"9" * 16 + b" 1 2", "bad time"),
    (b"STREAM_DATA " + str(MAX_INSTANCE_TIME + 1).encode() + b" 1 2", "bad time"),
    (b"STREAM_DATA " + b"1" * 3000 + b" 1 2", "bad time"),
    (datagram(1, 2) + b" " * MAX_DATAGRAM, "too long"),
]


@pytest.mark.parametrize(("payload", "kind"), BAD, ids=[kind for _, kind in BAD])
def test_a_bad_datagram_is_reported(payload, kind):
    with pytest.raises(BadDatagram) as info:
        parse_datagram(payload)
    assert info.value.kind == kind and len(str(info.value)) < 400


def test_leading_zeros_are_only_zeros():
    assert parse_datagram(b"STREAM_DATA " + b"0" * 3000 + b"12 1 2") == (1.0, 2.0, 0.012)
    assert parse_datagram(b"STREAM_DATA 00 007.50 -0010") == (7.5, -10.0, 0.0)
    assert parse_datagram(b"STREAM_DATA " + str(MAX_INSTANCE_TIME).encode() + b" 1 2")[2] == MAX_INSTANCE_TIME / 1000


def test_bad_datagrams_never_stop_the_input(source, bridge):
    for payload, _ in BAD:
        send(bridge, source, payload)
    send(bridge, source, datagram(480, 270))
    wait_for(lambda: source.received == 1 and source.rejected == len(BAD))
    assert at(source, 0.25, 0.25) and source.alive
    assert source.problems().startswith(f"OptiKey gaze over UDP: {len(BAD)} bad datagrams ignored (last: ")


def test_smoothing_is_applied(bridge):
    with OptiKeyUDPSource(port=0, stale_after=60.0, smoothing=OneEuroFilter(1.0, 0.0)) as src:
        send(bridge, src, datagram(0, 1, 10_000))
        wait_for(lambda: src.received == 1)
        send(bridge, src, datagram(1920, 1080, 10_020))
        wait_for(lambda: src.received == 2)
        assert 0.0 < src.latest().x < 0.5


def test_a_flood_is_read_to_the_newest(bridge):
    with OptiKeyUDPSource(port=0, stale_after=60.0) as src:
        src._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 21)
        for i in range(3000):
            send(bridge, src, datagram(1 + i % 1900, 500, NOW_MS + i))
        send(bridge, src, datagram(1234, 567, NOW_MS + 5000))
        wait_for(lambda: at(src, 1234 / 1920, 567 / 1080), seconds=30.0)
        assert src.alive


@pytest.mark.parametrize("kwargs", [dict(screen_size=(0, 1080)), dict(screen_size=(1920,)),
                                    dict(screen_size=(1920.0, 1080)), dict(screen_size="1920x1080"),
                                    dict(screen_origin=(True, 0)), dict(screen_size=(10**7, 1080)),
                                    dict(token="with space")])
def test_unusable_settings_are_a_clear_error(kwargs):
    with pytest.raises(GazeSourceError):
        OptiKeyUDPSource(port=0, **kwargs)


def test_the_port_in_use_is_a_clear_error():
    with OptiKeyUDPSource(port=0) as src, pytest.raises(GazeSourceError, match="cannot listen for OptiKey gaze"):
        OptiKeyUDPSource(port=src.port)


# -- the input token ---------------------------------------------------------------------------------------------

def test_with_an_input_token_only_datagrams_carrying_it_count(bridge):
    with OptiKeyUDPSource(port=0, stale_after=60.0, token="s3cret") as src:
        for payload in (datagram(100, 100), datagram(100, 100) + b" token guess", datagram(100, 100) + b"token s3cret",
                        b"token s3cret", json.dumps({"token": "s3cret"}).encode()):
            send(bridge, src, payload)
        wait_for(lambda: src.refused == 5)
        assert src.received == 0 and src.rejected == 0
        send(bridge, src, datagram(960, 540) + b" token s3cret")
        send(bridge, src, datagram(96, 54) + b"\ttoken  s3cret\r\n")
        wait_for(lambda: src.received == 2)
        assert at(src, 0.05, 0.05)
        assert optikey_reads(datagram(96, 54) + b" token s3cret") == (96.0, 54.0, NOW_MS)  # OptiKey reads it unchanged


def test_token_of():
    assert token_of(datagram(1, 2) + b" token abc") == b"abc"
    assert token_of(datagram(1, 2) + b" 3 token abc") is None  # the token directly after y
    assert token_of(b"token abc") is None


# -- against OptiKey's own expression, fuzzed ---------------------------------------------------------------------

numbers = st.one_of(st.integers(-10**6, 10**6).map(str), st.floats(-1e6, 1e6).map(lambda f: f"{f:.3f}"),
                    st.sampled_from(["", "-", "0", "-0", "1.", ".5", "1e3", "NaN", "inf", "9" * 400, "0" * 30 + "1",
                                     "1,5", "\u0661", "+1", "1.2.3"]))
separators = st.sampled_from([" ", "\t", "\n", "\r", "\x0b", "\x0c", "  ", "", "\u00a0", "\x1c"])
near_miss = st.tuples(st.sampled_from(["STREAM_DATA", "STREAM_DAT", "stream_data", " STREAM_DATA", "STREAM_DATAX"]),
                      separators, numbers, separators, numbers, separators, numbers, st.text(max_size=8)).map(
    lambda p: "".join(p).encode("utf-8"))
datagrams = st.one_of(near_miss, st.binary(max_size=100),
                      st.tuples(near_miss, st.binary(max_size=6)).map(lambda p: p[0] + p[1]))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datagrams)
def test_the_parser_reads_what_optikey_reads(data):
    theirs = optikey_reads(data)
    try:
        x, y, t = parse_datagram(data)
    except BadDatagram as exc:
        # where OptiKey reads a point, only what it could not use either (infinite, after the year 9999) is refused
        assert theirs is None or exc.kind in ("non-finite", "bad time", "too long"), (exc, theirs)
        return
    assert theirs is not None and (x, y) == theirs[:2] and t == theirs[2] / 1000
    assert math.isfinite(x) and math.isfinite(y)


@pytest.fixture(scope="module")
def fuzz_source():
    with OptiKeyUDPSource(port=0, stale_after=3600.0) as src:
        src._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 21)
        yield src


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(datagrams, min_size=1, max_size=6), n=st.integers(1, 1900))
def test_the_receiver_survives_garbage(fuzz_source, batch, n):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        src, before = fuzz_source, fuzz_source.rejected
        bad = 0
        for data in batch:
            try:
                parse_datagram(data)
            except BadDatagram:
                bad += 1
            sock.sendto(data, ("127.0.0.1", src.port))
        x, y = n + 0.5, n % 1000 + 0.25  # on the screen (not clamped), and never a point the fuzzer makes
        sock.sendto(datagram(x, y), ("127.0.0.1", src.port))
        wait_for(lambda: at(src, x / 1920, y / 1080) and src.rejected == before + bad)
        assert src.alive
