"""The first-run tutorial: how to steer with the chosen input, a few short phrases with the path to them
shown, and a speed suggested from how the user did (Dasher's game mode idea).

It opens by itself on the first start until a practice phrase was written in it or the user pressed Skip the
tutorial (``completed``: the window then sets the ``tutorial_done`` preference; a tutorial only opened and closed, as
a carer setting the app up does, opens again next time), and from Help > Tutorial at any time. Every step is a large
button or the canvas itself, so it needs no keyboard, and every button is pressed without a click too
(``ui/reach.py``): with a gaze source by resting the gaze on it (a green fill grows across it), with switches by
scanning (an orange ring moves over the buttons: by itself with one switch; Space moves it and Enter presses with
two); Space and Enter move and press for anyone off the practice. So it can be started, skipped and left by gaze or
switches alone.

The practice is written with the input chosen on the first page (the window's, unless the user picks another there;
the window's settings are not changed): the mouse starts and stops with a click; the eye tracker and the head mouse
start and stop by resting on the red cross (the controller's ``DwellDetector``, as in the window, its ring drawn round
the cross), their hints say so in their own words, and after the phrases a control-box step asks for Delete word,
Speak and Stop through the control box (each seen in ``Frame.action``; Speak is left out, and the step says why, where
the computer has no voice). The window's gaze source, when it has one, is the practice's pointer; Speak speaks with the
window's voice (``speaker``).

Practice writes with the user's own model through a ``PracticeSource``: nothing written here is learned
(the Writer never sees a commit) and nothing is journaled or typed into other programs (the tutorial has
its own controller; the window's text, journal and output are not touched). The window stops its own
frames while the tutorial is open, so gaze and dwell act only here.

With a switch input chosen (one switch, two switches, scanning, step scanning), the tutorial explains that mode:
what each press does, how to back out, and how the control box stops; and the practice is written with switches.
The tutorial's own switch part (``parts/switches.py``) takes Space, Enter and the mouse buttons on its canvas while
the practice is shown, and the window's game controller or switch socket is lent to it (its presses are drained here
until the tutorial closes), so the practice is done with the switches the user writes with; on the other pages they
scan the buttons.
"""

from __future__ import annotations

import dataclasses
import html

from PySide6.QtCore import QElapsedTimer, QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import QBrush, QColor, QGuiApplication, QKeyEvent, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from dasher_rnn.input.gaze import GazeSource
from dasher_rnn.input.presets import PRESETS, Preset
from dasher_rnn.input.registry import INPUTS
from dasher_rnn.input.switches import JoystickSwitches, UDPSwitches
from dasher_rnn.settings import Preferences
from dasher_rnn.ui.gaze_input import gaze_to_view
from dasher_rnn.ui.parts.switches import SWITCH_BUTTONS, SWITCH_KEYS, SwitchPart
from dasher_rnn.ui.reach import ButtonReach
from dasher_rnn.ui.speech import Speaker
from dasher_rnn.ui.view import DasherView
from dasher_rnn.zoom.boxes import Frame
from dasher_rnn.zoom.control import Action, action_label, deletion, last_sentence
from dasher_rnn.zoom.controller import WritingController
from dasher_rnn.zoom.figures import MessageStats
from dasher_rnn.zoom.practice import (
    PHRASES,
    SpeedSuggestion,
    TargetBox,
    action_path,
    on_course,
    suggest_speed,
    target_path,
)
from dasher_rnn.zoom.simulate import target_pointer
from dasher_rnn.zoom.sources import PracticeSource
from dasher_rnn.zoom.switching import SwitchConfig, SwitchState

MAX_DT = 0.1
FRAME_MS = 16
NEXT_PHRASE_SECONDS = 1.5  # "well done" stays this long before the next phrase
BUTTON_STYLE = "QPushButton { font-size: 16pt; padding: 10px 24px; min-height: 56px; }"
INTRO_PAGE, PRACTICE_PAGE, RESULT_PAGE = range(3)
SWITCH_MODES = tuple(name for name, kind in INPUTS.items() if kind.family == "switch")
POINTER_PRESETS = ("mouse", "eye-tracker", "head-mouse")  # practised with the pointer (or the window's gaze source)
CONTROL_TASKS = (Action.DELETE_WORD, Action.SPEAK, Action.STOP)  # the control-box step's tasks, in order
ONE_SWITCH_MODES = ("one-button", "scanning")  # on the tutorial's pages, the ring scans the buttons by itself
BUTTON_DWELL_S = 1.5  # a gaze resting this long on a tutorial button clicks it (longer than a start: it is read)
MENU_MODES = ("scanning", "step-scan")  # the zoom speed does not matter in them: they zoom into a box a press picks
_STOP = ("Stop", "Steer into the grey control box after the letters (at the bottom of every box), then into Stop "
                 "in it; the control box also deletes, speaks and starts a new message. (Writing > Control box "
                 "shows it; the Switches preset turns it on.)")


