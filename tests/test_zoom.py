"""The zoom model without any toolkit: dynamics, output, delete, commit, budget, reparenting, async answers."""

from __future__ import annotations

import numpy as np
import pytest

from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.lm.protocol import DASHER_TOTAL
from dasher_rnn.zoom.boxes import ZoomSettings
from dasher_rnn.zoom.geometry import (
    MAX_Y,
    ORIGIN_X,
    ORIGIN_Y,
    X_FILL,
    X_LINEAR,
    Viewport,
    screen_to_x,
    screen_to_y,
    x_to_screen,
    y_to_screen,
)
from dasher_rnn.zoom.model import ZoomModel
from dasher_rnn.zoom.simulate import simulate, target_pointer
from dasher_rnn.zoom.sources import WriterSource, case_pairs, lower_case_prior, uniform_counts
from tests.conftest import writer_source

ALPHABET = load_alphabet("english")


class RecordingSource:
    """A model-free source for the zoom's own tests: uniform, recording what is learned; optionally answering
    only when told to."""

    name = "recording"
    alphabet = ALPHABET

    def __init__(self, held: bool = False, counts: np.ndarray | None = None):
        self.held, self.waiting, self.learned, self.released = held, [], [], []
        self._counts = counts if counts is not None else uniform_counts(len(ALPHABET))

    def start(self, context):
        return context

    def child(self, handle, symbol):
        return f"{handle}{ALPHABET.symbols[symbol]}"

    def new_message(self):
        pass

    def close(self):
        pass

    def request(self, handle, priority, deliver):
        if self.held:
            self.waiting.append(deliver)
        else:
            deliver(self._counts)

    def answer_all(self):
        waiting, self.waiting = self.waiting, []
        for deliver in waiting:
            deliver(self._counts)

    def release(self, handle):
        self.released.append(handle)

    def commit(self, symbol, context=None):
        self.learned.append(ALPHABET.symbols[symbol])

    def uncommit(self, count):
        del self.learned[len(self.learned) - count :]


def steer(zoom: ZoomModel, target: str, seconds: float = 60.0, fps: float = 60.0) -> None:
    for _ in range(int(seconds * fps)):
        x, y = target_pointer(zoom, target)
        zoom.step(x, y, 1 / fps)
        if zoom.text == target:
            return
    raise AssertionError(f"did not reach {target!r}: at {zoom.text!r}")


def test_nonlinear_y_round_trips_and_compresses_edges():
    for y in [-600.0, -100.0, 0.0, 100.0, 2048.0, 4000.0, 4500.0]:
        assert screen_to_y(y_to_screen(y)) == pytest.approx(y)
    assert y_to_screen(2048.0) == 2048.0
    assert y_to_screen(-400.0) - y_to_screen(-800.0) == pytest.approx(100.0)  # x4 beyond the edge band


def test_nonlinear_x_is_linear_to_the_crosshair_then_logarithmic_and_round_trips():
    xs = [-300.0, 0.0, 100.0, 1000.0, X_LINEAR, 2500.0, 4096.0, 8000.0, 50_000.0, 1e7]
    screen = [x_to_screen(x) for x in xs]
    assert all(a < b for a, b in zip(screen, screen[1:], strict=False))  # monotonic
    for x, u in zip(xs, screen, strict=True):
        assert screen_to_x(u) == pytest.approx(x, rel=1e-9, abs=1e-6)
    assert x_to_screen(1000.0) == 1000.0 and x_to_screen(ORIGIN_X) == ORIGIN_X  # linear up to the crosshair
    assert x_to_screen(MAX_Y) < 0.8 * MAX_Y  # compressed beyond it
    assert x_to_screen(2 * MAX_Y) - x_to_screen(MAX_Y) < x_to_screen(MAX_Y) - x_to_screen(ORIGIN_X)  # logarithmic


@pytest.mark.parametrize("size", [(1600, 900), (1024, 768), (600, 1000), (3000, 300), (250, 1200)])
def test_viewport_round_trips_and_is_monotonic(size):
    v = Viewport(*size)
    for x in [0.0, 50.0, ORIGIN_X, 3000.0, MAX_Y, 9000.0]:
        for y in [-500.0, 0.0, 1000.0, ORIGIN_Y, 4090.0, 4500.0]:
            sx, sy = v.to_screen(x, y)
            assert v.to_dasher(sx, sy) == pytest.approx((x, y), rel=1e-9, abs=1e-6)
    columns = [v.screen_x(x) for x in range(0, 20_000, 250)]
    assert all(a > b for a, b in zip(columns, columns[1:], strict=False))  # bigger boxes reach further left
    assert v.screen_x(0.0) == v.width and v.crosshair[1] == v.height / 2


