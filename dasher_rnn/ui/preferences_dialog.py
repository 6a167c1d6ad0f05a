"""The Preferences dialog and the profile picker: every preference a user changes, with large controls.

Each change takes effect at once and goes through the window's parts (``ui/parts/``), which own the controls,
or through the controller's setters followed by ``keeper.remember(...)``, so the preferences are kept and saved
in one place (the ``PrefsKeeper``). Nothing here needs a keyboard: numbers move with − and + buttons, choices
are rows of large buttons, and the pages are large tabs.

The Input page lists every input of the registry (``input/registry.py``) in as many columns as fit the page, and,
while a switch input is chosen, the switches' own settings: where presses come from besides the keys and mouse
buttons, and the timings the chosen mode uses (scanning's scan time; the dynamic modes' long press and double-press
gap). A change of those starts the switch input again with the new values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from dasher_rnn.adapt.compose import profile_person
from dasher_rnn.adapt.profile_files import ProfileError
from dasher_rnn.adapt.profiles import ProfileStore
from dasher_rnn.adapt.writer import Writer
from dasher_rnn.input.presets import PRESETS
from dasher_rnn.input.registry import INPUTS
from dasher_rnn.settings import DOCK_SHARE_RANGE, FONT_SIZE_RANGE, LABEL_PX_RANGE, Preferences
from dasher_rnn.ui.parts.dock import EDGE_LABELS
from dasher_rnn.ui.parts.input import InputPart
from dasher_rnn.ui.parts.learning import LearningPart
from dasher_rnn.ui.parts.looks import SCHEME_LABELS, LooksPart
from dasher_rnn.ui.parts.output import OutputPart
from dasher_rnn.ui.parts.prefs import PrefsKeeper
from dasher_rnn.ui.parts.writing import WritingPart
from dasher_rnn.ui.widgets import DIALOG_STYLE, Choice, Stepper, Toggle, setting_row
from dasher_rnn.zoom.controller import REST_STOP_RANGE, REVERSE_SPEED_RANGE, SPEED_RANGE, TURBO_RANGE, WritingController

INPUT_CHOICES = tuple((name, "Tobii" if name == "tobii" else kind.label) for name, kind in INPUTS.items())
SWITCH_INPUTS = tuple(name for name, kind in INPUTS.items() if kind.family == "switch")
SWITCH_SOURCE_CHOICES = (("keys", "Keys and mouse only"), ("controller", "Game controller"), ("socket", "Switch socket"))
# the switch timings' ranges, in seconds: SwitchConfig's (input/switch.py), which the preferences check against
SCAN_RANGE = (0.2, 10.0)
LONG_PRESS_RANGE = (0.1, 10.0)
MULTI_PRESS_RANGE = (0.1, 10.0)
IDLE_STOP_RANGE = (0.0, 120.0)
# which modes use which timing
SCAN_MODES = ("scanning",)
DYNAMIC_MODES = ("one-button", "two-button")
DIALOG_SIZE = (1100, 860)  # wide enough for its seven tabs side by side (no scroll arrows to hit)
PAGE_CHROME_PX = 110  # the dialog's width less what a page's rows get: margins, the tab frame, a vertical scroll bar
SCHEME_CHOICES = tuple(SCHEME_LABELS.items())
OUTPUT_CHOICES = (("panel", "This window only"), ("direct", "Type into the focused program"))
# the languages offered as buttons (each in its own name); any other is chosen with `dasher-rnn app --language CODE`
LANGUAGE_CHOICES = (("en", "English"), ("de", "Deutsch"), ("fr", "Français"), ("es", "Español"), ("it", "Italiano"),
                    ("pt", "Português"), ("nl", "Nederlands"), ("pl", "Polski"), ("ar", "العربية"), ("he", "עברית"))


def _page(*rows: QWidget) -> QWidget:
    page = QWidget()
    layout = QVBoxLayout(page)
    for row in rows:
        layout.addWidget(row)
    layout.addStretch(1)
    scroll = QScrollArea()  # a small screen or a large font: the page scrolls (with a wide scroll bar)
    scroll.setWidgetResizable(True)
    scroll.setWidget(page)
    scroll.setFrameShape(QScrollArea.Shape.NoFrame)
    return scroll


def fit_to_screen(dialog: QDialog) -> None:
    """No taller or wider than the screen (a small laptop screen): the pages scroll instead."""
    screen = dialog.screen()
    if screen is not None:
        room = screen.availableGeometry()
        dialog.resize(min(dialog.width(), room.width() - 20), min(dialog.height(), room.height() - 40))


def _dialog_width(dialog: QDialog) -> int:
    """The width the dialog opens at (``DIALOG_SIZE``, or less on a small screen: ``fit_to_screen``)."""
    screen = dialog.screen() or QApplication.primaryScreen()
    width = DIALOG_SIZE[0]
    return min(width, screen.availableGeometry().width() - 20) if screen is not None else width


def columns_that_fit(dialog: QDialog, labels: Sequence[str], room: int, most: int = 4) -> int:
    """How many columns of large buttons labelled ``labels`` fit side by side in ``room`` pixels (``most`` at the
    most, one at the least): each button measured as the dialog's style draws it."""
    probe = QPushButton(dialog)  # styled by the dialog's style sheet, never shown
    probe.hide()
    widths = []
    for label in labels:
        probe.setText(label)
        probe.ensurePolished()
        widths.append(probe.sizeHint().width())
    probe.deleteLater()
    spacing = 12  # between buttons in a row (the style's is less)
    for columns in range(most, 1, -1):
        rows = [widths[i : i + columns] for i in range(0, len(widths), columns)]
        if max(sum(row) + spacing * (len(row) - 1) for row in rows) <= room:
            return columns
    return 1


