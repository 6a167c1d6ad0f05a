"""A simulated user steering the real zoom model towards target phrases (Dasher's game mode).

The user points at the centre of the deepest box of the target text that is on screen, at a
distance from the right edge of half its height (which asks the zoom to make that box fill the
view) but no less than half its distance from the crosshair's height (a target off to the side
is brought level while it is zoomed into, rather than swept past); when the text above the root
is wrong, they point left of the crosshair to reverse.
Simulated time advances a fixed ``1/fps`` per frame. With an asynchronous source the run waits
for the model's answers between frames (``lockstep``) so the result does not depend on this
machine's speed; the frame times reported are the zoom model's own work (plus rendering when a
renderer is given), measured on the thread that would be the UI thread.

With control mode on, a phrase may name control actions in braces: ``"I want tea{delete-word}coffee"`` writes
"I want tea", steers into the control box after it and through "delete word", then writes "coffee" (the
phrase's result is "I want coffee"). The bits and seconds spent from the end of the writing before an action
to the action's box are its cost, reported per action (``control`` in the summary).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from dasher_rnn.zoom.boxes import Frame
from dasher_rnn.zoom.control import (
    ACTION_BITS,
    ACTION_PATH,
    CONTROL_BOX,
    CONTROL_ITEMS,
    DELETIONS,
    PHRASES_INDEX,
    Action,
    deletion,
)
from dasher_rnn.zoom.geometry import ORIGIN_X, ORIGIN_Y, VISIBLE_MAX, VISIBLE_MIN
from dasher_rnn.zoom.model import ZoomModel

REVERSE_X = 1.8 * ORIGIN_X  # where the simulated user points to back out
STEER = 0.5  # how far right of the crosshair (per unit of height away from it) an off-centre target is aimed at


_STEP = re.compile(r"\{(" + "|".join(re.escape(a.value) for a in Action) + r")\}")


def parse_script(phrase: str) -> list[str | Action]:
    """A phrase's steps: text to write and control actions (``"I want tea{delete-word}coffee"``; braces around
    anything but an action's name are text)."""
    steps: list[str | Action] = []
    at = 0
    for match in _STEP.finditer(phrase):
        if match.start() > at:
            steps.append(phrase[at : match.start()])
        steps.append(Action(match.group(1)))
        at = match.end()
    if at < len(phrase) or not steps:
        steps.append(phrase[at:])
    return steps


def script_result(steps: list[str | Action]) -> str:
    """The message a script leaves (its deletions applied)."""
    text = ""
    for step in steps:
        if isinstance(step, Action):
            if step in DELETIONS:
                text = text[: len(text) - deletion(text, step)]
            elif step == Action.NEW_MESSAGE:
                text = ""
        else:
            text += step
    return text


GROUPS = tuple(item for item in CONTROL_ITEMS if item.action is None)  # the control box's boxes of boxes


def control_path(zoom: ZoomModel, action: Action, phrase: str | None = None) -> list[int] | None:
    """The boxes from a letter box to ``action``'s (a quick phrase: ``phrase``'s, in the Phrases box), less those
    the root is already in; None when the phrase is not in the zoom's list, or the root is a box of boxes (More,
    Phrases) that is not on the way: back out first."""
    if action == Action.PHRASE:
        index = zoom.phrase_index(phrase or "")
        if index is None:
            return None
        path = [zoom.control_symbol, PHRASES_INDEX, index]
    else:
        path = [zoom.control_symbol, *ACTION_PATH[action]]
    item = zoom.root.item
    if item is None:
        return path
    if item is CONTROL_BOX:
        return path[1:]
    if item.action is None and CONTROL_ITEMS.index(item) == path[1]:  # inside More or Phrases, on the way
        return path[2:]
    return None