@pytest.mark.parametrize("size", [(1600, 900), (1024, 768), (600, 1000)])
def test_the_canvas_is_filled_at_any_aspect(size):
    """The full square spans X_FILL of the width, so at the start (the root box is the square) nothing is blank
    but a margin of history at the left; the choices, right of the crosshair, get most of the width."""
    v = Viewport(*size)
    assert v.screen_x(MAX_Y) == pytest.approx((1 - X_FILL) * v.width)
    assert v.to_dasher(0.0, 0.0)[0] > MAX_Y  # the left edge shows boxes larger than the view: the history
    choices = v.width - v.crosshair[0]
    assert choices > 0.55 * v.width


def test_a_wide_canvas_gives_the_choices_twice_the_width_the_square_view_did():
    v = Viewport(1600, 900)
    assert v.width - v.crosshair[0] > 2 * (v.height / 2)  # the square view: half the height, right of the crosshair
    first_level = MAX_Y / len(ALPHABET)  # a first-level box with a uniform distribution
    assert v.width - v.screen_x(first_level) > 2 * first_level * v.scale  # more than twice as wide as it was


def test_pointer_at_the_crosshair_stays_still():
    zoom = ZoomModel(RecordingSource())
    frame = zoom.step(ORIGIN_X, ORIGIN_Y, 0.1)
    assert frame.bits == 0.0 and (zoom.root_lo, zoom.root_hi) == (0.0, MAX_Y)


def test_zoom_rate_is_capped_by_the_speed():
    zoom = ZoomModel(RecordingSource(), ZoomSettings(speed_bps=2.0))
    for _ in range(30):
        frame = zoom.step(5.0, ORIGIN_Y, 1 / 60)
        assert 0 < frame.bits <= 2.0 / 60 + 1e-9
    assert zoom.bits_total == pytest.approx(30 * 2.0 / 60)


def test_steering_into_boxes_outputs_and_commits_only_above_the_root():
    source = RecordingSource()
    zoom = ZoomModel(source, ZoomSettings(speed_bps=4.0))
    typed = []
    for _ in range(6000):
        x, y = target_pointer(zoom, "hello")
        frame = zoom.step(x, y, 1 / 60)
        typed.append(frame.typed)
        if zoom.text == "hello":
            break
    assert zoom.output == "hello"
    assert "".join(typed).startswith("h")
    # committed = the text above the root: strictly shorter than the output
    assert "hello".startswith("".join(source.learned)) and len(source.learned) < 5
    pending = "hello"[len(source.learned) :]
    assert zoom.finish_message() == pending
    assert "".join(source.learned) == "hello" and zoom.output == ""


def test_backing_out_deletes_and_uncommits():
    source = RecordingSource()
    zoom = ZoomModel(source, ZoomSettings(speed_bps=4.0, reverse_speed=2.0))
    steer(zoom, "abcdef")
    assert source.learned
    deleted = 0
    for _ in range(60 * 60):
        frame = zoom.step(1.9 * ORIGIN_X, ORIGIN_Y, 1 / 60)
        deleted += frame.deleted
        assert frame.bits <= 0
        if zoom.output == "":
            break
    assert zoom.output == "" and deleted == 6
    assert source.learned == []
    # at the start of the message the view stays filled
    zoom.step(1.9 * ORIGIN_X, ORIGIN_Y, 1.0)
    assert zoom.root_lo <= 0 and zoom.root_hi >= MAX_Y


def test_reversing_past_the_kept_ancestors_rebuilds_them_from_the_text():
    source = RecordingSource()
    zoom = ZoomModel(source, ZoomSettings(speed_bps=4.0, keep_ancestors=2))
    steer(zoom, "abcdefgh")
    for _ in range(60 * 120):
        zoom.step(1.9 * ORIGIN_X, ORIGIN_Y, 1 / 60)
        if zoom.output == "":
            break
    assert zoom.output == "" and source.learned == []


def test_starting_context_is_kept_and_never_deleted():
    source = RecordingSource()
    zoom = ZoomModel(source, ZoomSettings(speed_bps=4.0), context="Hi. ")
    steer(zoom, "Hi. ok")
    assert zoom.output == "ok"
    for _ in range(60 * 30):
        zoom.step(1.9 * ORIGIN_X, ORIGIN_Y, 1 / 60)
    assert zoom.text == "Hi. " and source.learned == []


def test_node_budget_and_minimum_size_hold():
    zoom = ZoomModel(RecordingSource(), ZoomSettings(speed_bps=3.0, budget=200))
    for _ in range(300):
        frame = zoom.step(300.0, 1500.0, 1 / 60)
        assert len(frame.boxes) <= 200
        assert all(b.y2 - b.y1 >= zoom.config.min_size for b in frame.boxes[1:])
        for b in frame.boxes[1:]:  # children inside their parents, in alphabet order
            assert b.box.parent is not None


def test_children_split_the_parent_by_the_quantised_distribution():
    counts = np.full(len(ALPHABET), 10, np.int64)
    counts[ALPHABET.index("e")] = DASHER_TOTAL - 10 * (len(ALPHABET) - 1)
    zoom = ZoomModel(RecordingSource(counts=counts))
    zoom.idle()
    lo, hi = zoom.child_range(zoom.root, 0.0, MAX_Y, ALPHABET.index("e"))
    assert (hi - lo) / MAX_Y == pytest.approx(counts[ALPHABET.index("e")] / DASHER_TOTAL)


