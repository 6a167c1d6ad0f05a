"""Opening the chosen gaze source and placing its samples in the view.

Gaze sources report points normalised to the whole screen; the view needs its own pixels, so the sample
goes through the geometry of the screen the window is on. Dasher's socket input addresses the writing
area itself (samples in "view" space), as Dasher maps it onto its canvas.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRect
from PySide6.QtWidgets import QWidget

from dasher_rnn.input.gaze import GazeSample, GazeSource, GazeSourceError
from dasher_rnn.input.one_euro import OneEuroFilter
from dasher_rnn.input.presets import Preset
from dasher_rnn.settings import Preferences

GAZE_INPUTS = ("gaze-udp", "tobii", "dasher-socket")


def open_gaze_source(kind: str, prefs: Preferences, preset: Preset) -> GazeSource:
    """A running gaze source set up from the preferences and smoothed as the preset says; raises
    GazeSourceError with a message for the user."""
    smoothing = OneEuroFilter(preset.smoothing_min_cutoff, preset.smoothing_beta)
    token = prefs.input_token or None  # set: only datagrams carrying it count
    if kind == "gaze-udp":
        from dasher_rnn.input.gaze_udp import GazeUDPSource

        return GazeUDPSource(port=prefs.gaze_port, smoothing=smoothing, token=token)
    if kind == "dasher-socket":
        from dasher_rnn.input.dasher_socket import DasherSocketSource

        return DasherSocketSource(port=prefs.socket_port, x_label=prefs.socket_x_label, y_label=prefs.socket_y_label,
                                  x_range=(prefs.socket_x_min, prefs.socket_x_max),
                                  y_range=(prefs.socket_y_min, prefs.socket_y_max), smoothing=smoothing,
                                  token=token)
    if kind == "tobii":
        from dasher_rnn.input.tobii import TobiiSource

        return TobiiSource(smoothing=smoothing)
    raise GazeSourceError(f"unknown gaze input {kind!r}")


def gaze_to_view(sample: GazeSample, screen: QRect, view: QWidget) -> QPointF:
    """The sample (0..1 across ``screen``, in global coordinates, or across ``view`` for samples in "view"
    space) in ``view``'s pixels."""
    if sample.space == "view":
        return QPointF(sample.x * view.width(), sample.y * view.height())
    point = QPointF(screen.x() + sample.x * screen.width(), screen.y() + sample.y * screen.height())
    return view.mapFromGlobal(point)