def _explanation(text: str = "") -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setObjectName("explanation")
    return label


def ports_text(prefs: Preferences) -> str:
    """Where each input's data arrives (ports, hosts, the Pupil surface), the head pointer's camera, the token, and
    the options that set them."""
    token = ("Only datagrams that carry the input token count. " if prefs.input_token else
             "Any program on this computer may send to the UDP ports (set an input token to allow only yours). ")
    return (f"Gaze over UDP listens on UDP port {prefs.gaze_port}; Dasher's socket input on port {prefs.socket_port} "
            f"(lines labelled {prefs.socket_x_label!r} and {prefs.socket_y_label!r}); OptiKey gaze on port "
            f"{prefs.optikey_port}; the switch socket on port {prefs.switch_port}. Gazepoint Control is reached at "
            f"{prefs.gazepoint_host}:{prefs.gazepoint_port}; Pupil Capture at {prefs.pupil_host}:{prefs.pupil_port}, "
            f"gaze on its surface {prefs.pupil_surface!r}. The head pointer uses camera {prefs.webcam_camera}. " + token
            + "These are set with dasher-rnn app: --gaze-port, --socket-port, --socket-x-label, --socket-y-label, "
            "--socket-x-range / --socket-y-range, --optikey-port, --switch-port, --gazepoint-host, --gazepoint-port, "
            "--pupil-host, --pupil-port, --pupil-surface, --webcam-camera and --input-token.")


def _titled(title: str, *parts: QWidget) -> QWidget:
    """A titled row laid out as ``setting_row``'s, of several parts (a label takes the width, a control its own)."""
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 2, 0, 6)
    layout.setSpacing(2)
    heading = QLabel(title)
    heading.setObjectName("title")
    layout.addWidget(heading)
    for part in parts:
        layout.addWidget(part) if isinstance(part, QLabel) else layout.addWidget(part, 0, Qt.AlignmentFlag.AlignLeft)
    return box


def _close_button(dialog: QDialog) -> QPushButton:
    button = QPushButton("Close")
    button.setMinimumSize(200, 64)
    button.clicked.connect(dialog.accept)
    return button