def target_way(zoom: ZoomModel, target: str, action: Action | None = None,
               phrase: str | None = None) -> list[tuple[float, float]] | None:
    """Where the boxes on the way to what a user wants lie now: the root's range, then each box of ``target`` (the
    whole text, context included) and of ``action``'s box in the control box after it (a quick phrase:
    ``phrase``'s), as far as the first one that is not yet laid out (or is under one unit high). None when the
    root is off the way: the user must back out."""
    in_control = not zoom.root.is_letter
    if not target.startswith(zoom.root_text) or (in_control and (action is None or target != zoom.root_text)):
        return None
    box, y1, y2 = zoom.root, zoom.root_lo, zoom.root_hi
    way = [(y1, y2)]
    path = [zoom.alphabet.index(ch) for ch in target[len(zoom.root_text) :]]
    if action is not None:
        rest = control_path(zoom, action, phrase)
        if rest is None:
            return None  # no such phrase, or in a box of boxes that is not on the way: back out
        path += rest
    for sym in path:
        y1, y2 = zoom.child_range(box, y1, y2, sym)
        way.append((y1, y2))
        child = box.children.get(sym)
        if child is None or y2 - y1 < 1.0:
            break
        if child.item in GROUPS and not y1 < ORIGIN_Y < y2:
            break  # into a box of boxes (More, Phrases) first, then to its action: a small one beside another action
            # is aimed at only from inside, so that the crosshair never passes through an action on the way
        box = child
    return way


def target_range(zoom: ZoomModel, target: str, action: Action | None = None,
                 phrase: str | None = None) -> tuple[float, float] | None:
    """Where the box a user who wants ``target``, then ``action``'s box (``target_way``), is heading for lies now:
    the last box of the way. None when the root is off the way: the user must back out."""
    way = target_way(zoom, target, action, phrase)
    return None if way is None else way[-1]


def target_pointer(zoom: ZoomModel, target: str, action: Action | None = None,
                   phrase: str | None = None) -> tuple[float, float]:
    """Where a user who wants ``target`` (the whole text, context included), then ``action``'s box in the
    control box after it (a quick phrase: ``phrase``'s), points now."""
    box_range = target_range(zoom, target, action, phrase)
    if box_range is None:
        return REVERSE_X, ORIGIN_Y
    y1, y2 = box_range
    centre = min(max((y1 + y2) / 2, VISIBLE_MIN), VISIBLE_MAX)
    return max((y2 - y1) / 2, STEER * abs(centre - ORIGIN_Y), 1.0), centre


@dataclass
class ActionCost:
    action: Action
    bits: float  # zoomed from the end of the writing before it to its box
    seconds: float


@dataclass
class PhraseResult:
    phrase: str  # the message written (a script's deletions applied)
    seconds: float
    frames: int
    reversals: int
    bits: float
    actions: list[ActionCost] = field(default_factory=list)


@dataclass
class SimulationResult:
    phrases: list[PhraseResult] = field(default_factory=list)
    frame_ms: list[float] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    wrong_actions: int = 0  # control actions that happened though the user aimed elsewhere
    control: bool = False  # control mode was on
    switch: dict | None = None  # a simulated switch user's figures (``switch_user.py``): presses, corrections

    def summary(self) -> dict:
        chars = sum(len(p.phrase) for p in self.phrases)
        seconds = sum(p.seconds for p in self.phrases)
        ms = np.array(self.frame_ms or [0.0])
        extra = {}
        if self.control:
            costs = [a for p in self.phrases for a in p.actions]
            per_action = {}
            for action in dict.fromkeys(a.action for a in costs):
                mine = [a for a in costs if a.action == action]
                per_action[action.value] = {"count": len(mine), "bits": round(sum(a.bits for a in mine) / len(mine), 2),
                                            "seconds": round(sum(a.seconds for a in mine) / len(mine), 2)}
            extra = {"control": {"actions": len(costs), "bits": round(sum(a.bits for a in costs), 2),
                                 "seconds": round(sum(a.seconds for a in costs), 2),
                                 "least_bits_per_action": round(ACTION_BITS, 2), "per_action": per_action,
                                 "wrong_actions": self.wrong_actions}}
        if self.switch is not None:
            extra["switch"] = {**self.switch, "presses_per_char": round(self.switch["presses"] / chars, 2) if chars
                               else 0.0}
        return {
            "phrases": len(self.phrases),
            "failed": len(self.failed),
            "failed_phrases": self.failed[:10],
            "characters": chars,
            "seconds": round(seconds, 2),
            "chars_per_minute": round(60 * chars / seconds, 2) if seconds else 0.0,
            "bits_per_char": round(sum(p.bits for p in self.phrases) / chars, 3) if chars else 0.0,
            "reversals": sum(p.reversals for p in self.phrases),
            "frame_ms_p50": round(float(np.percentile(ms, 50)), 3),
            "frame_ms_p99": round(float(np.percentile(ms, 99)), 3),
            "frames": len(self.frame_ms),
            **extra,
        }


