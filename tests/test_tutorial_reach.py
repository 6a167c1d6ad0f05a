"""Issue 46: the first-start tutorial can be started, skipped and left by gaze alone (a dwell on each button, with a
visible fill, once per visit) and by switches alone (the buttons scanned: one switch by itself, two with Space to
move and Enter to select); it opens by itself only until finished or skipped."""

# ruff: noqa: E402  (the platform is chosen before Qt is imported)

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import time

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QPushButton

from dasher_rnn.input.gaze import GazeSource
from dasher_rnn.ui.reach import TargetMark
from dasher_rnn.ui.tutorial import BUTTON_DWELL_S, INTRO_PAGE, PRACTICE_PAGE, RESULT_PAGE, TutorialDialog
from tests.test_ui import DT, open_window


class ScreenGaze(GazeSource):
    """A gaze on the screen, put wherever the test looks (as gaze-udp's samples are)."""

    def __init__(self) -> None:
        super().__init__(stale_after=600.0)  # no real time: a sample stays fresh between the test's frames

    def look_at(self, widget) -> None:
        """Look at the middle of ``widget``."""
        centre = widget.mapToGlobal(widget.rect().center())
        screen = widget.screen().geometry()
        self._push((centre.x() - screen.x()) / screen.width(), (centre.y() - screen.y()) / screen.height(),
                   time.monotonic())

    def look_away(self, widget) -> None:
        """Look at the top-left corner of ``widget`` (on no button)."""
        corner = widget.mapToGlobal(widget.rect().topLeft())
        screen = widget.screen().geometry()
        self._push((corner.x() + 2 - screen.x()) / screen.width(), (corner.y() + 2 - screen.y()) / screen.height(),
                   time.monotonic())


def open_tutorial(qtbot, window) -> TutorialDialog:
    dialog = window.open_tutorial(start_timer=False)
    qtbot.addWidget(dialog)
    qtbot.waitExposed(dialog)
    assert dialog.pages.currentIndex() == INTRO_PAGE
    return dialog


def button(dialog: TutorialDialog, text: str) -> QPushButton:
    return next(b for b in dialog.findChildren(QPushButton) if b.text() == text and b.isVisible())


def mark(widget) -> TargetMark | None:
    return next(iter(widget.findChildren(TargetMark)), None)


def dwell(dialog: TutorialDialog, gaze: ScreenGaze, target: QPushButton) -> list[float]:
    """Rest the gaze on ``target`` until the tutorial reacts (the page turns, it closes, or the button is checked):
    the dwell fill seen on it each frame."""
    page, fills = dialog.pages.currentIndex(), []
    while dialog.isVisible() and dialog.pages.currentIndex() == page and not target.isChecked():
        gaze.look_at(target)
        dialog.tick(DT)
        shown = mark(target)
        fills.append(shown.progress if shown is not None and shown.isVisible() else 0.0)
        assert len(fills) < 2 * BUTTON_DWELL_S / DT, f"the dwell on {target.text()!r} never clicked it"
    return fills


def gaze_window(qtbot):
    window = open_window(qtbot, preset="eye-tracker", rest_stop_seconds=0.0)
    gaze = window.input.gaze = ScreenGaze()  # the window's gaze source: the tutorial's too
    return window, gaze


def test_a_gaze_alone_chooses_its_input_practises_and_leaves_the_tutorial(qtbot, settings_path):  # noqa: F811
    window, gaze = gaze_window(qtbot)
    dialog = open_tutorial(qtbot, window)
    dialog.input_buttons["mouse"].click()  # a carer tried the mouse's page
    fills = dwell(dialog, gaze, dialog.input_buttons["eye-tracker"])
    assert dialog.input_buttons["eye-tracker"].isChecked() and "Look at" in dialog.help_label.text()
    growing = fills[:-1]
    assert growing[0] > 0 and growing == sorted(growing) and len(set(growing)) > 10  # the fill grows, visibly
    assert fills[-1] == 0  # clicked: the fill goes
    dwell(dialog, gaze, button(dialog, "Start practising"))
    assert dialog.pages.currentIndex() == PRACTICE_PAGE
    dwell(dialog, gaze, button(dialog, "End practice"))
    assert dialog.pages.currentIndex() == RESULT_PAGE
    dwell(dialog, gaze, button(dialog, "Practise again"))
    assert dialog.pages.currentIndex() == PRACTICE_PAGE
    dwell(dialog, gaze, button(dialog, "End practice"))
    dwell(dialog, gaze, button(dialog, "Start writing"))
    assert window.tutorial is None and not dialog.isVisible()
    assert not window.keeper.prefs.tutorial_done  # no phrase written: it opens again next time


def test_a_gaze_alone_skips_the_tutorial_and_it_stays_done(qtbot, settings_path):  # noqa: F811
    window, gaze = gaze_window(qtbot)
    dialog = open_tutorial(qtbot, window)
    dwell(dialog, gaze, button(dialog, "Skip the tutorial"))
    assert window.tutorial is None and window.keeper.prefs.tutorial_done


