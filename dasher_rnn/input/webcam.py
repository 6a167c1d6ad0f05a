"""A head pointer from a webcam: turn or tilt your head and the pointer follows, through the optional ``webcam`` extra.

``pip install 'dasher-rnn[webcam]'`` brings OpenCV (``opencv-python-headless``; never ``opencv-python``, whose Qt
clashes with PySide6), which reads the camera and finds the face with the detector its wheel carries: nothing is
downloaded when it runs. OpenCV is imported only when a HeadPointerSource is made, so the app runs without it.

A HeadPointerSource reads frames on a daemon thread from a camera (an index, or a device path such as
``/dev/video2``), a video file, or any iterable of frames (numpy arrays, BGR, BGRA or grey: how it is tested without a
camera). Each frame goes through ``input/head_pose.py``: the face is found and points on it are followed; their
movement from the centre is the head's yaw and pitch, which ``PointerMapping`` maps to the screen (gain, dead zone).
The centre is the head's pose when the face is first seen, again when it is found after being gone for
``recentre_after`` seconds, and whenever the UI calls ``recentre()``. A frame without a face counts as lost
(``_lost``): with no samples the app pauses, as with gaze. Start and stop come from the app's dwell
(input/dwell.py): resting the head rests the pointer.

``preview()`` gives the newest frame with what was found on it (``HeadPreview``), for the preview window
(``ui/head_preview.py``, opened by the window while this input runs).
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dasher_rnn.input.gaze import GazeSample, GazeSource, GazeSourceError
from dasher_rnn.input.head_pose import Centre, FaceObservation, FaceTracker, PointerMapping, head_angles
from dasher_rnn.input.one_euro import OneEuroFilter

log = logging.getLogger(__name__)

WEBCAM_EXTRA = "webcam"
WEBCAM_INSTALL = f"pip install 'dasher-rnn[{WEBCAM_EXTRA}]'"  # the extra that brings OpenCV

DEFAULT_CAMERA = 0
DEFAULT_GAIN = 1.0
DEFAULT_DEAD_ZONE = 1.5  # degrees
CAMERA_SIZE = (640, 480)  # asked of the camera; it may give another
CAMERA_FPS = 30.0
FAILED_READS = 15  # consecutive frames the camera failed to give (about half a second) before the source stops


def import_cv2() -> Any:
    """OpenCV's ``cv2``, or GazeSourceError naming the extra that installs it."""
    try:
        return importlib.import_module("cv2")
    except ImportError as exc:
        raise GazeSourceError(f"OpenCV is not installed: {WEBCAM_INSTALL} installs it") from exc


@dataclass(frozen=True)
class HeadPreview:
    """What the source saw in its newest frame, for a preview: plain data, read on any thread.

    frame: the frame as received (H, W, 3) uint8 BGR (or BGRA, or grey (H, W), as the camera or iterable gave it),
    not copied: do not write to it. Every coordinate is normalised to the frame (0..1, left to right, top to bottom)
    and unmirrored: a preview drawn as a mirror (what people expect of their own face) flips the frame and maps x to
    1 - x, unless ``mirrored`` (the camera already mirrors). face: None when no face is seen (then box, points and
    pose are None or empty).
    """

    frame: np.ndarray
    t: float  # time.monotonic() when the frame arrived
    state: str  # "tracking" (a face), "searching" (none yet), "lost" (none in this frame after one was seen)
    box: tuple[float, float, float, float] | None  # the face: x, y, width, height
    points: np.ndarray  # (N, 2) float32: the tracked points on the face
    anchor: tuple[float, float] | None  # the point whose movement steers (the points' median)
    centre: tuple[float, float] | None  # where the anchor was when recentred: the pointer is at the centre there
    pose: tuple[float, float] | None  # (yaw, pitch) degrees from the centre: positive is the user's right, and down
    pointer: tuple[float, float] | None  # the pointer before smoothing, normalised to the screen
    mirrored: bool
    seconds: float  # how long the frame took to process


