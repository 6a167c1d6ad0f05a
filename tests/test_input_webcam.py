"""The webcam head pointer (input/webcam.py, input/head_pose.py) without a camera.

Frames are made from a portrait that a package ships (matplotlib's ``grace_hopper.jpg``, found without importing
matplotlib), moved across a 640x480 frame and turned in 3-D (a perspective warp about an axis behind the face). The
tests that need OpenCV (the ``webcam`` extra) or the picture are skipped where they are missing; the missing-extra
message is tested everywhere.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pytest

from dasher_rnn.input.gaze import GazeSourceError
from dasher_rnn.input.head_pose import PITCH_RANGE, YAW_RANGE, Centre, FaceObservation, PointerMapping, head_angles
from dasher_rnn.input.one_euro import OneEuroFilter
from tests.helpers import FRAME_SIZE as SIZE
from tests.helpers import portrait_path, turned_face

DT = 1 / 30


@pytest.fixture(scope="module")
def cv2():
    return pytest.importorskip("cv2", reason="the webcam extra (OpenCV) is not installed")


@pytest.fixture(scope="module")
def face(cv2) -> np.ndarray:
    """The portrait at 0.8 of its size (the face about 180 px wide), BGR."""
    path = portrait_path()
    if path is None:
        pytest.skip("no face picture: matplotlib (which ships grace_hopper.jpg) is not installed")
    image = cv2.imread(str(path))
    return cv2.resize(image, None, fx=0.8, fy=0.8, interpolation=cv2.INTER_AREA)


def frame(cv2, face: np.ndarray, dx: float = 0.0, dy: float = 0.0, yaw: float = 0.0, pitch: float = 0.0) -> np.ndarray:
    """The face moved and turned in a 640x480 frame (tests/helpers.py)."""
    return turned_face(cv2, face, dx, dy, yaw, pitch)


def blank() -> np.ndarray:
    return np.full((SIZE[1], SIZE[0], 3), 96, np.uint8)


def source(**kwargs):
    from dasher_rnn.input.webcam import HeadPointerSource
    return HeadPointerSource(iter(()), start=False, **kwargs)


def glide(src, frames, t0: float = 0.0):
    """Feed frames 1/30 s apart; the last preview."""
    preview = None
    for i, f in enumerate(frames):
        preview = src.process_frame(f, t0 + i * DT)
    return preview


def move(cv2, face, steps: int = 15, **target):
    """Frames from the middle to the target (dx, dy, yaw, pitch) in even steps, then resting there."""
    return [frame(cv2, face, **{k: v * min(i, steps) / steps for k, v in target.items()}) for i in range(steps + 5)]


# -- without OpenCV --------------------------------------------------------------------------------------------------

def test_missing_extra_names_the_install(monkeypatch):
    from dasher_rnn.input import webcam
    monkeypatch.setitem(sys.modules, "cv2", None)  # import cv2 raises ImportError
    with pytest.raises(GazeSourceError) as info:
        webcam.HeadPointerSource(0)
    message = str(info.value)
    assert "pip install 'dasher-rnn[webcam]'" in message and "OpenCV" in message and "\n" not in message


def test_mapping_gain_dead_zone_and_continuity():
    mapping = PointerMapping(gain=1.0, dead_zone=2.0)
    assert mapping.map(0, 0) == (0.5, 0.5)
    assert mapping.map(1.5, -1.0) == (0.5, 0.5)  # inside the dead zone
    x, y = mapping.map(2.0001, 0)
    assert x == pytest.approx(0.5, abs=1e-4) and y == 0.5  # no jump at its edge
    assert mapping.map(YAW_RANGE + 2.0, 0)[0] == pytest.approx(1.0)  # the edge of the screen
    assert mapping.map(0, -(PITCH_RANGE + 2.0))[1] == pytest.approx(0.0)
    assert PointerMapping(gain=2.0, dead_zone=0).map(YAW_RANGE / 2, 0)[0] == pytest.approx(1.0)
    for bad in ({"gain": 0}, {"dead_zone": -1}, {"gain": float("nan")}):
        with pytest.raises(ValueError):
            PointerMapping(**bad)


def test_head_angles_directions():
    centre = Centre((0.5, 0.4), 0.3)

    def seen(x, y):
        return FaceObservation((0, 0, 0.3, 0.4), np.zeros((0, 2), np.float32), (x, y), 0.3, 0.75, True)

    yaw, pitch = head_angles(seen(0.45, 0.4), centre)  # the face moved to the frame's left: the user's right
    assert yaw > 0 and pitch == 0
    assert head_angles(seen(0.45, 0.4), centre, mirrored=True)[0] == pytest.approx(-yaw)
    assert head_angles(seen(0.5, 0.45), centre)[1] > 0  # down
    assert head_angles(seen(5.0, 0.4), centre)[0] == -90.0  # saturates, never NaN


# -- with OpenCV -----------------------------------------------------------------------------------------------------

def test_no_camera_message(cv2, monkeypatch):
    from dasher_rnn.input import webcam

    class Absent:
        def __init__(self, *args):
            pass

        def isOpened(self):  # noqa: N802 (OpenCV's name)
            return False

        def release(self):
            pass

    monkeypatch.setattr(cv2, "VideoCapture", Absent)
    with pytest.raises(GazeSourceError, match=r"^no camera found at index 0$"):
        webcam.HeadPointerSource(0)
    with pytest.raises(GazeSourceError, match=r"^no camera found at /dev/video7$"):
        webcam.HeadPointerSource("/dev/video7")


def test_opencv_without_the_face_detector_message(cv2, monkeypatch):
    from dasher_rnn.input import head_pose, webcam
    monkeypatch.setattr(head_pose.os.path, "isfile", lambda path: False)  # as OpenCV 5's wheels: no cascades
    with pytest.raises(GazeSourceError, match=r"lacks its face detector .*pip install 'dasher-rnn\[webcam\]'"):
        webcam.HeadPointerSource(iter(()), start=False)


def test_camera_without_pictures_message(cv2, monkeypatch):
    from dasher_rnn.input import webcam

    class Dark:
        def __init__(self, *args):
            pass

        def isOpened(self):  # noqa: N802
            return True

        def set(self, *args):
            return True

        def read(self):
            return False, None

        def release(self):
            pass

    monkeypatch.setattr(cv2, "VideoCapture", Dark)
    with pytest.raises(GazeSourceError, match="the camera at index 2 gives no pictures"):
        webcam.HeadPointerSource(2)


def test_camera_frames_are_read_on_a_thread(cv2, face, monkeypatch):
    """A camera that gives a few pictures and then none: processed, then the source says it stopped."""
    from dasher_rnn.input import webcam
    pictures = [frame(cv2, face)] * 6

    class Camera:
        def __init__(self, *args):
            self.left = list(pictures)

        def isOpened(self):  # noqa: N802
            return True

        def set(self, *args):
            return True

        def read(self):
            return (True, self.left.pop()) if self.left else (False, None)

        def release(self):
            pass

    monkeypatch.setattr(cv2, "VideoCapture", Camera)
    monkeypatch.setattr(webcam, "FAILED_READS", 3)
    with webcam.HeadPointerSource(0) as src:
        assert src.join(10)
        assert src.frames == 5  # the first picture was read when opening
        assert src.received == 5 and src.lost == 0
        assert "stopped giving pictures" in (src.stopped or "") and "stopped" in src.description
        assert src.rejected == 3


def test_still_face_centres_and_rests(cv2, face):
    src = source()
    preview = glide(src, [frame(cv2, face)] * 10)
    assert preview is not None and preview.state == "tracking"
    assert src.received == 10 and src.lost == 0
    sample = src.latest()
    assert sample is not None and (sample.x, sample.y) == (0.5, 0.5)  # the first face is the centre; at rest in the dead zone
    assert preview.pose is not None and max(abs(v) for v in preview.pose) < 0.5


@pytest.mark.parametrize(("shift", "direction"), [
    ({"dx": -40}, (1, 0)),  # the face to the frame's left: the user moved to their right
    ({"dx": 40}, (-1, 0)),
    ({"dy": -30}, (0, -1)),  # up
    ({"dy": 30}, (0, 1)),  # down
])
def test_moving_the_head_moves_the_pointer(cv2, face, shift, direction):
    src = source()
    preview = glide(src, move(cv2, face, **shift))
    assert preview is not None and preview.pointer is not None
    x, y = preview.pointer
    for value, sign in ((x, direction[0]), (y, direction[1])):
        if sign == 0:
            assert value == pytest.approx(0.5, abs=0.03)
        else:
            assert (value - 0.5) * sign > 0.15


@pytest.mark.parametrize(("turn", "pose"), [
    ({"yaw": 10}, (1, 0)), ({"yaw": -10}, (-1, 0)), ({"pitch": 8}, (0, 1)), ({"pitch": -8}, (0, -1)),
])
def test_turning_the_head_moves_the_pointer(cv2, face, turn, pose):
    src = source()
    preview = glide(src, move(cv2, face, **turn))
    assert preview is not None and preview.pose is not None and preview.pointer is not None
    angle = next(iter(turn.values()))
    measured = preview.pose[0] if pose[0] else preview.pose[1]
    assert measured * angle > 0 and 0.5 * abs(angle) < abs(measured) < 2 * abs(angle)  # the sign and about the size
    along = preview.pointer[0] if pose[0] else preview.pointer[1]
    assert (along - 0.5) * angle > 0.1


def test_mirrored_camera_swaps_left_and_right(cv2, face):
    src = source(mirrored=True)
    preview = glide(src, move(cv2, face, dx=-40))
    assert preview is not None and preview.pointer is not None and preview.pointer[0] < 0.35


def test_gain_scales_the_movement(cv2, face):
    frames = move(cv2, face, yaw=6)
    pointers = []
    for gain in (1.0, 2.0):
        preview = glide(source(gain=gain, dead_zone=0), frames)
        assert preview is not None and preview.pointer is not None
        pointers.append(preview.pointer[0] - 0.5)
    assert pointers[1] == pytest.approx(2 * pointers[0], rel=0.05)


def test_recentre_makes_the_current_pose_the_centre(cv2, face):
    src = source()
    frames = move(cv2, face, dx=-40)
    preview = glide(src, frames)
    assert preview is not None and preview.pointer is not None and preview.pointer[0] > 0.65
    src.recentre()
    preview = glide(src, [frames[-1]] * 3, t0=len(frames) * DT)
    assert preview is not None and preview.pointer == (0.5, 0.5)
    assert preview.centre == pytest.approx(preview.anchor)


def test_no_face_is_lost(cv2, face):
    src = source()
    preview = glide(src, [blank()] * 5)
    assert preview is not None and preview.state == "searching" and preview.box is None and len(preview.points) == 0
    assert src.lost == 5 and src.received == 0 and src.latest() is None
    glide(src, [frame(cv2, face)] * 5, t0=5 * DT)
    seen = src.received
    assert seen >= 3  # found within search_every frames
    preview = glide(src, [blank()] * 40, t0=10 * DT)
    assert preview is not None and preview.state == "lost" and preview.pose is None
    assert src.received < seen + 31  # at most about a second (lost_after) of frames followed the vanished face
    assert "Face lost" in src.description


def test_lost_face_is_named_for_the_status_bar(cv2, face):
    src = source(stale_after=0.2)
    glide(src, [frame(cv2, face)] * 5)
    time.sleep(0.25)  # the last pointer is stale
    preview = glide(src, [blank()] * 40, t0=5 * DT)
    assert preview is not None and preview.state == "lost"
    assert src.lost_reason() == "Webcam head pointer lost: the tracker cannot see your face"


def test_face_back_after_a_while_is_recentred(cv2, face):
    src = source(recentre_after=1.0)
    glide(src, [frame(cv2, face)] * 5)
    glide(src, [blank()] * 60, t0=5 * DT)  # gone for two seconds
    preview = glide(src, [frame(cv2, face, dx=-40)] * 5, t0=65 * DT)  # back, sitting elsewhere
    assert preview is not None and preview.pointer == (0.5, 0.5)


def test_smoothed_pointer_rests_for_dwell(cv2, face):
    """A still head gives a still pointer (what dwell needs), through the head-mouse preset's smoothing."""
    src = source(smoothing=OneEuroFilter(1.5, 0.5))
    frames = move(cv2, face, dx=-30, dy=20) + [frame(cv2, face, dx=-30, dy=20)] * 30
    points = []
    now = time.monotonic()
    for i, f in enumerate(frames):
        src.process_frame(f, now + i * DT)
        sample = src.latest()
        assert sample is not None
        points.append((sample.x, sample.y))
    rest = np.array(points[-15:])
    assert np.ptp(rest, axis=0).max() < 0.005
    assert rest[-1][0] > 0.6 and rest[-1][1] > 0.6


