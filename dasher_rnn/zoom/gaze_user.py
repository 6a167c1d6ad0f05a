"""A simulated gaze user: a person writing target phrases by looking at the boxes they want, through the writing
controller in the eye-tracker preset, the gaze counterpart of ``simulate.py``'s pointer user.

A pointer user steers by pointing far out along the way, where the boxes still to come will appear, and holds the
pointer there while the view streams towards it; a gaze does not stay on empty space. The eyes look at the box of
the next character they want (at its middle, as for any target, but never nearer the right edge than ``min_x``:
a box thinner than that cannot be told from its neighbours by gaze, so the eyes look at where it is) and pursue it
as the zoom moves and grows it; once its width has reached ``lead`` of the crosshair's distance from the right
edge (it is arriving: the zoom will take the crosshair into it), they look on to the box after it. A move to
another box is a saccade, made ``saccade_s`` after the box was chosen; a pursuit moves with the box. When the text
above the root goes wrong the eyes look left of the crosshair to back out, as the pointer user points there.
While the controller is stopped (a dwell, the control box's Stop, a rest that stopped it) the eyes dwell on the
crosshair to start again.

The tracker adds noise (``jitter``, a normal spread in Dasher units on the screen; 25 is about 6 px of a 1000 px
view) and the eye-tracker preset's 1-euro filter smooths it, as the app does. ``rest`` holds the gaze still on a
spot, or moves it from spot to spot (``rest_spots``), for the time a person stops to read or think: what the
controller writes meanwhile is writing nobody asked for. Simulated time advances ``1/fps`` a frame; the draws are
seeded (``seed``), so a run repeats exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dasher_rnn.input.one_euro import OneEuroFilter
from dasher_rnn.zoom.control import Action
from dasher_rnn.zoom.controller import WritingController
from dasher_rnn.zoom.geometry import MAX_Y, ORIGIN_X, ORIGIN_Y, VISIBLE_MAX, VISIBLE_MIN, screen_to_y, y_to_screen
from dasher_rnn.zoom.model import Frame
from dasher_rnn.zoom.simulate import REVERSE_X, SimulationResult, target_way, wait_for_answers, write_phrases


@dataclass(frozen=True)
class GazeUserConfig:
    """The simulated person's eyes and tracker, validated."""

    jitter: float = 25.0  # the tracker's noise, a normal spread in Dasher units (the view is 4096 high)
    saccade_s: float = 0.2  # from choosing another box to the eyes landing on it
    lead: float = 0.8  # a box this wide (a share of the crosshair's distance from the right edge) is arriving
    min_x: float = 16.0  # the eyes look no nearer the right edge than this (Dasher units)
    seed: int = 0

    def __post_init__(self) -> None:
        limits = {"jitter": (0.0, 1000.0), "saccade_s": (0.0, 2.0), "lead": (0.1, 1.0), "min_x": (1.0, ORIGIN_X)}
        for name, (low, high) in limits.items():
            value = getattr(self, name)
            if not isinstance(value, int | float) or not low <= value <= high:
                raise ValueError(f"{name} must be from {low:g} to {high:g}, not {value!r}")


