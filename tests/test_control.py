"""Control mode: the control box after the letters, its actions, what they do to the text and to the Writer, the
simulated user's use of it, and how it is drawn."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.input.presets import PRESETS
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.lm.protocol import DASHER_TOTAL
from dasher_rnn.zoom.boxes import Frame, ZoomSettings
from dasher_rnn.zoom.control import (
    ACTION_BITS,
    ACTION_PATH,
    CONTROL_ITEMS,
    CONTROL_SHARE,
    MORE_BOX,
    Action,
    deletion,
    last_sentence,
)
from dasher_rnn.zoom.controller import ControllerConfig, WritingController
from dasher_rnn.zoom.geometry import MAX_Y, ORIGIN_X, ORIGIN_Y
from dasher_rnn.zoom.model import ZoomModel
from dasher_rnn.zoom.simulate import parse_script, script_result, simulate, target_pointer, wait_for_answers
from dasher_rnn.zoom.sources import uniform_counts
from tests.conftest import make_sentences, writer_source
from tests.test_zoom import RecordingSource

ALPHABET = load_alphabet("english")
N = len(ALPHABET)
DT = 1 / 60


def trained_ppm() -> PPMModel:
    model = PPMModel(ALPHABET)
    model.train_text("\n".join(make_sentences(300)) + "\n")
    return model


def ppm_counts(writer) -> dict:
    return writer.mixer.ppm.snapshot()


def same_counts(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def drive(step, zoom: ZoomModel, text: str, action: Action | None = None, frames: int = 20000) -> Frame:
    """Steer (``step(x, y)`` makes one frame) until ``text`` is the message, or until ``action`` happened after
    it; the last frame."""
    frame = Frame()
    for _ in range(frames):
        if action is None and zoom.output == text:
            return frame
        wait_for_answers(zoom)
        frame = step(*target_pointer(zoom, zoom.context + text, action))
        if action is not None and frame.action is not None:
            assert frame.action == action
            return frame
    raise AssertionError(f"did not reach {text!r} {action}: at {zoom.output!r}")


def zoom_steps(zoom: ZoomModel):
    return lambda x, y: zoom.step(x, y, DT)


def controller_steps(c: WritingController):
    return lambda x, y: c.frame((x, y), DT)


# -- the text edits ---------------------------------------------------------------------------------------------
def test_deletions_take_a_character_a_word_or_a_sentence():
    assert deletion("I want tea", Action.DELETE_WORD) == len("tea")
    assert deletion("I want tea ", Action.DELETE_WORD) == len("tea ")
    assert deletion("I want tea", Action.DELETE_CHAR) == 1 and deletion("", Action.DELETE_CHAR) == 0
    assert deletion("Hello there. I want tea.", Action.DELETE_SENTENCE) == len("I want tea.")
    assert deletion("Hello there. I want", Action.DELETE_SENTENCE) == len("I want")
    assert deletion("no end yet", Action.DELETE_SENTENCE) == len("no end yet")
    assert deletion("I want tea", Action.COPY) == 0
    assert last_sentence("Hello there. I want tea. ") == "I want tea."
    assert last_sentence("Hi! Go") == "Go"


def test_scripts_name_actions_in_braces():
    steps = parse_script("I want tea{delete-word}coffee")
    assert steps == ["I want tea", Action.DELETE_WORD, "coffee"]
    assert script_result(steps) == "I want coffee"
    assert parse_script("a{not-an-action}b") == ["a{not-an-action}b"]  # braces around anything else are text


# -- the layout -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("peak", [None, 0, N - 1])
def test_the_control_box_has_a_fixed_share_whatever_the_model_says(peak):
    counts = uniform_counts(N)
    if peak is not None:  # a model sure of one letter (the first, or the last just before the control box)
        counts = np.full(N, 1, np.int64)
        counts[peak] = DASHER_TOTAL - (N - 1)
    zoom = ZoomModel(RecordingSource(counts=counts), ZoomSettings(control=True))
    zoom.idle()
    cum = zoom.layout(zoom.root)
    assert len(cum) == N + 2  # the letters, then the control box
    lo, hi = zoom.child_range(zoom.root, 0.0, MAX_Y, zoom.control_symbol)
    assert (hi - lo) / MAX_Y == pytest.approx(CONTROL_SHARE) and hi == MAX_Y
    letters = np.diff(cum[: N + 1])
    assert letters / letters.sum() == pytest.approx(counts / counts.sum())  # the letters keep their proportions
    off = ZoomModel(RecordingSource(counts=counts))  # control mode off: no control box
    off.idle()
    assert len(off.layout(off.root)) == N + 1


def test_the_control_boxes_children_are_equal_actions_and_add_no_character():
    zoom = ZoomModel(RecordingSource(), ZoomSettings(control=True))
    zoom.idle()
    control = zoom._child(zoom.root, zoom.control_symbol)
    assert control.item is not None and control.action is None and control.handle is None
    sizes = np.diff(zoom.layout(control))
    assert len(sizes) == len(CONTROL_ITEMS) and sizes == pytest.approx(np.full(len(CONTROL_ITEMS), sizes[0]))
    actions = [zoom._child(control, i).action for i in range(len(CONTROL_ITEMS))]
    assert actions == [item.action for item in CONTROL_ITEMS]
    more = zoom._child(control, CONTROL_ITEMS.index(MORE_BOX))
    inside = [zoom._child(more, i).action for i in range(len(MORE_BOX.children))]
    assert np.diff(zoom.layout(more)) == pytest.approx(np.full(len(inside), DASHER_TOTAL / len(inside)))
    # every action is in the control box or in More, once; None: More and the quick phrases' box, holding them
    assert sorted(map(str, [a for a in actions + inside if a is not None])) == sorted(map(str, set(Action) - {Action.PHRASE}))
    assert actions.count(None) == 2 and all(path for path in ACTION_PATH.values())
    assert ACTION_BITS == pytest.approx(np.log2(20 * len(CONTROL_ITEMS)))


def test_zooming_into_the_control_box_outputs_nothing_and_reversing_out_comes_back():
    source = RecordingSource()
    zoom = ZoomModel(source, ZoomSettings(speed_bps=3.0, control=True))
    drive(zoom_steps(zoom), zoom, "ab")
    for _ in range(2000):  # towards Copy, until the control box fills the view
        frame = zoom.step(*target_pointer(zoom, "ab", Action.COPY), DT)
        assert frame.action is None
        if not zoom.root.is_letter:
            break
    assert not zoom.root.is_letter and zoom.root.parent.symbol == ALPHABET.index("b")
    assert zoom.output == "ab" and zoom.text[: zoom._committed] == "ab"  # the control box is no character ...
    assert source.learned == list("ab")  # ... and the box above it is learned, as the parent of the root
    for _ in range(2000):
        frame = zoom.step(1.8 * ORIGIN_X, ORIGIN_Y, DT)  # back out of it, and of "b"
        assert frame.action is None
        if zoom.output == "a":
            break
    assert zoom.output == "a" and zoom.root.is_letter and source.learned == list(zoom.text[: zoom._committed])


# -- actions ----------------------------------------------------------------------------------------------------
def test_crossing_delete_word_removes_the_word_and_what_the_writer_learned_of_it():
    source = writer_source("ppm", trained_ppm=trained_ppm())
    writer = source.writer
    zoom = ZoomModel(source, ZoomSettings(speed_bps=3.0, control=True))
    learned: dict[str, dict] = {"": ppm_counts(writer)}  # the Writer's counts for each committed text
    step = zoom_steps(zoom)

    def record(x: float, y: float) -> Frame:
        frame = step(x, y)
        learned[zoom.text[: zoom._committed]] = ppm_counts(writer)
        return frame

    drive(record, zoom, "I want tea")
    before = ppm_counts(writer)
    frame = drive(record, zoom, "I want tea", Action.DELETE_WORD)
    assert frame.action == Action.DELETE_WORD and frame.deleted >= len("tea")
    assert zoom.output == "I want " and zoom.text == zoom.root_text  # the view starts again from the text
    # centred on the crosshair, zoomed out so that no child reaches past it (nothing more is output until steering)
    assert (zoom.root_lo + zoom.root_hi) / 2 == pytest.approx(ORIGIN_Y) and ORIGIN_X < zoom.root_hi - zoom.root_lo < MAX_Y
    committed = zoom.text[: zoom._committed]
    assert committed == "I want"  # the text above the new root
    assert not same_counts(ppm_counts(writer), before)  # what was learned of "tea" ...
    assert same_counts(ppm_counts(writer), learned[committed])  # ... is taken back exactly
    drive(record, zoom, "I want coffee")  # and writing goes on from there
    assert zoom.output == "I want coffee"
    source.close()


def test_delete_char_and_sentence_in_the_zoom():
    zoom = ZoomModel(RecordingSource(), ZoomSettings(speed_bps=3.0, control=True))
    step = zoom_steps(zoom)
    drive(step, zoom, "Hi. I go")
    drive(step, zoom, "Hi. I go", Action.DELETE_CHAR)
    assert zoom.output == "Hi. I g"
    drive(step, zoom, "Hi. I g", Action.DELETE_SENTENCE)
    assert zoom.output == "Hi. "
    assert zoom.source.learned == list(zoom.text[: zoom._committed])  # the source learned only what is left


def test_stop_in_the_control_box_stops():
    c = WritingController(writer_source("uniform"), ControllerConfig(speed_bps=3.0, auto_speed=False, control_mode=True))
    c.start()
    drive(controller_steps(c), c.zoom, "Tom")
    assert c.running
    frame = drive(controller_steps(c), c.zoom, "Tom", Action.STOP)
    assert frame.action == Action.STOP and not c.running and c.stopped_because == "control"
    assert c.text == "Tom"  # nothing deleted
    for _ in range(30):
        c.frame((ORIGIN_X - 800.0, ORIGIN_Y), DT)  # stopped: the pointer writes nothing
    assert c.text == "Tom"


def test_new_message_in_the_control_box_starts_one():
    source = writer_source("ppm", trained_ppm=trained_ppm())
    c = WritingController(source, ControllerConfig(speed_bps=3.0, auto_speed=False, control_mode=True))
    c.start()
    drive(controller_steps(c), c.zoom, "We need")
    frame = drive(controller_steps(c), c.zoom, "We need", Action.NEW_MESSAGE)
    assert frame.finished == "We need" and c.history == "We need\n" and c.zoom.output == "" and c.running
    assert c.zoom.mark().committed == 0 and not c.can_undo  # a new message: nothing to back into
    drive(controller_steps(c), c.zoom, "Tom")
    assert c.text == "We need\nTom"
    c.close()


def text_box(zoom: ZoomModel, text: str):
    """The box of ``text``'s last character (the context included) and where it is, found down from the root."""
    assert text.startswith(zoom.root_text)
    box, y1, y2 = zoom.root, zoom.root_lo, zoom.root_hi
    for ch in text[len(zoom.root_text) :]:
        y1, y2 = zoom.child_range(box, y1, y2, ALPHABET.index(ch))
        box = box.children[ALPHABET.index(ch)]
    return box, y1, y2


