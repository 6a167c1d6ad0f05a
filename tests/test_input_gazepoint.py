"""The Gazepoint Open Gaze API client against a fake Gazepoint Control in the test (a real TCP server on 127.0.0.1):
the commands it sends, records however the stream is cut, hostile streams, and reconnecting."""

from __future__ import annotations

import math
import socket
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dasher_rnn.input.gaze import GazeSourceError
from dasher_rnn.input.gazepoint import (
    MAX_RECORD,
    BadRecord,
    GazepointSource,
    RecordFramer,
    commands,
    parse_element,
    read_record,
)
from dasher_rnn.input.one_euro import OneEuroFilter
from tests.helpers import wait_for

FAST = dict(backoff=(0.02, 0.2), connect_timeout=2.0)  # retry quickly: the tests restart servers


def rec(x: float, y: float, t: float | None = None, valid: int = 1, prefix: str = "BPOG") -> bytes:
    time_field = "" if t is None else f'TIME="{t:.5f}" '
    return f'<REC {time_field}{prefix}X="{x:.5f}" {prefix}Y="{y:.5f}" {prefix}V="{valid}" />\r\n'.encode()


class Connection:
    """One accepted client connection of the fake server."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.received = b""

    def read_commands(self, count: int = 3, ack: bool = True) -> list[bytes]:
        """The client's first ``count`` commands (lines), each acknowledged as Gazepoint Control does."""
        self.sock.settimeout(10.0)
        while self.received.count(b"\r\n") < count:
            data = self.sock.recv(4096)
            if not data:
                raise AssertionError(f"the client closed after {self.received!r}")
            self.received += data
        lines = self.received.split(b"\r\n")[:count]
        if ack:
            self.send(b"".join(line.replace(b"<SET", b"<ACK", 1) + b"\r\n" for line in lines))
        return lines

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close(self) -> None:
        self.sock.close()


class FakeGazepoint:
    """A TCP server on 127.0.0.1 speaking enough of the Open Gaze API; ``port`` may be given to come back on it."""

    def __init__(self, port: int = 0) -> None:
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self.connections: list[Connection] = []

    def accept(self, timeout: float = 10.0) -> Connection:
        self.listener.settimeout(timeout)
        sock, _ = self.listener.accept()
        connection = Connection(sock)
        self.connections.append(connection)
        return connection

    def close(self) -> None:
        for connection in self.connections:
            connection.close()
        self.listener.close()


@pytest.fixture
def server():
    fake = FakeGazepoint()
    yield fake
    fake.close()


@pytest.fixture
def source(server):
    with GazepointSource(port=server.port, stale_after=60.0, **FAST) as src:
        yield src


@pytest.fixture
def streaming(server, source):
    """A connected source and the server's end, past the commands."""
    connection = server.accept()
    connection.read_commands()
    return source, connection


def rejected_kinds(src) -> list[str]:
    """Every kind of bad record ``src`` rejects from now on (problems() shows only the newest)."""
    kinds: list[str] = []
    real = src._reject

    def spy(kind, detail):
        kinds.append(kind)
        real(kind, detail)

    src._reject = spy
    return kinds


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def moved_to(src, x, y) -> bool:
    sample = src.latest()
    return sample is not None and math.isclose(sample.x, x, abs_tol=1e-9) and math.isclose(sample.y, y, abs_tol=1e-9)


# -- the conversation ----------------------------------------------------------------------------------------------