class GazeUser:
    """The person's eyes (``look``) and the tracker's samples of them (``sample``)."""

    def __init__(self, controller: WritingController, config: GazeUserConfig | None = None) -> None:
        self.controller = controller
        self.config = config or GazeUserConfig()
        self.rng = np.random.default_rng(self.config.seed)
        preset = controller.preset
        self.filter = OneEuroFilter(preset.smoothing_min_cutoff, preset.smoothing_beta)
        self.eye = (ORIGIN_X, y_to_screen(ORIGIN_Y))  # where the eyes are, on the screen (Dasher x, screen y)
        self._box: object = None  # the box the eyes are on (what identifies it, see ``_aim``)
        self._next: tuple[object, float] | None = None  # the box chosen next, and when the eyes land on it

    def _aim(self, target: str, action: Action | None) -> tuple[object, float, float]:
        """The box the eyes want now (what identifies it), and its point on the screen."""
        zoom = self.controller.zoom
        if not self.controller.running:
            return "crosshair", ORIGIN_X, y_to_screen(ORIGIN_Y)  # dwell there to start
        way = target_way(zoom, target, action)
        if way is None:
            return "back", REVERSE_X, y_to_screen(ORIGIN_Y)
        arriving = self.config.lead * ORIGIN_X
        depth = next((i for i, (y1, y2) in enumerate(way[1:], 1) if y2 - y1 < arriving), len(way) - 1)
        y1, y2 = way[depth]
        centre = min(max((y1 + y2) / 2, VISIBLE_MIN), VISIBLE_MAX)
        return (zoom.root_text, depth), max((y2 - y1) / 2, self.config.min_x), y_to_screen(centre)

    def look(self, target: str, action: Action | None, t: float) -> None:
        """Move the eyes for the moment ``t``: on along the box they are on, or, a saccade after choosing another
        box, to it."""
        box, x, y = self._aim(target, action)
        if box == self._box:
            self.eye = (x, y)  # pursuit
            self._next = None
            return
        if self._next is None or self._next[0] != box:
            self._next = (box, t + self.config.saccade_s)
        if t >= self._next[1]:
            self._box, self.eye, self._next = box, (x, y), None

    def rest_at(self, spot: tuple[float, float]) -> None:
        """Look at ``spot`` (Dasher x, screen y) and stay there: the person is not writing."""
        self._box, self.eye, self._next = "resting", spot, None

    def sample(self, t: float) -> tuple[float, float]:
        """The tracker's sample of the eyes at ``t``, smoothed as the app smooths it, in Dasher coordinates."""
        jitter = self.config.jitter
        x = self.eye[0] + (self.rng.normal(0.0, jitter) if jitter else 0.0)
        y = self.eye[1] + (self.rng.normal(0.0, jitter) if jitter else 0.0)
        fx, fy = self.filter.filter(x / MAX_Y, y / MAX_Y, t)
        return fx * MAX_Y, screen_to_y(fy * MAX_Y)


def simulate_gaze(controller: WritingController, phrases: list[str], fps: float = 30.0, max_seconds: float = 120.0,
                  user: GazeUserConfig | None = None, lockstep: bool = True,
                  render: Callable[[Frame], None] | None = None,
                  progress: Callable[[int], None] | None = None) -> tuple[SimulationResult, GazeUser]:
    """Write each phrase as a new message by gaze through ``controller`` (give it a gaze preset: the eye-tracker's
    dwell starts it); a phrase not finished within ``max_seconds`` counts as failed. A phrase may name control
    actions in braces (``simulate.parse_script``), which needs the controller's control mode. Returns the result
    and the person, whose eyes ``rest`` can go on with."""
    person = GazeUser(controller, user)

    def move(target: str, action: Action | None, dt: float) -> Callable[[], Frame]:
        now = controller.clock
        person.look(target, action, now)
        pointer = person.sample(now + dt)
        return lambda: controller.frame(pointer, dt)

    return write_phrases(lambda: controller.zoom, phrases, move, controller.new_message, fps, max_seconds, lockstep,
                         render, progress), person


def rest_spots(count: int, seed: int = 0) -> list[tuple[float, float]]:
    """``count`` spots of the view's writing side (right of the crosshair, off its edges) to rest the eyes on, drawn
    with ``seed``: the same spots for every rule compared."""
    spots = np.random.default_rng(seed).uniform(0.05, 0.95, (count, 2)) * (ORIGIN_X, MAX_Y)
    return [(float(x), float(y)) for x, y in spots]


def rest(controller: WritingController, person: GazeUser, seconds: float, fps: float = 30.0,
         spots: list[tuple[float, float]] | None = None, lockstep: bool = True) -> int:
    """The person stops writing for ``seconds`` without stopping the controller: the eyes stay where they were, or
    look at each of ``spots`` (Dasher x, screen y) for an equal share of the time, in turn (a person glancing about
    as they read or think). Returns how many characters the message gained meanwhile (writing nobody asked for;
    negative if some were taken back)."""
    dt = 1.0 / fps
    start = len(controller.zoom.output)
    frames = math.ceil(seconds * fps)
    spots = spots or [person.eye]
    for i in range(frames):
        now = controller.clock
        if i % math.ceil(frames / len(spots)) == 0:
            person.rest_at(spots[i // math.ceil(frames / len(spots))])
        if lockstep:
            wait_for_answers(controller.zoom)
        controller.frame(person.sample(now + dt), dt)
    return len(controller.zoom.output) - start