def test_boxes_use_the_fallback_until_the_model_answers_and_frames_never_wait():
    counts = np.full(len(ALPHABET), 10, np.int64)
    counts[0] = DASHER_TOTAL - 10 * (len(ALPHABET) - 1)
    source = RecordingSource(held=True, counts=counts)
    zoom = ZoomModel(source)
    zoom.idle()
    assert zoom.root.cum is None and zoom.answers_pending == 1
    uniform_a = zoom.child_range(zoom.root, 0.0, MAX_Y, 0)
    source.answer_all()
    zoom.idle()
    assert zoom.answers_pending > 0  # the children asked in turn
    refined_a = zoom.child_range(zoom.root, 0.0, MAX_Y, 0)
    assert refined_a[1] - refined_a[0] > 10 * (uniform_a[1] - uniform_a[0])


def test_boxes_that_leave_the_view_are_dropped_and_released():
    source = RecordingSource()
    zoom = ZoomModel(source, ZoomSettings(speed_bps=4.0))
    steer(zoom, "zz")
    assert source.released  # siblings of the path went away
    assert len(zoom.root.parent.children) == 1


def test_ppm_source_learns_committed_text_and_simulation_reports():
    ppm = PPMModel(ALPHABET)
    ppm.train_text("the cat sat on the mat. " * 20)
    zoom = ZoomModel(writer_source("ppm", trained_ppm=ppm), ZoomSettings(speed_bps=3.0))
    result = simulate(zoom, ["the cat", "the mat"], fps=30, max_seconds=60)
    summary = result.summary()
    assert summary["phrases"] == 2 and summary["failed"] == 0
    assert summary["chars_per_minute"] > 0 and summary["frames"] == len(result.frame_ms)
    # a well-predicted phrase costs few bits per character
    assert summary["bits_per_char"] < 3


def test_simulate_command_prints_a_json_summary(tmp_path, capsys):
    import json

    from dasher_rnn.cli import main

    train = tmp_path / "train.txt"
    train.write_text("the cat sat on the mat. " * 20)
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("the cat\n\nthe mat\nnot this one\n")
    assert main(["simulate", "--model", "ppm", "--ppm-train", str(train), "--file", str(phrases), "--lines", "2",
                 "--speed", "4", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["phrases"] == 2 and summary["failed"] == 0 and summary["chars_per_minute"] > 0
    assert summary["frame_ms_p99"] >= summary["frame_ms_p50"] > 0


def test_simulate_command_rejects_phrases_outside_the_alphabet(capsys):
    from dasher_rnn.cli import main

    assert main(["simulate", "--model", "uniform", "--text", "caf\u00e9 \u4e2d", "--json"]) == 2
    assert "outside alphabet" in capsys.readouterr().err


def test_the_lower_case_prior_moves_a_share_of_each_capital_to_its_lower_case_letter():
    pairs = case_pairs(ALPHABET)
    assert len(pairs[0]) == 26
    assert ALPHABET.symbols[pairs[0][0]] == "A" and ALPHABET.symbols[pairs[1][0]] == "a"
    p = np.full(len(ALPHABET), 1.0)
    p[ALPHABET.index("T")] = 40.0
    q = lower_case_prior(p, pairs, 0.25)
    assert q.sum() == pytest.approx(p.sum())
    assert q[ALPHABET.index("T")] == pytest.approx(30.0) and q[ALPHABET.index("t")] == pytest.approx(11.0)
    assert q[ALPHABET.index(".")] == p[ALPHABET.index(".")]  # only letters move
    assert np.array_equal(lower_case_prior(p, pairs, 0.0), p)


def test_the_prior_applies_at_a_message_start_only():
    model = PPMModel(ALPHABET)
    model.train_text("\n".join(["I want tea.", "The nurse is here.", "We need water."] * 30) + "\n")
    plain = writer_source("ppm", trained_ppm=model)
    prior = WriterSource(writer_source("ppm", trained_ppm=model).writer, start_lower_share=0.25)
    lower = [ALPHABET.index(ch) for ch in "abcdefghijklmnopqrstuvwxyz"]

    def counts(source, context, symbol=None):
        got = []
        handle = source.start(context)
        if symbol is not None:
            handle = source.child(handle, ALPHABET.index(symbol))
        source.request(handle, 1.0, got.append)
        return got[0]

    before, after = counts(plain, ""), counts(prior, "")
    assert after.sum() == before.sum() == DASHER_TOTAL
    assert after[lower].sum() > before[lower].sum()
    assert after[ALPHABET.index("t")] > before[ALPHABET.index("t")] and after[ALPHABET.index("T")] < before[ALPHABET.index("T")]
    assert np.array_equal(counts(plain, "", "I"), counts(prior, "", "I"))  # one character in: the model's own sizes
    assert np.array_equal(counts(plain, "I want"), counts(prior, "I want"))