def test_it_sends_the_commands_and_follows_the_servers_gaze(server, source):
    assert source.state != "connecting" or source.description == f"Connecting to Gazepoint at 127.0.0.1:{server.port}"
    connection = server.accept()
    assert connection.read_commands() == [b'<SET ID="ENABLE_SEND_TIME" STATE="1" />',
                                          b'<SET ID="ENABLE_SEND_POG_BEST" STATE="1" />',
                                          b'<SET ID="ENABLE_SEND_DATA" STATE="1" />']
    wait_for(lambda: source.acknowledged == {"ENABLE_SEND_TIME", "ENABLE_SEND_POG_BEST", "ENABLE_SEND_DATA"})
    assert source.description == f"Connected to Gazepoint at 127.0.0.1:{server.port}, waiting for gaze data"
    assert source.other_messages == 3 and source.rejected == 0
    for i, (x, y) in enumerate([(0.1, 0.2), (0.7, 0.3), (0.45, 0.9)]):
        connection.send(rec(x, y, t=10.0 + i / 60))
        wait_for(lambda x=x, y=y: moved_to(source, x, y))
        assert source.latest().t == pytest.approx(10.0 + i / 60, abs=1e-5)
    assert source.received == 3 and source.problems() == ""
    assert source.description == f"Receiving gaze from Gazepoint at 127.0.0.1:{server.port}"


def test_a_record_without_time_is_timed_on_arrival(streaming):
    source, connection = streaming
    connection.send(rec(0.5, 0.5))
    wait_for(lambda: source.received == 1)
    assert abs(source.latest().t - time.monotonic()) < 60


def test_the_fixation_point_when_asked(server):
    with GazepointSource(port=server.port, stale_after=60.0, pog="fixation", **FAST) as src:
        connection = server.accept()
        assert connection.read_commands()[1] == b'<SET ID="ENABLE_SEND_POG_FIX" STATE="1" />'
        connection.send(b'<REC TIME="1.5" FPOGX="0.25" FPOGY="0.75" FPOGS="1.2" FPOGD="0.3" FPOGID="7" FPOGV="1" '
                        b'BPOGX="0.9" BPOGY="0.9" BPOGV="1" />\r\n')
        wait_for(lambda: moved_to(src, 0.25, 0.75))


def test_every_field_enabled_still_reads_the_best_point(streaming):
    """A record as a real server sends it with many fields enabled (the layout of Gazepoint's own logs)."""
    source, connection = streaming
    connection.send(b'<REC CNT="17" TIME="706.70380" TIME_TICK="94841050736" FPOGX="0.00000" FPOGY="0.00000" '
                    b'FPOGS="703.54175" FPOGD="0.02490" FPOGID="2275" FPOGV="0" LPOGX="0.43914" LPOGY="0.70982" '
                    b'LPOGV="1" RPOGX="0.52147" RPOGY="0.38244" RPOGV="1" BPOGX="0.48031" BPOGY="0.54613" BPOGV="1" '
                    b'LPCX="0.19850" LPCY="0.57422" LPD="40.11438" LPS="0.98" LPV="1" CX="0.5" CY="0.5" CS="0" '
                    b'USER_DATA="a &lt;b&gt; &amp; /&gt;" />\r\n')
    wait_for(lambda: moved_to(source, 0.48031, 0.54613))
    assert source.latest().t == pytest.approx(706.7038)


def test_records_split_byte_by_byte_and_many_in_one_read(streaming):
    source, connection = streaming
    for byte in rec(0.31, 0.41, t=1.0):
        connection.send(bytes([byte]))
        time.sleep(0.0005)
    wait_for(lambda: moved_to(source, 0.31, 0.41))
    connection.send(b"".join(rec(i / 100, 1 - i / 100, t=2.0 + i / 60) for i in range(1, 51)))
    wait_for(lambda: source.received == 51)
    assert moved_to(source, 0.5, 0.5) and source.rejected == 0


def test_an_invalid_flag_is_a_lost_sample_and_keeps_the_last_point(streaming):
    source, connection = streaming
    connection.send(rec(0.3, 0.3, t=1.0))
    wait_for(lambda: source.received == 1)
    connection.send(b'<REC TIME="1.1" BPOGX="0.00000" BPOGY="0.00000" BPOGV="0" />\r\n'
                    + rec(1.7, -2.0, t=1.2, valid=0)  # an invalid point may lie anywhere: it is never used
                    + b'<REC TIME="1.3" BPOGV="0" />\r\n')
    wait_for(lambda: source.lost == 3)
    assert moved_to(source, 0.3, 0.3) and source.rejected == 0


