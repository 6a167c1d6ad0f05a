"""Right to left (Arabic, Hebrew, Persian): the view is mirrored as in Dasher, the text stays in logical order.

The mirroring lives in one place, ``Viewport``: the zoom, the controller and the simulated user work in Dasher
coordinates and never know. So these tests check the viewport's two mappings, that the window and the offscreen
renderer take the alphabet's orientation, the pixels ``paint_frame`` draws, a simulated user writing Hebrew in the
window through the mirrored view (the pointer in pixels, left of the crosshair), the text panel's layout, and
direct output's keys, all in the order the text was written.
"""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before Qt is imported: no display needed

import dataclasses

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QImage, QPainter

from dasher_rnn.alphabet import Alphabet, SymbolGroup, load_alphabet
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.output import DirectOutput
from dasher_rnn.settings import SettingsStore
from dasher_rnn.ui.offscreen import offscreen_renderer
from dasher_rnn.ui.paint import paint_frame
from dasher_rnn.ui.text_panel import OutputPanel
from dasher_rnn.ui.view import DasherView
from dasher_rnn.ui.window import MainWindow
from dasher_rnn.zoom.boxes import Frame, ZoomSettings
from dasher_rnn.zoom.controller import WritingController
from dasher_rnn.zoom.geometry import MAX_Y, ORIGIN_X, ORIGIN_Y, Viewport
from dasher_rnn.zoom.model import ZoomModel
from dasher_rnn.zoom.simulate import REVERSE_X, target_pointer
from tests.conftest import make_sentences, writer_source
from tests.test_direct_output import FakeTyper

DT = 1 / 30
ENGLISH = load_alphabet("english")

# Twenty short messages, written for these tests: what a PPM model learns its Hebrew from.
HEBREW_SENTENCES = [
    "שלום, מה שלומך?",
    "אני רוצה לשתות מים.",
    "תודה רבה לך.",
    "בוקר טוב לכולם.",
    "אני צריך עזרה.",
    "אפשר לפתוח את החלון?",
    "אני רעב מאוד.",
    "מה השעה עכשיו?",
    "ערב טוב, חברים.",
    "אני אוהב אותך.",
    "בבקשה תקרא לאחות.",
    "אני רוצה ללכת הביתה.",
    "לילה טוב.",
    "שלום לכולם.",
    "איפה הטלפון שלי?",
    "אני עייף היום.",
    "תביא לי את השמיכה.",
    "שלום, אני כאן.",
    "מה שלום המשפחה?",
    "אני שמח לראות אותך!",
]
HEBREW_LETTERS = "אבגדהוזחטיכךלמםנןסעפףצץקרשת"


def oriented(alphabet: Alphabet, orientation: str) -> Alphabet:
    return dataclasses.replace(alphabet, orientation=orientation)


def hebrew_alphabet() -> Alphabet:
    """A small right-to-left alphabet: the Hebrew letters, a little punctuation, space and newline."""
    return Alphabet("hebrew-test", (SymbolGroup("letters", "#fde7b0", HEBREW_LETTERS),
                                    SymbolGroup("punctuation", "#f3d0e4", ".,?!"),
                                    SymbolGroup("space", "#e6e6e6", " \n")),
                    glyphs={" ": "\u2423", "\n": "\u00b6"}, orientation="rtl")


def hebrew_source():
    alphabet = hebrew_alphabet()
    model = PPMModel(alphabet)
    model.train_text("\n".join(HEBREW_SENTENCES * 3) + "\n")
    return writer_source("ppm", trained_ppm=model)


# -- the viewport -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [(1600, 900), (1024, 768), (600, 1000), (3000, 300)])
def test_the_rtl_viewport_is_the_ltr_one_mirrored_and_round_trips(size):
    ltr, rtl = Viewport(*size), Viewport(*size, orientation="rtl")
    assert not ltr.mirrored and rtl.mirrored and Viewport(*size, orientation="ltr").mirrored is False
    for x in [0.0, 50.0, ORIGIN_X, 3000.0, MAX_Y, 9000.0]:
        for y in [-500.0, 0.0, 1000.0, ORIGIN_Y, 4500.0]:
            sx, sy = rtl.to_screen(x, y)
            assert rtl.to_dasher(sx, sy) == pytest.approx((x, y), rel=1e-9, abs=1e-6)
            lx, ly = ltr.to_screen(x, y)
            assert sx == pytest.approx(rtl.width - lx) and sy == ly  # mirrored left-right, y untouched
    assert rtl.screen_x(0.0) == 0.0  # boxes grow from the left edge
    assert rtl.crosshair == pytest.approx((rtl.width - ltr.crosshair[0], ltr.crosshair[1]))
    # zooming in: right of the crosshair left to right, left of it right to left
    ahead = (ORIGIN_X / 2, ORIGIN_Y)
    assert ltr.to_screen(*ahead)[0] > ltr.crosshair[0] and rtl.to_screen(*ahead)[0] < rtl.crosshair[0]
    # and a pointer left of the crosshair on a right-to-left screen steers into the boxes
    assert rtl.to_dasher(rtl.crosshair[0] - 20, rtl.crosshair[1])[0] < ORIGIN_X
    box = 1000.0
    assert ltr.box_columns(box) == (ltr.screen_x(box), ltr.width)
    assert rtl.box_columns(box) == (0.0, rtl.screen_x(box))


