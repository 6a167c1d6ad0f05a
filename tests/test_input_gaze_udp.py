import json
import time

import pytest

from dasher_rnn.input.gaze import GazeSourceError
from dasher_rnn.input.gaze_udp import BadDatagram, GazeUDPSource, parse_datagram
from dasher_rnn.input.one_euro import OneEuroFilter
from tests.helpers import wait_for


@pytest.fixture
def source():
    with GazeUDPSource(port=0, stale_after=60.0) as src:
        yield src


def send(sock, src, payload):
    sock.sendto(payload if isinstance(payload, bytes) else payload.encode(), ("127.0.0.1", src.port))


def test_json_datagrams(source, sender):
    assert source.port > 0 and source.latest() is None
    send(sender, source, json.dumps({"x": 0.42, "y": 0.61, "t": 1000.5}))
    wait_for(lambda: source.received == 1)
    sample = source.latest()
    assert (sample.x, sample.y, sample.t) == (0.42, 0.61, 1000.5)
    send(sender, source, json.dumps({"x": 2.0, "y": -3, "extra": "ignored"}))  # clamped, no t: arrival time
    wait_for(lambda: source.received == 2)
    sample = source.latest()
    assert (sample.x, sample.y) == (1.5, -0.5)
    assert abs(sample.t - time.time()) < 60


def test_text_datagrams(source, sender):
    send(sender, source, "0.25 0.75 12.5\n")
    wait_for(lambda: source.received == 1)
    assert (source.latest().x, source.latest().y, source.latest().t) == (0.25, 0.75, 12.5)
    send(sender, source, "0.1 0.2")
    wait_for(lambda: source.received == 2)
    assert (source.latest().x, source.latest().y) == (0.1, 0.2)


def test_invalid_datagrams_are_counted_not_raised(source, sender, caplog):
    bad = [b"\xff\xfe\x00", b"{not json", b"[1, 2]", b'{"x": 0.5}', b'{"x": "a", "y": 0.5}', b'{"x": NaN, "y": 0.5}',
           b"0.5", b"0.5 inf", b"a b c", b'{"x": 0.5, "y": 0.5, "valid": "no"}']
    for payload in bad:
        send(sender, source, payload)
    send(sender, source, b"0.5 0.5")
    wait_for(lambda: source.received == 1 and source.rejected == len(bad))
    assert source.lost == 0
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert 0 < len(warnings) < len(bad)  # once per kind


def test_invalid_sample_is_ignored(source, sender):
    send(sender, source, json.dumps({"x": 0.3, "y": 0.3, "t": 1.0}))
    wait_for(lambda: source.received == 1)
    send(sender, source, json.dumps({"valid": False, "t": 1.1}))
    send(sender, source, json.dumps({"x": 0.9, "y": 0.9, "t": 1.2, "valid": False}))
    wait_for(lambda: source.lost == 2)
    assert (source.latest().x, source.latest().y) == (0.3, 0.3)
    assert source.rejected == 0


def test_stale_sample_is_dropped(sender):
    seen = []
    with GazeUDPSource(port=0, stale_after=0.05, on_sample=seen.append) as src:
        send(sender, src, "0.5 0.5")
        wait_for(lambda: src.received == 1)
        wait_for(lambda: src.latest() is None)
        assert seen[0].x == 0.5  # the callback got the sample
        send(sender, src, "0.6 0.6")
        wait_for(lambda: len(seen) == 2)


def test_smoothing_is_applied(sender):
    with GazeUDPSource(port=0, smoothing=OneEuroFilter(min_cutoff=1.0, beta=0.0), stale_after=60.0) as src:
        send(sender, src, '{"x": 0.0, "y": 0.0, "t": 10.0}')
        wait_for(lambda: src.received == 1)
        send(sender, src, '{"x": 1.0, "y": 1.0, "t": 10.02}')
        wait_for(lambda: src.received == 2)
        assert 0.0 < src.latest().x < 0.5


def test_callback_errors_do_not_stop_the_source(sender):
    def broken(_sample):
        raise RuntimeError("boom")

    with GazeUDPSource(port=0, stale_after=60.0, on_sample=broken) as src:
        send(sender, src, "0.1 0.1")
        send(sender, src, "0.2 0.2")
        wait_for(lambda: src.received == 2)


def test_close_stops_the_thread_and_frees_the_port():
    src = GazeUDPSource(port=0)
    port = src.port
    src.close()
    src.close()
    assert not src._thread.is_alive()
    GazeUDPSource(port=port).close()


def test_port_in_use_is_a_clear_error():
    with GazeUDPSource(port=0) as src, pytest.raises(GazeSourceError, match="cannot listen"):
        GazeUDPSource(port=src.port)


def test_parse_datagram():
    assert parse_datagram(b' {"x": 1, "y": 0, "t": 3} ') == (1.0, 0.0, 3.0)
    assert parse_datagram(b'{"valid": false}') is None
    with pytest.raises(BadDatagram) as info:
        parse_datagram(b'{"y": 1}')
    assert info.value.kind == "missing x or y"


# Issue 21, item 1: one datagram ended gaze input (the receiver thread died, the app stayed paused).
HUGE_INT = b'{"x": ' + b"1" * 401 + b', "y": 0.5}'  # 418 bytes: OverflowError in math.isfinite
DEEP = b'{"x": ' + b"[" * 1500 + b"]" * 1500 + b', "y": 0.5}'  # 3 KB of nesting: RecursionError in json