def test_the_points_are_smoothed(server):
    with GazepointSource(port=server.port, stale_after=60.0, smoothing=OneEuroFilter(1.0, 0.0), **FAST) as src:
        connection = server.accept()
        connection.read_commands()
        connection.send(rec(0.0, 0.0, t=10.0))
        wait_for(lambda: src.received == 1)
        connection.send(rec(1.0, 1.0, t=10.02))
        wait_for(lambda: src.received == 2)
        assert 0.0 < src.latest().x < 0.5


# -- hostile streams -----------------------------------------------------------------------------------------------

BAD_RECORDS = [
    (b'<REC TIME="1" BPOGX="0.5" BPO', b"\r\n", "truncated"),  # cut short by the line end
    (b'<REC TIME="1" BPOGX="0.5', b"", "truncated"),  # cut short by the next record's "<"
    (b"\xff\xfe\x00garbage", b"\r\n", "garbage"),
    (b'<REC BPOGX="nan" BPOGY="0.5" BPOGV="1" />', b"\r\n", "non-finite"),
    (b'<REC BPOGX="inf" BPOGY="0.5" BPOGV="1" />', b"\r\n", "non-finite"),
    (b'<REC BPOGX="1e999" BPOGY="0.5" BPOGV="1" />', b"\r\n", "non-finite"),
    (b'<REC BPOGX="' + b"9" * 5000 + b'" BPOGY="0.5" BPOGV="1" />', b"\r\n", "non-finite"),
    (b'<REC BPOGX="0x1p3" BPOGY="0.5" BPOGV="1" />', b"\r\n", "bad number"),
    (b'<REC BPOGX="1_0" BPOGY="0.5" BPOGV="1" />', b"\r\n", "bad number"),
    (b'<REC BPOGX="" BPOGY="0.5" BPOGV="1" />', b"\r\n", "bad number"),
    (b'<REC TIME="-inf" BPOGX="0.5" BPOGY="0.5" BPOGV="1" />', b"\r\n", "non-finite"),
    (b'<REC BPOGX="0.5" BPOGY="0.5" BPOGV="2" />', b"\r\n", "bad valid flag"),
    (b'<REC BPOGX="0.5" BPOGY="0.5" />', b"\r\n", "no point of gaze"),
    (b'<REC BPOGV="1" />', b"\r\n", "no point of gaze"),
    (b'<REC BPOGX="0.5" BPOGX="0.6" BPOGY="0.5" BPOGV="1" />', b"\r\n", "not XML"),  # duplicate attribute
    (b'<REC BPOGX="&xxe;" BPOGY="0.5" BPOGV="1" />', b"\r\n", "not XML"),  # an entity nobody declared
    (b'<REC BPOGX="&#0;" BPOGY="0.5" BPOGV="1" />', b"\r\n", "not XML"),
    (b'<REC BPOGX="\xff" BPOGY="0.5" BPOGV="1" />', b"\r\n", "not XML"),  # not UTF-8
    (b'<REC BPOGX=0.5 BPOGY="0.5" BPOGV="1" />', b"\r\n", "not XML"),
    (b'<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">]>', b"\r\n", "not a record"),
    (b'<!ENTITY xxe SYSTEM "file:///etc/passwd">', b"\r\n", "not a record"),
    (b'<?xml version="1.0"?>', b"\r\n", "not a record"),
    (b'<REC BPOGX="0.5" BPOGY="0.5" BPOGV="1">', b"\r\n", "not a record"),  # not an empty element
    (b"</REC>", b"\r\n", "not a record"),
    (b"<>", b"\r\n", "not a record"),
]


@pytest.mark.parametrize(("record", "end", "kind"), BAD_RECORDS, ids=[kind for _, _, kind in BAD_RECORDS])
def test_a_hostile_record_is_counted_and_the_next_one_read(streaming, record, end, kind):
    source, connection = streaming
    kinds = rejected_kinds(source)
    connection.send(record + end + rec(0.62, 0.38, t=5.0))
    wait_for(lambda: source.received == 1)
    assert moved_to(source, 0.62, 0.38) and source.alive and source.lost == 0
    assert kind in kinds, kinds
    assert source.problems().startswith("Gazepoint: ")


