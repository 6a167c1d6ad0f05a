"""Starting settings per input device, so that a new user gets a usable setup in one choice.

Smoothing parameters are for the 1-euro filter on positions normalised to the view height (min_cutoff in
Hz, beta per view-height/s). Speeds are Dasher-style bits per second.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    name: str
    label: str
    speed_bps: float
    auto_speed: bool  # let AutoSpeedControl adjust the speed
    start_on_click: bool
    dwell_start: bool  # start/stop by resting the pointer on the start spot
    dwell_seconds: float
    dwell_radius: float  # fraction of the view height
    pause_when_outside: bool  # pause when the pointer leaves the view or the gaze is lost
    smoothing_min_cutoff: float
    smoothing_beta: float
    reverse_speed: float  # speed factor applied when zooming out
    control_mode: bool = False  # a control box after the letters (stop, delete, speak... without a click)
    rest_holds: bool = False  # a resting pointer holds the zoom (until it moves) and takes back what it wrote while
    # resting, rather than stopping: a gaze rests while its user reads or thinks, and stops by intent (a dwell, Stop)
    confirm_actions: bool = False  # the control box's actions that reach others or lose text ask for a confirmation
    rest_radius: float = 64 / 4096  # a pointer within this share of the view height of where it came to rest is still
    # there: a hand's tremor for the mouse; for a gaze, the eyes' drift and microsaccades and the tracker's noise


PRESETS: dict[str, Preset] = {p.name: p for p in (
    # A mouse is precise: little smoothing, full speed, clicks available.
    Preset("mouse", "Mouse or touchpad", speed_bps=1.5, auto_speed=True, start_on_click=True, dwell_start=False,
           dwell_seconds=1.0, dwell_radius=0.05, pause_when_outside=False, smoothing_min_cutoff=5.0,
           smoothing_beta=1.0, reverse_speed=1.0),
    # Gaze jitters and the eyes also read the boxes: slow, strongly smoothed, fixed speed (reading would look
    # like hunting to the auto speed control), no clicks, pause when the gaze leaves or is lost; the control box
    # does what the toolbar's buttons do (hard to reach by gaze).
    Preset("eye-tracker", "Eye tracker", speed_bps=0.8, auto_speed=False, start_on_click=False, dwell_start=True,
           dwell_seconds=1.0, dwell_radius=0.06, pause_when_outside=True, smoothing_min_cutoff=0.5,
           smoothing_beta=1.0, reverse_speed=0.7, control_mode=True, rest_holds=True, rest_radius=0.04,
           confirm_actions=True),
    # Head mice are steadier than gaze but slower to aim than a hand.
    Preset("head-mouse", "Head mouse", speed_bps=1.0, auto_speed=True, start_on_click=False, dwell_start=True,
           dwell_seconds=1.5, dwell_radius=0.05, pause_when_outside=True, smoothing_min_cutoff=1.5,
           smoothing_beta=0.5, reverse_speed=0.8, control_mode=True, confirm_actions=True),
    # Switches (zoom/switch_modes.py): the switch mode steers, so no clicks, dwell or pausing; a fixed, gentle speed for
    # the dynamic modes (a press must land before the target has grown past its point); the control box stops,
    # deletes and speaks without a pointer.
    Preset("switch", "Switches", speed_bps=1.0, auto_speed=False, start_on_click=False, dwell_start=False,
           dwell_seconds=1.0, dwell_radius=0.05, pause_when_outside=False, smoothing_min_cutoff=1.0,
           smoothing_beta=0.5, reverse_speed=1.0, control_mode=True, confirm_actions=True),
)}


def preset(name: str) -> Preset:
    """The preset called name; ValueError naming the known ones otherwise."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown input preset {name!r}; known presets: {', '.join(PRESETS)}") from None
