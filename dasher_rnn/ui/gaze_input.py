"""Opening the chosen gaze source and placing its samples in the view.

Gaze sources report points normalised to the whole screen; the view needs its own pixels, so the sample
goes through the geometry of the screen the window is on.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRect
from PySide6.QtWidgets import QWidget

from dasher_rnn.input.gaze import GazeSample, GazeSource, GazeSourceError
from dasher_rnn.input.one_euro import OneEuroFilter
from dasher_rnn.input.presets import Preset

GAZE_INPUTS = ("gaze-udp", "tobii")


def open_gaze_source(kind: str, port: int, preset: Preset) -> GazeSource:
    """A running gaze source smoothed as the preset says; raises GazeSourceError with a message for the user."""
    smoothing = OneEuroFilter(preset.smoothing_min_cutoff, preset.smoothing_beta)
    if kind == "gaze-udp":
        from dasher_rnn.input.gaze_udp import GazeUDPSource

        return GazeUDPSource(port=port, smoothing=smoothing)
    if kind == "tobii":
        from dasher_rnn.input.tobii import TobiiSource

        return TobiiSource(smoothing=smoothing)
    raise GazeSourceError(f"unknown gaze input {kind!r}")


def gaze_to_view(sample: GazeSample, screen: QRect, view: QWidget) -> QPointF:
    """The sample (0..1 across ``screen``, in global coordinates) in ``view``'s pixels."""
    point = QPointF(screen.x() + sample.x * screen.width(), screen.y() + sample.y * screen.height())
    return view.mapFromGlobal(point)