def test_entities_are_never_expanded():
    """A billion-laughs or XXE document cannot reach the parser whole: the framer cuts it at each "<", and an element
    that is not a plain empty element is refused before parsing."""
    laughs = (b'<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
              b'<REC BPOGX="&lol2;" BPOGY="0.5" BPOGV="1" />')
    elements = [item for item in RecordFramer().feed(laughs) if isinstance(item, bytes)]
    assert elements and elements[-1].startswith(b"<REC")
    for element in elements:
        with pytest.raises(BadRecord):
            parse_element(element)
    with pytest.raises(BadRecord, match="not a record"):
        parse_element(laughs)


def test_a_record_that_never_ends_is_refused_without_using_up_memory(streaming):
    source, connection = streaming
    connection.send(b'<REC TIME="1" USER_DATA="')
    chunk = b"A" * 65536
    for _ in range(16):  # 1 MiB inside one attribute value, no end in sight
        connection.send(chunk)
    wait_for(lambda: "too long" in source.problems())
    assert len(source._framer._tag) <= MAX_RECORD
    connection.send(b"more of it" * 1000 + b"\r\n" + rec(0.2, 0.8, t=2.0))
    wait_for(lambda: moved_to(source, 0.2, 0.8))
    assert source.alive and source.connections == 1  # skipped, not disconnected


def test_a_stream_of_garbage_keeps_being_reported_and_the_input_survives(streaming):
    source, connection = streaming
    for _ in range(8):
        connection.send(bytes(range(1, 60)) * 1111)  # no "<" at all: 64 KiB at a time
    connection.send(b"\r\n" + rec(0.6, 0.6, t=3.0))
    wait_for(lambda: moved_to(source, 0.6, 0.6))
    assert source.rejected >= 2 and "garbage" in source.problems()


def test_a_flood_of_records_is_read_to_the_newest(streaming):
    source, connection = streaming
    flood = b"".join(rec((i % 997) / 997, 0.5, t=i / 150) for i in range(20000))
    connection.send(flood + rec(0.123, 0.456, t=20000 / 150))
    wait_for(lambda: moved_to(source, 0.123, 0.456), seconds=60.0)
    assert source.received == 20001 and source.rejected == 0


def test_an_exception_while_handling_a_record_is_counted_and_the_connection_kept(streaming, monkeypatch, caplog):
    import dasher_rnn.input.gazepoint as gazepoint

    real = gazepoint.read_record

    def flaky(attributes, pog="best"):
        if attributes.get("BOOM"):
            raise MemoryError("out of memory")
        return real(attributes, pog)

    monkeypatch.setattr(gazepoint, "read_record", flaky)
    source, connection = streaming
    connection.send(b'<REC BOOM="1" />\r\n<REC BOOM="1" />\r\n' + rec(0.5, 0.25, t=1.0))
    wait_for(lambda: source.received == 1)
    assert source.rejected == 2 and "MemoryError" in source.problems() and source.connections == 1
    assert sum("MemoryError" in r.getMessage() for r in caplog.records) == 1


# -- reconnecting --------------------------------------------------------------------------------------------------

def test_it_reconnects_when_the_server_closes_and_comes_back(server, streaming):
    source, connection = streaming
    connection.send(rec(0.1, 0.1, t=1.0))
    wait_for(lambda: source.received == 1)
    connection.close()
    wait_for(lambda: source.state == "retrying" or source.connections == 2)
    second = server.accept()
    assert second.read_commands()[2] == b'<SET ID="ENABLE_SEND_DATA" STATE="1" />'  # set up anew
    second.send(rec(0.9, 0.8, t=2.0))
    wait_for(lambda: moved_to(source, 0.9, 0.8))
    assert source.connections == 2 and source.alive


