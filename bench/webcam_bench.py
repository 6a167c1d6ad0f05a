"""The webcam head pointer's cost: 640x480 frames through HeadPointerSource on its own thread, as a camera would give
them, frame to pointer sample. Prints JSON.

    python bench/webcam_bench.py [--seconds 20] [--search-seconds 5] [--flat-out-frames 600] [--fps 30]
                                 [--threads 1] [--decode jpeg|none] [--screenshot docs/head-pointer-preview.png]
                                 [--results bench/results/webcam.json --beside TEXT]

The frames are made beforehand (so making them costs nothing during the run) from a portrait that matplotlib ships
(``grace_hopper.jpg``): the face moving about the frame and turning (up to 12 degrees of yaw, 8 of pitch) in a slow
figure of eight, with a camera's sensor noise, then, for ``--search-seconds``, frames with no face (the portrait upside
down: the detector searching the whole frame every third frame). With ``--decode jpeg`` (the default) each frame is
held as a JPEG and decoded on the reading thread, as OpenCV's read does for a camera that sends MJPEG, so the figures
include the decoding.

- stream: the frames at ``--fps`` (a camera's 30 fps), each due at its time:
  - latency_ms: from the moment a frame is due (when a camera would deliver it) to the pointer sample pushed (the end
    of ``process_frame``): decoding, the tracking, the mapping and smoothing, and any wait behind the previous frame.
  - process_ms: ``process_frame`` alone (``HeadPreview.seconds``).
  - fps: frames finished per second (between the first frame's end and the last's).
  - cpu_share: the process's CPU time / wall time while streaming (1.0 is one core busy), the reading thread's sleep
    between frames included; the main thread only waits.
- flat_out: the moving face's frames back to back, as fast as the source takes them: fps is the frame rate it
  sustains (frames / wall time), with its latency per frame and CPU share.
- ``--results PATH``: also writes the ``webcam`` table for bench/report.py (docs/BENCHMARKS.md), ``--beside`` saying
  what ran beside it.
- ``--screenshot PATH``: also saves the preview window (ui/head_preview.py) fed with these frames, as a PNG.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from dasher_rnn.input.webcam import HeadPointerSource, import_cv2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.helpers import FRAME_SIZE as SIZE  # noqa: E402  (the tests' fake camera, shared)
from tests.helpers import portrait_path, turned_face  # noqa: E402


def portrait(cv2) -> np.ndarray:
    path = portrait_path()
    if path is None:
        sys.exit("webcam_bench needs matplotlib for its face picture (mpl-data/sample_data/grace_hopper.jpg)")
    return cv2.resize(cv2.imread(str(path)), None, fx=0.8, fy=0.8, interpolation=cv2.INTER_AREA)


def turned(cv2, face: np.ndarray, dx: float, dy: float, yaw: float, pitch: float) -> np.ndarray:
    """The face shifted by (dx, dy) pixels and turned by yaw and pitch degrees about an axis behind it (the tests'
    frame, tests/helpers.py), with a camera's sensor noise."""
    out = turned_face(cv2, face, dx, dy, yaw, pitch)
    noise = np.random.default_rng(int(abs(dx * 1000 + yaw * 10))).integers(-3, 4, out.shape, dtype=np.int16)
    return np.clip(out.astype(np.int16) + noise, 0, 255).astype(np.uint8)  # a camera's sensor noise


def moving_frames(cv2, face: np.ndarray, fps: float) -> list[np.ndarray]:
    """One figure of eight every 4 s: the face moving by up to 40 and 25 pixels and turning by 12 and 8 degrees."""
    cycle = int(4 * fps)
    return [turned(cv2, face, 40 * math.sin(2 * math.pi * i / cycle), 25 * math.sin(4 * math.pi * i / cycle),
                   12 * math.sin(2 * math.pi * i / cycle), 8 * math.sin(4 * math.pi * i / cycle)) for i in range(cycle)]


def held(cv2, pictures: list[np.ndarray], decode: str) -> list:
    """The frames as the camera would hand them over: JPEG bytes (``decode`` "jpeg") or the pixels themselves."""
    if decode == "none":
        return pictures
    return [cv2.imencode(".jpg", p, [cv2.IMWRITE_JPEG_QUALITY, 85])[1] for p in pictures]


