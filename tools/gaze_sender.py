"""An eye tracker in a process of its own: sends the gaze of a simulated eye (``zoom/gaze_noise.py``: a tracker grade's
accuracy, precision, rate, losses, and the eye's drift, microsaccades, blinks and saccades) as datagrams in the app's
gaze format (``input/gaze_udp.py``), in real time, to the app's gaze port.

    python tools/gaze_sender.py --port 5577 --grade consumer --screen 1280x800

Where the eye's owner wants to look comes on standard input, one line at a time: ``look X Y`` (pixels of the screen)
or ``quit``. Samples go out at the grade's rate with the time they were taken (``t``); lost ones (blinks, tracking
losses) as ``"valid": false``, as trackers send them. The window under test is driven by these datagrams alone.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time

from dasher_rnn.zoom.gaze_noise import Screen, SimulatedEye, grade


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, required=True, help="the app's gaze port (UDP, on 127.0.0.1)")
    p.add_argument("--grade", default="consumer", help="research, consumer or poor (zoom/gaze_noise.py)")
    p.add_argument("--screen", default="1280x800", help="the screen's pixels, WIDTHxHEIGHT")
    p.add_argument("--height-cm", type=float, default=29.9, help="the screen's height, for degrees (default: 24 inch)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    width, height = (int(v) for v in args.screen.lower().split("x"))
    screen = Screen(width, height, args.height_cm * width / height, args.height_cm)
    eye = SimulatedEye(grade(args.grade), screen, args.seed)
    start = time.monotonic()
    lock = threading.Lock()
    done = threading.Event()

    def read_intent() -> None:
        for line in sys.stdin:
            words = line.split()
            if words[:1] == ["quit"]:
                break
            if len(words) == 3 and words[0] == "look":
                with lock:
                    eye.look((float(words[1]), float(words[2])), time.monotonic() - start)
        done.set()

    threading.Thread(target=read_intent, daemon=True).start()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    period = 1.0 / eye.grade.rate_hz
    while not done.is_set():
        with lock:
            samples = eye.samples(time.monotonic() - start)
        for s in samples:
            message = {"x": s.x / width, "y": s.y / height, "t": s.t} if s.valid else {"valid": False, "t": s.t}
            sock.sendto(json.dumps(message).encode(), ("127.0.0.1", args.port))
        done.wait(period)
    sock.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