def switch_help(mode: str, config: SwitchConfig | None = None) -> list[tuple[str, str]]:
    """What each press does in the switch mode ``mode``, how to back out and how to stop: (title, text) rows."""
    c = config or SwitchConfig()
    twice = (f"press the same switch twice quickly (within {c.multi_press_s:g} s), or hold it down for "
             f"{c.long_press_s:g} s")
    back = ("Back out", f"To go back, {twice}: the view zooms out and takes characters back. Press once to stop "
                        "backing out, and once more to go on.")
    if mode == "one-button":
        return [("Start", "Press the switch (Space, or the left mouse button) to start. The boxes zoom towards the "
                          "filled mark at the right edge: the one near the top or the one near the bottom."),
                ("Steer", "Each press swaps the mark the zoom heads for, so the view swings up, then down. Press when "
                          "the box you want has drifted past the red cross, and it swings back onto it; the boxes "
                          "the red cross stays in are written."),
                back, _STOP]
    if mode == "two-button":
        return [("Start", "Press either switch to start. The boxes zoom straight towards the red cross."),
                ("Steer", "The first switch (Space, or the left mouse button) brings what is at the upper mark at the "
                          "right edge down to the red cross; the second (Enter, or the right mouse button) brings "
                          "what is at the lower mark up. Press when the box you want is at a mark."),
                back, _STOP]
    if mode == "scanning":
        return [("Start", f"Press the switch (Space, or the left mouse button) to start. The boxes of the view are "
                          f"outlined in turn, top to bottom, {c.scan_s:g} s each, then the whole view."),
                ("Choose", "Press while the outlined box holds what you want: the view zooms into it, and the "
                           "outlining starts again from the top."),
                ("Back out", "Press while the whole view is outlined (after the last box): the view zooms out by half "
                             "and takes characters back. It stays outlined, so each press backs out further."),
                ("Stop", _STOP[1] + f" Writing also stops by itself after {c.scan_cycles} rounds without a press; a "
                                    "press starts it again.")]
    if mode == "step-scan":
        return [("Start", "Press either switch to start: the top box of the view is outlined."),
                ("Choose", "The first switch (Space, or the left mouse button) moves the outline to the next box, "
                           "down the view and then round the whole view; the second (Enter, or the right mouse "
                           "button) zooms into the outlined box."),
                ("Back out", "Move the outline to the whole view (after the last box) and select it: the view zooms "
                             "out by half and takes characters back."),
                _STOP]
    raise ValueError(f"unknown switch mode {mode!r}; known: {', '.join(SWITCH_MODES)}")


def pointer_words(preset: Preset) -> tuple[str, str]:
    """How a user of ``preset`` rests on the red cross and backs out, in the words of that input: (rest, back out)."""
    if preset.name == "eye-tracker":
        return "Rest your eyes on the red cross", "look left of the red cross"
    if preset.name == "head-mouse":
        return "Hold the pointer on the red cross", "point your head left of the red cross"
    return "Rest the pointer on the red cross", "point left of the red cross"


def control_task_text(action: Action, output: str) -> str:
    """What the control-box step asks for (HTML), with the message ``output`` as it is now."""
    label = html.escape(action_label(action))
    if action == Action.DELETE_WORD:
        word = output[len(output) - deletion(output, Action.DELETE_WORD):].strip()
        return f"delete the last word, <b>{html.escape(word)}</b>: into the control box, then <b>{label}</b>"
    if action == Action.SPEAK:
        return f"have the message read aloud: into the control box, then <b>{label}</b>"
    return f"stop writing: into the control box, then <b>{label}</b>"


def steering_help(preset_name: str, switch_mode: str | None = None, config: SwitchConfig | None = None) -> str:
    """The one-screen explanation of steering for an input preset (HTML); for switches, of the switch mode
    ``switch_mode`` (with the timings of ``config``), or of all of them when none is chosen."""
    p = PRESETS.get(preset_name, PRESETS["mouse"])
    intro = ("<p>Every character is a box coming from the right; likelier characters get bigger boxes. "
             "You write by steering into the boxes of what you want to say.</p>")
    if preset_name == "switch" and switch_mode in SWITCH_MODES:
        label = INPUTS[switch_mode].label
        return (f"<h2>Writing with {html.escape(label.lower())}</h2>" + intro
                + "".join(f"<p><b>{html.escape(title)}.</b> {html.escape(text)}</p>"
                          for title, text in switch_help(switch_mode, config))
                + "<p><b>Take back a run.</b> The Undo writing button takes back all you wrote since you last "
                  "started.</p>")
    if preset_name == "switch":
        modes = "".join(f"<li><b>{html.escape(INPUTS[m].label)}</b>: {html.escape(INPUTS[m].about)}</li>"
                        for m in SWITCH_MODES)
        return (f"<h2>Writing with {html.escape(p.label.lower())}</h2>" + intro
                + "<p>Space and Enter, the left and right mouse buttons, a game controller or a switch interface are "
                  "the switches. Choose how to write with them as the Input (the toolbar, or Preferences):</p><ul>"
                + modes + "</ul><p>The tutorial then explains that way and you practise with your switches.</p>")
    if preset_name == "mouse":
        how = [("Steer", "Move the pointer right of the red cross, onto the box you want: the view zooms into it. "
                         "Further right is faster; up and down choose between the boxes."),
               ("Start and stop", "Click on the boxes to start; click again to stop. Moving the pointer off the "
                                  "boxes pauses."),
               ("Back out", "Move the pointer left of the red cross: the view zooms out and takes characters back."),
               ("Take back a run", "The large Undo writing button takes back all you wrote since you last started.")]
    else:
        pointing = "Look at" if preset_name == "eye-tracker" else "Point your head at"
        rest = "Rest your gaze" if preset_name == "eye-tracker" else "Hold the pointer"
        how = [("Steer", f"{pointing} the box you want, right of the red cross: the view zooms towards it. "
                         "Further right is faster; up and down choose between the boxes."),
               ("Start and stop", f"{rest} on the red cross for {p.dwell_seconds:g} s, until the ring around it "
                                  "fills: writing starts. Do the same to stop. Leaving the boxes pauses."),
               ("Back out", f"{pointing} the left of the red cross: the view zooms out and takes characters back."),
               ("Read freely", "While writing is stopped nothing moves, so you can read the boxes first.")]
    rows = "".join(f"<p><b>{html.escape(title)}.</b> {html.escape(text)}</p>" for title, text in how)
    return f"<h2>Writing with {html.escape(p.label.lower())}</h2>" + intro + rows


