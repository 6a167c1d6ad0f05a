"""Dasher's coordinate frame and its non-linear mappings onto the screen (shared by the zoom model, the view
and the simulator).

Dasher coordinates: the square view is ``MAX_Y`` units high; ``x`` is measured from the right
edge leftwards, ``y`` from the top. A box spanning ``[y1, y2]`` reaches from the right edge to
``x = y2 - y1`` (as wide as it is high, in Dasher units). The crosshair sits at ``(ORIGIN_X, ORIGIN_Y)``.

Y: near the top and bottom (beyond ``EDGE`` of the height) distances are compressed ``COMPRESSION``
times, so boxes just off the square are still seen, squashed, at its edges.

X, after Dasher's ``DasherViewSquare`` (``xmap``, ``SetScaleFactor``): x is linear up to half the
square's height (``X_LINEAR``, the crosshair) and logarithmic beyond (scale ``X_LOG``, Dasher's
``1/0.2``), so the big boxes left of the crosshair (the text already written) are squeezed and the
region between the crosshair and the right edge, where the choices are, gets most of the width.
The x axis is scaled to the canvas width: the full square (x = ``MAX_Y``) takes ``X_FILL`` (Dasher's
0.9) of it, whatever the canvas's aspect, so nothing is left blank; only on canvases so wide that x
would be stretched more than ``MAX_X_STRETCH`` times y does the rest go to the history at the left.

Orientation, as Dasher's ``Opts::ScreenOrientations``: left to right (``"ltr"``) is the above; right to left
(``"rtl"``, for Arabic, Hebrew, Persian) mirrors the x mapping, both ways, as Dasher's ``Dasher2Screen`` and
``Screen2Dasher`` do: Dasher x is measured from the *left* edge rightwards, so boxes grow from the left edge,
the choices lie left of the crosshair and the history right of it, and the pointer steers leftwards. Only the
``Viewport`` knows: the zoom, the controller and the simulated user work in Dasher coordinates unchanged.
Top to bottom and bottom to top (``"ttb"``, ``"btt"``) are drawn left to right for now.
"""

from __future__ import annotations

import math

from dasher_rnn.alphabet import ORIENTATIONS

MAX_Y = 4096.0
ORIGIN_X = ORIGIN_Y = MAX_Y / 2
EDGE = 0.05 * MAX_Y
COMPRESSION = 4.0
VISIBLE_MIN = EDGE - COMPRESSION * EDGE  # the Dasher y shown at the top edge of the view
VISIBLE_MAX = MAX_Y - VISIBLE_MIN

X_LINEAR = 0.5 * MAX_Y  # x is linear up to here (the crosshair), logarithmic beyond (Dasher's m_iXlogThres)
X_LOG = 0.2 * MAX_Y  # the logarithm's scale beyond X_LINEAR (Dasher's 1/m_dXlogCoeff, "1/0.2")
X_FILL = 0.9  # the full square takes this share of the canvas width (Dasher's x scale factor 0.9)
MAX_X_STRETCH = 4.0  # x is drawn at most this many times larger than y (Dasher limits the aspect by 4 too)
CATCH_MARGIN = 0.08  # a gaze this near the view (a share of its height: about 2 degrees) is taken onto its edge


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


def x_to_screen(x: float) -> float:
    """Dasher x -> x on screen (in Dasher units from the right edge, before scaling to pixels): linear up to
    ``X_LINEAR``, logarithmic beyond (continuous, with slope 1 at the join)."""
    if x <= X_LINEAR:
        return x
    return X_LINEAR + X_LOG * math.log1p((x - X_LINEAR) / X_LOG)


def screen_to_x(u: float) -> float:
    """The inverse of ``x_to_screen`` (pointer positions on screen -> Dasher x)."""
    if u <= X_LINEAR:
        return u
    return X_LINEAR + X_LOG * math.expm1(min((u - X_LINEAR) / X_LOG, 700.0))  # capped: no overflow far left


SQUARE_WIDTH = x_to_screen(MAX_Y)  # the full square's width on screen, in screen units


class Viewport:
    """A view ``width`` x ``height`` pixels: Dasher's square fills the height, and its x axis the width (boxes
    grow from the right edge, or from the left one for ``orientation="rtl"``; see the module docstring)."""

    def __init__(self, width: float, height: float, orientation: str = "ltr"):
        if orientation not in ORIENTATIONS:
            raise ValueError(f"unknown orientation {orientation!r} (one of {', '.join(ORIENTATIONS)})")
        self.width, self.height = float(width), float(height)
        self.orientation = orientation
        self.mirrored = orientation == "rtl"  # Dasher x runs from the left edge rightwards
        self.scale = self.height / MAX_Y  # y pixels per Dasher unit
        self.x_scale = min(X_FILL * self.width / SQUARE_WIDTH, MAX_X_STRETCH * self.scale)  # x pixels per screen unit

    def screen_x(self, x: float) -> float:
        """The pixel column of Dasher x: a box of height h reaches from the view's edge (the right one, the
        left one when mirrored) to ``screen_x(h)``."""
        if self.mirrored:
            return x_to_screen(x) * self.x_scale
        return self.width - x_to_screen(x) * self.x_scale

    def box_columns(self, size: float) -> tuple[float, float]:
        """The pixel columns (left, right) that a box ``size`` Dasher units high spans (one of them may lie off
        the view)."""
        edge = self.screen_x(size)
        return (0.0, edge) if self.mirrored else (edge, self.width)

    def screen_y(self, y: float) -> float:
        return y_to_screen(y) * self.scale

    def to_screen(self, x: float, y: float) -> tuple[float, float]:
        return self.screen_x(x), self.screen_y(y)

    def to_dasher(self, sx: float, sy: float) -> tuple[float, float]:
        u = sx if self.mirrored else self.width - sx
        return screen_to_x(u / self.x_scale), screen_to_y(sy / self.scale)

    def catch(self, sx: float, sy: float, margin: float = CATCH_MARGIN) -> tuple[float, float] | None:
        """The Dasher point of pixel (``sx``, ``sy``), taken onto the view's edge where it lies outside the view by
        less than ``margin`` of its height (a tracker's error at an edge must neither stop nor start the writing);
        None further out."""
        caught = self.caught_pixel(sx, sy, margin)
        return None if caught is None else self.to_dasher(*caught)

    def caught_pixel(self, sx: float, sy: float, margin: float = CATCH_MARGIN) -> tuple[float, float] | None:
        """``catch`` in pixels: the point on the view's edge, or None."""
        reach = margin * self.height
        if not (-reach <= sx <= self.width + reach and -reach <= sy <= self.height + reach):
            return None
        return min(max(sx, 0.0), self.width), min(max(sy, 0.0), self.height)

    @property
    def crosshair(self) -> tuple[float, float]:
        return self.to_screen(ORIGIN_X, ORIGIN_Y)
