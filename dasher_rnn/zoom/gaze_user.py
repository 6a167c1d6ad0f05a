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

The eyes and their tracker are ``gaze_noise.py``'s model at a grade (``grade``: accuracy, precision, rate, losses,
drift, microsaccades, blinks, saccades), and the eye-tracker preset's 1-euro filter smooths the samples, as the app
does. ``rest`` holds the gaze on a spot, or moves it from spot to spot (``REST_SPOTS``), for the time a person stops
to read or think: what the controller writes meanwhile is writing nobody asked for. Simulated time advances ``1/fps``
a frame; the draws are seeded (``seed``), so a run repeats exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from dasher_rnn.input.gaze import STALE_S
from dasher_rnn.input.one_euro import OneEuroFilter
from dasher_rnn.zoom.boxes import Frame
from dasher_rnn.zoom.control import Action
from dasher_rnn.zoom.controller import WritingController
from dasher_rnn.zoom.gaze_noise import Screen, SimulatedEye, grade
from dasher_rnn.zoom.geometry import (
    ORIGIN_X,
    ORIGIN_Y,
    VISIBLE_MAX,
    VISIBLE_MIN,
    Viewport,
    screen_to_y,
    y_to_screen,
)
from dasher_rnn.zoom.simulate import (
    REVERSE_X,
    SimulationResult,
    difference,
    target_way,
    wait_for_answers,
    write_phrases,
)

CORRECT_S = 2.5  # a dwell that has not started the writing in this long: the person looks beside the crosshair
HOLD_GLANCE = 500.0  # Dasher units: how far aside the eyes glance when the zoom holds (the window says to move them)


@dataclass(frozen=True)
class GazeUserConfig:
    """The simulated person's eyes and tracker, validated."""

    grade: str = "consumer"  # the tracker and its user's eyes (``gaze_noise.GRADES``; "perfect" tests nothing real)
    saccade_s: float = 0.2  # from choosing another box to the eyes setting off for it (the saccade itself follows)
    lead: float = 0.8  # a box this wide (a share of the crosshair's distance from the right edge) is arriving
    min_x: float = 16.0  # the eyes look no nearer the right edge than this (Dasher units)
    seed: int = 0
    screen: Screen = Screen()
    view: tuple[int, int, int, int] = (0, 120, 1920, 960)  # the canvas on the screen: left, top, width, height (px)

    def __post_init__(self) -> None:
        grade(self.grade)
        limits = {"saccade_s": (0.0, 2.0), "lead": (0.1, 1.0), "min_x": (1.0, ORIGIN_X)}
        for name, (low, high) in limits.items():
            value = getattr(self, name)
            if not isinstance(value, int | float) or not low <= value <= high:
                raise ValueError(f"{name} must be from {low:g} to {high:g}, not {value!r}")
        left, top, width, height = self.view
        if not (width > 0 and height > 0 and left >= 0 and top >= 0 and left + width <= self.screen.width_px
                and top + height <= self.screen.height_px):
            raise ValueError(f"the view {self.view} must lie on the {self.screen.width_px}x{self.screen.height_px} "
                             "screen")


class Eyes(Protocol):
    """Where the person wants to look from ``t`` on, in pixels of the screen (``SimulatedEye``)."""

    def look(self, point: tuple[float, float], t: float) -> None: ...