def test_a_server_that_goes_away_is_said_then_retried_until_it_is_back():
    port = free_port()
    first = FakeGazepoint(port)
    with GazepointSource(port=port, stale_after=60.0, **FAST) as src:
        connection = first.accept()
        connection.read_commands()
        connection.send(rec(0.4, 0.4, t=1.0))
        wait_for(lambda: src.received == 1)
        first.close()  # Gazepoint Control quits
        wait_for(lambda: src.state == "retrying" and src.connections == 1)
        assert src.description.startswith(f"Gazepoint at 127.0.0.1:{port}: connection lost, retrying (")
        assert src.problems().startswith("Gazepoint: connection lost, retrying (")
        second = FakeGazepoint(port)  # and starts again
        try:
            connection = second.accept()
            connection.read_commands()
            connection.send(rec(0.7, 0.2, t=50.0))
            wait_for(lambda: moved_to(src, 0.7, 0.2))
            assert src.problems() == "" and src.connections == 2
        finally:
            second.close()


def test_a_server_not_there_yet_is_waited_for():
    port = free_port()
    with GazepointSource(port=port, stale_after=60.0, **FAST) as src:
        wait_for(lambda: src.state == "retrying")
        assert src.description.startswith(f"Gazepoint at 127.0.0.1:{port}: not reached, retrying (")
        assert src.problems().startswith(f"Gazepoint: cannot connect to 127.0.0.1:{port}, retrying (")
        assert src.latest() is None
        server = FakeGazepoint(port)
        try:
            connection = server.accept()
            connection.read_commands()
            connection.send(rec(0.33, 0.66, t=1.0))
            wait_for(lambda: moved_to(src, 0.33, 0.66))
        finally:
            server.close()


def test_a_silent_connection_is_made_anew(server):
    with GazepointSource(port=server.port, stale_after=60.0, idle_timeout=0.3, **FAST) as src:
        server.accept().read_commands()  # then says nothing
        second = server.accept()  # the client gave up on the silent one and came back
        second.read_commands()
        second.send(rec(0.5, 0.6, t=1.0))
        wait_for(lambda: moved_to(src, 0.5, 0.6))
        assert src.connections >= 2


def test_a_server_that_resets_the_connection_mid_record(server, source):
    connection = server.accept()
    connection.read_commands()
    connection.send(b'<REC TIME="1" BPOGX="0.5')
    connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    connection.close()  # RST
    second = server.accept()
    second.read_commands()
    second.send(b'" BPOGY="0.5" BPOGV="1" />\r\n' + rec(0.15, 0.85, t=2.0))  # the old half means nothing now
    wait_for(lambda: moved_to(source, 0.15, 0.85))
    assert source.received == 1 and source.alive


def test_close_stops_the_thread_whatever_it_is_doing(server):
    src = GazepointSource(port=server.port, **FAST)
    server.accept().read_commands()
    wait_for(lambda: src.state == "connected")
    src.close()
    src.close()
    assert not src.alive and src.problems() == ""
    waiting = GazepointSource(port=free_port(), backoff=(5.0, 5.0))
    wait_for(lambda: waiting.state == "retrying")
    started = time.monotonic()
    waiting.close()  # in the middle of a 5 s wait
    assert not waiting.alive and time.monotonic() - started < 4.0


@pytest.mark.parametrize("kwargs", [dict(port=0), dict(port=70000), dict(port="4242"), dict(host=""),
                                    dict(host="a b"), dict(pog="left"), dict(connect_timeout=0),
                                    dict(backoff=(1.0, 0.5))])
def test_unusable_settings_are_a_clear_error(kwargs):
    with pytest.raises(GazeSourceError):
        GazepointSource(**kwargs)


# -- the pieces, fuzzed --------------------------------------------------------------------------------------------

def test_read_record_and_commands():
    assert read_record({"BPOGX": "0.5", "BPOGY": " 0.25 ", "BPOGV": "1", "TIME": "3"}) == (0.5, 0.25, 3.0)
    assert read_record({"BPOGV": "0"}) is None
    assert read_record({"FPOGX": "0.1", "FPOGY": "0.2", "FPOGV": "1"}, "fixation") == (0.1, 0.2, None)
    assert commands("fixation").count(b"\r\n") == 3