Mover = Callable[[str, "Action | None", float], Callable[[], Frame]]  # (target, action, dt) -> the frame's step


def simulate(zoom: ZoomModel, phrases: list[str], fps: float = 60.0, max_seconds: float = 120.0,
             lockstep: bool = True, render: Callable[[Frame], None] | None = None,
             progress: Callable[[int], None] | None = None) -> SimulationResult:
    """Write each phrase as a new message; a phrase not finished within ``max_seconds`` counts as failed.

    A phrase may name control actions in braces (``parse_script``); it needs control mode on."""
    def move(target: str, action: Action | None, dt: float) -> Callable[[], Frame]:
        x, y = target_pointer(zoom, target, action)
        return lambda: zoom.step(x, y, dt)

    return write_phrases(lambda: zoom, phrases, move, zoom.finish_message, fps, max_seconds, lockstep, render,
                         progress)


def write_phrases(zoom_of: Callable[[], ZoomModel], phrases: list[str], move: Mover, finish: Callable[[], object],
                  fps: float, max_seconds: float, lockstep: bool = True, render: Callable[[Frame], None] | None = None,
                  progress: Callable[[int], None] | None = None) -> SimulationResult:
    """The simulated writing of ``phrases``, each a new message, by a user whose every frame ``move`` decides: it is
    given what the user wants (the whole text, and an action after it or None) and returns the frame's step, which
    alone is timed (``frame_ms``). ``finish`` ends each message; ``zoom_of`` is the zoom the frames move."""
    result = SimulationResult(control=zoom_of().config.control)
    dt = 1.0 / fps
    for phrase in phrases:
        zoom = zoom_of()
        steps = parse_script(phrase)
        if any(isinstance(step, Action) for step in steps) and not zoom.config.control:
            raise ValueError(f"{phrase!r} uses the control box: turn control mode on")
        frames = reversals = 0
        bits = 0.0
        actions: list[ActionCost] = []
        written = ""  # the message the steps so far leave
        done = True
        for step in steps:  # an action's cost starts where the writing before it ended
            action = step if isinstance(step, Action) else None
            if action is None:
                written += step
            step_bits, step_frames = 0.0, 0
            finished = False
            while frames * dt < max_seconds:
                if action is None and zoom.output == written:
                    finished = True
                    break
                if lockstep:
                    wait_for_answers(zoom)
                advance = move(zoom.context + written, action, dt)
                start = time.perf_counter()
                frame = advance()
                if render is not None:
                    render(frame)
                result.frame_ms.append(1000 * (time.perf_counter() - start))
                frames += 1
                step_frames += 1
                bits += frame.bits
                step_bits += frame.bits
                reversals += frame.deleted if frame.action is None else 0
                if frame.action is not None and frame.action != action:
                    result.wrong_actions += 1  # e.g. a neighbour's box: the user goes on from the text it left
                    if frame.action == Action.NEW_MESSAGE:
                        break
                if action is not None and frame.action == action:
                    finished = True
                    break
            if not finished:
                done = False
                break
            if action is not None:
                actions.append(ActionCost(action, step_bits, step_frames * dt))
                written = script_result([written, action])
        if done:
            result.phrases.append(PhraseResult(script_result(steps), frames * dt, frames, reversals, bits, actions))
        else:
            result.failed.append(phrase)
        finish()
        if progress is not None:
            progress(1)
    return result


def difference(before: str, after: str) -> tuple[int, int]:
    """(characters that differ, characters added) between two states of a message: what a rest or a pause did."""
    common = len(os.path.commonprefix([before, after]))
    return len(before) - common + len(after) - common, len(after) - common


def wait_for_answers(zoom: ZoomModel, timeout: float = 5.0) -> None:
    """Wait until what was learned has reached the predictor and the model has answered every request: a run in
    lockstep is the same on any machine (with learning in the background, the boxes would be laid out by old or new
    weights as this machine's speed has it)."""
    flush = getattr(zoom.source, "flush", None)
    if flush is not None:
        flush()
    deadline = time.perf_counter() + timeout
    while zoom.answers_pending > 0:
        if time.perf_counter() > deadline:
            raise TimeoutError(f"the predictor did not answer {zoom.answers_pending} requests in {timeout} s")
        time.sleep(0.0002)

