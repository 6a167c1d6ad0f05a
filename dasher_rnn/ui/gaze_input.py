"""Placing a pointer source's samples in the view (input/registry.py opens the source).

Gaze sources report points normalised to the whole screen; the view needs its own pixels, so the sample
goes through the geometry of the screen the window is on. Dasher's socket input addresses the writing
area itself (samples in "view" space), as Dasher maps it onto its canvas.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRect
from PySide6.QtWidgets import QWidget

from dasher_rnn.input.gaze import GazeSample


def gaze_to_view(sample: GazeSample, screen: QRect, view: QWidget) -> QPointF:
    """The sample (0..1 across ``screen``, in global coordinates, or across ``view`` for samples in "view"
    space) in ``view``'s pixels."""
    if sample.space == "view":
        return QPointF(sample.x * view.width(), sample.y * view.height())
    point = QPointF(screen.x() + sample.x * screen.width(), screen.y() + sample.y * screen.height())
    return view.mapFromGlobal(point)
