"""Direct output's docked layout: while direct output is on, the window is a strip along an edge of the screen and
the rest of the screen is left to the program it types into.

The output part docks the window when direct output is switched on (``set_docked``) and undocks it when it is
switched off: the window then goes back to the size and place it had (or is sized to the screen as at the start,
when it was docked from the start). Each input preset has its own layout (``Preferences.dock``, a ``DockLayout``):
the edge (bottom by default; top, left, right), the strip's share of the screen's available height (top, bottom) or
width (left, right), or the place the user moved or resized the strip to. A move or resize is taken for the user's
once the window has settled after our own placing (the window manager's adjustments are not the user's); choosing
an edge or a size docks the strip again. Full screen and maximised are not taken for a place; leaving full screen
docks the window again.

In the strip the canvas gets every pixel it can: the text panel shrinks to ``PANEL_LINES`` line (the program written
into shows the text; the panel still shows the tail that is not typed yet) and has its height back when undocked;
``docked_changed`` tells the window, which hides its second toolbar meanwhile (everything on it is in the menus).
The window's flags (on top, never taking the focus) are the output part's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QRect, QSignalBlocker, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QGuiApplication
from PySide6.QtWidgets import QMainWindow, QMenu

from dasher_rnn.input.presets import PRESETS
from dasher_rnn.settings import DOCK_SHARE_RANGE, DockLayout
from dasher_rnn.ui.parts.looks import LooksPart
from dasher_rnn.ui.parts.prefs import PrefsKeeper
from dasher_rnn.ui.widgets import wrap_tip
from dasher_rnn.zoom.controller import WritingController

EDGE_LABELS = {"bottom": "Bottom", "top": "Top", "left": "Left", "right": "Right"}
SHARE_CHOICES = (0.25, 0.3, 0.4, 0.5, 0.6)  # the menu's sizes (the Preferences' stepper takes any in the range)
SETTLE_MS = 400  # a window still this long after a move or resize has settled
PANEL_LINES = 1  # the text panel's height in the strip, in lines of its font
NO_LIMIT = 16_777_215  # Qt's QWIDGETSIZE_MAX


def dock_rect(available: QRect, edge: str, share: float) -> QRect:
    """The strip along ``edge`` of ``available`` that takes ``share`` of its height (top, bottom) or width (left,
    right)."""
    share = min(max(share, DOCK_SHARE_RANGE[0]), DOCK_SHARE_RANGE[1])
    x, y, width, height = available.x(), available.y(), available.width(), available.height()
    if edge in ("left", "right"):
        side = round(width * share)
        return QRect(x if edge == "left" else x + width - side, y, side, height)
    side = round(height * share)
    return QRect(x, y if edge == "top" else y + height - side, width, side)


def share_label(share: float) -> str:
    return f"{round(share * 100)}% of the screen"


class DockPart(QObject):
    layout_changed = Signal()  # the preset's layout changed (chosen, or the user moved the strip) or another preset's applies
    docked_changed = Signal(bool)  # docked (direct output went on) or not

    def __init__(self, controller: WritingController, keeper: PrefsKeeper, host: QMainWindow, looks: LooksPart,
                 size_to_screen: Callable[[], None]) -> None:
        """``host`` is the window; ``looks`` its text panel and full screen; ``size_to_screen`` sizes it as at the
        start (when it goes back from a dock it was in from the start)."""
        super().__init__(host)
        self.controller, self.keeper, self.host, self.looks = controller, keeper, host, looks
        self._size_to_screen = size_to_screen
        self.docked = False
        self._before: tuple[QRect, bool, bool] | None = None  # geometry, maximised, full screen before docking
        self._target: QRect | None = None  # the frame geometry last asked for
        self._placed: QRect | None = None  # where the window settled after that: a change from it is the user's
        self._fixed = False  # the placing was done again once the window manager's frame was known
        self._panel_height: int | None = None  # the text panel's height before docking
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SETTLE_MS)
        self._timer.timeout.connect(self._settled)
        host.installEventFilter(self)
        looks.normal_place = self._normal_place

        self.menu = QMenu("Docked layout", host)
        self.menu.setToolTipsVisible(True)
        self.menu_action = self.menu.menuAction()
        self.menu_action.setToolTip(wrap_tip("Where this window goes while it types into another program: a strip at "
                                             "an edge of the screen, for this input preset"))
        edges = QActionGroup(self)
        self.edge_actions: dict[str, QAction] = {}
        for edge, label in EDGE_LABELS.items():
            action = QAction(f"Strip at the {label.lower()}", self, checkable=True)
            action.triggered.connect(lambda _on=False, e=edge: self.set_edge(e))
            edges.addAction(action)
            self.menu.addAction(action)
            self.edge_actions[edge] = action
        self.own_action = QAction("Where I put it", self, checkable=True)
        self.own_action.setToolTip(wrap_tip("Move or resize the strip and it stays there (choose an edge or a size to "
                                            "dock it again)"))
        self.own_action.setEnabled(False)  # chosen by moving or resizing the window
        edges.addAction(self.own_action)
        self.menu.addAction(self.own_action)
        self.menu.addSeparator()
        shares = QActionGroup(self)
        self.share_actions: dict[float, QAction] = {}
        for share in SHARE_CHOICES:
            action = QAction(share_label(share), self, checkable=True)
            action.triggered.connect(lambda _on=False, s=share: self.set_share(s))
            shares.addAction(action)
            self.menu.addAction(action)
            self.share_actions[share] = action
        self.show_choice()

    # -- the layout -----------------------------------------------------------------------------------
    def layout(self) -> DockLayout:
        """The layout of the preset in use."""
        return self.keeper.prefs.dock_layout(self.controller.preset.name)

    def preset_label(self) -> str:
        preset = PRESETS.get(self.controller.preset.name)
        return preset.label if preset is not None else self.controller.preset.name

    def set_edge(self, edge: str) -> None:
        """Dock at ``edge`` (this preset's choice, kept), leaving any place the user put the strip."""
        self._remember(edge=edge, geometry=None)

    def set_share(self, share: float) -> None:
        """The strip takes ``share`` of the screen (this preset's choice, kept), docked at its edge again."""
        self._remember(share=share, geometry=None)

    def _remember(self, **changes: Any) -> None:
        layout = DockLayout.model_validate({**self.layout().model_dump(), **changes})
        self.keeper.remember(dock={**self.keeper.prefs.dock, self.controller.preset.name: layout})
        self.show_choice()
        if self.docked and changes.get("geometry") is None:  # an edge or a size chosen: docked there again
            self.place()
        self.layout_changed.emit()

    def show_choice(self) -> None:
        """The menu shows the preset's layout."""
        layout = self.layout()
        chosen = self.own_action if layout.geometry is not None else self.edge_actions[layout.edge]
        with QSignalBlocker(chosen):
            chosen.setChecked(True)
        for share, action in self.share_actions.items():
            with QSignalBlocker(action):
                action.setChecked(abs(share - layout.share) < 1e-6)

    def follow_preset(self) -> None:
        """Another preset was chosen: its layout applies."""
        self.show_choice()
        if self.docked:
            self.place()
        self.layout_changed.emit()

    def target(self) -> QRect:
        """Where the window's frame goes: the place the user left the strip at (while it is on a screen), or the
        strip along the edge of the screen the window is on."""
        layout = self.layout()
        if layout.geometry is not None:
            rect = QRect(*layout.geometry)
            if QGuiApplication.screenAt(rect.center()) is not None:
                return rect
        host = self.host
        screen = host.screen() or QGuiApplication.primaryScreen()
        rect = dock_rect(screen.availableGeometry(), layout.edge, layout.share)
        # no smaller than the window can be (a small screen): then it reaches further from its edge
        frame, inner = host.frameGeometry(), host.geometry()
        smallest = host.minimumSizeHint().expandedTo(host.minimumSize())
        height = smallest.height() + frame.height() - inner.height()
        width = smallest.width() + frame.width() - inner.width()
        if rect.height() < height:
            rect.setTop(rect.bottom() - height + 1) if layout.edge == "bottom" else rect.setHeight(height)
        if rect.width() < width:
            rect.setLeft(rect.right() - width + 1) if layout.edge == "right" else rect.setWidth(width)
        return rect

    # -- docking ---------------------------------------------------------------------------------------
    def set_docked(self, on: bool) -> None:
        """Direct output went on (dock the window, and remember where it was) or off (put it back)."""
        if on == self.docked:
            return
        self.docked = on
        host = self.host
        if on:
            self._before = (QRect(host.geometry()), host.isMaximized(), host.isFullScreen()) if host.isVisible() \
                else None
            self._compact(True)
            self.docked_changed.emit(True)
            if host.isVisible():
                self.place()
            return
        self._timer.stop()
        self._target = self._placed = None
        self._compact(False)
        self.docked_changed.emit(False)
        before, self._before = self._before, None
        if before is None:
            if host.isVisible():
                self._size_to_screen()
        elif before[2]:
            self.looks.set_full_screen(True)
        elif before[1]:
            host.showMaximized()
        else:
            host.setGeometry(before[0])

    def place(self) -> None:
        """Put the window where the preset's layout says, and show it."""
        host = self.host
        if host.isFullScreen() or host.isMaximized():
            with QSignalBlocker(self.looks.full_screen_action):
                self.looks.full_screen_action.setChecked(False)
            host.showNormal()
        if host.layout() is not None:  # the strip's chrome (parts hidden or smaller): the smallest the window can be
            QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
            host.layout().invalidate()
            host.layout().activate()
        self._target, self._placed, self._fixed = self.target(), None, False
        self._set_frame(self._target)
        if not host.isVisible():
            host.show()
            self._set_frame(self._target)  # the frame's margins, where the platform knows them once shown
        self._timer.start()

    def _set_frame(self, rect: QRect) -> None:
        """The window's frame (its title bar and borders included, as far as they are known yet) at ``rect``."""
        host = self.host
        frame, inner = host.frameGeometry(), host.geometry()
        host.setGeometry(rect.adjusted(inner.left() - frame.left(), inner.top() - frame.top(),
                                       inner.right() - frame.right(), inner.bottom() - frame.bottom()))

    def _normal_place(self) -> None:
        """Where the window goes when it leaves full screen: the dock while docked."""
        if self.docked:
            self.place()
        else:
            self.looks.fit_to_screen()

    def _compact(self, on: bool) -> None:
        """The text panel a few lines high in the strip, its height back out of it."""
        panel, splitter = self.looks.panel, self.looks.splitter
        if on:
            self._panel_height = splitter.sizes()[0] if not panel.isHidden() else None  # (the window may be hidden)
            margins = panel.contentsMargins()
            height = panel.fontMetrics().lineSpacing() * PANEL_LINES + 2 * panel.frameWidth() + margins.top() \
                + margins.bottom() + 8
            panel.setMaximumHeight(height)
            if self._panel_height:  # the splitter gives the canvas what the panel no longer takes
                sizes = splitter.sizes()
                splitter.setSizes([height, max(1, sum(sizes) - height)])
            return
        panel.setMaximumHeight(NO_LIMIT)
        height, self._panel_height = self._panel_height, None
        if height and not panel.isHidden():
            sizes = splitter.sizes()
            splitter.setSizes([height, max(1, sum(sizes) - height)])  # the canvas takes what the window gains

    # -- the user's own place ------------------------------------------------------------------------------
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.host and self.docked and self._target is not None and \
                event.type() in (QEvent.Type.Move, QEvent.Type.Resize, QEvent.Type.Show):
            self._timer.start()  # settles SETTLE_MS after the last move
        return False

    def _settled(self) -> None:
        host = self.host
        if not self.docked or self._target is None or not host.isVisible() or host.isFullScreen() \
                or host.isMaximized():
            return
        frame = host.frameGeometry()
        if self._placed is None:  # our own placing has settled
            if frame != self._target and not self._fixed:  # placed before the window manager's frame was known
                self._fixed = True
                self._set_frame(self._target)
                self._timer.start()
                return
            self._placed = frame
        elif frame != self._placed:  # the user moved or resized the strip: it stays there
            self._placed = frame
            self._remember(geometry=(frame.x(), frame.y(), frame.width(), frame.height()))
