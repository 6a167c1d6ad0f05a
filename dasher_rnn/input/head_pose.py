"""Head pose from a webcam's frames with OpenCV alone: the face found, its features tracked, their movement as yaw/pitch.

Why this way: no face-landmark model ships inside a maintained wheel that fits beside PySide6 and numpy 2 (MediaPipe's
legacy face mesh carries its models only in versions that need ``opencv-contrib-python``, whose bundled Qt clashes with
PySide6, and numpy < 2; its newer Tasks API needs a downloaded ``.task`` file; dlib needs a downloaded model). OpenCV's
headless wheel (4.x; the 5.0 wheels dropped them) carries Haar cascades, and head pointers for people who cannot use
their hands have long worked this way (Camera Mouse, Enable Viacam): find the face, then follow points on it.

``FaceTracker.update`` takes one frame (BGR, BGRA or grey, any size) and returns a ``FaceObservation`` or None:

- the face is found by the Haar frontal-face cascade (the wheel's ``cv2.data``, or a system OpenCV's) on a grey copy
  scaled to ``process_width`` pixels wide: over the whole frame while searching (every ``search_every`` frames), then
  every ``detect_every`` frames in a region around the face, to confirm it is still there;
- up to ``max_points`` corner features (eyes, brows, nostrils, mouth corners: Shi-Tomasi corners in the middle of the
  face box) are followed from frame to frame by pyramidal Lucas-Kanade optical flow with a forward-backward check and
  a rejection of points that do not move with the rest;
- the **anchor** is the median of the points; when the points are re-seeded (too few left) it keeps its position, so
  the pointer does not jump. A fresh seeding (first face, or after the face was lost) puts it at the face box's centre;
- the face is **lost** when too few points survive and no face is found, or when the cascade has not found the face
  for ``lost_after`` seconds (someone walked away and the points stuck to the background).

``head_angles`` turns the anchor's movement from a centre (``recentre``) into yaw and pitch in degrees, an estimate: a
head turning by an angle a moves its features by about ``PIVOT * sin(a)`` face widths (the features sit about
``PIVOT`` face widths in front of the neck's axis); leaning moves them too, which a head pointer counts alike.
``PointerMapping`` maps yaw and pitch to the screen with a gain and a dead zone.

The module needs ``cv2`` only through the module object handed to ``FaceTracker`` (input/webcam.py imports it), so that
importing it never fails where the ``webcam`` extra is missing.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

CASCADE = "haarcascade_frontalface_default.xml"  # in cv2.data.haarcascades (opencv-python-headless 4.x)
PIVOT = 0.6  # face widths from the neck's axis of rotation to the tracked features (eyes, nose, mouth)
YAW_RANGE = 15.0  # degrees of yaw that take the pointer from the centre to the screen's edge at gain 1
PITCH_RANGE = 10.0  # degrees of pitch, the same: nodding is smaller than turning


@dataclass(frozen=True)
class FaceObservation:
    """One frame's face: every coordinate normalised to the frame (0..1, left to right, top to bottom), unmirrored.

    box is (x, y, width, height) of the face as the detector last saw it, moved with the points since; points is an
    (N, 2) float32 array of the tracked features; anchor is the point whose movement is the head's (the median of
    the points, kept continuous across re-seeding); face_width is the box's width in frame widths; aspect is the
    frame's height / width (to compare x and y movements in pixels).
    """

    box: tuple[float, float, float, float]
    points: np.ndarray
    anchor: tuple[float, float]
    face_width: float
    aspect: float
    detected: bool  # the detector found the face in this very frame (otherwise the points carried it)


@dataclass(frozen=True)
class Centre:
    """The anchor and face width at the moment of recentring: head angles are measured from here."""

    anchor: tuple[float, float]
    face_width: float


def head_angles(observation: FaceObservation, centre: Centre, mirrored: bool = False) -> tuple[float, float]:
    """(yaw, pitch) in degrees from the centre, estimated (module docstring). Yaw is positive when the user turns to
    their right, pitch when they look down: the directions the pointer moves in. ``mirrored``: the camera delivers a
    mirror image (a selfie view), so the user's right is the frame's right."""
    width = max(centre.face_width, 1e-6)
    dx = (observation.anchor[0] - centre.anchor[0]) / width  # face widths
    dy = (observation.anchor[1] - centre.anchor[1]) * observation.aspect / width
    if not mirrored:  # the camera faces the user: their right is the frame's left
        dx = -dx
    return _degrees(dx), _degrees(dy)


def _degrees(offset: float) -> float:
    return math.degrees(math.asin(min(max(offset / PIVOT, -1.0), 1.0)))


class PointerMapping:
    """Yaw and pitch (degrees from the centre) to a pointer normalised to the screen (0.5, 0.5 at the centre).

    gain: 1 moves the pointer from the centre to the screen's edge for ``YAW_RANGE`` degrees of yaw and ``PITCH_RANGE``
    of pitch; 2 for half that. dead_zone: degrees around the centre in which the pointer stays at the centre (a head at
    rest steers nothing: the centre of Dasher's view is where it zooms neither way); beyond it the pointer moves on
    from the centre, without a jump.
    """

    def __init__(self, gain: float = 1.0, dead_zone: float = 1.5, yaw_range: float = YAW_RANGE,
                 pitch_range: float = PITCH_RANGE) -> None:
        if not (gain > 0 and dead_zone >= 0 and yaw_range > 0 and pitch_range > 0):
            raise ValueError(f"head pointer mapping needs gain > 0, dead_zone >= 0 and positive ranges "
                             f"(got {gain}, {dead_zone}, {yaw_range}, {pitch_range})")
        self.gain, self.dead_zone = gain, dead_zone
        self.yaw_range, self.pitch_range = yaw_range, pitch_range

    def map(self, yaw: float, pitch: float) -> tuple[float, float]:
        """The pointer (x, y) for a head at (yaw, pitch) degrees; not clamped (GazeSource clamps)."""
        size = math.hypot(yaw, pitch)
        if size <= self.dead_zone:
            return 0.5, 0.5
        shrink = (size - self.dead_zone) / size
        return (0.5 + 0.5 * self.gain * yaw * shrink / self.yaw_range,
                0.5 + 0.5 * self.gain * pitch * shrink / self.pitch_range)


def _cascade(cv2: Any) -> Any:
    """The frontal-face cascade: from the wheel's ``cv2.data``, or where Debian's and Fedora's OpenCV put it;
    FileNotFoundError when there is none (OpenCV 5's wheels carry no cascades)."""
    folders = [getattr(getattr(cv2, "data", None), "haarcascades", None),
               "/usr/share/opencv4/haarcascades/", "/usr/share/opencv/haarcascades/"]
    for folder in folders:
        if folder and os.path.isfile(os.path.join(folder, CASCADE)):
            cascade = cv2.CascadeClassifier(os.path.join(folder, CASCADE))
            if not cascade.empty():
                return cascade
    raise FileNotFoundError(f"OpenCV {getattr(cv2, '__version__', '?')} lacks its face detector ({CASCADE})")


class FaceTracker:
    """Finds and follows one face in a stream of frames (module docstring); one thread at a time."""

    def __init__(self, cv2: Any, process_width: int = 320, detect_every: int = 5, search_every: int = 3,
                 lost_after: float = 1.0, max_points: int = 40, min_points: int = 6) -> None:
        if not (process_width >= 80 and detect_every >= 1 and search_every >= 1 and lost_after > 0
                and max_points >= min_points >= 3):
            raise ValueError("face tracker needs process_width >= 80, detect_every >= 1, search_every >= 1, "
                             "lost_after > 0 and max_points >= min_points >= 3")
        self.cv2 = cv2
        self.process_width, self.detect_every, self.search_every = process_width, detect_every, search_every
        self.lost_after, self.max_points, self.min_points = lost_after, max_points, min_points
        self._cascade = _cascade(cv2)
        self.reset()

    def reset(self) -> None:
        """Forget the face: the next frame searches the whole frame."""
        self._gray: np.ndarray | None = None  # the previous frame, grey, at process size
        self._points: np.ndarray | None = None  # (N, 1, 2) float32, process pixels
        self._seeded = 0
        self._offset = np.zeros(2, np.float32)  # anchor = median(points) + offset
        self._box: np.ndarray | None = None  # x, y, w, h in process pixels (float)
        self._seen_at = 0.0  # when the detector last found the face
        self._since_detect = 1 << 30  # frames since the detector last ran: the first frame searches

    @property
    def tracking(self) -> bool:
        """Whether a face is being followed."""
        return self._points is not None

    def update(self, frame: np.ndarray, t: float) -> FaceObservation | None:
        """The face in this frame (t: seconds, any steady clock), or None when there is none or it was lost."""
        gray = self._gray_small(frame)
        height, width = gray.shape
        if self._points is not None and self._gray is not None and self._gray.shape == gray.shape:
            self._track(self._gray, gray)
        elif self._points is not None:  # the frame size changed: start again
            self.reset()
        self._gray = gray
        self._since_detect += 1
        searching = self._points is None
        few = self._points is not None and len(self._points) < max(self.min_points, self._seeded // 2)
        due = self._since_detect >= (self.search_every if searching else self.detect_every)
        found = None
        if few or due:
            self._since_detect = 0
            found = self._detect(gray)
            if found is not None:
                self._seen_at = t
                self._box = found
        if self._points is not None and (t - self._seen_at > self.lost_after or (few and found is None)):
            self.reset()
            self._gray = gray
            return None
        if found is not None and (few or searching):
            self._seed(gray, found)
        if self._points is None or self._box is None:
            return None
        anchor = np.median(self._points.reshape(-1, 2), axis=0) + self._offset
        x, y, w, h = (float(v) for v in self._box)
        points = self._points.reshape(-1, 2) / np.array([width, height], np.float32)
        return FaceObservation(box=(x / width, y / height, w / width, h / height), points=points,
                               anchor=(float(anchor[0]) / width, float(anchor[1]) / height),
                               face_width=w / width, aspect=height / width, detected=found is not None)

    def _gray_small(self, frame: np.ndarray) -> np.ndarray:
        cv2 = self.cv2
        if frame.ndim == 3 and frame.shape[2] == 3:
            gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        elif frame.ndim == 3 and frame.shape[2] == 4:
            gray = cv2.cvtColor(frame, cv2.COLOR_BGRA2GRAY)
        elif frame.ndim == 2:
            gray = frame
        else:
            raise ValueError(f"a frame must be grey (H, W) or colour (H, W, 3 or 4), got shape {frame.shape}")
        if gray.dtype != np.uint8:
            raise ValueError(f"a frame must hold 8-bit pixels, got {gray.dtype}")
        height, width = gray.shape
        if width > self.process_width:
            size = (self.process_width, max(1, round(height * self.process_width / width)))
            gray = cv2.resize(gray, size, interpolation=cv2.INTER_AREA)
        return np.ascontiguousarray(gray)

    def _detect(self, gray: np.ndarray) -> np.ndarray | None:
        """The face's box (process pixels): near the last one when there is one, else the largest in the frame."""
        height, width = gray.shape
        x0, y0, region = 0, 0, gray
        if self._box is not None:  # look in the box grown by half its size each way
            x, y, w, h = self._box
            x0, y0 = max(0, int(x - w / 2)), max(0, int(y - h / 2))
            x1, y1 = min(width, int(x + 1.5 * w)), min(height, int(y + 1.5 * h))
            region = gray[y0:y1, x0:x1]
        smallest = max(24, min(width, height) // 6)
        if region.shape[0] < smallest or region.shape[1] < smallest:
            return None
        faces = self._cascade.detectMultiScale(region, scaleFactor=1.15, minNeighbors=4,
                                               minSize=(smallest, smallest))
        if len(faces) == 0:
            return None
        best = max(faces, key=lambda f: f[2] * f[3])  # the largest: the user, nearest the camera
        return np.array([best[0] + x0, best[1] + y0, best[2], best[3]], np.float32)

    def _seed(self, gray: np.ndarray, box: np.ndarray) -> None:
        """New points in the middle of the face (eyes to mouth), keeping the anchor where it was."""
        cv2 = self.cv2
        x, y, w, h = box
        mask = np.zeros_like(gray)
        mask[int(y + 0.2 * h):int(y + 0.85 * h), int(x + 0.2 * w):int(x + 0.8 * w)] = 255
        corners = cv2.goodFeaturesToTrack(gray, maxCorners=self.max_points, qualityLevel=0.01,
                                          minDistance=max(2.0, float(w) / 20), mask=mask, blockSize=5)
        if corners is None or len(corners) < self.min_points:
            return  # a blank face (covered camera, a drawing): wait for a better frame
        corners = corners.astype(np.float32).reshape(-1, 1, 2)
        new_median = np.median(corners.reshape(-1, 2), axis=0)
        if self._points is not None and len(self._points):  # carry on: the anchor stays put
            anchor = np.median(self._points.reshape(-1, 2), axis=0) + self._offset
        else:  # a fresh face: the anchor is the box's centre
            anchor = np.array([x + w / 2, y + h / 2], np.float32)
        self._offset = (anchor - new_median).astype(np.float32)
        self._points, self._seeded = corners, len(corners)

    def _track(self, previous: np.ndarray, gray: np.ndarray) -> None:
        """Follow the points into this frame; drop the ones that fail the forward-backward check or move apart."""
        cv2 = self.cv2
        assert self._points is not None
        params = {"winSize": (15, 15), "maxLevel": 2,
                  "criteria": (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 20, 0.03)}
        old = self._points
        new, status, _ = cv2.calcOpticalFlowPyrLK(previous, gray, old, None, **params)
        back, status_back, _ = cv2.calcOpticalFlowPyrLK(gray, previous, new, None, **params)
        error = np.linalg.norm((old - back).reshape(-1, 2), axis=1)
        keep = (status.ravel() == 1) & (status_back.ravel() == 1) & (error < 0.5)
        if keep.sum() >= 3:  # points must move together: a face is (nearly) rigid between two frames
            moves = (new - old).reshape(-1, 2)
            median = np.median(moves[keep], axis=0)
            spread = np.linalg.norm(moves - median, axis=1)
            keep &= spread <= max(1.0, 3.0 * float(np.median(spread[keep])))
        if not keep.any():
            self._points = None
            return
        anchor_before = np.median(old.reshape(-1, 2), axis=0) + self._offset
        kept_old = old[keep]
        self._points = new[keep].reshape(-1, 1, 2)
        # dropping points moves the median of those left: move the offset so that the anchor follows the movement only
        self._offset = (anchor_before - np.median(kept_old.reshape(-1, 2), axis=0)).astype(np.float32)
        if self._box is not None:
            moved = np.median((self._points - kept_old).reshape(-1, 2), axis=0)
            self._box = self._box + np.array([moved[0], moved[1], 0, 0], np.float32)