VALID_STREAM = b"".join(rec(i / 10, 1 - i / 10, t=float(i)) for i in range(10)) + b'<ACK ID="X" STATE="1" />\r\n'
stream_pieces = st.one_of(
    st.binary(max_size=80),
    st.sampled_from([b"<", b">", b"/>", b'"', b"'", b"\r\n", b"<REC ", b'BPOGX="', b"<!", b"&", b"&amp;", b"\x00"]),
    st.sampled_from([rec(0.5, 0.5, t=1.0), b'<REC BPOGX="nan" BPOGY="1" BPOGV="1" />', b'<REC A="' + b"x" * 300]),
)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(0, 400), max_size=8))
def test_the_framer_reads_the_same_elements_however_the_stream_is_cut(data, cuts):
    stream = data + VALID_STREAM
    whole = RecordFramer(max_record=64).feed(stream)
    framer, pieces = RecordFramer(max_record=64), []
    at = 0
    for cut in sorted(set(cuts)):
        pieces += framer.feed(stream[at:cut])
        at = max(at, cut)
    pieces += framer.feed(stream[at:])
    assert [p for p in pieces if isinstance(p, bytes)] == [p for p in whole if isinstance(p, bytes)]
    assert whole[-1] == b'<ACK ID="X" STATE="1" />'


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(stream_pieces, max_size=30))
def test_the_framer_and_parser_only_yield_records_or_bad_ones(pieces):
    framer = RecordFramer(max_record=256)
    for piece in pieces:
        for item in framer.feed(piece):
            assert len(framer._tag) <= 256
            if isinstance(item, BadRecord):
                assert item.kind and len(str(item)) < 400
                continue
            assert item.startswith(b"<") and item.endswith(b">")
            try:
                name, attributes = parse_element(item)
            except BadRecord:
                continue
            if name == "REC":
                try:
                    point = read_record(attributes)
                except BadRecord:
                    continue
                assert point is None or all(v is None or math.isfinite(v) for v in point)
    tail = framer.feed(b"\r\n" + rec(0.5, 0.5, t=1.0))
    assert tail[-1] == rec(0.5, 0.5, t=1.0).rstrip(b"\r\n")  # whatever came before, the next record is read


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(stream_pieces, min_size=1, max_size=10), n=st.integers(1, 10**6))
def test_the_source_survives_any_stream(fuzz_stream, batch, n):
    source, connection = fuzz_stream
    before = source.received
    x, y = round((n % 997) / 997, 5), round(1 - (n % 991) / 991, 5)
    connection.send(b"".join(batch) + b"\r\n" + rec(x, y, t=float(n)))
    wait_for(lambda: moved_to(source, x, y) and source.received > before)
    assert source.alive and source.connections == 1


@pytest.fixture(scope="module")
def fuzz_stream():
    fake = FakeGazepoint()
    src = GazepointSource(port=fake.port, stale_after=3600.0, **FAST)
    connection = fake.accept()
    connection.read_commands()
    yield src, connection
    src.close()
    fake.close()


def test_the_fake_server_helpers_are_not_racy():
    """The fake server's accept has a deadline: a client that never comes fails the test, not hangs it."""
    fake = FakeGazepoint()
    try:
        with pytest.raises(TimeoutError):
            fake.accept(timeout=0.05)
    finally:
        fake.close()
    assert threading.active_count() >= 1


def test_a_flood_of_acknowledgements_keeps_nothing_and_the_connections_go_with_it(streaming):
    """Issue 48: ``<ACK ID="unique"/>`` grew ``acknowledged`` without bound (19 MB -> 1.29 GB in 60 s), kept after
    the connection closed."""
    source, connection = streaming
    wait_for(lambda: len(source.acknowledged) == 3)
    flood = b"".join(f'<ACK ID="FLOOD_{i}" STATE="1" />\r\n'.encode() for i in range(20_000))
    connection.send(flood + rec(0.25, 0.75))
    wait_for(lambda: moved_to(source, 0.25, 0.75))
    assert source.acknowledged == {"ENABLE_SEND_TIME", "ENABLE_SEND_POG_BEST", "ENABLE_SEND_DATA"}
    assert source.other_messages == 3 + 20_000  # counted, not kept
    connection.close()
    wait_for(lambda: source.state == "retrying")
    assert source.acknowledged == set()