def test_preview_data(cv2, face):
    src = source()
    picture = frame(cv2, face, dx=-20)
    preview = glide(src, [frame(cv2, face)] * 3 + [picture])
    assert preview is not None and preview.frame is picture
    assert preview.box is not None and preview.anchor is not None and preview.centre is not None
    bx, by, bw, bh = preview.box
    assert 0 < bx < bx + bw < 1 and 0 < by < by + bh < 1 and 0.15 < bw < 0.45
    assert preview.points.dtype == np.float32 and preview.points.shape[1] == 2 and len(preview.points) >= 6
    assert ((preview.points >= [bx, by]) & (preview.points <= [bx + bw, by + bh])).all()
    assert preview.anchor[0] < preview.centre[0]  # the face moved left in the frame
    assert preview.seconds > 0 and preview.mirrored is False


def test_iterable_on_a_thread_and_bad_frames(cv2, face):
    from dasher_rnn.input.webcam import HeadPointerSource
    frames = [frame(cv2, face)] * 4 + [np.zeros((4, 4, 2), np.uint8), np.zeros((10, 10), np.float32)] \
        + [frame(cv2, face)] * 4
    with HeadPointerSource(frames) as src:
        assert src.join(10)
    assert src.frames == 8 and src.received == 8 and src.rejected == 2
    assert src.last_problem is not None and src.last_problem.startswith("bad frame")
    assert src.stopped == "the frames ran out"
    assert src.preview() is not None