def test_orientations_other_than_dashers_are_refused_and_vertical_ones_are_drawn_left_to_right():
    with pytest.raises(ValueError, match="orientation"):
        Viewport(800, 600, orientation="sideways")
    for vertical in ("ttb", "btt"):
        assert Viewport(800, 600, vertical).to_screen(100.0, 200.0) == Viewport(800, 600).to_screen(100.0, 200.0)


def test_the_view_and_the_renderer_take_the_alphabets_orientation(qapp):
    view = DasherView(hebrew_alphabet())
    view.resize(640, 480)
    assert view.viewport().mirrored and view.viewport().orientation == "rtl"
    assert not DasherView(ENGLISH).viewport().mirrored
    frame = WritingController(writer_source("uniform")).frame(None, 0.0)
    rtl = offscreen_renderer(ENGLISH, 320, 240, orientation="rtl")(frame).copy()
    assert rtl == offscreen_renderer(oriented(ENGLISH, "rtl"), 320, 240)(frame)


# -- painting -----------------------------------------------------------------------------------------------

def _frames(alphabet: Alphabet, target: str, source, count: int = 4, steps: int = 40) -> list[Frame]:
    zoom = ZoomModel(source, ZoomSettings(speed_bps=3.0))
    frames = [zoom.step(ORIGIN_X, ORIGIN_Y, 0.0)]
    for _ in range(count - 1):
        for _ in range(steps):
            frame = zoom.step(*target_pointer(zoom, target), DT)
        frames.append(frame)
    return frames


def test_left_to_right_pictures_are_unchanged(qapp):
    """An alphabet that says nothing, one that says "ltr" and an explicit "ltr" paint the very same pixels (the
    right-to-left view has a painter of its own; left to right keeps the code it had, so its pictures are
    pixel-identical to those from before orientations)."""
    model = PPMModel(ENGLISH)
    model.train_text("\n".join(make_sentences(200)) + "\n")
    frames = _frames(ENGLISH, "the quick brown", writer_source("ppm", trained_ppm=model))
    for scheme in ("default", "high-contrast"):
        plain = offscreen_renderer(ENGLISH, 480, 320, scheme)
        said = offscreen_renderer(oriented(ENGLISH, "ltr"), 480, 320, scheme)
        explicit = offscreen_renderer(ENGLISH, 480, 320, scheme, orientation="ltr")
        for frame in frames:
            image = plain(frame).copy()
            assert image == said(frame) and image == explicit(frame)


def _paint(frame: Frame, alphabet: Alphabet, viewport: Viewport, pointer: tuple[float, float] | None = None,
           dwell: float = 0.0) -> QImage:
    image = QImage(int(viewport.width), int(viewport.height), QImage.Format.Format_ARGB32_Premultiplied)
    painter = QPainter(image)
    paint_frame(painter, frame, viewport, alphabet, "default", pointer, dwell)
    painter.end()
    return image


def test_right_to_left_paints_the_boxes_from_the_left_edge_and_the_crosshair_mirrored(qapp):
    frame = WritingController(writer_source("uniform")).frame(None, 0.0)
    ltr, rtl = Viewport(600, 400), Viewport(600, 400, orientation="rtl")
    left_to_right, right_to_left = _paint(frame, ENGLISH, ltr), _paint(frame, ENGLISH, rtl, dwell=0.5)
    white = QColor("#ffffff")
    # the root box is the square, X_FILL of the width: the margin of history is on the right, the boxes at the left
    assert right_to_left.pixelColor(597, 10) == white and left_to_right.pixelColor(2, 10) == white
    assert len({right_to_left.pixelColor(1, y).name() for y in range(0, 400, 2)}) > 3
    assert len({left_to_right.pixelColor(598, y).name() for y in range(0, 400, 2)}) > 3
    assert {right_to_left.pixelColor(598, y).name() for y in range(0, 400, 4)} == {"#ffffff"}
    # the crosshair mirrored: as far from the right edge as it is from the left one left to right
    cx, cy = rtl.crosshair
    assert cx == pytest.approx(600 - ltr.crosshair[0]) and cx > 300
    assert right_to_left.pixelColor(round(cx) + 5, round(cy)) == QColor("#c00000")
    # the boxes' fills are the left-to-right ones mirrored (away from the labels: the middle of a tall box)
    for y in range(20, 380, 40):
        assert right_to_left.pixelColor(200, y) == left_to_right.pixelColor(599 - 200, y)