class HeadPointerSource(GazeSource):
    """Head pose from a webcam as a pointer; same interface as the gaze sources (``latest()``, ``problems()``)."""

    label = "Webcam head pointer"
    tracked = "your face"
    bad_unit = "frame"

    def __init__(self, camera: int | str | Iterable[np.ndarray] = DEFAULT_CAMERA, *, gain: float = DEFAULT_GAIN,
                 dead_zone: float = DEFAULT_DEAD_ZONE, mirrored: bool = False, recentre_after: float = 3.0,
                 smoothing: OneEuroFilter | None = None, stale_after: float = 0.5,
                 on_sample: Callable[[GazeSample], None] | None = None, threads: int = 1, start: bool = True,
                 tracker: FaceTracker | None = None) -> None:
        """camera: an index, a device path or video file, or an iterable of frames (read until it ends). gain and
        dead_zone: see ``PointerMapping``. mirrored: the camera delivers a mirror image. recentre_after: seconds the
        face must be gone for the head's pose when it is found again to become the centre. threads: OpenCV's
        threads (process-wide; one leaves the other cores to the predictor). start: read on a thread now; False
        leaves the frames to ``process_frame`` (tests)."""
        super().__init__(smoothing, stale_after, on_sample)
        self.mapping = PointerMapping(gain, dead_zone)
        if not recentre_after >= 0:
            raise ValueError(f"recentre_after must be >= 0, got {recentre_after}")
        self.mirrored, self.recentre_after = mirrored, recentre_after
        self.cv2 = import_cv2()
        if threads > 0:
            self.cv2.setNumThreads(threads)
        try:
            self.tracker = tracker if tracker is not None else FaceTracker(self.cv2)
        except FileNotFoundError as exc:
            raise GazeSourceError(f"{exc}: {WEBCAM_INSTALL} installs an OpenCV that has it") from exc
        self.camera_name = self._name(camera)
        self.frames = 0  # frames processed
        self.stopped: str | None = None  # why reading stopped (the camera went away, the video ended)
        self._centre: Centre | None = None
        self._recentre = threading.Event()
        self._last_face_at: float | None = None
        self._preview: HeadPreview | None = None
        self._stop = threading.Event()
        self._capture: Any = None
        self._iterable: Iterable[np.ndarray] | None = None
        if isinstance(camera, int | str):
            self._capture = self._open(camera)
        else:
            self._iterable = camera
        self._thread: threading.Thread | None = None
        if start:
            self._thread = threading.Thread(target=self._run, name="webcam-head-pointer", daemon=True)
            self._thread.start()

    @property
    def description(self) -> str:
        """What the source is doing, for the status bar."""
        if self.stopped:
            return f"Webcam head pointer stopped: {self.stopped}"
        preview = self._preview
        if preview is None or preview.state == "searching":
            return f"Looking for your face ({self.camera_name})"
        if preview.state == "lost":
            return "Face lost: look at the camera"
        return "Following your head"

    def recentre(self) -> None:
        """Make the head's pose in the next frame with a face the centre (the pointer at the screen's centre)."""
        self._recentre.set()

    def preview(self) -> HeadPreview | None:
        """The newest frame and what was found on it; None before the first frame."""
        return self._preview

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the reading thread to end (an iterable or video that ran out); True if it has."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def close(self) -> None:
        """Stop reading and release the camera (idempotent); waits briefly for the thread."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(2.0)
        capture, self._capture = self._capture, None
        if capture is not None:
            try:
                capture.release()
            except Exception as exc:  # closing must not fail; the camera may be gone already
                log.debug("releasing the camera failed: %s", exc)

    def process_frame(self, frame: np.ndarray, t: float | None = None) -> HeadPreview:
        """Find the face in one frame and push the pointer (or count it lost); t: seconds on a steady clock
        (``time.monotonic()`` when omitted). The reading thread calls it; tests call it directly."""
        started = time.perf_counter()
        now = time.monotonic() if t is None else t
        observation = self.tracker.update(frame, now)
        self.frames += 1
        pose = pointer = None
        if observation is None:
            self._lost()
            state = "searching" if self._last_face_at is None else "lost"
        else:
            state = "tracking"
            gone = self._last_face_at is None or now - self._last_face_at > self.recentre_after
            if self._centre is None or gone or self._recentre.is_set():
                self._recentre.clear()
                self._centre = Centre(observation.anchor, observation.face_width)
            self._last_face_at = now
            pose = head_angles(observation, self._centre, self.mirrored)
            pointer = self.mapping.map(*pose)
            self._push(pointer[0], pointer[1], now)
        preview = self._preview_of(frame, now, state, observation, pose, pointer, time.perf_counter() - started)
        self._preview = preview  # one reference assignment: the UI thread reads it without a lock
        return preview

    def _preview_of(self, frame: np.ndarray, t: float, state: str, observation: FaceObservation | None,
                    pose: tuple[float, float] | None, pointer: tuple[float, float] | None,
                    seconds: float) -> HeadPreview:
        centre = self._centre.anchor if self._centre is not None else None
        if observation is None:
            return HeadPreview(frame, t, state, None, np.zeros((0, 2), np.float32), None, centre, None, None,
                               self.mirrored, seconds)
        return HeadPreview(frame, t, state, observation.box, observation.points, observation.anchor, centre, pose,
                           pointer, self.mirrored, seconds)

    def _name(self, camera: object) -> str:
        if isinstance(camera, int):
            return f"camera {camera}"
        if isinstance(camera, str):
            return camera
        return "frames"

    def _open(self, camera: int | str) -> Any:
        """The opened camera (or video), asked for 640x480 at 30 fps; GazeSourceError when there is none."""
        cv2 = self.cv2
        where = f"at index {camera}" if isinstance(camera, int) else f"at {camera}"
        logging_ = getattr(getattr(cv2, "utils", None), "logging", None)
        level = logging_.getLogLevel() if logging_ is not None else None
        if logging_ is not None:
            logging_.setLogLevel(logging_.LOG_LEVEL_ERROR)  # its warnings about no camera repeat what we say
        try:
            capture = cv2.VideoCapture(camera)
            if not capture.isOpened():
                capture.release()
                raise GazeSourceError(f"no camera found {where}")
            capture.set(cv2.CAP_PROP_FRAME_WIDTH, CAMERA_SIZE[0])
            capture.set(cv2.CAP_PROP_FRAME_HEIGHT, CAMERA_SIZE[1])
            capture.set(cv2.CAP_PROP_FPS, CAMERA_FPS)
            capture.set(cv2.CAP_PROP_BUFFERSIZE, 1)  # the newest frame, not one queued behind others
            ok, _ = capture.read()
            if not ok:
                capture.release()
                raise GazeSourceError(f"the camera {where} gives no pictures (is another program using it?)")
        except GazeSourceError:
            raise
        except Exception as exc:  # OpenCV's own errors (cv2.error) for a device it cannot use
            raise GazeSourceError(f"cannot open the camera {where}: {exc}") from exc
        finally:
            if logging_ is not None:
                logging_.setLogLevel(level)
        return capture

    def _frames(self) -> Iterator[np.ndarray]:
        if self._iterable is not None:
            yield from self._iterable
            self.stopped = "the frames ran out"
            return
        failed = 0
        while not self._stop.is_set() and self._capture is not None:
            ok, frame = self._capture.read()
            if ok and frame is not None:
                failed = 0
                yield frame
                continue
            if self._capture is None or self._stop.is_set():
                return
            failed += 1
            self._reject("no picture", f"{self.camera_name} gave no picture")
            if failed >= FAILED_READS:
                self.stopped = f"{self.camera_name} stopped giving pictures (unplugged, or the video ended)"
                log.warning("webcam head pointer: %s", self.stopped)
                return
            time.sleep(1 / CAMERA_FPS)

    def _run(self) -> None:
        """The reading thread: every frame through ``process_frame``; a failure costs one frame, never the input."""
        try:
            for frame in self._frames():
                if self._stop.is_set():
                    return
                try:
                    self.process_frame(frame)
                except ValueError as exc:  # not a picture (a wrong shape or pixel type from an iterable)
                    self._reject("bad frame", str(exc))
                except Exception as exc:
                    self._fail(exc)
        except Exception as exc:  # the iterable or the camera itself failed
            self.stopped = f"reading frames failed: {type(exc).__name__}: {exc}"
            self._fail(exc)


def open_source(options: Mapping[str, Any], smoothing: OneEuroFilter) -> HeadPointerSource:
    """The registry's opener (input/registry.py): the options' camera (an index or a path), gain and dead zone."""
    camera = options.get("webcam_camera", DEFAULT_CAMERA)
    if isinstance(camera, str) and camera.isdigit():
        camera = int(camera)
    return HeadPointerSource(camera, gain=options.get("webcam_gain", DEFAULT_GAIN),
                             dead_zone=options.get("webcam_dead_zone", DEFAULT_DEAD_ZONE),
                             mirrored=options.get("webcam_mirrored", False), smoothing=smoothing)