@pytest.mark.parametrize("payload", [HUGE_INT, DEEP, b"1" * 401 + b" 0.5", b'{"x": 0.5, "y": 0.5, "t": -' + b"9" * 400 + b"}",
                                     b"0.5 0.5 " + b"1" * 5000])
def test_huge_numbers_and_deep_nesting_are_bad_datagrams(payload):
    with pytest.raises(BadDatagram):
        parse_datagram(payload)


def test_one_bad_datagram_does_not_end_gaze_input(source, sender):
    assert len(HUGE_INT) == 418 and len(DEEP) > 3000
    send(sender, source, HUGE_INT)
    send(sender, source, DEEP)
    send(sender, source, "0.25 0.75")
    wait_for(lambda: source.received == 1)
    assert source.rejected == 2 and source._thread.is_alive()
    assert (source.latest().x, source.latest().y) == (0.25, 0.75)


def test_an_exception_in_the_handler_is_counted_and_reported(source, sender, monkeypatch, caplog):
    import dasher_rnn.input.gaze_udp as gaze_udp

    real = gaze_udp.parse_datagram

    def flaky(data):
        if data == b"boom":
            raise MemoryError("the parser ran out of memory")
        return real(data)

    monkeypatch.setattr(gaze_udp, "parse_datagram", flaky)
    send(sender, source, b"boom")
    send(sender, source, b"boom")
    send(sender, source, "0.5 0.5")
    wait_for(lambda: source.received == 1)
    assert source.rejected == 2 and source._thread.is_alive()
    assert "MemoryError" in source.problems() and "2 bad datagrams" in source.problems()
    assert sum("MemoryError" in r.getMessage() for r in caplog.records) == 1  # logged once, with its traceback


def test_problems_are_reported_for_the_status_bar(source, sender):
    assert source.problems() == ""
    send(sender, source, b"{not json")
    wait_for(lambda: source.rejected == 1)
    assert source.problems().startswith("Gaze over UDP: 1 bad datagram ignored") and "not JSON" in source.problems()


def test_an_over_long_datagram_is_rejected_whole(source, sender):
    send(sender, source, b'{"x": 0.5, "y": 0.5, "pad": "' + b" " * 5000 + b'"}')
    send(sender, source, "0.5 0.5")
    wait_for(lambda: source.received == 1 and source.rejected == 1)
    assert "too long" in source.problems()


def test_a_receiver_that_stopped_says_so(sender, monkeypatch):
    monkeypatch.setattr(GazeUDPSource, "_handle", lambda self, data, sender: (_ for _ in ()).throw(SystemExit))
    monkeypatch.setattr("threading.excepthook", lambda args: None)  # the thread's end is the point here
    with GazeUDPSource(port=0) as src:
        send(sender, src, "0.5 0.5")
        wait_for(lambda: not src.alive)
        assert "Gaze over UDP: stopped receiving" in src.problems()
    assert src.problems() == ""  # closed on purpose: nothing to report


# -- who may send: the input token ------------------------------------------------------------------------------

def test_with_an_input_token_a_datagram_without_it_is_ignored_counted_and_said_once(sender, caplog):
    """Any local program can send to the port: with a token set, only a sender that knows it moves the pointer.
    The others are ignored (not even bad datagrams), counted, logged once and shown in the status bar."""
    with GazeUDPSource(port=0, stale_after=60.0, token="s3cret-Token") as src:
        assert "only from senders with the input token" in src.description
        for payload in (json.dumps({"x": 0.1, "y": 0.1}), "0.1 0.1",  # no token (plain text cannot carry one)
                        json.dumps({"x": 0.1, "y": 0.1, "token": "guess"}),  # a wrong one
                        json.dumps({"x": 0.1, "y": 0.1, "token": 7}), b"\xff{", "{not json"):
            send(sender, src, payload)
        wait_for(lambda: src.refused == 6)
        assert src.received == 0 and src.rejected == 0 and src.latest() is None
        port = sender.getsockname()[1]
        assert src.last_refused_from == f"127.0.0.1:{port}"
        assert f"6 datagrams without the input token ignored (the last from 127.0.0.1:{port})" in src.problems()
        said = [r for r in caplog.records if "without the input token" in r.getMessage()]
        assert len(said) == 1  # once, however many follow

        send(sender, src, json.dumps({"x": 0.42, "y": 0.61, "token": "s3cret-Token"}))  # the bridge that knows it
        wait_for(lambda: src.received == 1)
        assert (src.latest().x, src.latest().y) == (0.42, 0.61) and src.refused == 6
        send(sender, src, json.dumps({"valid": False, "token": "s3cret-Token"}))
        send(sender, src, json.dumps({"x": "left", "token": "s3cret-Token"}))  # the token, but a bad datagram
        wait_for(lambda: src.lost == 1 and src.rejected == 1)


def test_without_an_input_token_every_local_sender_counts_and_a_token_key_is_ignored(source, sender):
    send(sender, source, json.dumps({"x": 0.3, "y": 0.4, "token": "anything"}))
    send(sender, source, "0.5 0.5")
    wait_for(lambda: source.received == 2)
    assert source.refused == 0 and "input token" not in source.problems()


@pytest.mark.parametrize("token", ["", "with space", "x" * 129, "naïve"])
def test_an_unusable_input_token_is_a_clear_error(token):
    with pytest.raises(GazeSourceError, match="input token"):
        GazeUDPSource(port=0, token=token)
