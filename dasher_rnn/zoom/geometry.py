"""Dasher's coordinate frame and its non-linear Y mapping (shared by the zoom model, the view and the simulator).

Dasher coordinates: the square view is ``MAX_Y`` units high; ``x`` is measured from the right
edge leftwards, ``y`` from the top. A box spanning ``[y1, y2]`` is drawn from the right edge with
width equal to its height. The crosshair sits at the centre, ``(ORIGIN_X, ORIGIN_Y)``.

Near the top and bottom (beyond ``EDGE`` of the height) distances are compressed ``COMPRESSION``
times, so boxes just off the square are still seen, squashed, at its edges.
"""

from __future__ import annotations

MAX_Y = 4096.0
ORIGIN_X = ORIGIN_Y = MAX_Y / 2
EDGE = 0.05 * MAX_Y
COMPRESSION = 4.0
VISIBLE_MIN = EDGE - COMPRESSION * EDGE  # the Dasher y shown at the top edge of the view
VISIBLE_MAX = MAX_Y - VISIBLE_MIN


def y_to_screen(y: float) -> float:
    """Dasher y -> y on the square (same units, 0..MAX_Y on screen), compressed near the edges."""
    if y < EDGE:
        return EDGE - (EDGE - y) / COMPRESSION
    if y > MAX_Y - EDGE:
        return MAX_Y - EDGE + (y - (MAX_Y - EDGE)) / COMPRESSION
    return y


def screen_to_y(s: float) -> float:
    """The inverse of ``y_to_screen`` (pointer positions on screen -> Dasher y)."""
    if s < EDGE:
        return EDGE - (EDGE - s) * COMPRESSION
    if s > MAX_Y - EDGE:
        return MAX_Y - EDGE + (s - (MAX_Y - EDGE)) * COMPRESSION
    return s


class Viewport:
    """A view ``width`` x ``height`` pixels: Dasher's square fills the height, boxes grow from the right edge."""

    def __init__(self, width: float, height: float):
        self.width, self.height = float(width), float(height)
        self.scale = self.height / MAX_Y

    def to_screen(self, x: float, y: float) -> tuple[float, float]:
        return self.width - x * self.scale, y_to_screen(y) * self.scale

    def to_dasher(self, sx: float, sy: float) -> tuple[float, float]:
        return (self.width - sx) / self.scale, screen_to_y(sy / self.scale)

    @property
    def crosshair(self) -> tuple[float, float]:
        return self.to_screen(ORIGIN_X, ORIGIN_Y)