class TutorialView(DasherView):
    """The canvas, with the target path drawn over the boxes: the next box to steer into (filled and outlined),
    the boxes after it (outlined), and the point to aim at."""

    def __init__(self, alphabet, parent: QWidget | None = None) -> None:
        super().__init__(alphabet, parent)
        self.path: list[TargetBox] = []
        self.aim: tuple[float, float] | None = None  # Dasher coordinates

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        if not self.path and self.aim is None:
            return
        painter = QPainter(self)
        try:
            self.paint_path(painter)
        finally:
            painter.end()

    def paint_path(self, painter: QPainter) -> None:
        viewport = self.viewport()
        high = self.scheme == "high-contrast"
        colour = QColor("#00ff00" if high else "#008a00")
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        for i, box in enumerate(self.path):
            left, right = viewport.box_columns(box.y2 - box.y1)
            left, right = max(0.0, left), min(viewport.width, right)
            top, bottom = viewport.screen_y(box.y1), viewport.screen_y(box.y2)
            rect = QRectF(left, top, right - left, bottom - top).intersected(
                QRectF(0, 0, viewport.width, viewport.height))
            pen = QPen(colour, 5.0 if i == 0 else 2.0)
            if i:
                pen.setStyle(Qt.PenStyle.DashLine)
            painter.setPen(pen)
            fill = QColor(colour)
            fill.setAlpha(70 if i == 0 else 0)
            painter.setBrush(QBrush(fill) if i == 0 else Qt.BrushStyle.NoBrush)
            painter.drawRect(rect)
        if self.aim is not None:
            x, y = viewport.to_screen(*self.aim)
            radius = max(8.0, viewport.height * 0.025)
            painter.setPen(QPen(colour, 4.0))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawEllipse(QPointF(x, y), radius, radius)
            painter.drawEllipse(QPointF(x, y), radius / 3, radius / 3)


def _button(text: str, slot, tip: str = "") -> QPushButton:
    button = QPushButton(text)
    button.setStyleSheet(BUTTON_STYLE)
    button.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the canvas keeps the keyboard (Space) for keyboard users
    if tip:
        button.setToolTip(tip)
    button.clicked.connect(slot)
    return button


def _label(text: str = "", points: float = 14.0) -> QLabel:
    label = QLabel(text)
    font = label.font()
    font.setPointSizeF(points)
    label.setFont(font)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.RichText)
    return label