def test_grey_and_bgra_frames(cv2, face):
    colour = frame(cv2, face)
    for picture in (cv2.cvtColor(colour, cv2.COLOR_BGR2GRAY), cv2.cvtColor(colour, cv2.COLOR_BGR2BGRA)):
        preview = glide(source(), [picture] * 3)
        assert preview is not None and preview.state == "tracking"


def test_open_source_reads_the_options(cv2, monkeypatch):
    from dasher_rnn.input import webcam
    made = {}

    def fake(camera, **kwargs):
        made.update(kwargs, camera=camera)
        return "source"

    monkeypatch.setattr(webcam, "HeadPointerSource", fake)
    smoothing = OneEuroFilter()
    assert webcam.open_source({"webcam_camera": "1", "webcam_gain": 2.0}, smoothing) == "source"
    assert made["camera"] == 1 and made["gain"] == 2.0 and made["dead_zone"] == webcam.DEFAULT_DEAD_ZONE
    assert made["smoothing"] is smoothing
    webcam.open_source({}, smoothing)
    assert made["camera"] == webcam.DEFAULT_CAMERA


def test_no_camera_on_this_machine_is_one_line_and_quiet(cv2, capfd):
    """A real OpenCV asked for a device that does not exist: one line for the user, none of OpenCV's warnings."""
    from dasher_rnn.input.presets import PRESETS
    from dasher_rnn.input.registry import open_source
    from dasher_rnn.input.webcam import HeadPointerSource
    capfd.readouterr()
    with pytest.raises(GazeSourceError, match=r"^no camera found at /dev/video99$"):
        HeadPointerSource("/dev/video99")
    with pytest.raises(GazeSourceError, match=r"^no camera found at index 99$"):
        open_source("head-pointer", {"webcam_camera": "99"}, PRESETS["head-mouse"])
    assert capfd.readouterr().err == ""