def test_a_gaze_clicks_once_per_visit_and_a_glance_clicks_nothing(qtbot, settings_path):  # noqa: F811
    window, gaze = gaze_window(qtbot)
    dialog = open_tutorial(qtbot, window)
    head = dialog.input_buttons["head-mouse"]
    for _ in range(round(0.5 * BUTTON_DWELL_S / DT)):  # a glance on it while reading
        gaze.look_at(head)
        dialog.tick(DT)
    assert mark(head).isVisible() and 0 < mark(head).progress < 1
    gaze.look_away(dialog)
    dialog.tick(DT)
    assert not head.isChecked() and not mark(head).isVisible()
    dwell(dialog, gaze, head)
    assert head.isChecked()
    dialog.input_buttons["eye-tracker"].click()
    for _ in range(round(3 * BUTTON_DWELL_S / DT)):  # resting on it still: it is not clicked again
        gaze.look_at(head)
        dialog.tick(DT)
    assert not head.isChecked()
    dialog.reject()


def test_one_switch_scans_the_buttons_by_itself_and_a_press_clicks_the_ringed_one(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot, input="one-button", scan_s=1.0)
    dialog = open_tutorial(qtbot, window)
    start = button(dialog, "Start practising")
    dialog.tick(DT)
    assert dialog.reach.ringed is start and mark(start).isVisible() and mark(start).ringed
    QTest.keyClick(dialog, Qt.Key.Key_Space)  # the switch
    assert dialog.pages.currentIndex() == PRACTICE_PAGE and dialog.controller.switch is not None
    assert not mark(start).isVisible()
    dialog.show_result()  # no phrase written
    dialog.tick(DT)
    assert dialog.reach.ringed is button(dialog, "Start writing")
    for _ in range(round(1.0 / DT) + 1):  # its turn ends: the ring moves on by itself
        dialog.tick(DT)
    assert dialog.reach.ringed is button(dialog, "Practise again")
    QTest.keyClick(dialog, Qt.Key.Key_Return)  # either switch
    assert dialog.pages.currentIndex() == PRACTICE_PAGE
    dialog.show_result()
    dialog.tick(DT)
    ringed = [dialog.reach.ringed.text()]
    while ringed[-1] != "Start writing":
        dialog.tick(DT)
        ringed.append(dialog.reach.ringed.text())
    QTest.mouseClick(dialog, Qt.MouseButton.LeftButton, pos=dialog.rect().topLeft())  # a mouse button is a switch
    assert window.tutorial is None
    dialog = open_tutorial(qtbot, window)  # not done: it opens again; now skipped
    while dialog.reach.ringed is not button(dialog, "Skip the tutorial"):
        dialog.tick(DT)
    QTest.keyClick(dialog, Qt.Key.Key_Space)
    assert window.tutorial is None and window.keeper.prefs.tutorial_done


def test_two_switches_move_the_ring_with_space_and_select_with_enter(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot, input="step-scan")
    dialog = open_tutorial(qtbot, window)
    for _ in range(round(5 / DT)):  # no timing: the ring waits
        dialog.tick(DT)
    assert dialog.reach.ringed is button(dialog, "Start practising")
    QTest.keyClick(dialog, Qt.Key.Key_Space)
    assert dialog.reach.ringed is button(dialog, "Skip the tutorial") and dialog.pages.currentIndex() == INTRO_PAGE
    QTest.keyClick(dialog, Qt.Key.Key_Space)
    QTest.keyClick(dialog, Qt.Key.Key_Return)  # the third button: the first input, the mouse
    assert dialog.input_buttons["mouse"].isChecked() and dialog.pages.currentIndex() == INTRO_PAGE
    for _ in range(len(dialog.page_buttons()) - 2):  # round again to the first
        QTest.keyClick(dialog, Qt.Key.Key_Space)
    QTest.keyClick(dialog, Qt.Key.Key_Return)
    assert dialog.pages.currentIndex() == PRACTICE_PAGE
    dialog.reject()


def test_a_keyboard_user_without_switches_moves_with_space_and_selects_with_enter(qtbot, settings_path):  # noqa: F811
    window = open_window(qtbot)
    dialog = open_tutorial(qtbot, window)
    dialog.tick(DT)
    assert dialog.reach.ringed is None  # no ring until asked for
    QTest.keyClick(dialog, Qt.Key.Key_Space)
    assert dialog.reach.ringed is button(dialog, "Start practising")
    QTest.keyClick(dialog, Qt.Key.Key_Space)
    QTest.keyClick(dialog, Qt.Key.Key_Return)
    assert window.tutorial is None and window.keeper.prefs.tutorial_done


def test_a_button_that_comes_under_a_resting_gaze_waits_for_the_gaze_to_leave_it(qtbot):
    from PySide6.QtCore import QPointF
    from PySide6.QtWidgets import QWidget

    from dasher_rnn.ui.reach import ButtonReach

    host = QWidget()
    qtbot.addWidget(host)
    host.resize(400, 200)
    first, second = QPushButton("Next page", host), QPushButton("Quit", host)
    for b in (first, second):
        b.setGeometry(50, 50, 200, 60)
    second.hide()
    first.clicked.connect(lambda: (first.hide(), second.show()))
    quits = []
    second.clicked.connect(lambda: quits.append(1))
    host.show()
    qtbot.waitExposed(host)
    reach = ButtonReach(dwell_s=1.0, scan_s=1.0, auto=False, scanning=False)
    on = QPointF(host.mapToGlobal(first.geometry().center()))
    for _ in range(round(5 / DT)):  # resting there all along
        reach.set_buttons([first, second])
        reach.tick(on, DT)
    assert second.isVisible() and not quits
    reach.set_buttons([first, second])
    reach.tick(QPointF(host.mapToGlobal(host.rect().bottomRight())), DT)  # away, and back
    for _ in range(round(1.5 / DT)):
        reach.set_buttons([first, second])
        reach.tick(on, DT)
    assert quits == [1]