def _ink(image: QImage, top: int, bottom: int, left: int, right: int) -> dict[int, int]:
    """Dark pixels per column (only the columns with some) in a part of ``image``."""
    columns = {}
    for x in range(max(left, 0), min(right, image.width())):
        dark = sum(image.pixelColor(x, y).lightness() < 110 for y in range(max(top, 0), min(bottom, image.height())))
        if dark:
            columns[x] = dark
    return columns


def _mismatch(a: list[int], b: list[int]) -> int:
    """How unlike two columns' profiles are, at the best of three one-pixel shifts (antialiasing)."""
    best = None
    for shift in (-1, 0, 1):
        shifted = [0] * max(shift, 0) + b[max(-shift, 0):]
        n = max(len(a), len(shifted))
        cost = sum(abs(x - y) for x, y in zip(a + [0] * (n - len(a)), shifted + [0] * (n - len(shifted)), strict=True))
        best = cost if best is None else min(best, cost)
    assert best is not None
    return best


def test_a_right_to_left_label_ends_at_its_boxs_outer_edge_and_is_not_mirrored(qapp):
    """As Dasher draws it (``DoDelayedText``, RightToLeft): a box reaches from the left edge to its outer edge at
    the right, and its label's right end is there; the glyph reads as it does left to right (lamed's stroke
    rises on the left)."""
    alphabet = Alphabet("lamed", (SymbolGroup("letters", "#fde7b0", "לכש"), SymbolGroup("space", "#e6e6e6", " ")),
                        orientation="rtl")
    frame = ZoomModel(writer_source("ppm", trained_ppm=PPMModel(alphabet))).step(ORIGIN_X, ORIGIN_Y, 0.0)
    drawn = next(d for d in frame.boxes if d.box.symbol == alphabet.index("ל") and d.box.depth == 1)
    ltr, rtl = Viewport(900, 600), Viewport(900, 600, orientation="rtl")
    left_to_right, right_to_left = _paint(frame, alphabet, ltr), _paint(frame, alphabet, rtl)
    middle = round(rtl.screen_y((drawn.y1 + drawn.y2) / 2))
    band = (middle - 30, middle + 30)
    right = round(rtl.box_columns(drawn.y2 - drawn.y1)[1])
    ink = _ink(right_to_left, *band, right - 80, right - 1)
    assert ink and right - 8 <= max(ink) < right  # ends a margin inside the box's right edge
    left = round(ltr.box_columns(drawn.y2 - drawn.y1)[0])
    mirror_ink = _ink(left_to_right, *band, left + 1, left + 80)
    assert mirror_ink and left < min(mirror_ink) <= left + 8  # left to right: starts at the left edge
    # the same glyph, not its mirror image
    profile = [ink.get(x, 0) for x in range(min(ink), max(ink) + 1)]
    ltr_profile = [mirror_ink.get(x, 0) for x in range(min(mirror_ink), max(mirror_ink) + 1)]
    assert _mismatch(profile, ltr_profile) < _mismatch(profile, ltr_profile[::-1])


# -- writing ------------------------------------------------------------------------------------------------

def open_window(qtbot, source, **prefs) -> MainWindow:
    store = SettingsStore()
    loaded = store.load().model_copy(update={"speed_bps": 4.0, "auto_speed": False, "rest_stop_seconds": 0.0,
                                             **prefs})
    window = MainWindow(WritingController(source, loaded.controller_config()), store, loaded, start_timer=False)
    qtbot.addWidget(window)
    window.resize(760, 700)
    window.show()
    qtbot.waitExposed(window)
    return window


def steer_on_screen(window: MainWindow, target: str, frames: int = 3000) -> list[float]:
    """A simulated user aiming at ``target`` through the view's pixels (as a mouse or gaze would); how far right
    of the crosshair the pointer was, in pixels, each frame."""
    zoom, view = window.controller.zoom, window.view
    offsets = []
    for _ in range(frames):
        viewport = view.viewport()
        sx, sy = viewport.to_screen(*target_pointer(zoom, zoom.context + target))
        view.set_pointer_override((sx, sy))
        offsets.append(sx - viewport.crosshair[0])
        window.writing.tick(DT)
        if zoom.output == target:
            return offsets
    raise AssertionError(f"did not write {target!r}: {zoom.output!r}")