def test_a_deleted_letter_does_not_come_straight_back_however_likely():
    """After an action the view starts again from the text zoomed out, as Dasher's does (``SetNode``): deleting the
    "e" of "We", which the model thinks likelier than not after "W", leaves "W" while the user rests or steers away
    from it; writing goes on when they steer."""
    source = writer_source("ppm", trained_ppm=trained_ppm())
    zoom = ZoomModel(source, ZoomSettings(speed_bps=3.0, control=True))
    step = zoom_steps(zoom)
    drive(step, zoom, "We")
    drive(step, zoom, "We", Action.DELETE_CHAR)
    assert zoom.output == "W"
    outputs = []
    for _ in range(20):
        wait_for_answers(zoom)
        zoom.idle()
        outputs.append(zoom.output)
    assert set(outputs) == {"W"}  # not "We" again
    box, y1, y2 = text_box(zoom, "W")
    assert np.diff(zoom.layout(box))[ALPHABET.index("e")] > DASHER_TOTAL / 2  # "e" is likelier than not
    assert (y1 + y2) / 2 == pytest.approx(ORIGIN_Y) and y2 - y1 > ORIGIN_X  # "W" centred, reaching past the crosshair
    assert (y2 - y1) * np.diff(zoom.layout(box)).max() / DASHER_TOTAL < ORIGIN_X  # and none of its children does
    for _ in range(20):
        wait_for_answers(zoom)
        step(ORIGIN_X, ORIGIN_Y)  # the pointer resting at the crosshair
        outputs.append(zoom.output)
    for _ in range(20):
        wait_for_answers(zoom)
        step(*target_pointer(zoom, "W "))  # towards the space, below "e"
        outputs.append(zoom.output)
    assert set(outputs) == {"W"}
    drive(step, zoom, "We")
    drive(step, zoom, "We need")
    assert zoom.output == "We need"
    source.close()