def run_source(cv2, phases: list[tuple[str, list, int]], fps: float | None, decode: str, threads: int) -> dict:
    """Feed each phase's frames (name, frames, count) to a HeadPointerSource on its thread; fps None: back to back.
    Per phase: latency, processing time, CPU share, frame rate and the share of frames with a face followed."""
    due: list[float] = []
    marks: list[tuple[float, float]] = []  # (wall, process CPU time) when each phase's first frame was due

    def frames():
        start = time.perf_counter() + 0.2
        i = 0
        for _, pictures, count in phases:
            for k in range(count):
                if fps is not None:
                    when = start + i / fps
                    wait = when - time.perf_counter()
                    if wait > 0:
                        time.sleep(wait)
                else:
                    when = time.perf_counter()
                due.append(when)
                if k == 0:
                    marks.append((time.perf_counter(), time.process_time()))
                i += 1
                item = pictures[k % len(pictures)]
                yield item if decode == "none" else cv2.imdecode(item, cv2.IMREAD_COLOR)

    done: list[tuple[float, float, float, str]] = []  # (wall, process CPU time, processing seconds, state) per frame

    class Timed(HeadPointerSource):
        def process_frame(self, frame, t=None):
            preview = super().process_frame(frame, t)
            done.append((time.perf_counter(), time.process_time(), preview.seconds, preview.state))
            return preview

    total = sum(count for _, _, count in phases)
    source = Timed(frames(), threads=threads)
    source.join(total / (fps or 30) + 120)
    source.close()
    out: dict = {}
    first = 0
    for (name, _, count), begin in zip(phases, marks, strict=True):
        last = min(first + count, len(done))
        latency = [(done[i][0] - due[i]) * 1000 for i in range(first, last)]
        process = [done[i][2] * 1000 for i in range(first, last)]
        states = [done[i][3] for i in range(first, last)]
        wall = done[last - 1][0] - begin[0]
        finishing = done[last - 1][0] - done[first][0]  # from the first frame's end to the last's
        out[name] = {
            "frames": last - first, "seconds": round(wall, 2), "fps": round((last - first - 1) / finishing, 1),
            "latency_ms": _summary(latency), "process_ms": _summary(process),
            "cpu_share": round((done[last - 1][1] - begin[1]) / wall, 3),
            "tracking_share": round(states.count("tracking") / max(1, len(states)), 3),
        }
        first = last
    out["pointer_samples"], out["lost"], out["rejected"] = source.received, source.lost, source.rejected
    return out


def _summary(values: list[float]) -> dict:
    if not values:
        return {}
    return {key: round(float(np.percentile(values, q)), 2) for key, q in (("p50", 50), ("p95", 95), ("p99", 99))} \
        | {"max": round(float(max(values)), 2)}


def jpeg_decode_ms(cv2, face: np.ndarray) -> float:
    ok, data = cv2.imencode(".jpg", turned(cv2, face, 0, 0, 0, 0), [cv2.IMWRITE_JPEG_QUALITY, 85])
    times = []
    for _ in range(100):
        t0 = time.perf_counter()
        cv2.imdecode(data, cv2.IMREAD_COLOR)
        times.append((time.perf_counter() - t0) * 1000)
    return round(float(np.median(times)), 2)


