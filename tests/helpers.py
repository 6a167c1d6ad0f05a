"""Helpers the tests and the bench scripts share: waiting for what another thread or process does (the limits
bound a wait so that a hung test stops; they are never timing assertions), and a face for a camera that is not there.
"""

from __future__ import annotations

import importlib.util
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def _poll(condition: Callable[[], T], seconds: float, interval: float, between: Callable[[], object] | None) -> T:
    """``condition()``'s first truthy value within ``seconds``, or its falsy value at the end."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if between is not None:
            between()  # e.g. QApplication.processEvents, for a wait on the GUI thread
        time.sleep(interval)
    return condition()


def wait_until(condition: Callable[[], object], seconds: float = 60.0, interval: float = 0.02) -> bool:
    """Whether ``condition()`` came true within ``seconds`` (polled; for the caller to assert or report)."""
    return bool(_poll(condition, seconds, interval, None))


def wait_for(condition: Callable[[], T], what: str = "the condition", seconds: float = 60.0, interval: float = 0.005,
             between: Callable[[], object] | None = None) -> T:
    """``condition()``'s first truthy value; AssertionError naming ``what`` if none came within ``seconds``."""
    value = _poll(condition, seconds, interval, between)
    if not value:
        raise AssertionError(f"gave up waiting for {what} after {seconds:g} s")
    return value


# -- a face for the webcam head pointer, without a camera ------------------------------------------------------------

FRAME_SIZE = (640, 480)


def portrait_path() -> Path | None:
    """The portrait a package ships (matplotlib's ``grace_hopper.jpg``), found without importing matplotlib."""
    spec = importlib.util.find_spec("matplotlib")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "mpl-data" / "sample_data" / "grace_hopper.jpg"
    return path if path.is_file() else None


def turned_face(cv2, face: np.ndarray, dx: float = 0.0, dy: float = 0.0, yaw: float = 0.0,
                pitch: float = 0.0) -> np.ndarray:
    """A 640x480 frame with the face shifted by (dx, dy) pixels from the middle and turned by yaw (the user's right)
    and pitch (down) degrees about an axis 0.6 face widths behind the face, as a camera 2 m away would see it."""
    height, width = face.shape[:2]
    face_width = 0.36 * width  # the face in the portrait
    pivot, distance = 0.6 * face_width, 12.0 * face_width
    centre = np.array([width / 2, 0.45 * height])  # the middle of the face in the portrait
    corners = np.array([[0, 0], [width, 0], [width, height], [0, height]], np.float64)
    a, b = math.radians(yaw), math.radians(pitch)
    rot_y = np.array([[math.cos(a), 0, math.sin(a)], [0, 1, 0], [-math.sin(a), 0, math.cos(a)]])
    rot_x = np.array([[1, 0, 0], [0, math.cos(b), -math.sin(b)], [0, math.sin(b), math.cos(b)]])
    placed = []
    for u, v in corners:
        point = np.array([u - centre[0], v - centre[1], 0.0]) - [0, 0, pivot]
        x, y, z = rot_x @ rot_y @ point + [0, 0, pivot]
        scale = distance / (distance + z)
        placed.append([FRAME_SIZE[0] / 2 + dx + x * scale, FRAME_SIZE[1] / 2 + dy + y * scale])
    warp = cv2.getPerspectiveTransform(corners.astype(np.float32), np.array(placed, np.float32))
    out = np.full((FRAME_SIZE[1], FRAME_SIZE[0], 3), 96, np.uint8)
    return cv2.warpPerspective(face, warp, FRAME_SIZE, dst=out, borderMode=cv2.BORDER_TRANSPARENT)