# -- the preview (ui/head_preview.py) --------------------------------------------------------------------------------

def _pixels(image) -> np.ndarray:
    """A QImage as an (H, W, 3) RGB array."""
    from PySide6.QtGui import QImage
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    return rows[:, :image.width() * 3].reshape(image.height(), image.width(), 3).copy()


def _where(pixels: np.ndarray, colour, tolerance: int = 40) -> np.ndarray:
    """(N, 2) x, y of the pixels near ``colour`` (a QColor)."""
    rgb = np.array([colour.red(), colour.green(), colour.blue()])
    near = (np.abs(pixels.astype(int) - rgb) <= tolerance).all(axis=2)
    return np.argwhere(near)[:, ::-1]


def _bare(preview):
    """The same preview with nothing found on it: the frame alone."""
    from dataclasses import replace
    return replace(preview, box=None, points=np.zeros((0, 2), np.float32), anchor=None, centre=None, pointer=None)


@pytest.mark.parametrize("mirrored", [False, True])
def test_preview_paints_the_frame_and_the_tracking(qapp, cv2, face, mirrored):
    from dasher_rnn.ui import head_preview as hp
    src = source(mirrored=mirrored)
    picture = frame(cv2, face, dx=-40)
    preview = glide(src, [frame(cv2, face, dx=-40 * i / 10) for i in range(10)] + [picture] * 5)
    assert preview is not None and preview.state == "tracking" and preview.pointer is not None
    full, bare = _pixels(hp.render_preview(preview)), _pixels(hp.render_preview(_bare(preview)))
    # the frame fills the 640x480 image: shown as a mirror unless the camera already mirrors
    shown = cv2.cvtColor(picture if mirrored else picture[:, ::-1], cv2.COLOR_BGR2RGB)
    assert np.abs(bare[120:, :480].astype(int) - shown[120:, :480]).mean() < 3  # below the text, left of the inset
    for colour, least in ((hp.BOX, 400), (hp.POINTS, 20 * len(preview.points)), (hp.ANCHOR, 40),
                          (hp.CENTRE, 30), (hp.POINTER, 20)):
        assert len(_where(full, colour)) - len(_where(bare, colour)) >= least, colour.name()
    anchor = _where(full, hp.ANCHOR, 10).mean(axis=0)
    bx, by, bw, bh = preview.box
    left = (bx if mirrored else 1 - bx - bw) * 640
    assert left < anchor[0] < left + bw * 640 and by * 480 < anchor[1] < (by + bh) * 480  # the anchor on the face
    # the face moved to the frame's left, which a mirror shows on the right: the anchor is right of the centre
    centre_x = (preview.centre[0] if mirrored else 1 - preview.centre[0]) * 640
    assert (anchor[0] > centre_x) != mirrored
    # the inset screen in the bottom right corner: the pointer towards the side the user moved to
    dot = (_where(full, hp.POINTER, 10).mean(axis=0) - [472, 382]) / [160, 90]  # 0..1 in the inset (8 px margin)
    assert (dot[0] < 0.4 if mirrored else dot[0] > 0.6) and 0.3 < dot[1] < 0.7