def test_a_simulated_user_writes_hebrew_right_to_left_in_logical_order(qtbot, settings_path):
    window = open_window(qtbot, hebrew_source())
    assert window.view.viewport().mirrored
    window.writing.toggle_running()
    word = "שלום לכולם"
    offsets = steer_on_screen(window, word)
    assert sum(o < 0 for o in offsets) > 0.9 * len(offsets)  # steering leftwards, into the boxes
    assert window.controller.zoom.output == word  # the order it was written in: ש first
    assert window.controller.text == word and window.panel.toPlainText() == word
    # pointing right of the crosshair backs out
    view = window.view
    viewport = view.viewport()
    view.set_pointer_override(viewport.to_screen(REVERSE_X, ORIGIN_Y))
    assert view.pointer_screen[0] > viewport.crosshair[0]
    for _ in range(600):
        window.writing.tick(DT)
        if len(window.controller.zoom.output) < len(word) - 2:
            break
    assert word.startswith(window.controller.zoom.output) and len(window.controller.zoom.output) < len(word) - 2


def _ink_columns(image: QImage) -> list[int]:
    return [x for x in range(image.width()) if any(image.pixelColor(x, y).lightness() < 100
                                                   for y in range(4, image.height() - 4))]


@pytest.mark.parametrize("text", ["שלום לכולם", "12 OK"])
def test_the_text_panel_keeps_logical_order_and_lays_right_to_left_paragraphs_from_the_right(qtbot, text):
    panel = OutputPanel()
    qtbot.addWidget(panel)
    panel.resize(400, 100)
    panel.set_orientation("rtl")
    panel.show()
    panel.show_text(text)
    assert panel.toPlainText() == text and panel.layoutDirection() == Qt.LayoutDirection.RightToLeft
    assert panel.document().defaultTextOption().textDirection() == Qt.LayoutDirection.RightToLeft
    ink = _ink_columns(panel.viewport().grab().toImage())
    assert ink and min(ink) > panel.viewport().width() / 2  # right-aligned, even text starting with no letter
    panel.set_orientation("ltr")
    ink = _ink_columns(panel.viewport().grab().toImage())
    assert max(ink) < panel.viewport().width() / 2 and panel.toPlainText() == text


def test_the_window_lays_its_text_panel_out_in_the_alphabets_direction(qtbot, settings_path):
    assert open_window(qtbot, hebrew_source()).panel.orientation == "rtl"
    ltr = open_window(qtbot, writer_source("uniform"))
    assert ltr.panel.orientation == "ltr" and ltr.panel.layoutDirection() == Qt.LayoutDirection.LeftToRight


def test_direct_output_types_hebrew_in_logical_order():
    typer = FakeTyper()
    out = DirectOutput(typer)
    out.track("שלו", 0)
    out.sync()
    out.track("ם", 0)
    out.sync()
    assert typer.keys == ["ש", "ל", "ו", "ם"] and typer.screen == "שלום"  # first written, first typed
    out.track("", 1)  # backing out takes back the last letter written, the leftmost one on screen
    out.sync()
    assert typer.screen == "שלו" and typer.keys[-1] == "BS"


def test_the_rtl_window_types_what_it_writes_in_logical_order(qtbot, settings_path, monkeypatch):
    import dasher_rnn.ui.parts.output as output_part

    monkeypatch.setattr(QGuiApplication, "focusWindow", staticmethod(lambda: None))  # another program has it
    typer = FakeTyper()
    monkeypatch.setattr(output_part, "open_typer", lambda: typer)
    window = open_window(qtbot, hebrew_source(), output="direct")
    window.writing.toggle_running()
    steer_on_screen(window, "תודה רבה")
    window.writing.toggle_running()  # stop: the whole message goes
    assert typer.screen == "תודה רבה" and "".join(typer.keys) == "תודה רבה"


def test_a_screenshot_writes_with_another_languages_ppm_in_a_mirrored_window(qapp, tmp_path, settings_path):
    import json

    from dasher_rnn.adapt.compose import WriterConfig
    from dasher_rnn.ui.app import take_screenshot

    alphabet_file = tmp_path / "hebrew.json"
    alphabet_file.write_text(json.dumps(hebrew_alphabet().to_json()), encoding="utf-8")
    assert load_alphabet(alphabet_file).orientation == "rtl"
    training = tmp_path / "he.txt"
    training.write_text("\n".join(HEBREW_SENTENCES) + "\n", encoding="utf-8")
    writer = WriterConfig(model="ppm", alphabet=str(alphabet_file), ppm_train=(str(training),), adapt=False)
    path = take_screenshot(tmp_path / "shot.png", "שלום", seconds=0.5, size=(640, 480), fps=10.0, writer=writer)
    image = QImage(str(path))
    assert not image.isNull() and image.width() >= 640
