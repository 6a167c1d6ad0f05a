"""Painting frames into an image without a window, so benchmarks time the same drawing the window does.

Used by ``dasher-rnn simulate --render``: the frame time then includes painting every frame.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QGuiApplication, QImage, QPainter

from dasher_rnn.alphabet import Alphabet
from dasher_rnn.ui.paint import paint_frame
from dasher_rnn.zoom.boxes import Frame
from dasher_rnn.zoom.geometry import ORIGIN_X, ORIGIN_Y, Viewport

_app: QGuiApplication | None = None  # kept alive for the process: fonts need an application


def _ensure_application() -> None:
    global _app
    if QGuiApplication.instance() is None:
        _app = QGuiApplication(["dasher-rnn", "-platform", "offscreen"])  # no display needed


def offscreen_renderer(alphabet: Alphabet, width: int = 1280, height: int = 720, scheme: str = "default",
                       pointer: tuple[float, float] | None = None,
                       orientation: str | None = None) -> Callable[[Frame], QImage]:
    """A function painting a frame into one reused ``width`` x ``height`` image (returned, for inspection).

    ``pointer`` in Dasher coordinates (default: a little up and right of the crosshair) is drawn as the line
    from the crosshair, as the window would. The view runs in the alphabet's direction of writing, or in
    ``orientation`` when given.
    """
    _ensure_application()
    image = QImage(width, height, QImage.Format.Format_ARGB32_Premultiplied)
    viewport = Viewport(width, height, orientation or alphabet.orientation)
    at = viewport.to_screen(*(pointer or (ORIGIN_X / 2, ORIGIN_Y / 2)))

    def render(frame: Frame) -> QImage:
        painter = QPainter(image)
        try:
            paint_frame(painter, frame, viewport, alphabet, scheme, at, 0.0)
        finally:
            painter.end()
        return image

    return render