class PreferencesDialog(QDialog):
    """Speed, input, stopping and pausing, looks, learning, output and language, one tab each; changes apply at once."""

    def __init__(self, controller: WritingController, keeper: PrefsKeeper, *, writing: WritingPart, input: InputPart,
                 looks: LooksPart, learning: LearningPart, output: OutputPart,
                 switch_language: Callable[[str], bool] | None = None, parent: QWidget | None = None) -> None:
        """The window's parts that own the settings shown here; ``keeper`` holds the preferences in effect;
        ``switch_language`` writes another language from now on (False when it cannot)."""
        super().__init__(parent)
        self.switch_language = switch_language
        self.controller, self.keeper = controller, keeper
        self.writing, self.input_part, self.looks, self.learning, self.output_part = writing, input, looks, learning, output
        self.setWindowTitle("Preferences")
        self.setStyleSheet(DIALOG_STYLE)
        prefs, c = keeper.prefs, controller

        # -- speed
        self.speed = Stepper(*SPEED_RANGE, 0.1, c.speed_bps, suffix=" bits/s")
        self.speed.changed.connect(self._on_speed)
        self.auto_speed = Toggle(c.auto_speed_enabled)
        self.auto_speed.toggled.connect(self._on_auto_speed)
        self.reverse_speed = Stepper(*REVERSE_SPEED_RANGE, 0.1, c.reverse_speed, suffix=" ×")
        self.reverse_speed.changed.connect(self._on_reverse_speed)
        self.turbo = Stepper(*TURBO_RANGE, 0.5, c.turbo_factor, suffix=" ×")
        self.turbo.changed.connect(self._on_turbo)
        speed_page = _page(
            setting_row("Speed", "How fast the boxes zoom, in bits per second. Start slow (1 to 2) and raise it as "
                        "steering becomes easy.", self.speed),
            setting_row("Automatic speed", "Raise the speed while you steer steadily and lower it when you hunt "
                        "back and forth. It never rises while the pointer rests. Some input presets keep the "
                        "speed fixed.", self.auto_speed),
            setting_row("Backing out speed", "How fast zooming out (to delete) goes, as a share of the speed.",
                        self.reverse_speed),
            setting_row("Turbo", "How much faster the zoom goes while Turbo is on or Shift is held.", self.turbo))

        # -- input
        room = _dialog_width(self) - PAGE_CHROME_PX
        self.input = Choice(INPUT_CHOICES, prefs.input,
                            columns=columns_that_fit(self, [label for _name, label in INPUT_CHOICES], room))
        self.input.chosen.connect(self._on_input)
        preset_choices = [(name, p.label) for name, p in PRESETS.items()]
        self.preset = Choice(preset_choices, c.preset.name,
                             columns=columns_that_fit(self, [label for _name, label in preset_choices], room))
        self.preset.chosen.connect(self._on_preset)
        self.switch_source = Choice(SWITCH_SOURCE_CHOICES, prefs.switch_source, columns=3)
        self.switch_source.chosen.connect(self._on_switch_source)
        self.switch_source_about = _explanation()  # the keys, the controller's device and the socket's port
        self.switch_source_problem = _explanation()  # the chosen source could not start
        self.scan_time = Stepper(*SCAN_RANGE, 0.1, prefs.scan_s, suffix=" s")
        self.scan_time.changed.connect(lambda value: self._on_switch_timing(scan_s=value))
        self.long_press = Stepper(*LONG_PRESS_RANGE, 0.1, prefs.long_press_s, suffix=" s")
        self.long_press.changed.connect(lambda value: self._on_switch_timing(long_press_s=value))
        self.multi_press = Stepper(*MULTI_PRESS_RANGE, 0.1, prefs.multi_press_s, suffix=" s")
        self.multi_press.changed.connect(lambda value: self._on_switch_timing(multi_press_s=value))
        self.idle_stop = Stepper(*IDLE_STOP_RANGE, 1.0, prefs.idle_stop_s, suffix=" s")
        self.idle_stop.changed.connect(lambda value: self._on_switch_timing(idle_stop_s=value))
        self.ports = _explanation()
        self.switch_source_row = _titled("Switches", self.switch_source_about, self.switch_source,
                                         self.switch_source_problem)
        self.scan_time_row = setting_row(
            "Scan time", "Scanning: how long each box stays highlighted before the next one is. Longer gives more "
            "time to press; shorter writes faster.", self.scan_time)
        presses = QWidget()  # the dynamic modes' two timings, each named
        grid = QGridLayout(presses)
        grid.setContentsMargins(0, 0, 0, 0)
        for row, (label, stepper) in enumerate((("Long press", self.long_press), ("Double press", self.multi_press),
                                                 ("Stop after no press for", self.idle_stop))):
            grid.addWidget(QLabel(label), row, 0)
            grid.addWidget(stepper, row, 1)
        self.presses_row = setting_row(
            "Presses", "Two presses of a switch within the double-press time, or a switch held down for the "
            "long-press time, back out; the next press stops. With no press for the stop time (or a switch held down "
            "that long) writing stops by itself (0: never).", presses)
        self.ports_row = setting_row("Connections", "Only for setting up a device: where an eye tracker's or another "
                                     "program's data comes in, and which camera follows your head.", self.ports)
        input_page = _page(
            setting_row("Input", "What steers: the mouse (or a touchpad, or a head mouse or eye tracker that moves "
                        "the pointer); an eye tracker's own data (gaze over UDP, Tobii, Dasher's socket input, "
                        "Gazepoint, OptiKey, Pupil Core); a webcam following your head; or one or two switches. If an "
                        "input cannot start, the mouse is used and the status bar says why.", self.input),
            setting_row("Input preset", "Starting settings for your device: speed, how writing starts (a click, "
                        "resting on the crosshair, or a switch), smoothing of a jittery pointer, pausing when the "
                        "pointer leaves, and the control box. Choosing one sets the speeds on the Speed page.",
                        self.preset),
            self.switch_source_row, self.scan_time_row, self.presses_row, self.ports_row)

        # -- stopping
        self.pause_outside = Toggle(c.pause_outside)
        self.pause_outside.toggled.connect(self._on_pause_outside)
        self.rest_stop = Stepper(*REST_STOP_RANGE, 1.0, c.rest_stop_seconds, decimals=0, suffix=" s", zero_text="never")
        self.rest_stop.changed.connect(self._on_rest_stop)
        stop_page = _page(
            setting_row("Pause outside the writing area", "Writing pauses while the pointer is off the canvas "
                        "(the eye-tracker and head-mouse presets always do). Bring it back to go on.",
                        self.pause_outside),
            setting_row("Stop when the pointer rests", "Writing stops when the pointer stays still this many seconds, "
                        "so a pointer left alone writes nothing. Undo writing takes back a run you did not mean. "
                        "The eye-tracker preset holds a resting gaze instead, and takes back what it wrote.",
                        self.rest_stop))

        # -- looks
        self.label_size = Stepper(*LABEL_PX_RANGE, 2, prefs.label_min_px, decimals=0, suffix=" px")
        self.label_size.changed.connect(self._on_label_size)
        self.font_size = Stepper(*FONT_SIZE_RANGE, 2, prefs.font_size, decimals=0, suffix=" pt")
        self.font_size.changed.connect(self._on_font_size)
        self.scheme = Choice(SCHEME_CHOICES, prefs.colour_scheme)
        self.scheme.chosen.connect(looks.set_scheme)
        self.text_panel = Toggle(prefs.text_panel, "Shown", "Hidden")
        self.text_panel.toggled.connect(lambda on: looks.set_text_panel(on))
        looks_page = _page(
            setting_row("Smallest label", "Letters are drawn only in boxes at least this tall; smaller boxes get "
                        "their letter as they grow. Larger is easier to read, smaller shows more choices.",
                        self.label_size),
            setting_row("Text size", "The size of the text in the panel above the boxes.", self.font_size),
            setting_row("Colours", "High contrast: black background, bright boxes and bold text.", self.scheme),
            setting_row("Text panel", "The text you wrote, above the boxes. Hidden, the boxes get the whole window.",
                        self.text_panel))

        # -- learning
        writer = c.writer
        self.adaptation = Toggle(prefs.adaptation)
        self.adaptation.setEnabled(learning.adapt_box.isEnabled())
        self.adaptation.toggled.connect(self._on_adaptation)
        self.lower_share = Stepper(0.0, 1.0, 0.05, prefs.start_lower_share, decimals=2)
        self.lower_share.changed.connect(self._on_lower_share)
        learns = " and ".join(writer.status().learns) if writer is not None and writer.can_adapt else ""
        learning_page = _page(
            setting_row("Learn from what I write", "The model adapts to your words and style as you write, and "
                        "keeps what it learned in your profile. Undo writing also takes back what a run taught it."
                        + (f" What learns here: {learns}." if learns else " " + learning.adapt_box.toolTip() + "."),
                        self.adaptation),
            setting_row("Lower case at a message start", "The share of each capital letter's box given to its "
                        "lower-case letter when a message starts (0: as the model predicts; 1: lower case only). "
                        "Applies from the next message.", self.lower_share))

        # -- output
        self.output = Choice(OUTPUT_CHOICES, prefs.output, columns=2)
        self.output.chosen.connect(output.set_output)
        self.copy_on_stop = Toggle(prefs.copy_on_stop)
        self.copy_on_stop.toggled.connect(output.set_copy_on_stop)
        self.speak_on_stop = Toggle(prefs.speak_on_stop)
        speech_available = output.speech.available
        self.speak_on_stop.setEnabled(speech_available)
        self.speak_on_stop.toggled.connect(output.set_speak_on_stop)
        speech = "" if speech_available else f" ({output.speech.speaker.reason}.)"
        output_rows = [
            setting_row("Where the text goes", "Also type each character into the program that has the keyboard "
                        "focus (this window then stays on top and never takes the focus).", self.output),
            setting_row("Copy all on stop", "Copy all the text to the clipboard whenever writing stops.",
                        self.copy_on_stop),
            setting_row("Speak on stop", "Read the current message aloud whenever writing stops." + speech,
                        self.speak_on_stop)]
        if output.dock is not None:  # direct output's docked layout (parts/dock.py), the preset in use's
            dock = output.dock
            self.dock_edge = Choice(tuple(EDGE_LABELS.items()), dock.layout().edge, columns=4)
            self.dock_edge.chosen.connect(dock.set_edge)
            self.dock_share = Stepper(DOCK_SHARE_RANGE[0] * 100, DOCK_SHARE_RANGE[1] * 100, 5, dock.layout().share * 100,
                                      decimals=0, suffix=" %")
            self.dock_share.changed.connect(lambda percent: dock.set_share(percent / 100))
            self.dock_note = _explanation()
            dock.layout_changed.connect(self._show_dock)
            output_rows.append(_titled(
                "Docked while typing into a program",
                _explanation("While the text goes into another program, this window is a strip at this edge of the "
                             "screen, taking this share of its height (top, bottom) or width (left, right), and the "
                             "program has the rest. Move or resize the strip and it stays where you put it."),
                self.dock_edge, self.dock_share, self.dock_note))
            self._show_dock()
        output_page = _page(*output_rows)

        self.tabs = QTabWidget()
        for page, name in ((speed_page, "Speed"), (input_page, "Input"), (stop_page, "Stopping"),
                           (looks_page, "Looks"), (learning_page, "Learning"), (output_page, "Output"),
                           (self._language_page(), "Language")):
            self.tabs.addTab(page, name)
        note = QLabel("Changes apply at once and are kept for the next start.")
        note.setObjectName("explanation")
        bottom = QHBoxLayout()
        bottom.addWidget(note, 1)
        bottom.addWidget(_close_button(self))
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs, 1)
        layout.addLayout(bottom)
        self.resize(*DIALOG_SIZE)
        fit_to_screen(self)
        self.refresh()

    def _language_page(self) -> QWidget:
        current = self.controller.zoom.alphabet.language or self.keeper.prefs.language
        choices = list(LANGUAGE_CHOICES) + ([(current, current)] if current not in dict(LANGUAGE_CHOICES) else [])
        self.language = Choice(choices, current, columns=3)
        self.language.chosen.connect(self._on_language)
        self.language.setEnabled(self.switch_language is not None)
        self.language_message = QLabel("")
        self.language_message.setWordWrap(True)
        self.language_message.setObjectName("explanation")
        return _page(
            setting_row("Language", "The language you write: its letters, the direction of writing, the voice that "
                        "speaks, and what the model has learned of your writing in it (each language keeps its own). "
                        "The current message is finished first. Any of the 330 languages that dasher-rnn languages lists "
                        "can be chosen with dasher-rnn app --language CODE.", self.language),
            self.language_message)

    def _on_language(self, code: str) -> None:
        if self.switch_language is None or code == self.controller.zoom.alphabet.language:
            return
        if self.switch_language(code):
            self.language_message.setText(f"Writing {self.language.buttons[code].text()} now.")
        else:
            self.language_message.setText(f"{code} could not be written: the status bar says why.")
            self.language.set_value(self.controller.zoom.alphabet.language or "en")
        self.refresh()

    def _show_dock(self) -> None:
        """The docked layout of the preset in use (each preset has its own)."""
        dock = self.output_part.dock
        if dock is None:
            return
        layout = dock.layout()
        self.dock_edge.set_value(layout.edge)
        self.dock_share.set_value(layout.share * 100)
        placed = " Now where you put it: choose an edge or a size to dock it again." if layout.geometry else ""
        self.dock_note.setText(f"Kept for the input preset in use ({dock.preset_label()}).{placed}")

    # -- showing what is in effect ---------------------------------------------------------------
    def refresh(self) -> None:
        """Show the values in effect (a preset changes the speeds; an input that cannot start falls back)."""
        c = self.controller
        self.speed.set_value(c.speed_bps)
        self.reverse_speed.set_value(c.reverse_speed)
        self.turbo.set_value(c.turbo_factor)
        self.auto_speed.blockSignals(True)
        self.auto_speed.setChecked(c.auto_speed_enabled)
        self.auto_speed._show(c.auto_speed_enabled)
        self.auto_speed.blockSignals(False)
        self.auto_speed.setEnabled(c.preset.auto_speed)
        self.auto_speed.setToolTip("" if c.preset.auto_speed else "This input preset keeps the speed fixed")
        self.input.set_value(self.input_part.name)
        self.preset.set_value(c.preset.name)
        self._show_input_settings()

    def _show_input_settings(self) -> None:
        """The switch settings while a switch input is chosen (the timings its mode uses), where presses come from
        and what works now, and the ports."""
        prefs, name = self.keeper.prefs, self.input_part.name
        self.switch_source_row.setVisible(name in SWITCH_INPUTS)
        self.scan_time_row.setVisible(name in SCAN_MODES)
        self.presses_row.setVisible(name in DYNAMIC_MODES)
        self.ports_row.setVisible(name not in SWITCH_INPUTS)  # a switch input's port is in its own row
        self.switch_source.set_value(prefs.switch_source)
        self.switch_source_about.setText(
            f"Space and Enter, and the left and right mouse buttons, are always switches 1 and 2. Also: buttons 1 and "
            f"2 of the game controller at {prefs.switch_device} (or a switch interface that acts as one), or the "
            f"switch socket on UDP port {prefs.switch_port} (lines 'down 1', 'up 1'"
            + (", with the input token" if prefs.input_token else "") + "). Set with dasher-rnn app --switch-device "
            "and --switch-port.")
        problem = self._switch_source_problem(prefs, name)
        self.switch_source_problem.setText(problem)
        self.switch_source_problem.setVisible(bool(problem))
        self.ports.setText(ports_text(prefs))

    def _switch_source_problem(self, prefs: Preferences, name: str) -> str:
        """Why the chosen source of presses gives none ("" when it works, or is the keys alone)."""
        if name not in SWITCH_INPUTS or prefs.switch_source == "keys" or self.input_part.switches.source is not None:
            return ""
        what = "game controller" if prefs.switch_source == "controller" else "switch socket"
        return f"The {what} could not start (the status bar says why); the keys and mouse buttons work."

    # -- applying: through the parts and the controller ---------------------------------------------
    def _on_speed(self, value: float) -> None:
        self.writing.set_speed(value)

    def _on_auto_speed(self, on: bool) -> None:
        self.writing.set_auto_speed(on)

    def _on_reverse_speed(self, value: float) -> None:
        self.controller.set_reverse_speed(value)
        self.keeper.remember(reverse_speed=self.controller.reverse_speed)

    def _on_turbo(self, value: float) -> None:
        self.controller.set_turbo_factor(value)
        self.keeper.remember(turbo_factor=self.controller.turbo_factor)

    def _on_input(self, name: str) -> None:
        if name != self.input_part.name:  # pressing the input in use again changes nothing
            self.input_part.set_input(name)
        self.refresh()

    def _on_switch_source(self, source: str) -> None:
        self.keeper.remember(switch_source=source)
        self._restart_switches()

    def _on_switch_timing(self, **timing: float) -> None:
        self.keeper.remember(**timing)
        self._restart_switches()

    def _restart_switches(self) -> None:
        """A switch input in use starts again with the preferences now (its mode's timings, its source); writing
        stops, as at any change of input."""
        if self.input_part.name in SWITCH_INPUTS:
            self.input_part.set_input(self.input_part.name, remember=False)
        self.refresh()

    def _on_preset(self, name: str) -> None:
        if name != self.controller.preset.name:  # nor does the preset in use: its speeds would replace the user's
            self.input_part.select_preset(name)
        self.refresh()

    def _on_pause_outside(self, on: bool) -> None:
        self.controller.set_pause_outside(on)
        self.keeper.remember(pause_outside=on)

    def _on_rest_stop(self, seconds: float) -> None:
        self.controller.set_rest_stop(seconds)
        self.keeper.remember(rest_stop_seconds=self.controller.rest_stop_seconds)

    def _on_label_size(self, px: float) -> None:
        self.looks.set_label_size(int(px))

    def _on_font_size(self, points: float) -> None:
        self.looks.set_font_size(int(points))

    def _on_adaptation(self, on: bool) -> None:
        self.learning.set_adapting(on)

    def _on_lower_share(self, share: float) -> None:
        source = self.controller.source
        if hasattr(source, "start_lower_share"):
            source.start_lower_share = share
        self.keeper.remember(start_lower_share=share)