def test_preview_window_refreshes_and_recentres(qtbot, cv2, face):
    from dasher_rnn.ui import head_preview as hp
    src = source()
    window = hp.HeadPreviewWindow(src)
    qtbot.addWidget(window)
    window.resize(500, 520)
    window.show()
    assert window.view.preview is None
    empty = _pixels(window.view.grab().toImage())
    assert len(_where(empty, hp.BACKGROUND, 0)) > 0.8 * empty.shape[0] * empty.shape[1]  # nothing yet but the note
    frames = move(cv2, face, dx=-40)
    glide(src, frames)
    window.refresh()
    assert window.view.preview is src.preview()
    painted = _pixels(window.view.grab().toImage())
    assert len(_where(painted, hp.BOX)) > 300 and len(_where(painted, hp.ANCHOR, 10)) > 20
    assert window.recentre_button.height() >= hp.BUTTON_PX
    qtbot.mouseClick(window.recentre_button, hp.Qt.MouseButton.LeftButton)
    preview = glide(src, [frames[-1]] * 2, t0=len(frames) * DT)
    assert preview is not None and preview.pointer == (0.5, 0.5)


def test_preview_frames_of_every_kind():
    from dasher_rnn.ui.head_preview import frame_image
    grey = np.arange(12, dtype=np.uint8).reshape(3, 4)
    image = frame_image(grey)
    assert image is not None and (image.width(), image.height()) == (4, 3) and image.pixelColor(3, 2).red() == 11
    bgra = np.zeros((2, 2, 4), np.uint8)
    bgra[..., 2] = 200  # red
    bgra[..., 3] = 0  # transparent: shown all the same
    image = frame_image(bgra)
    assert image is not None and image.pixelColor(0, 0).red() == 200 and image.pixelColor(0, 0).alpha() == 255
    strided = np.zeros((4, 8, 3), np.uint8)[:, ::2]
    strided[..., 0] = 255  # blue, through a view that is not contiguous
    image = frame_image(strided)
    assert image is not None and image.width() == 4 and image.pixelColor(1, 1).blue() == 255
    for bad in (np.zeros((2, 2), np.float32), np.zeros((2, 2, 2), np.uint8), np.zeros((0, 3, 3), np.uint8)):
        assert frame_image(bad) is None


