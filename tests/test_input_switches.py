"""Switch presses from a game controller (Linux's joystick interface, faked by a FIFO) and from a socket message."""

from __future__ import annotations

import os
import socket
import struct

import pytest

from dasher_rnn.input.gaze import GazeSourceError
from dasher_rnn.input.switches import MAX_PENDING, JoystickSwitches, UDPSwitches
from tests.helpers import wait_for

JS = struct.Struct("<IhBB")


def collect(source, count):
    seen = []

    def enough():
        seen.extend(source.events())
        return len(seen) >= count

    wait_for(enough)
    return [(e.switch, e.down) for e in seen]


@pytest.fixture
def joystick(tmp_path):
    path = tmp_path / "js0"
    os.mkfifo(path)
    source = JoystickSwitches(str(path), buttons=(0, 3))
    writer = os.open(path, os.O_WRONLY)
    yield source, writer
    os.close(writer)
    source.close()


def test_game_controller_buttons_are_switches(joystick):
    source, writer = joystick
    events = [JS.pack(0, 1, 0x81, 0),  # the state at opening: not a press
              JS.pack(10, 1, 0x01, 0), JS.pack(20, 0, 0x01, 0),  # button 1: the first switch
              JS.pack(30, 5000, 0x02, 0),  # an axis
              JS.pack(40, 1, 0x01, 7),  # a button that is no switch
              JS.pack(50, 1, 0x01, 3), JS.pack(60, 0, 0x01, 3)]  # button 4: the second switch
    data = b"".join(events)
    os.write(writer, data[:5])  # an event split across reads
    os.write(writer, data[5:])
    assert collect(source, 4) == [(0, True), (0, False), (1, True), (1, False)]


def test_a_flood_of_presses_is_bounded_and_the_reader_goes_on(joystick):
    source, writer = joystick
    os.write(writer, JS.pack(0, 1, 0x01, 0) * 2000)
    # all of the flood read, however slowly (draining when the queue was first full left a busy machine's reader
    # adding the rest of the flood after it, before the release below)
    wait_for(lambda: source.received == 2000)
    assert len(source.events()) == MAX_PENDING
    os.write(writer, JS.pack(0, 0, 0x01, 3))
    assert collect(source, 1) == [(1, False)]


def test_no_game_controller_says_so_in_one_line(tmp_path):
    with pytest.raises(GazeSourceError, match=r"no game controller at .*js9 \(not found\)"):
        JoystickSwitches(str(tmp_path / "js9"))


@pytest.fixture
def udp():
    source = UDPSwitches(port=0)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    yield source, lambda data: sock.sendto(data, ("127.0.0.1", source.port))
    sock.close()
    source.close()


def test_socket_messages_press_and_release_switches(udp):
    source, send = udp
    send(b"down 1")
    send(b"up 1\npress 2\n")
    assert collect(source, 4) == [(0, True), (0, False), (1, True), (1, False)]
    assert "switch presses on UDP port" in source.description


def test_bad_socket_messages_are_counted_and_never_stop_the_input(udp):
    source, send = udp
    for bad in (b"down 3", b"jump 1", b"\xff\xfe", b"x" * 5000, b"down", b"press 1 2"):
        send(bad)
    wait_for(lambda: source.rejected == 6)
    send(b"press 1")
    assert collect(source, 2) == [(0, True), (0, False)]
    assert "6 bad datagrams ignored" in source.problems()


def test_with_an_input_token_only_messages_that_carry_it_count():
    source = UDPSwitches(port=0, token="s3cret")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"press 1", ("127.0.0.1", source.port))
        sock.sendto(b"token s3cret\npress 2", ("127.0.0.1", source.port))
        assert collect(source, 2) == [(1, True), (1, False)]
        assert source.refused == 1
    source.close()