class ProfileDialog(QDialog):
    """Pick whose profile the model learns into. The choice is saved and used from the next start: the model
    loaded now keeps its profile until the app closes (switching needs it rebuilt). What it learned so far is
    saved when a choice is made."""

    def __init__(self, writer: Writer | None, keeper: PrefsKeeper, store: ProfileStore | None = None,
                 parent: QWidget | None = None) -> None:
        """``writer`` learns into the profile in use now; ``keeper`` holds the preferences (the profile chosen)."""
        super().__init__(parent)
        self.writer, self.keeper = writer, keeper
        self.store = store or ProfileStore()
        self.setWindowTitle("Profile")
        self.setStyleSheet(DIALOG_STYLE)
        # the person whose profile is in use: a language's profile (anna.de) is anna's, not another person's
        in_use = writer.status().profile if writer is not None else None
        self.in_use = profile_person(in_use)[0] if in_use else None
        self.in_use_profile = in_use
        self.rows = {row["name"]: row for row in self.store.list()}
        self.languages: dict[str, list[str]] = {}  # person -> the languages with a profile of their own
        names = []
        for row in self.rows.values():
            person, language = profile_person(row["name"])
            if language:
                self.languages.setdefault(person, []).append(language)
            if "error" not in row and person not in names:
                names.append(person)
        for name in (keeper.prefs.profile, self.in_use):
            if name and name not in names:
                names.append(name)
        intro = QLabel("A profile keeps what the model learned about one person's writing. Pick whose writing "
                       "this is. The choice is used from the next start.")
        intro.setWordWrap(True)
        self.message = QLabel(self._now_text())
        self.message.setWordWrap(True)
        self.message.setObjectName("explanation")
        self.choice = Choice([(n, self._label(n)) for n in sorted(names)], keeper.prefs.profile, columns=2)
        self.choice.chosen.connect(self.pick)
        new = QPushButton("New profile")
        new.setToolTip("A new, empty profile, named for you (rename its folder later if you like)")
        new.clicked.connect(self.new_profile)
        self.new_button = new
        bottom = QHBoxLayout()
        bottom.addWidget(new)
        bottom.addStretch(1)
        bottom.addWidget(_close_button(self))
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.choice)
        layout.addWidget(self.message)
        layout.addStretch(1)
        layout.addLayout(bottom)
        self.resize(820, 520)

    def _label(self, name: str) -> str:
        """What the person's profile holds (and the languages they also write), on disk, or (the one in use) what its
        Writer has learned and not saved yet."""
        label = self._holds(name)
        languages = self.languages.get(name)
        return f"{label[:-1]}; also {', '.join(sorted(languages))})" if languages else label

    def _holds(self, name: str) -> str:
        row = self.rows.get(name)
        if name == self.in_use and self.in_use_profile != name:  # writing in another language now: that profile's
            row = self.rows.get(self.in_use_profile or "", row)
        status = self.writer.status() if self.writer is not None and name == self.in_use else None
        learned = status.characters_adapted if status is not None else 0  # the RNN's count, the saved part with it
        if row is None:
            if status is None:
                return f"{name} (new)"
            if learned:
                return f"{name} (in use, {learned:,} characters learned, saved on closing)"
            return f"{name} (in use, learning as you write)" if status.adapting else f"{name} (new, in use)"
        if "error" in row:
            return f"{name} (unreadable)"
        count = max(row["characters_adapted"], learned)
        if count:
            return f"{name} ({count:,} characters learned)"
        # PPM alone counts no characters: a saved part still holds what it learned
        return f"{name} (learned from writing)" if row.get("parts") else f"{name} (nothing learned yet)"

    def _show_labels(self) -> None:
        """After a save: each choice says what is on disk now."""
        self.rows = {row["name"]: row for row in self.store.list()}
        for name, button in self.choice.buttons.items():
            if name in self.rows or name == self.in_use:
                button.setText(self._label(name))

    def _now_text(self) -> str:
        chosen = self.keeper.prefs.profile
        now = f"In use now: {self.in_use}." if self.in_use else "No profile is in use now."
        if chosen != self.in_use:
            return f"{now} From the next start: {chosen}."
        return now

    def pick(self, name: str) -> None:
        """Use ``name`` from the next start; what the current profile learned is saved now."""
        saved = ""
        writer = self.writer
        if writer is not None and name != self.keeper.prefs.profile:
            try:
                if writer.save() is not None:
                    saved = f" What {self.in_use} learned so far is saved."
            except ProfileError as exc:
                saved = f" What {self.in_use} learned could not be saved now ({exc}); it is tried again on closing."
        self.keeper.remember(profile=name)
        self.keeper.save()
        self.choice.set_value(name)
        if saved:
            self._show_labels()
        restart = " Close and start dasher-rnn again to write with it." if name != self.in_use else ""
        self.message.setText(self._now_text() + saved + restart)

    def new_profile(self) -> str:
        """A fresh name (``person-2``, ``person-3``...) added to the choices and picked."""
        taken = set(self.choice.buttons) | {row["name"] for row in self.store.list()}
        n = 2
        while f"person-{n}" in taken:
            n += 1
        name = f"person-{n}"
        button = QPushButton(f"{name} (new)")
        button.setCheckable(True)
        button.setMinimumSize(56, 56)
        button.clicked.connect(lambda _checked=False: self.choice._pick(name))
        self.choice.group.addButton(button)
        self.choice.buttons[name] = button
        self.choice.layout().addWidget(button, 0, Qt.AlignmentFlag.AlignLeft)
        self.pick(name)
        return name
