"""The datagram fuzzer (issue 21): garbage for the gaze-over-UDP and Dasher-socket inputs, first to the
parsers, then over loopback UDP to real receivers.

Datagrams: random bytes; near-valid ``x y t`` lines and JSON objects with odd numbers (huge integers,
NaN, infinities, 5e-324, hex, underscores, empty); deep and unbalanced nesting; over-long datagrams;
valid datagrams with bytes inserted; Dasher socket lines with near-miss labels, values and line ends.
The parsers may only return a result or report a bad datagram; the receivers must stay alive, count each
bad datagram (or line) exactly as the parser judges it, and still move the pointer for the valid
datagram sent after the garbage.
"""

from __future__ import annotations

import itertools
import json
import math
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dasher_rnn.input.dasher_socket import DasherSocketSource, SocketParser
from dasher_rnn.input.gaze_udp import MAX_DATAGRAM, BadDatagram, GazeUDPSource, parse_datagram
from dasher_rnn.input.one_euro import OneEuroFilter
from tests.helpers import wait_for

ODD_NUMBERS = ["NaN", "nan", "-Infinity", "inf", "1e999", "-1e999", "5e-324", "-0", "0x1p3", "1_0", "", ".", "-",
               "1" * 401, "-" + "9" * 401, "9" * 5000, "1e", "0.5.5", "１", "0.5\x00"]
numbers = st.one_of(
    st.floats().map(repr),
    st.integers().map(str),
    st.integers(min_value=10**300, max_value=10**450).map(str),
    st.sampled_from(ODD_NUMBERS),
)

gaze_text = st.lists(numbers, max_size=4).map(" ".join).map(str.encode)
json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)
gaze_json = st.one_of(
    st.dictionaries(st.sampled_from(["x", "y", "t", "valid", "extra"]), json_values, max_size=5)
    .map(lambda d: json.dumps(d).encode()),
    # raw number tokens, some of them not JSON at all
    st.tuples(numbers, numbers, st.none() | numbers, st.sampled_from(["", ', "valid": false', ', "valid": 1']))
    .map(lambda p: _raw_json(*p)),
)
nesting = st.tuples(st.integers(1, 4000), st.sampled_from(["[", '{"a":', "[{", '{"x": ['])).map(
    lambda p: ('{"x": ' + p[1] * p[0] + "]" * (p[0] if p[1] == "[" else 0) + ', "y": 0.5}').encode()[:MAX_DATAGRAM + 50])
over_long = st.tuples(st.integers(MAX_DATAGRAM - 10, 9000), st.sampled_from([b"0.5 0.5 ", b'{"x": 0.5, "y": 0.5, "p": "',
                                                                             b"x 0.5\ny 0.5\n"])).map(
    lambda p: (p[1] + b" " * p[0])[: p[0]] + b'"}')
valid = st.sampled_from([b"0.5 0.5", b'{"x": 0.1, "y": 0.9, "t": 12.5}', b'{"valid": false}', b"x 0.3\ny 0.7\n"])
mutated = st.tuples(valid, st.lists(st.tuples(st.integers(0, 40), st.binary(max_size=3)), min_size=1, max_size=4)).map(
    lambda p: _insert(*p))
socket_lines = st.lists(
    st.tuples(st.sampled_from(["x", "y", "X", "xy", "", "Other", " x", "yy", "x\ty"]),
              st.sampled_from([" ", "", "\t", "  ", "\r"]),
              numbers,
              st.sampled_from(["\n", "\r\n", "", "\x00", "\n\n", " px\n"])),
    max_size=6,
).map(lambda lines: "".join(label + sep + value + end for label, sep, value, end in lines).encode())
datagrams = st.one_of(st.binary(max_size=600), gaze_text, gaze_json, nesting, over_long, mutated, socket_lines)


def _raw_json(x: str, y: str, t: str | None, tail: str) -> bytes:
    return ('{"x": ' + x + ', "y": ' + y + ("" if t is None else ', "t": ' + t) + tail + "}").encode()