class GazeUser:
    """The person's eyes (``look``, ``rest_at``) and what the app makes of the tracker's samples of them (``sample``):
    each valid sample smoothed by the preset's 1-euro filter on the screen's 0..1 coordinates, as the app's gaze
    sources do (``input/gaze.py``), none after ``STALE_S`` without one, and a point near the view taken onto its
    edge (``Viewport.catch``) as the window does."""

    def __init__(self, controller: WritingController, config: GazeUserConfig | None = None,
                 eyes: Eyes | None = None) -> None:
        self.controller = controller
        self.config = config or GazeUserConfig()
        left, top, width, height = self.config.view
        self.viewport = Viewport(width, height)
        self.origin = (left, top)
        # the eyes: simulated here, or in another process that sends their gaze to a real window
        self.eyes: Eyes = eyes or SimulatedEye(grade(self.config.grade), self.config.screen, self.config.seed,
                                               start=self._on_screen((ORIGIN_X, y_to_screen(ORIGIN_Y))))
        preset = controller.preset
        self.filter = OneEuroFilter(preset.smoothing_min_cutoff, preset.smoothing_beta)
        self.eye = (ORIGIN_X, y_to_screen(ORIGIN_Y))  # where the person wants to look (Dasher x, screen y)
        self._box: object = None  # the box the eyes are on (what identifies it, see ``_aim``)
        self._next: tuple[object, float] | None = None  # the box chosen next, and when the eyes set off for it
        self._latest: tuple[float, float, float] | None = None  # the newest smoothed sample: t, x, y (0..1)
        self._correction = (0.0, 0.0)  # how far beside the crosshair the person looks to put the pointer on it
        self._dwelling_since: float | None = None

    def _on_screen(self, point: tuple[float, float]) -> tuple[float, float]:
        """(Dasher x, screen y) -> pixels of the screen."""
        x, y = self.viewport.to_screen(point[0], screen_to_y(point[1]))
        return self.origin[0] + x, self.origin[1] + y

    def _aim(self, target: str, action: Action | None) -> tuple[object, float, float]:
        """The box the eyes want now (what identifies it), and its point on the screen."""
        zoom = self.controller.zoom
        if not self.controller.running:  # dwell on the crosshair to start, looking beside it if the pointer shows
            x, y = ORIGIN_X - self._correction[0], y_to_screen(ORIGIN_Y) - self._correction[1]  # the tracker errs
            return "crosshair", x, y
        if self.controller.held:  # the zoom waits for the eyes to move: a glance aside, then back to the box
            x, y = self.eye
            return "aside", x + HOLD_GLANCE, y + (HOLD_GLANCE if y < ORIGIN_Y else -HOLD_GLANCE)
        way = target_way(zoom, target, action)
        if way is None:
            return "back", REVERSE_X, y_to_screen(ORIGIN_Y)
        arriving = self.config.lead * ORIGIN_X
        depth = next((i for i, (y1, y2) in enumerate(way[1:], 1) if y2 - y1 < arriving), len(way) - 1)
        y1, y2 = way[depth]
        centre = min(max((y1 + y2) / 2, VISIBLE_MIN), VISIBLE_MAX)
        return (zoom.root_text, depth), max((y2 - y1) / 2, self.config.min_x), y_to_screen(centre)

    def _correct(self, pointer: tuple[float, float] | None, t: float) -> None:
        """While the person dwells on the crosshair to start and the pointer the window draws stays off it, they
        look beside the crosshair by what they see (after ``CORRECT_S``, and again each ``CORRECT_S``): a tracker's
        calibration error larger than the dwell's circle is how a real user meets it."""
        if self.controller.running or pointer is None or self._box != "crosshair":
            self._dwelling_since = None
            return
        if self._dwelling_since is None:
            self._dwelling_since = t
        elif t - self._dwelling_since >= CORRECT_S:
            seen = (pointer[0] - ORIGIN_X, y_to_screen(pointer[1]) - y_to_screen(ORIGIN_Y))
            self._correction = (self._correction[0] + seen[0], self._correction[1] + seen[1])
            self._dwelling_since = t

    def look(self, target: str, action: Action | None, t: float) -> None:
        """Move the eyes for the moment ``t``: on along the box they are on, or, a saccade after choosing another
        box, to it."""
        box, x, y = self._aim(target, action)
        if box == self._box:
            self._want((x, y), t)  # pursuit
            self._next = None
            return
        if self._next is None or self._next[0] != box:
            self._next = (box, t + self.config.saccade_s)
        if t >= self._next[1]:
            self._box, self._next = box, None
            self._want((x, y), t)

    def _want(self, point: tuple[float, float], t: float) -> None:
        self.eye = point
        self.eyes.look(self._on_screen(point), t)

    def rest_at(self, spot: tuple[float, float], t: float) -> None:
        """Look at ``spot`` (Dasher x, screen y; or pixels of the screen off the view, see ``REST_SPOTS``) from
        ``t`` and stay there: the person is not writing."""
        self._box, self._next = "resting", None
        self._want(spot, t)

    def sees(self, pointer: tuple[float, float] | None, t: float) -> None:
        """The pointer the window draws where it takes the gaze to be (Dasher coordinates; None: none): a person who
        cannot start by a dwell looks beside the crosshair by what they see (``_correct``)."""
        self._correct(pointer, t)

    def sample(self, t: float) -> tuple[float, float] | None:
        """What the app makes of the tracker's samples up to ``t``: the smoothed gaze in Dasher coordinates, or
        None where it is off the view or the tracker has sent nothing valid for ``STALE_S``."""
        screen = self.config.screen
        if not isinstance(self.eyes, SimulatedEye):
            raise TypeError("the eyes are in another process: the window receives their samples")
        for s in self.eyes.samples(t):
            if not s.valid:
                continue
            if self._latest is None or s.t - self._latest[0] > STALE_S:
                self.filter.reset()  # after a gap the filter starts afresh, as the app's does
            fx, fy = self.filter.filter(s.x / screen.width_px, s.y / screen.height_px, s.t)
            self._latest = (s.t, fx, fy)
        if self._latest is None or t - self._latest[0] > STALE_S:
            return None
        _, fx, fy = self._latest
        pointer = self.viewport.catch(fx * screen.width_px - self.origin[0], fy * screen.height_px - self.origin[1])
        self.sees(pointer, t)
        return pointer


