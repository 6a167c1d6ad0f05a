"""Memory of the app's process while a hostile tracker floods its input (issue 48): a Gazepoint server sending
``<ACK ID="unique"/>`` without end, and a Pupil Capture publishing surface events as fast as ZeroMQ takes them
(messages just under the input's limit, and 0.8 MB messages over it).

    python bench/input_floods.py [--seconds 60] [--floods gazepoint,pupil-200k,pupil-800k]

Each flood's sender is a separate process, so only the input's memory is measured: this process's resident set
(``VmRSS``) before the input opens, its peak while the flood lasts (sampled every 0.25 s), and after the sender has
gone and the input closed. Printed as one JSON object (``rows``: one per flood, the ``input-floods`` table's rows;
``python bench/report.py --update input_floods OUT`` folds it in).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GAZEPOINT_SENDER = """
import socket, sys, time
seconds = float(sys.argv[1])
server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0)); server.listen(1)
print(server.getsockname()[1], flush=True)
conn, _ = server.accept()
end, i, sent = time.monotonic() + seconds, 0, 0
while time.monotonic() < end:
    chunk = b"".join(b'<ACK ID="FLOOD_%d" STATE="1" />\\r\\n' % (i + k) for k in range(2000))
    i += 2000
    try:
        conn.sendall(chunk)
    except OSError:
        break
    sent += 2000
conn.close()
print(sent, flush=True)
"""

PUPIL_SENDER = """
import os, sys, threading, time
import msgpack, zmq
seconds, size = float(sys.argv[1]), int(sys.argv[2])
context = zmq.Context()
remote = context.socket(zmq.REP); remote_port = remote.bind_to_random_port("tcp://127.0.0.1")
pub = context.socket(zmq.PUB); pub.setsockopt(zmq.SNDHWM, 100_000); pub_port = pub.bind_to_random_port("tcp://127.0.0.1")
def serve():
    while True:
        remote.recv(); remote.send(str(pub_port).encode())
threading.Thread(target=serve, daemon=True).start()
print(remote_port, flush=True)
datum = {"norm_pos": [0.5, 0.5], "confidence": 1.0, "on_surf": True, "timestamp": 0.0}
pad = "x" * max(0, size - 200)
end, sent = time.monotonic() + seconds, 0
while time.monotonic() < end:
    datum["timestamp"] = time.monotonic()
    event = {"gaze_on_surfaces": [datum], "fixations_on_surfaces": [], "pad": pad}
    try:
        pub.send_multipart([b"surfaces.screen", msgpack.packb(event)], zmq.NOBLOCK)
        sent += 1
    except zmq.Again:
        time.sleep(0.0005)
print(sent, flush=True)
os._exit(0)  # not context.destroy(): Pupil Remote's thread may be in recv(), and terminating under it can hang
"""


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def flood(name: str, seconds: float) -> dict:
    gc.collect()
    before = rss_mb()
    if name == "gazepoint":
        from dasher_rnn.input.gazepoint import GazepointSource

        sender = subprocess.Popen([sys.executable, "-c", textwrap.dedent(GAZEPOINT_SENDER), str(seconds)],
                                  stdout=subprocess.PIPE, text=True)
        port = int(sender.stdout.readline())
        source = GazepointSource(port=port, idle_timeout=0, backoff=(5.0, 5.0))
        size = None
    else:
        from dasher_rnn.input.pupil_core import PupilCoreSource

        size = int(name.split("-")[1].rstrip("k")) * 1000
        sender = subprocess.Popen([sys.executable, "-c", textwrap.dedent(PUPIL_SENDER), str(seconds), str(size)],
                                  stdout=subprocess.PIPE, text=True)
        port = int(sender.stdout.readline())
        source = PupilCoreSource(port=port, idle_timeout=seconds + 30, backoff=(0.25, 1.0))
    peak = before
    while sender.poll() is None:
        peak = max(peak, rss_mb())
        time.sleep(0.25)
    sent = int(sender.stdout.readline() or 0)
    sender.stdout.close()
    time.sleep(1.0)
    peak = max(peak, rss_mb())
    counts = {"gazepoint": lambda: {"kept": len(source.acknowledged), "counted": source.other_messages},
              }.get(name, lambda: {"received": source.received, "superseded": source.superseded,
                                   "stale": source.stale, "dropped_connections": source.disconnections,
                                   "problems": source.problems()})()
    source.close()
    gc.collect()
    after = rss_mb()
    return {"key": name, "seconds": seconds, "message_bytes": size, "sent": sent, "rss_before_mb": round(before, 1),
            "rss_peak_mb": round(peak, 1), "rss_after_mb": round(after, 1), "growth_mb": round(peak - before, 1),
            **counts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long each flood lasts")
    parser.add_argument("--floods", default="gazepoint,pupil-200k,pupil-800k", help="which floods, in order")
    args = parser.parse_args(argv)
    rows = [flood(name, args.seconds) for name in args.floods.split(",")]
    print(json.dumps({"rows": rows, "load_average_before": list(os.getloadavg())}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