def screenshot(cv2, face: np.ndarray, path: str) -> None:
    """The preview window fed with the face moving a little to the user's right and down, turning, grabbed offscreen."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from dasher_rnn.ui.head_preview import HeadPreviewWindow
    app = QApplication.instance() or QApplication(["webcam_bench"])
    source = HeadPointerSource(iter(()), start=False)
    steps = 20
    for i in range(steps + 5):
        k = min(i, steps) / steps
        source.process_frame(turned(cv2, face, -8 * k, 6 * k, 3 * k, 2 * k), i / 30)
    window = HeadPreviewWindow(source)
    window.resize(560, 580)
    window.show()
    app.processEvents()
    window.refresh()
    app.processEvents()
    if not window.grab().save(path):
        sys.exit(f"could not save {path}")
    window.close()
    source.close()


def cpu_model() -> str:
    """The processor's name (Linux's /proc/cpuinfo), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def table(result: dict, beside: str, command: str) -> dict:
    """The ``webcam`` table for bench/results/webcam.json (bench/report.py renders it into docs/BENCHMARKS.md)."""
    stream, flat_out = result["stream"], result["flat_out"]
    decoded = " (each decoded from JPEG)" if result["decode"] == "jpeg" else ""
    runs = [("face", f"a moving, turning face at {result['camera_fps']:g} fps", stream["face"]),
            ("no-face", f"no face at {result['camera_fps']:g} fps (the detector searching)", stream["no_face"])]
    if flat_out is not None:
        runs.append(("flat-out", "a moving, turning face, frames back to back", flat_out))
    rows = [{"key": key, "run": label, "fps": r["fps"], "p50": r["latency_ms"]["p50"], "p99": r["latency_ms"]["p99"],
             "process": r["process_ms"]["p50"], "cpu": r["cpu_share"]} for key, label, r in runs]
    return {
        "id": "webcam",
        "columns": [{"key": "run", "label": f"{result['frame_size'][0]}x{result['frame_size'][1]} frames{decoded}"},
                    {"key": "fps", "label": "frames/s", "align": "right", "format": ".1f"},
                    {"key": "p50", "label": "frame to pointer p50 ms", "align": "right", "format": ".1f"},
                    {"key": "p99", "label": "p99 ms", "align": "right", "format": ".1f"},
                    {"key": "process", "label": "tracking p50 ms", "align": "right", "format": ".1f"},
                    {"key": "cpu", "label": "CPU share of one core", "align": "right", "format": ".3f"}],
        "rows": rows,
        "commands": [command],
        "date": datetime.date.today().isoformat(),
        "machine": f"{result['machine']}, {result['cpus']} cores, OpenCV {result['opencv']} "
                   f"({result['opencv_threads']} thread)",
        "beside": beside,
        "model": "OpenCV's Haar frontal-face cascade (the opencv-python-headless wheel) and Lucas-Kanade optical flow",
        "source": "python bench/webcam_bench.py --results bench/results/webcam.json",
        "note": "The face is matplotlib's grace_hopper.jpg moved and turned across the frame with sensor noise; "
                "latency runs from when a camera would deliver the frame to the pointer sample.",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds of a moving face at --fps")
    parser.add_argument("--search-seconds", type=float, default=5.0, help="then seconds without a face")
    parser.add_argument("--flat-out-frames", type=int, default=600, help="frames fed back to back (0: none)")
    parser.add_argument("--fps", type=float, default=30.0, help="the camera's frame rate")
    parser.add_argument("--threads", type=int, default=1, help="OpenCV's threads (the source's default: 1)")
    parser.add_argument("--decode", choices=("jpeg", "none"), default="jpeg",
                        help="decode each frame from JPEG on the reading thread (a camera sending MJPEG), or not")
    parser.add_argument("--screenshot", metavar="PATH", help="save the preview window as a PNG too")
    parser.add_argument("--results", type=Path, default=None, help="also write the webcam table to this results file")
    parser.add_argument("--beside", default="other engineers' tests", help="what ran beside it, for the table")
    args = parser.parse_args()
    cv2 = import_cv2()
    face = portrait(cv2)
    if args.screenshot:
        screenshot(cv2, face, args.screenshot)
    moving = held(cv2, moving_frames(cv2, face, args.fps), args.decode)
    # no face, but a scene to search: the portrait upside down (which the upright-face detector does not find)
    empty = held(cv2, [np.ascontiguousarray(turned(cv2, face, dx, 0, 0, 0)[::-1]) for dx in (-2, 2)], args.decode)
    load_before = os.getloadavg()
    stream = run_source(cv2, [("face", moving, int(args.seconds * args.fps)),
                              ("no_face", empty, int(args.search_seconds * args.fps))], args.fps, args.decode,
                        args.threads)
    flat_out = run_source(cv2, [("face", moving, args.flat_out_frames)], None, args.decode, args.threads)["face"] \
        if args.flat_out_frames > 0 else None
    result = {
        "frame_size": list(SIZE), "camera_fps": args.fps, "decode": args.decode, "opencv_threads": args.threads,
        "opencv": cv2.__version__, "python": platform.python_version(), "cpus": os.cpu_count(),
        "machine": cpu_model(),
        "load_average_before": [round(v, 2) for v in load_before],
        "stream": stream, "flat_out": flat_out, "jpeg_decode_ms": jpeg_decode_ms(cv2, face),
        "load_average_after": [round(v, 2) for v in os.getloadavg()],
    }
    print(json.dumps(result, indent=1))
    if args.results is not None:
        command = "python bench/webcam_bench.py" + "".join(
            f" {flag} {value}" for flag, value, default in (
                ("--seconds", args.seconds, 20.0), ("--search-seconds", args.search_seconds, 5.0),
                ("--flat-out-frames", args.flat_out_frames, 600), ("--fps", args.fps, 30.0),
                ("--threads", args.threads, 1), ("--decode", args.decode, "jpeg")) if value != default)
        area = {"area": "webcam", "tables": [table(result, args.beside, command)]}
        args.results.write_text(json.dumps(area, indent=1) + "\n")


if __name__ == "__main__":
    main()
