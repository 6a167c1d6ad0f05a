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
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from dasher_rnn.zoom.geometry import ORIGIN_X, ORIGIN_Y, VISIBLE_MAX, VISIBLE_MIN
from dasher_rnn.zoom.model import Frame, ZoomModel

REVERSE_X = 1.8 * ORIGIN_X  # where the simulated user points to back out
STEER = 0.5  # how far right of the crosshair (per unit of height away from it) an off-centre target is aimed at


def target_pointer(zoom: ZoomModel, target: str) -> tuple[float, float]:
    """Where a user who wants ``target`` (the whole text, context included) points now."""
    if not target.startswith(zoom.root_text):
        return REVERSE_X, ORIGIN_Y
    box, y1, y2 = zoom.root, zoom.root_lo, zoom.root_hi
    k = len(zoom.root_text)
    while k < len(target):
        sym = zoom.alphabet.index(target[k])
        y1, y2 = zoom.child_range(box, y1, y2, sym)
        k += 1
        box = box.children.get(sym)
        if box is None or y2 - y1 < 1.0:
            break
    centre = min(max((y1 + y2) / 2, VISIBLE_MIN), VISIBLE_MAX)
    return max((y2 - y1) / 2, STEER * abs(centre - ORIGIN_Y), 1.0), centre


@dataclass
class PhraseResult:
    phrase: str
    seconds: float
    frames: int
    reversals: int
    bits: float


@dataclass
class SimulationResult:
    phrases: list[PhraseResult] = field(default_factory=list)
    frame_ms: list[float] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def summary(self) -> dict:
        chars = sum(len(p.phrase) for p in self.phrases)
        seconds = sum(p.seconds for p in self.phrases)
        ms = np.array(self.frame_ms or [0.0])
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
        }


def simulate(zoom: ZoomModel, phrases: list[str], fps: float = 60.0, max_seconds: float = 120.0,
             lockstep: bool = True, render: Callable[[Frame], None] | None = None,
             progress: Callable[[int], None] | None = None) -> SimulationResult:
    """Write each phrase as a new message; a phrase not finished within ``max_seconds`` counts as failed."""
    result = SimulationResult()
    dt = 1.0 / fps
    for phrase in phrases:
        frames = reversals = 0
        bits = 0.0
        done = False
        while frames * dt < max_seconds:
            if lockstep:
                wait_for_answers(zoom)
            x, y = target_pointer(zoom, zoom.context + phrase)
            start = time.perf_counter()
            frame = zoom.step(x, y, dt)
            if render is not None:
                render(frame)
            result.frame_ms.append(1000 * (time.perf_counter() - start))
            frames += 1
            bits += frame.bits
            reversals += frame.deleted
            if zoom.output == phrase:
                done = True
                break
        if done:
            result.phrases.append(PhraseResult(phrase, frames * dt, frames, reversals, bits))
        else:
            result.failed.append(phrase)
        zoom.finish_message()
        if progress is not None:
            progress(1)
    return result


def wait_for_answers(zoom: ZoomModel, timeout: float = 5.0) -> None:
    deadline = time.perf_counter() + timeout
    while zoom.answers_pending > 0:
        if time.perf_counter() > deadline:
            raise TimeoutError(f"the predictor did not answer {zoom.answers_pending} requests in {timeout} s")
        time.sleep(0.0002)