def test_a_view_started_again_is_sized_for_the_model_once_it_answers_and_empty_around_a_message_start():
    """Before the model answers for the root started again after an action, it is sized for the likeliest letter
    it could have; once it answers, for the one it has, unless the user has moved the view meanwhile. At the start of
    a message, with nothing above the root, the view shows empty space around it, which does not grow."""
    e = ALPHABET.index("e")
    counts = np.full(N, DASHER_TOTAL // 10 // (N - 1), np.int64)
    counts[e] += DASHER_TOTAL - counts.sum()  # "e" nine times in ten after anything
    source = RecordingSource(counts=counts)
    zoom = ZoomModel(source, ZoomSettings(speed_bps=3.0, control=True))
    step = zoom_steps(zoom)
    p = np.diff(zoom._cumulative(counts)).max() / DASHER_TOTAL  # "e"'s share of a letter box
    assert p > 0.8

    def still(text: str, frames: int = 10) -> None:
        for _ in range(frames):
            zoom.idle()
            assert step(ORIGIN_X, ORIGIN_Y).action is None and zoom.output == text

    def delete_held(text: str) -> None:
        """Delete the last character of ``text``, the model's answers held from the frame that deletes it on."""
        source.held = True
        for _ in range(20000):
            source.answer_all()  # what the frame before asked
            action = step(*target_pointer(zoom, text, Action.DELETE_CHAR)).action
            assert action in (None, Action.DELETE_CHAR)
            if action is not None:
                return
        raise AssertionError("did not reach Delete char")

    drive(step, zoom, "be")
    delete_held("be")
    box, y1, y2 = text_box(zoom, "b")
    assert (y1, y2) == pytest.approx((ORIGIN_Y - MAX_Y / 1.95 / 2, ORIGIN_Y + MAX_Y / 1.95 / 2))  # for a share of 0.95
    still("b")
    source.answer_all()  # the root's distribution, and its parent's
    still("b")
    source.answer_all()
    still("b")
    box, y1, y2 = text_box(zoom, "b")
    assert y2 - y1 == pytest.approx(MAX_Y / (1 + p)) and (y1 + y2) / 2 == pytest.approx(ORIGIN_Y)
    assert zoom.root.symbol < 0 and zoom.root_lo < 0 and zoom.root_hi > MAX_Y  # reversed into the rebuilt parent
    source.held = False
    source.answer_all()
    drive(step, zoom, "be")
    delete_held("be")
    step(ORIGIN_X - 500.0, ORIGIN_Y - 300.0)  # the user moves the view before the model answers
    moved = text_box(zoom, "b")[1:]
    source.answer_all()
    source.held = False
    zoom.idle()
    assert text_box(zoom, "b")[1:] == pytest.approx(moved) and zoom.output == "b"  # left where the user put it
    drive(step, zoom, "b", Action.DELETE_CHAR)  # the message is empty: nothing above the root
    assert zoom.output == "" and zoom.root.symbol < 0
    still("")
    view = (zoom.root_lo, zoom.root_hi)
    assert view == pytest.approx((ORIGIN_Y - MAX_Y / (1 + p) / 2, ORIGIN_Y + MAX_Y / (1 + p) / 2))
    for _ in range(30):
        assert zoom.step(1.8 * ORIGIN_X, ORIGIN_Y, DT).bits == 0.0  # it cannot be zoomed out
    assert (zoom.root_lo, zoom.root_hi) == view and zoom.output == ""
    drive(step, zoom, "e")  # steering into it writes
    assert zoom.root_lo < view[0] and zoom.root_hi > view[1]
    drive(step, zoom, "e", Action.NEW_MESSAGE)  # a new message starts zoomed out too
    assert zoom.output == "" and zoom.root_lo > 0 and zoom.root_hi < MAX_Y
    still("")


def test_undo_after_a_control_deletion_brings_the_word_back_with_what_was_learned():
    source = writer_source("ppm", trained_ppm=trained_ppm())
    c = WritingController(source, ControllerConfig(speed_bps=3.0, auto_speed=False, control_mode=True))
    c.start()
    drive(controller_steps(c), c.zoom, "I want tea")
    c.stop()
    written = (c.text, ppm_counts(source.writer))
    c.start()
    drive(controller_steps(c), c.zoom, "I want tea", Action.DELETE_WORD)
    assert c.text == "I want "
    assert c.undo_run()
    assert c.text == written[0] and same_counts(ppm_counts(source.writer), written[1])
    c.close()


def test_control_mode_follows_the_preset_and_can_be_switched_mid_message():
    assert PRESETS["eye-tracker"].control_mode and PRESETS["head-mouse"].control_mode and not PRESETS["mouse"].control_mode
    c = WritingController(writer_source("uniform"), ControllerConfig(speed_bps=3.0, auto_speed=False))
    assert not c.control_mode and not c.zoom.config.control
    c.apply_preset("eye-tracker", adopt_speeds=True)
    assert c.control_mode and c.config.control_mode
    c.apply_preset("mouse")  # at start-up a preset does not change the user's choice
    assert c.control_mode
    c.start()
    drive(controller_steps(c), c.zoom, "abc")
    frame = c.set_control_mode(False)
    assert c.zoom.output == "abc" and len(c.zoom.layout(c.zoom.root)) == N + 1
    assert frame.uncommitted == 0  # the text above the old root stays learned
    drive(controller_steps(c), c.zoom, "abcd")


# -- the simulated user -----------------------------------------------------------------------------------------
def test_the_simulated_user_deletes_a_word_and_retypes_it_and_reports_the_cost():
    zoom = ZoomModel(writer_source("ppm", trained_ppm=trained_ppm()), ZoomSettings(speed_bps=3.0, control=True))
    result = simulate(zoom, ["I want tea{delete-word}coffee", "I need more time."])
    assert not result.failed
    assert [p.phrase for p in result.phrases] == ["I want coffee", "I need more time."]
    assert [a.action for a in result.phrases[0].actions] == [Action.DELETE_WORD] and not result.phrases[1].actions
    summary = result.summary()
    control = summary["control"]
    assert control["actions"] == 1 and control["wrong_actions"] == 0
    word = control["per_action"]["delete-word"]
    assert word["count"] == 1 and word["bits"] >= ACTION_BITS - 0.5 and word["seconds"] > 0
    assert control["least_bits_per_action"] == round(ACTION_BITS, 2)
    with pytest.raises(ValueError, match="control mode"):
        simulate(ZoomModel(RecordingSource()), ["a{stop}"])


def test_simulate_command_reports_the_control_modes_cost(tmp_path, capsys):
    from dasher_rnn.cli import main

    train = tmp_path / "train.txt"
    train.write_text("\n".join(make_sentences(300)) + "\n")
    assert main(["simulate", "--model", "ppm", "--ppm-train", str(train), "--text", "I want tea{delete-word}coffee",
                 "--speed", "4", "--json", "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["control_mode"] and summary["phrases"] == 1 and summary["failed"] == 0
    assert summary["characters"] == len("I want coffee")
    assert summary["control"]["per_action"]["delete-word"]["count"] == 1


class StrictSource(RecordingSource):
    """Handles are distinct objects, and releasing one twice is an error (as the RNN's tree of contexts says)."""

    def __init__(self):
        super().__init__()
        self.live: set[int] = set()
        self.keep: list[object] = []

    def _handle(self, text: str) -> object:
        handle = [text]
        self.keep.append(handle)
        self.live.add(id(handle))
        return handle

    def start(self, context):
        return self._handle(context)

    def child(self, handle, symbol):
        return self._handle(handle[0] + ALPHABET.symbols[symbol])

    def release(self, handle):
        assert id(handle) in self.live, f"{handle[0]!r} released twice"
        self.live.discard(id(handle))


def test_a_root_started_again_from_the_text_is_released_once():
    """After an action the view starts from a root rebuilt from the text; reversing past it makes it a child,
    which may be dropped; the next message must not release it again."""
    source = StrictSource()
    zoom = ZoomModel(source, ZoomSettings(speed_bps=3.0, control=True))
    drive(zoom_steps(zoom), zoom, "abc d")
    drive(zoom_steps(zoom), zoom, "abc d", Action.DELETE_CHAR)
    drive(zoom_steps(zoom), zoom, "ab")  # backing out past the rebuilt root
    drive(zoom_steps(zoom), zoom, "abx")
    zoom.finish_message()
    drive(zoom_steps(zoom), zoom, "q")


def test_a_root_rebuilt_by_rewind_is_released_once_too():
    """The same with Undo writing's rewind (control mode off)."""
    zoom = ZoomModel(StrictSource(), ZoomSettings(speed_bps=3.0))
    drive(zoom_steps(zoom), zoom, "abc")
    mark = zoom.mark()
    drive(zoom_steps(zoom), zoom, "abc de")
    assert zoom.rewind(mark)
    drive(zoom_steps(zoom), zoom, "a")
    drive(zoom_steps(zoom), zoom, "axy")
    zoom.finish_message()


def test_the_frames_of_an_undo_report_every_commit_even_from_inside_the_control_box():
    """A front end that mirrors commits (direct output) adds up what the frames report; after an undo whose run
    started with the control box as the root, that must still be the zoom's committed text."""
    c = WritingController(RecordingSource(), ControllerConfig(speed_bps=4.0, auto_speed=False))
    mirrored = ""

    def mirror(frame: Frame) -> Frame:
        nonlocal mirrored
        mirrored = mirrored[: len(mirrored) - frame.uncommitted] + frame.committed
        return frame

    def committed() -> str:
        return c.zoom.text[len(c.zoom.context) : c.zoom.mark().committed]

    def steer(text: str, action: Action | None = None, until=None) -> None:
        for _ in range(20000):
            if (until is not None and until()) or (action is None and until is None and c.zoom.output == text):
                return
            wait_for_answers(c.zoom)
            if mirror(c.frame(target_pointer(c.zoom, c.zoom.context + text, action), DT)).action is not None:
                return
        raise AssertionError(f"did not reach {text!r}")

    mirror(c.set_control_mode(True))
    c.start()
    steer("hello")
    steer("hello", Action.SPEAK, until=lambda: c.zoom.root.item is not None)  # into the control box, no action
    c.stop()
    for _ in range(5):
        mirror(c.frame(None, DT))
    c.start()  # this run starts with the control box as the root
    steer("hello wor")
    mirror(c.undo_run())
    mirror(c.zoom.idle())
    assert mirrored == committed()
    c.start()
    steer("hello there")
    assert mirrored == committed() and c.zoom.output == "hello there"
    c.close()