class TutorialDialog(QDialog):
    """Steering explained, practice phrases, a suggested speed. ``chosen_speed`` is the speed the user chose
    to use from now on (None: keep theirs). ``finished`` is emitted when it closes, however it closes."""

    def __init__(self, writer, prefs: Preferences, speed_bps: float, gaze: GazeSource | None = None,
                 parent: QWidget | None = None, phrases: tuple[str, ...] = PHRASES, start_timer: bool = True,
                 switch_source: JoystickSwitches | UDPSwitches | None = None, speaker: Speaker | None = None) -> None:
        """``gaze``: the window's gaze source, if it has one (the practice's pointer then); ``switch_source``: the
        window's game controller or switch socket, lent while the tutorial is open; ``speaker``: what the control
        box's Speak speaks with (when not given, that of the window ``parent``'s speech part, if it has one)."""
        super().__init__(parent)
        self.setWindowTitle("dasher-rnn tutorial")
        self.setModal(True)
        self.prefs, self.gaze, self.phrases = prefs, gaze, tuple(phrases)
        self.source = PracticeSource(writer, prefs.start_lower_share)
        if speaker is None:
            speaker = getattr(getattr(parent, "speech", None), "speaker", None)
        self.speaker = speaker
        config = prefs.controller_config()
        self._window_control_mode = config.control_mode  # the control box as the window has it
        # auto speed off: the practice runs at a known speed, which the suggestion is measured against
        self.controller = WritingController(self.source, dataclasses.replace(config, speed_bps=speed_bps,
                                                                             auto_speed=False))
        self._practice_rules()
        self.scores: list[MessageStats | None] = []  # each phrase as the controller measured it, once written
        self.index = 0
        self.suggestion: SpeedSuggestion | None = None
        self.chosen_speed: float | None = None
        self._next_in: float | None = None  # seconds until the next phrase, after one is written
        self._closed = False
        # a practice phrase was written, or the user pressed Skip: the window remembers it (not ``done``: QDialog's)
        self.completed = False
        self.chosen = prefs.preset  # the input picked on the first page: the practice is written with it
        # the control-box step (eye tracker and head mouse, after the phrases): its tasks, the one asked for now, the
        # actions seen in it (any: a wrong one too), the text an action is aimed after, why Speak is left out
        self.control_step = False
        self.control_tasks: list[Action] = []
        self.control_index = 0
        self.control_seen: list[Action] = []
        self.control_note = ""
        self._control_text = ""
        self._control_wrong = ""  # the label of an action the user went into instead of the one asked for
        kind = INPUTS.get(prefs.input)
        self.switch_mode = prefs.input if kind is not None and kind.family == "switch" else None  # practise with it
        self.switch_source = switch_source  # lent: drained here, closed by its owner

        # every button by gaze (a dwell) and by switches (scanning) or Space and Enter (ui/reach.py); a switch input
        # scans from the start, one switch by itself
        self.reach = ButtonReach(max(BUTTON_DWELL_S, PRESETS[prefs.preset].dwell_seconds), prefs.scan_s,
                                 auto=self.switch_mode in ONE_SWITCH_MODES, scanning=self.switch_mode is not None)
        self.pages = QStackedWidget()
        self.pages.addWidget(self._intro_page())
        self.pages.addWidget(self._practice_page())
        self.pages.addWidget(self._result_page())
        layout = QVBoxLayout(self)
        layout.addWidget(self.pages)

        self._clock = QElapsedTimer()
        self._clock.start()
        self.timer = QTimer(self)
        self.timer.setInterval(FRAME_MS)
        self.timer.timeout.connect(self.tick)
        if start_timer:
            self.timer.start()
        self.finished.connect(self._on_finished)

    # -- pages -----------------------------------------------------------------------------

    def _practice_rules(self) -> None:
        """The practice keeps the earlier rules for a gaze: practice teaches the model nothing and reaches nobody, and
        the tutorial does not teach the newer ones yet (a rest's hold, dwells that fire once, actions that ask first;
        the window has them all)."""
        c = self.controller
        c.preset = dataclasses.replace(c.preset, rest_holds=False, confirm_actions=False)
        c.zoom.config.confirm = False
        c.dwell.rearm = True
    def _intro_page(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        choose = QHBoxLayout()
        choose.addWidget(_label("How do you steer?"))
        self.input_buttons: dict[str, QPushButton] = {}
        for name, p in PRESETS.items():
            button = _button(p.label, lambda _=False, n=name: self.show_help(n))
            button.setCheckable(True)
            self.input_buttons[name] = button
            choose.addWidget(button)
        choose.addStretch(1)
        layout.addLayout(choose)
        self.help_label = _label(points=16.0)
        self.help_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.help_label, 1)
        buttons = QHBoxLayout()
        self.start_practice_button = _button("Start practising", self.start_practice,
                                             f"Write {len(self.phrases)} short phrases; nothing you write here is learned")
        buttons.addWidget(self.start_practice_button)
        buttons.addStretch(1)
        self.skip_tutorial_button = _button("Skip the tutorial", self.skip_tutorial,
                                            "Go straight to writing (Help > Tutorial brings this back)")
        buttons.addWidget(self.skip_tutorial_button)
        layout.addLayout(buttons)
        self.show_help("switch" if self.switch_mode is not None else self.controller.preset.name)
        return page

    def show_help(self, preset_name: str) -> None:
        """Explain steering for this input, and practise with it from now on (the window's settings do not change);
        for switches, the switch input chosen, if one is."""
        self.chosen = preset_name
        self.help_label.setText(steering_help(preset_name, self.switch_mode, self.prefs.switch_config())
                                + self._buttons_help())
        for name, button in self.input_buttons.items():
            button.setChecked(name == preset_name)

    def _buttons_help(self) -> str:
        """How this page's buttons are pressed without a click (HTML; empty for a mouse)."""
        if self.switch_mode in ONE_SWITCH_MODES:
            how = "An orange ring moves over them by itself: press your switch while it is on the one you want"
        elif self.switch_mode is not None:
            how = "The first switch (Space) moves the orange ring to the next one; the second (Enter) presses it"
        elif self.gaze is not None:
            how = (f"To press one, rest your gaze on it for {self.reach.dwell_s:g} s, until the green fill reaches "
                   "its end")
        else:
            return ""
        return f"<p><b>These buttons.</b> {how}.</p>"

    def _practice_page(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        top = QHBoxLayout()
        self.phrase_label = _label(points=22.0)
        top.addWidget(self.phrase_label, 1)
        self.start_button = _button("Start", self.toggle_running)
        top.addWidget(self.start_button)
        self.skip_button = _button("Skip this phrase", self.skip_phrase)
        top.addWidget(self.skip_button)
        self.end_button = _button("End practice", self.show_result)
        top.addWidget(self.end_button)
        layout.addLayout(top)
        self.how_label = _label(points=14.0)  # how to start, stop and back out with the input practised
        layout.addWidget(self.how_label)
        self.view = TutorialView(self.controller.zoom.alphabet)
        self.view.scheme = self.prefs.colour_scheme
        self.view.min_label_px = self.prefs.label_min_px
        self.view.use_mouse = self.gaze is None
        self.view.clicked.connect(self._on_view_clicked)
        layout.addWidget(self.view, 1)
        # the keys and mouse buttons on the canvas while practising (``_use_chosen_input``); the window's other
        # switches are lent. On the other pages the switches scan the buttons
        self.switches = SwitchPart(self.controller, self.view, self)
        return page

    def _result_page(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        self.result_label = _label(points=16.0)
        self.result_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.result_label, 1)
        buttons = QHBoxLayout()
        self.use_button = _button("Use it", self.use_suggestion)
        self.keep_button = _button("Keep my speed", self.reject)
        buttons.addWidget(self.use_button)
        buttons.addWidget(self.keep_button)
        buttons.addStretch(1)
        self.again_button = _button("Practise again", self.start_practice)
        buttons.addWidget(self.again_button)
        layout.addLayout(buttons)
        return page

    def page_buttons(self) -> list[QPushButton]:
        """The buttons of the page shown, in the order the switches scan them."""
        page = self.pages.currentIndex()
        if page == INTRO_PAGE:
            return [self.start_practice_button, self.skip_tutorial_button, *self.input_buttons.values()]
        if page == PRACTICE_PAGE:
            return [self.start_button, self.skip_button, self.end_button]
        return [self.use_button, self.keep_button, self.again_button]

    # -- practice ---------------------------------------------------------------------------
    @property
    def phrase(self) -> str:
        return self.phrases[min(self.index, len(self.phrases) - 1)]

    def start_practice(self) -> None:
        self._use_chosen_input()
        self.scores = [None] * len(self.phrases)
        self.index = 0
        self.control_step = False
        self._begin_phrase()
        self.pages.setCurrentIndex(PRACTICE_PAGE)
        self.view.setFocus()

    def _use_chosen_input(self) -> None:
        """Write the practice with the input picked on the first page: the switch mode chosen as the input, or a
        pointer preset's start and stop (click, or dwell with its ring), pausing and control box."""
        c = self.controller
        if self.chosen == "switch" and self.switch_mode is not None:
            if self.switches.mode is None:  # a pointer was practised before
                self.switches.start(self.switch_mode, self.prefs.model_copy(update={"switch_source": "keys"}))
            return
        self.switches.stop()
        name = self.chosen if self.chosen in POINTER_PRESETS else self.prefs.preset
        if name != c.preset.name:
            c.apply_preset(name)  # its dwell and pausing; the speed stays the one the suggestion is measured against
            self._practice_rules()
        c.set_control_mode(self._window_control_mode if name == self.prefs.preset else PRESETS[name].control_mode)

    @property
    def teaches_control_box(self) -> bool:
        """The practice ends with the control-box step: the eye tracker and the head mouse (no buttons to reach)."""
        return self.controller.switch is None and self.controller.preset.dwell_start

    def _begin_phrase(self) -> None:
        self.controller.stop()
        self.controller.clear()  # a fresh message (the source learns nothing: this only empties the boxes)
        self.controller.dwell.reset()
        self._next_in = None
        self.controller.zoom.idle()
        self._refresh()

    def toggle_running(self) -> None:
        if self._next_in is None:
            self.controller.toggle()
        self._refresh()

    def _on_view_clicked(self) -> None:
        self.view.setFocus()
        if self.controller.preset.start_on_click:
            self.toggle_running()

    def skip_phrase(self) -> None:
        """Skip this phrase, or in the control-box step the task asked for."""
        if self.control_step:
            if self._next_in is None:
                self._next_task()
        else:
            self.next_phrase()

    def next_phrase(self) -> None:
        self.index += 1
        if self.index >= len(self.phrases):
            self.begin_control_step() if self.teaches_control_box else self.show_result()
        else:
            self._begin_phrase()

    def skip_tutorial(self) -> None:
        """The user chose to skip the tutorial: it is done (the window no longer opens it by itself)."""
        self.completed = True
        self.reject()

    # -- the control-box step --------------------------------------------------------------
    @property
    def can_speak(self) -> bool:
        return self.speaker is not None and self.speaker.available

    @property
    def control_sentence(self) -> str:
        """The message the control-box step starts from: the last practice phrase of more than one word."""
        alphabet = self.controller.zoom.alphabet
        several = [p for p in self.phrases if len(p.split()) > 1]
        if several:
            return several[-1]
        return " ".join(self.phrases) if " " in alphabet else self.phrases[-1]

    @property
    def control_task(self) -> Action | None:
        """The action the control-box step asks for now (None: none, or all done)."""
        if not self.control_step or self.control_index >= len(self.control_tasks):
            return None
        return self.control_tasks[self.control_index]

    def begin_control_step(self) -> None:
        """After the phrases: a message is written for the user, and they delete its last word, have it spoken and
        stop, all through the control box (turned on for the step); Speak is left out where nothing speaks."""
        c = self.controller
        c.stop()
        c.clear()
        c.dwell.reset()
        c.set_control_mode(True)
        self.control_step, self._next_in = True, None
        self.control_tasks = [a for a in CONTROL_TASKS if a != Action.SPEAK or self.can_speak]
        reason = self.speaker.reason if self.speaker is not None else "no voice was set up"
        self.control_note = "" if self.can_speak else f"Speak is left out: {reason.rstrip('.')}."
        self.control_index, self.control_seen, self._control_wrong = 0, [], ""
        self._write_control_sentence()
        self._refresh()

    def _write_control_sentence(self) -> None:
        zoom = self.controller.zoom
        zoom.write_phrase(self.control_sentence)
        self._control_text = zoom.text

    def _next_task(self) -> None:
        self.control_index += 1
        self._control_wrong = ""
        if self.control_task is None:  # all done: "well done", then how it went
            if self.controller.running:  # skipped (Stop itself has stopped it, and says why)
                self.controller.stop()
            self.controller.dwell.reset()
            self._next_in = NEXT_PHRASE_SECONDS
        self._refresh()

    def _on_action(self, action: Action) -> None:
        """The crosshair entered a control box action's box (the zoom has made its edit, the controller stopped on
        Stop): speak for Speak, and in the control-box step, see whether it was the one asked for."""
        c = self.controller
        if action in (Action.SPEAK, Action.SPEAK_SENTENCE) and self.speaker is not None and self.can_speak:
            message = c.zoom.output.strip()
            self.speaker.speak(message if action == Action.SPEAK else last_sentence(message))
        if not self.control_step or self._next_in is not None:
            return
        self.control_seen.append(action)
        self._control_text = c.zoom.text
        if action == self.control_task:
            self._next_task()
        else:
            self._control_wrong = action_label(action) if action != Action.PHRASE else "a phrase"
        if self.control_task == Action.DELETE_WORD and not deletion(c.zoom.output, Action.DELETE_WORD):
            self._write_control_sentence()  # the words went (New message, Delete sentence): a new one to delete

    def show_result(self) -> None:
        self.controller.stop()
        self.controller.dwell.reset()
        self.suggestion = s = suggest_speed([m for m in self.scores if m is not None], self.controller.speed_bps)
        if s is None:
            self.result_label.setText("<h2>No phrase finished</h2><p>There is nothing to measure your speed from. "
                                      "Practise again, or keep your speed and start writing.</p>")
            self.use_button.hide()
            self.keep_button.setText("Start writing")
        elif self.controller.switch is not None and self.switch_mode in MENU_MODES:  # the speed does not pace them
            done = f"{s.phrases} phrase" + ("s" if s.phrases != 1 else "")
            pace = ("the scan time (Preferences, Input page) sets the pace" if self.switch_mode == "scanning"
                    else "your presses set the pace")
            self.result_label.setText(
                f"<h2>How it went</h2><p>You wrote {done} at <b>{s.chars_per_minute:.0f} characters a minute</b>, "
                f"and backed out of {s.corrections_per_char:.2f} characters for each one written.</p>"
                f"<p>The zoom speed does not change {html.escape(INPUTS[self.switch_mode].label.lower())}: "
                f"{pace}.</p>")
            self.use_button.hide()
            self.keep_button.setText("Start writing")
        else:
            done = f"{s.phrases} phrase" + ("s" if s.phrases != 1 else "")
            self.result_label.setText(
                f"<h2>Your speed</h2><p>You wrote {done} at <b>{s.chars_per_minute:.0f} characters a minute</b>, "
                f"reaching <b>{s.bits_per_second:.1f} bits/s</b> at a speed of {s.current_bps:.1f} bits/s, and backed "
                f"out of {s.corrections_per_char:.2f} characters for each one written.</p>"
                f"<p>{html.escape(s.advice)}</p>"
                f"<p>Suggested speed: <b>{s.speed_bps:.1f} bits/s</b>. You can change it at any time with the Speed "
                "box; automatic speed, where it is on, adjusts it as you write.</p>")
            self.use_button.setVisible(s.speed_bps != s.current_bps)
            self.use_button.setText(f"Use {s.speed_bps:.1f} bits/s")
            self.keep_button.setText(f"Keep {s.current_bps:.1f} bits/s" if s.speed_bps != s.current_bps
                                     else "Start writing")
        self.switches.stop()  # the switches scan this page's buttons
        self.pages.setCurrentIndex(RESULT_PAGE)

    def use_suggestion(self) -> None:
        if self.suggestion is not None:
            self.chosen_speed = self.suggestion.speed_bps
        self.accept()

    # -- frames -----------------------------------------------------------------------------
    def _pointer(self) -> tuple[float, float] | None:
        """The pointer in Dasher coordinates (None outside the canvas or with no gaze)."""
        if self.gaze is not None:
            sample = self.gaze.latest()
            if sample is None:
                self.view.set_pointer_override(None)
                return None
            screen = self.view.screen() or QGuiApplication.primaryScreen()
            point = gaze_to_view(sample, screen.geometry(), self.view)
            self.view.set_pointer_override(point)
            if not QRectF(self.view.rect()).contains(point):
                return None
            return self.view.viewport().to_dasher(point.x(), point.y())
        pointer = self.view.pointer_screen
        return self.view.viewport().to_dasher(*pointer) if pointer is not None else None

    def tick(self, dt: float | None = None) -> Frame | None:
        """One frame of practice (``dt`` seconds; the time since the last frame when None)."""
        elapsed = self._clock.restart() / 1000.0
        dt = min(elapsed, MAX_DT) if dt is None else dt
        if not self._closed:
            self._reach_buttons(dt)  # may close the tutorial or turn its page
        if self.pages.currentIndex() != PRACTICE_PAGE or self._closed:
            return None
        c = self.controller
        self._lent_presses()
        self.switches.tick()  # a switch mode: its boxes or marks on the canvas
        if self._next_in is not None:
            self._next_in -= dt
            frame = c.frame(None, 0.0)
            if self._next_in <= 0:
                self.show_result() if self.control_step else self.next_phrase()
        else:
            frame = c.frame(self._pointer(), dt)
            if frame.action is not None:
                self._on_action(frame.action)
            if not self.control_step and c.zoom.output == self.phrase:
                c.stop()
                c.dwell.reset()  # the ring starts empty for the next phrase
                self.scores[self.index] = c.message_stats()
                self.completed = True
                self._next_in = NEXT_PHRASE_SECONDS
        self.view.set_frame(frame, c.dwell.progress)
        self._refresh()
        return frame

    def _reach_buttons(self, dt: float) -> None:
        """The page's buttons by gaze (a dwell) and, off the practice, by the switches (scanning)."""
        practising = self.pages.currentIndex() == PRACTICE_PAGE
        self.reach.set_buttons(self.page_buttons(), scan=not practising)
        if not practising and self.switch_source is not None and self.switch_mode is not None:
            for event in self.switch_source.events():  # the window's lent switches
                if event.down:
                    self.reach.press(event.switch)
        self.reach.tick(self._gaze_on_screen(), dt)

    def _gaze_on_screen(self) -> QPointF | None:
        """The gaze in global pixels (None: no gaze source, or no sample now); a source in the writing area's own
        space is placed across the canvas while practising, across the tutorial otherwise."""
        sample = self.gaze.latest() if self.gaze is not None else None
        if sample is None:
            return None
        if sample.space == "view":
            area: QWidget = self.view if self.pages.currentIndex() == PRACTICE_PAGE else self
            return QPointF(area.mapToGlobal(QPointF(sample.x * area.width(), sample.y * area.height())))
        screen = (self.screen() or QGuiApplication.primaryScreen()).geometry()
        return QPointF(screen.x() + sample.x * screen.width(), screen.y() + sample.y * screen.height())

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Off the practice: Space moves the ring over the buttons (with one switch, it clicks the ringed one) and
        Enter clicks the ringed button."""
        switch = SWITCH_KEYS.get(Qt.Key(event.key()))
        if switch is not None and self.pages.currentIndex() != PRACTICE_PAGE:
            if not event.isAutoRepeat():
                self.reach.press(switch)
            event.accept()
            return
        super().keyPressEvent(event)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        """A switch input off the practice: a mouse button beside the buttons is a switch too."""
        switch = SWITCH_BUTTONS.get(event.button())
        if switch is not None and self.switch_mode is not None and self.pages.currentIndex() != PRACTICE_PAGE:
            self.reach.press(switch)
            event.accept()
            return
        super().mousePressEvent(event)

    def _lent_presses(self) -> None:
        """The window's game controller or switch socket, lent to the practice: its presses to this controller."""
        if self.switch_source is not None and self.switch_mode is not None:
            for event in self.switch_source.events():
                (self.controller.press if event.down else self.controller.release)(event.switch)

    def goal(self) -> tuple[str, Action | None]:
        """What the user is asked to reach now: the whole text (context included), and the control box's action
        after it (None: the phrase's characters)."""
        if self.control_step:
            return self._control_text, self.control_task
        return self.controller.zoom.context + self.phrase, None

    def _how_text(self) -> str:
        """How to start, stop and back out with the input practised (empty for switches: the hints say what to
        press)."""
        c = self.controller
        if c.switch is not None:
            return ""
        rest, back = pointer_words(c.preset)
        if c.preset.dwell_start:
            start = (f"Start and stop: {rest[0].lower()}{rest[1:]} for {c.preset.dwell_seconds:g} s, until the ring "
                     "around it fills.")
        elif c.preset.start_on_click:
            start = "Start and stop: click on the boxes, or press Start."
        else:
            start = "Start and stop: press Start."
        how = f"{start} Back out: {back}."
        if self.control_step:
            how = ("The control box is the grey box below the letters, at the bottom of every box: steer into it, "
                   f"then into the action. {how}" + (f" {self.control_note}" if self.control_note else ""))
        return html.escape(how)

    def _refresh(self) -> None:
        """The phrase with the written part and the next character marked, the path, the hint and the button."""
        self.how_label.setText(self._how_text())
        self.how_label.setVisible(bool(self.how_label.text()))
        self.skip_button.setText("Skip this step" if self.control_step else "Skip this phrase")
        if self.control_step:
            self._refresh_control()
            return
        c, zoom = self.controller, self.controller.zoom
        target = zoom.context + self.phrase
        phrase, output = self.phrase, zoom.output
        written = 0  # the longest start of the phrase that is written
        while written < min(len(phrase), len(output)) and phrase[written] == output[written]:
            written += 1
        nxt = phrase[written:written + 1]
        shown = html.escape(c.zoom.alphabet.glyph(nxt)) if nxt == " " else html.escape(nxt)
        self.phrase_label.setText(
            f"Phrase {self.index + 1} of {len(self.phrases)}: write "
            f"<span style='color:#008a00'>{html.escape(phrase[:written])}</span>"
            f"<span style='background:#c8f0c8'><u><b>{shown}</b></u></span>{html.escape(phrase[written + 1:])}")
        self.view.path = target_path(zoom, target) if self._next_in is None else []
        astray = not on_course(zoom, target)
        lost = not target.startswith(zoom.root_text)  # the right boxes are off the screen: back out first
        pointing = c.switch is None  # switches steer by presses: no point to aim at
        self.view.aim = (target_pointer(zoom, target) if pointing and c.running and not lost and self._next_in is None
                         else None)
        self.start_button.setText("Stop" if c.running else "Start")
        self.start_button.setEnabled(self._next_in is None)
        glyph = c.zoom.alphabet.glyph(nxt) if nxt else ""
        rest, back = pointer_words(c.preset)
        if self._next_in is not None:
            last = self.index + 1 >= len(self.phrases)
            self.view.hint = ("Well done!" if not last else "Well done: now the control box" if self.teaches_control_box
                              else "Well done: that was the last one")
        elif c.switch is not None:
            self.view.hint = self._switch_hint(lost, astray, glyph)
        elif lost:
            self.view.hint = f"Not this way: {back} to back out"
        elif astray:
            self.view.hint = "Not this one: steer into the green box beside it"
        elif c.running:
            self.view.hint = f"Steer into the green box: {glyph}"
        elif c.preset.dwell_start:
            self.view.hint = f"{rest} until the ring fills, to start"
        elif c.preset.start_on_click:
            self.view.hint = "Click on the boxes (or press Start) to start"
        else:
            self.view.hint = "Press Start to start"
        self.view.update()

    def _refresh_control(self) -> None:
        """The control-box step: the task asked for, the way to its box, the hint."""
        c, zoom = self.controller, self.controller.zoom
        task, n = self.control_task, len(self.control_tasks)
        rest, back = pointer_words(c.preset)
        if task is None:
            self.phrase_label.setText("The control box: done. Delete, speak and stop whenever you are writing.")
            self.view.path, self.view.aim = [], None
            self.view.hint = "Well done: that was the control box"
        else:
            self.phrase_label.setText(f"The control box, {self.control_index + 1} of {n}: "
                                      + control_task_text(task, zoom.output))
            target = self._control_text
            self.view.path = action_path(zoom, target, task)
            lost = not self.view.path and (not target.startswith(zoom.root_text) or not zoom.root.is_letter)
            self.view.aim = target_pointer(zoom, target, task) if c.running and not lost else None
            label = action_label(task)
            wrong = f"That was {self._control_wrong}. " if self._control_wrong else ""
            if lost:
                self.view.hint = f"{wrong}Not this way: {back} to back out"
            elif c.running:
                self.view.hint = f"{wrong}Steer into the grey Control box at the bottom, then into {label}"
            else:
                self.view.hint = f"{wrong}{rest} until the ring fills, to start; then into Control, then {label}"
        self.start_button.setText("Stop" if c.running else "Start")
        self.start_button.setEnabled(self._next_in is None)
        self.view.update()

    def _switch_hint(self, lost: bool, astray: bool, glyph: str) -> str:
        """What to press next, in the switch mode practised."""
        c, mode = self.controller, self.switch_mode
        menu = mode in MENU_MODES
        if not c.running:
            return "Press a switch to start"
        if c.switch is not None and c.switch.state == SwitchState.REVERSING:
            return "Backing out: press once to stop, once more to go on"
        if lost:
            return ("Not this way: select the whole view to back out" if menu
                    else "Not this way: press twice quickly to back out")
        if astray:
            return "Not this one: the green box beside it is next"
        if mode == "scanning":
            return f"Press while the box holding the green box is outlined: {glyph}"
        if mode == "step-scan":
            return f"Step to the box holding the green box (Space), then select it (Enter): {glyph}"
        if mode == "two-button":
            return f"Bring the green box to the red cross (Space: down from above, Enter: up from below): {glyph}"
        return f"Press when the green box has drifted past the red cross, to swing back onto it: {glyph}"

    # -- closing ----------------------------------------------------------------------------
    def _on_finished(self, _result: int) -> None:
        self.shutdown()

    def shutdown(self) -> None:
        """Stop frames and let go of the practice contexts (the Writer stays open: it is the window's)."""
        if self._closed:
            return
        self._closed = True
        self.timer.stop()
        self.reach.clear()
        self.switches.stop()  # its keys and mouse buttons go back to the window (the lent source is not closed)
        self.controller.stop()
        self.controller.close()