def test_the_input_part_opens_the_preview_with_the_head_pointer(qtbot, monkeypatch, cv2, face):
    from dasher_rnn.ui.parts import input as input_part
    from dasher_rnn.ui.parts.prefs import PrefsKeeper
    from dasher_rnn.ui.view import DasherView
    from dasher_rnn.zoom.controller import WritingController
    from tests.test_ui import ppm_source
    from tests.test_ui_parts import Notices, SpyStore

    notices = Notices()
    store = SpyStore()
    keeper = PrefsKeeper(store, store.load().updated(webcam_camera="/dev/video99"), notices)
    controller = WritingController(ppm_source(), keeper.prefs.controller_config())
    view = DasherView(controller.zoom.alphabet)
    qtbot.addWidget(view)
    part = input_part.InputPart(controller, view, keeper, notices)
    part.set_input("head-pointer")  # no camera here
    assert part.name == "mouse" and part.head_preview is None and not part.preview_action.isEnabled()
    assert notices.notices["input"] == "Head pointer (webcam): no camera found at /dev/video99; using the mouse."
    with monkeypatch.context() as without:
        without.setitem(sys.modules, "cv2", None)  # the webcam extra not installed
        part.set_input("head-pointer")
    assert part.name == "mouse" and part.head_preview is None
    assert notices.notices["input"] == ("Head pointer (webcam): OpenCV is not installed: "
                                        "pip install 'dasher-rnn[webcam]' installs it; using the mouse.")

    made = []

    def opened(name, options, preset):
        made.append(source())
        return made[-1]

    monkeypatch.setattr(input_part, "open_source", opened)
    part.set_input("head-pointer")
    try:
        assert part.name == "head-pointer" and part.gaze is made[0] and part.preview_action.isEnabled()
        window = part.head_preview
        assert window is not None and window.isVisible() and window.source is made[0]
        window.close()  # the user closes it; the action brings it back
        part.preview_action.trigger()
        assert part.head_preview is window and window.isVisible()
        glide(made[0], [frame(cv2, face)] * 3)
        window.refresh()
        assert window.view.preview is made[0].preview()
    finally:
        part.close()
    assert part.head_preview is None and not part.preview_action.isEnabled() and not window.isVisible()
