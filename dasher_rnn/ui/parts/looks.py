"""How the window looks: the text panel's font and whether it shows, the colours, full screen, label size."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QSignalBlocker
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QComboBox, QSpinBox, QSplitter, QWidget

from dasher_rnn.settings import FONT_SIZE_RANGE
from dasher_rnn.ui.parts.prefs import PrefsKeeper
from dasher_rnn.ui.text_panel import OutputPanel
from dasher_rnn.ui.view import DasherView
from dasher_rnn.ui.widgets import make_action

SCHEME_LABELS = {"default": "Default", "high-contrast": "High contrast"}
PANEL_HEIGHT = 110  # the text panel's starting height in pixels (the canvas takes the rest)


class LooksPart:
    def __init__(self, view: DasherView, panel: OutputPanel, splitter: QSplitter, keeper: PrefsKeeper,
                 host: QWidget) -> None:
        """``splitter`` holds the panel above the view; ``host`` is the window (full screen, its actions)."""
        self.view, self.panel, self.splitter, self.keeper, self.host = view, panel, splitter, keeper, host
        # where the window goes when it leaves full screen (the dock, while direct output docks it: parts/dock.py)
        self.normal_place: Callable[[], None] = self.fit_to_screen
        self.panel_action = make_action(host, "Text panel", self.set_text_panel, None,
                                        "Show or hide the text above the canvas (drag its edge to resize it)",
                                        checkable=True)
        self.full_screen_action = make_action(host, "Full screen", self.set_full_screen, "F11",
                                              "Use the whole screen for the window (F11)", checkable=True)
        self.font_box = QSpinBox()
        self.font_box.setRange(*FONT_SIZE_RANGE)
        self.font_box.setSuffix(" pt")
        self.font_box.setToolTip("Size of the text panel's font")
        self.font_box.valueChanged.connect(self.set_font_size)
        self.scheme_box = QComboBox()
        for name, label in SCHEME_LABELS.items():
            self.scheme_box.addItem(label, name)
        self.scheme_box.setToolTip("Colours of the boxes and the text")
        self.scheme_box.currentIndexChanged.connect(lambda i: self.set_scheme(self.scheme_box.itemData(i)))

    def apply_prefs(self) -> None:
        """Show the loaded preferences in the controls and put them into effect (without re-saving them)."""
        prefs = self.keeper.prefs
        with QSignalBlocker(self.font_box):
            self.font_box.setValue(prefs.font_size)
        with QSignalBlocker(self.scheme_box):
            self.scheme_box.setCurrentIndex(max(0, self.scheme_box.findData(prefs.colour_scheme)))
        self.panel.set_font_size(prefs.font_size)
        self.panel.set_scheme(prefs.colour_scheme)
        self.set_text_panel(prefs.text_panel, remember=False)
        self.view.scheme = prefs.colour_scheme
        self.view.min_label_px = prefs.label_min_px

    def set_font_size(self, points: int) -> None:
        with QSignalBlocker(self.font_box):
            self.font_box.setValue(points)
        self.panel.set_font_size(points)
        self.keeper.remember(font_size=points)

    def set_scheme(self, scheme: str) -> None:
        with QSignalBlocker(self.scheme_box):
            self.scheme_box.setCurrentIndex(max(0, self.scheme_box.findData(scheme)))
        self.view.scheme = scheme
        self.panel.set_scheme(scheme)
        self.panel.set_font_size(self.keeper.prefs.font_size)
        self.view.update()
        self.keeper.remember(colour_scheme=scheme)

    def set_label_size(self, px: int) -> None:
        """Letters only in boxes at least ``px`` tall."""
        self.view.min_label_px = px
        self.view.update()
        self.keeper.remember(label_min_px=px)

    def set_text_panel(self, shown: bool, remember: bool = True) -> None:
        """Show or hide the text panel (the canvas takes its place); the choice is kept."""
        shown = bool(shown)
        with QSignalBlocker(self.panel_action):
            self.panel_action.setChecked(shown)
        self.panel.setVisible(shown)
        if shown and self.splitter.sizes()[0] == 0:  # dragged shut before: open it again at its usual height
            self.splitter.setSizes([PANEL_HEIGHT, max(1, sum(self.splitter.sizes()) - PANEL_HEIGHT)])
        if remember:
            self.keeper.remember(text_panel=shown)

    def set_full_screen(self, on: bool) -> None:
        with QSignalBlocker(self.full_screen_action):
            self.full_screen_action.setChecked(bool(on))
        if on:
            self.host.showFullScreen()
        else:
            self.host.showNormal()
            self.normal_place()

    def fit_to_screen(self) -> None:
        """The window takes the screen's whole available area."""
        screen = self.host.screen() or QGuiApplication.primaryScreen()
        if screen is not None:
            self.host.setGeometry(screen.availableGeometry())