def _insert(data: bytes, edits: list[tuple[int, bytes]]) -> bytes:
    for at, extra in edits:
        at = min(at, len(data))
        data = data[:at] + extra + data[at:]
    return data


# -- the parsers -------------------------------------------------------------------------------------

@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datagrams)
def test_the_gaze_parser_returns_finite_points_or_a_bad_datagram(data):
    try:
        point = parse_datagram(data)
    except BadDatagram as exc:
        assert exc.kind and len(str(exc)) < 400  # a short reason, even for a 9 KB datagram
        return
    if point is not None:
        x, y, t = point
        assert math.isfinite(x) and math.isfinite(y) and (t is None or math.isfinite(t))
        assert all(math.isfinite(v) for v in OneEuroFilter().filter(x, y, 0.0 if t is None else t))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datagrams)
def test_the_socket_parser_never_raises_and_stays_on_the_writing_area(data):
    reading = SocketParser().parse(data)
    assert all(v is None or 0.0 <= v <= 1.0 for v in (reading.x, reading.y))
    assert reading.ignored >= 0 and reading.clipped >= 0
    assert {kind for kind, _ in reading.bad} <= {"too long", "no newline at the end", "no number after the label",
                                                 "value is NaN"}


# -- real receivers on loopback UDP -----------------------------------------------------------------

def _roomy(source):
    source._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 21)  # a burst must not overflow the buffer
    return source


@pytest.fixture(scope="module")
def gaze_source():
    with GazeUDPSource(port=0, stale_after=3600.0) as source:
        yield _roomy(source)


@pytest.fixture(scope="module")
def socket_source():
    with DasherSocketSource(port=0, stale_after=3600.0) as source:
        yield _roomy(source)


_positions = itertools.count(1)


def _next_position() -> tuple[float, float]:
    """A fresh point for each valid datagram, so that seeing it proves this datagram moved the pointer."""
    n = next(_positions) % 997
    return n / 997, 1 - n / 997


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(datagrams, min_size=1, max_size=6))
def test_the_gaze_receiver_survives_garbage(gaze_source, sender, batch):
    source, before = gaze_source, (gaze_source.received, gaze_source.rejected, gaze_source.lost)
    points = rejected = lost = 0
    for data in batch:
        try:
            point = parse_datagram(data)
        except BadDatagram:
            rejected += 1
        else:
            points, lost = points + (point is not None), lost + (point is None)
        sender.sendto(data, ("127.0.0.1", source.port))
    x, y = _next_position()
    sender.sendto(f"{x!r} {y!r}".encode(), ("127.0.0.1", source.port))
    wait_for(lambda: source.received == before[0] + points + 1)
    assert source._thread.is_alive() and source.problems().count("stopped") == 0
    assert (source.rejected, source.lost) == (before[1] + rejected, before[2] + lost)
    assert (source.latest().x, source.latest().y) == (x, y)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(datagrams, min_size=1, max_size=6))
def test_the_socket_receiver_survives_garbage(socket_source, sender, batch):
    source, before = socket_source, (socket_source.received, socket_source.rejected, socket_source.ignored)
    parser = SocketParser()
    moves = bad = ignored = 0
    for data in batch:
        reading = parser.parse(data)
        moves += reading.x is not None or reading.y is not None
        bad += len(reading.bad)
        ignored += reading.ignored
        sender.sendto(data, ("127.0.0.1", source.port))
    x, y = _next_position()
    sender.sendto(f"x {x!r}\ny {y!r}\n".encode(), ("127.0.0.1", source.port))
    wait_for(lambda: source.received == before[0] + moves + 1)
    assert source._thread.is_alive() and source.problems().count("stopped") == 0
    assert (source.rejected, source.ignored) == (before[1] + bad, before[2] + ignored)
    assert (source.latest().x, source.latest().y) == (x, y)