def simulate_gaze(controller: WritingController, phrases: list[str], fps: float = 30.0, max_seconds: float = 120.0,
                  user: GazeUserConfig | None = None, lockstep: bool = True,
                  render: Callable[[Frame], None] | None = None,
                  progress: Callable[[int], None] | None = None,
                  after: Callable[[GazeUser], object] | None = None) -> tuple[SimulationResult, GazeUser]:
    """Write each phrase as a new message by gaze through ``controller`` (give it a gaze preset: the eye-tracker's
    dwell starts it); a phrase not finished within ``max_seconds`` counts as failed. A phrase may name control
    actions in braces (``simulate.parse_script``), which needs the controller's control mode. ``after`` is called
    with the person after each phrase, before its message is finished (e.g. to ``rest``). Returns the result and the
    person, whose eyes ``rest`` can go on with."""
    person = GazeUser(controller, user)

    def finish() -> None:
        if after is not None:
            after(person)
        controller.new_message()

    def move(target: str, action: Action | None, dt: float) -> Callable[[], Frame]:
        now = controller.clock
        person.look(target, action, now)
        pointer = person.sample(now + dt)
        return lambda: controller.frame(pointer, dt)

    return write_phrases(lambda: controller.zoom, phrases, move, finish, fps, max_seconds, lockstep, render,
                         progress), person


# where a person rests their eyes while reading or thinking (Dasher x, screen y; the view is MAX_Y high): the writing
# area, the control box's corner, the crosshair, the edges, the text panel above the view, the history left of it
# (the crosshair, whose dwell stops the writing, and the text panel, whose absence does, come last: the spots before
# them are looked at while the writing runs)
REST_SPOTS: dict[str, tuple[float, float]] = {
    "writing area": (800.0, 1500.0),
    "far right": (100.0, 2600.0),
    "upper area": (1200.0, 700.0),
    "control box": (500.0, 3700.0),
    "top edge": (700.0, 60.0),
    "bottom edge": (300.0, 4040.0),
    "right edge": (5.0, 2100.0),
    "history": (3400.0, ORIGIN_Y),
    "crosshair": (ORIGIN_X, ORIGIN_Y),
    "text panel": (2500.0, -450.0),
}


@dataclass
class Rest:
    """What a rest did to the message (``rest``): it should do nothing."""

    seconds: float = 0.0
    changed: int = 0  # characters of the message that differ at the end (removed plus added)
    added: int = 0  # characters at the end that the person never wrote (the message before the rest had none of them)
    most_changed: int = 0  # the most that differed at any moment of the rest
    actions: list[Action] = field(default_factory=list)  # control actions that happened meanwhile
    holds: int = 0  # times the zoom held (``WritingController.held`` became true)

    def add(self, other: Rest) -> None:
        self.seconds += other.seconds
        self.changed += other.changed
        self.added += other.added
        self.most_changed = max(self.most_changed, other.most_changed)
        self.actions += other.actions
        self.holds += other.holds


def rest(controller: WritingController, person: GazeUser, seconds: float, fps: float = 30.0,
         spots: list[tuple[float, float]] | None = None, lockstep: bool = True) -> Rest:
    """The person stops writing for ``seconds`` without stopping the controller: the eyes stay where they were, or
    look at each of ``spots`` (Dasher x, screen y) for an equal share of the time, in turn (a person glancing about
    as they read or think). Says what that did to the message: writing nobody asked for."""
    dt = 1.0 / fps
    before = controller.text
    report = Rest(seconds=seconds)
    frames = math.ceil(seconds * fps)
    spots = spots or [person.eye]
    share = math.ceil(frames / len(spots))
    held = controller.held
    for i in range(frames):
        now = controller.clock
        if i % share == 0:
            person.rest_at(spots[i // share], now)
        if lockstep:
            wait_for_answers(controller.zoom)
        frame = controller.frame(person.sample(now + dt), dt)
        if frame.action is not None:
            report.actions.append(frame.action)
        if controller.held and not held:
            report.holds += 1
        held = controller.held
        report.most_changed = max(report.most_changed, difference(before, controller.text)[0])
    if lockstep:
        wait_for_answers(controller.zoom)
    report.changed, report.added = difference(before, controller.text)
    return report
