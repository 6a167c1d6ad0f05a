"""Writing: Start and Stop, the speed, Turbo, the control box, Undo writing, and the frame tick.

Each tick reads the pointer (from the input part's ``pointer_screen``), steps the controller and draws the
frame. ``framed`` carries every frame the rest of the window must follow (the text, direct output, a finished
message, a control-box action), including the frames of an undo and of a change of control mode; ``stopped``
says that writing stopped; ``status_due`` asks for the status bar's figures a few times a second.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QElapsedTimer, QEvent, QObject, QSignalBlocker, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QKeySequence
from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QWidget

from dasher_rnn.ui.paint import ConfirmTarget
from dasher_rnn.ui.parts.prefs import PrefsKeeper
from dasher_rnn.ui.parts.status import Notices
from dasher_rnn.ui.view import DasherView
from dasher_rnn.ui.widgets import make_action, wrap_tip
from dasher_rnn.zoom.boxes import Frame
from dasher_rnn.zoom.confirmations import CONFIRM_CENTRE, CONFIRM_RADIUS, CONFIRM_S
from dasher_rnn.zoom.control import Action
from dasher_rnn.zoom.controller import SPEED_RANGE, WritingController

DEFAULT_INTERVAL_MS = 16
MAX_DT = 0.1  # a stalled frame (window dragged, machine busy) must not jump the zoom
STATUS_SECONDS = 0.25  # the status bar's figures change slowly; refreshing them every frame is wasted work
# An idle window costs nothing (issue 46): once nothing has moved for IDLE_AFTER_S (stopped, no pointer motion, no
# dwell filling, no answer awaited) the frame timer stops; the input is then looked at every IDLE_POLL_MS, without
# drawing, and the status bar's figures every IDLE_STATUS_S; a pointer or gaze that moves, a press, a start or a
# mouse event on the canvas brings the frames back
IDLE_AFTER_S = 0.5
IDLE_POLL_MS = 100
IDLE_STATUS_S = 1.0
_WAKING_EVENTS = (QEvent.Type.MouseMove, QEvent.Type.Enter, QEvent.Type.Leave, QEvent.Type.MouseButtonPress,
                  QEvent.Type.Wheel)
STOP_REASONS = {"outside": "Paused (the pointer left the canvas)", "rest": "Stopped (the pointer rested)",
                "control": "Stopped (the control box)", "switch": "Stopped (no press for a while)",
                "confirm": "Stopped to ask first"}

HELD_HINT = "Held while your gaze rests: look at the box you want to go on (rest on the crosshair to stop)"

Pointer = Callable[[], tuple[tuple[float, float] | None, bool]]  # (view pixels or None, inside the view)


def frame_interval_ms(refresh_hz: float) -> int:
    """One frame per screen refresh (16 ms when the screen does not say)."""
    return max(4, round(1000 / refresh_hz)) if refresh_hz and refresh_hz > 1 else DEFAULT_INTERVAL_MS


class WritingPart(QObject):
    framed = Signal(object)  # a Frame
    stopped = Signal()
    status_due = Signal()

    def __init__(self, controller: WritingController, view: DasherView, keeper: PrefsKeeper, notices: Notices,
                 pointer: Pointer, host: QWidget) -> None:
        """``pointer`` says where the pointer is each frame; ``host`` is the window the actions belong to."""
        super().__init__(host)
        self.controller, self.view, self.keeper, self.notices, self.pointer = controller, view, keeper, notices, pointer
        self.frames = 0
        self._running_shown: bool | None = None
        self._asking_shown = False  # the hint asks for a confirmation
        self._held_shown = False
        self._since_status = STATUS_SECONDS
        self.start_action = make_action(host, "Start", self.toggle_running, "Space", "Start or stop writing (Space)")
        self.undo_action = make_action(host, "Undo writing", self.undo_writing, QKeySequence.StandardKey.Undo,
                                       "Take back what the last run of writing wrote (since the last start), "
                                       "and what it taught the model")
        self.undo_action.setEnabled(False)
        self.turbo_action = make_action(host, "Turbo", self._on_turbo, None,
                                        "Zoom faster while this is on or while Shift is held", checkable=True)
        self.control_action = make_action(host, "Control box", self.set_control_mode, None,
                                          "A box after the letters to stop, delete, speak, copy and start a new "
                                          "message by steering, without a click (Dasher's control mode)",
                                          checkable=True)
        self.speed_box = QDoubleSpinBox()
        self.speed_box.setRange(*SPEED_RANGE)
        self.speed_box.setSingleStep(0.1)
        self.speed_box.setDecimals(1)
        self.speed_box.setSuffix(" bits/s")
        self.speed_box.setToolTip(wrap_tip("Zoom speed: the most information per second you write"))
        self.speed_box.valueChanged.connect(self._on_speed)
        self.auto_speed_box = QCheckBox("Auto")
        self.auto_speed_box.toggled.connect(self.set_auto_speed)
        view.clicked.connect(self._on_view_clicked)

        self._clock = QElapsedTimer()
        self._clock.start()
        self.timer = QTimer(self)
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        screen = QGuiApplication.primaryScreen()
        self.timer.setInterval(frame_interval_ms(screen.refreshRate() if screen is not None else 0.0))
        self.timer.timeout.connect(self.tick)
        self.idle_timer = QTimer(self)  # while idle, instead of frames: is there input?
        self.idle_timer.setInterval(IDLE_POLL_MS)
        self.idle_timer.timeout.connect(self._poll)
        self._quiet = 0.0  # seconds with nothing moving
        self._last_pointer: tuple[float, float] | None = None
        # what else keeps the frames going while it lasts (direct output's characters waiting to be typed)
        self.keep_awake: list[Callable[[], bool]] = []
        view.installEventFilter(self)  # the mouse on the canvas wakes the frames at once

    # -- settings -------------------------------------------------------------------------
    def show_settings(self) -> None:
        """Show the speed, auto speed and control mode in effect: the controller's, made from the preferences
        at the start, and changed by a preset."""
        c = self.controller
        with QSignalBlocker(self.speed_box):
            self.speed_box.setValue(c.speed_bps)
        allowed = c.preset.auto_speed  # presets that keep the speed fixed (gaze) grey it out
        with QSignalBlocker(self.auto_speed_box):
            self.auto_speed_box.setChecked(c.auto_speed_enabled)
        self.auto_speed_box.setEnabled(allowed)
        self.auto_speed_box.setToolTip("Adjust the speed automatically to how you steer" if allowed
                                       else "This input preset keeps the speed fixed")
        with QSignalBlocker(self.control_action):
            self.control_action.setChecked(c.control_mode)
        self._running_shown = None  # the hint depends on the preset

    def set_speed(self, bps: float) -> None:
        self.speed_box.setValue(bps)  # the box tells the controller and remembers it

    def _on_speed(self, value: float) -> None:
        self.controller.set_speed(value)
        self.keeper.remember(speed_bps=self.controller.speed_bps)

    def follow_speed(self) -> None:
        """Auto speed moved the speed: the box follows (unless the user is typing in it)."""
        c = self.controller
        if abs(self.speed_box.value() - c.speed_bps) >= 0.05 and not self.speed_box.hasFocus():
            with QSignalBlocker(self.speed_box):
                self.speed_box.setValue(c.speed_bps)

    def set_auto_speed(self, on: bool) -> None:
        with QSignalBlocker(self.auto_speed_box):
            self.auto_speed_box.setChecked(on)
        self.controller.set_auto_speed(on)
        self.keeper.remember(auto_speed=on)

    def set_control_mode(self, on: bool) -> None:
        """Show the control box after the letters, or not (the view starts again from the text); the choice is kept."""
        with QSignalBlocker(self.control_action):
            self.control_action.setChecked(bool(on))
        self.framed.emit(self.controller.set_control_mode(bool(on)))
        self.view.set_frame(self.controller.zoom.idle(), 0.0)
        self.keeper.remember(control_mode=bool(on))

    def _on_turbo(self, on: bool) -> None:
        self.controller.turbo = on

    # -- frames ---------------------------------------------------------------------------
    def start_frames(self) -> None:
        """Frames from now on (after a pause, time stopped counts for nothing); they rest while the window is idle."""
        self.idle_timer.stop()
        self._quiet = 0.0
        self._clock.restart()
        self.timer.start()

    def pause_frames(self) -> bool:
        """No frames until ``start_frames``; whether frames were running (or resting while idle)."""
        active = self.timer.isActive() or self.idle_timer.isActive()
        self.timer.stop()
        self.idle_timer.stop()
        return active

    @property
    def idle(self) -> bool:
        """The frames rest: nothing moved for a while (``wake`` or input brings them back)."""
        return self.idle_timer.isActive()

    def wake(self) -> None:
        """Frames again, if they rest (something happened: input, a start, a change of text)."""
        if self.idle_timer.isActive():
            self.start_frames()
        else:
            self._quiet = 0.0

    def _rest(self) -> None:
        self.timer.stop()
        self.idle_timer.start()

    def _poll(self) -> None:
        """While idle: the input looked at, without a frame (a switch input's presses reach the controller here)."""
        pointer, _inside = self.pointer()
        c = self.controller
        self._since_status += IDLE_POLL_MS / 1000.0
        if self._since_status >= IDLE_STATUS_S:
            self._since_status = 0.0
            self.status_due.emit()  # what the input says can change with time ("no data for 5 s")
        if pointer != self._last_pointer or c.running or c.pending is not None or c.zoom.answers_pending \
                or any(busy() for busy in self.keep_awake):
            self.wake()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if obj is self.view and event.type() in _WAKING_EVENTS:
            self.wake()
        return False

    def tick(self, dt: float | None = None) -> Frame:
        """One frame: read the pointer, step the controller, draw. ``dt`` (seconds) defaults to the time
        since the last frame; tests and scripts pass a fixed one."""
        elapsed = self._clock.restart() / 1000.0
        if dt is None:
            dt = min(elapsed, MAX_DT)
        pointer_screen, inside = self.pointer()
        pointer = self.view.viewport().to_dasher(*pointer_screen) if pointer_screen is not None and inside else None
        shift = bool(QGuiApplication.keyboardModifiers() & Qt.KeyboardModifier.ShiftModifier)
        self.controller.turbo = self.turbo_action.isChecked() or shift
        frame = self.controller.frame(pointer, dt)
        self.framed.emit(frame)
        confirm = self._confirm_target()
        asking = confirm is not None
        self.view.confirm = confirm
        self.view.set_frame(frame, self.controller.dwell.progress)
        self.frames += 1
        if (self.controller.running, self.controller.held, asking) != (self._running_shown, self._held_shown,
                                                                        self._asking_shown):
            self.show_running()
        if self.controller.running:  # while running there is always the run itself to take back
            self.undo_action.setEnabled(True)
        self._since_status += dt
        if self._since_status >= STATUS_SECONDS:
            self._since_status = 0.0
            self.status_due.emit()
        c = self.controller
        moving = (c.running or c.pending is not None or c.held or frame.bits != 0 or c.dwell.progress > 0
                  or c.confirm_dwell.progress > 0 or c.zoom.answers_pending > 0 or pointer_screen != self._last_pointer
                  or any(busy() for busy in self.keep_awake))
        self._last_pointer = pointer_screen
        self._quiet = 0.0 if moving else self._quiet + dt
        if self._quiet >= IDLE_AFTER_S and self.timer.isActive():
            self._rest()
        return frame

    def show_running(self) -> None:
        """Start or Stop, Undo writing, and the hint on the canvas, as the controller is now."""
        was_running = self._running_shown
        running = self._running_shown = self.controller.running
        self._asking_shown = self.controller.pending is not None
        self._held_shown = self.controller.held
        if was_running and not running:
            self.stopped.emit()
        self.start_action.setText("Stop" if running else "Start")
        self.undo_action.setEnabled(running or self.controller.can_undo)
        why = STOP_REASONS.get(self.controller.stopped_because, "Stopped")
        if self.controller.pending is not None:
            self.view.hint = f"{why}: confirm in the green circle, or it is let go in {CONFIRM_S:.0f} s"
        elif running:
            self.view.hint = HELD_HINT if self.controller.held else ""
        elif self.controller.switch is not None:
            self.view.hint = f"{why}: press a switch to start"
        elif self.controller.preset.dwell_start:
            self.view.hint = f"{why}: rest the pointer on the crosshair to start"
        else:
            self.view.hint = f"{why}: click or press Space to start"
        self.view.update()
        self.wake()

    def toggle_running(self) -> None:
        self.controller.toggle()
        self.show_running()

    def stop(self) -> None:
        self.controller.stop()
        self.show_running()

    def _confirm_target(self) -> ConfirmTarget | None:
        """What the view shows while an action waits for its confirmation."""
        item = self.controller.pending
        if item is None:
            return None
        what = f"Write “{item.text}”?" if item.action == Action.PHRASE else f"{item.label}?"
        if self.controller.switch is not None:
            how = "Press the first switch to confirm"
        elif self.controller.preset.dwell_start:
            how = "Look here to confirm"
        else:
            how = "Click here to confirm"
        return ConfirmTarget(*CONFIRM_CENTRE, CONFIRM_RADIUS, what, how, self.controller.confirm_dwell.progress)

    def _on_view_clicked(self) -> None:
        self.view.setFocus()
        if self.controller.pending is not None:  # a click on the target confirms, elsewhere lets the action go
            pointer = self.view.pointer_screen
            at = self.view.viewport().to_dasher(*pointer) if pointer is not None else None
            self.controller.confirm() if self.controller.on_confirm_target(at) else self.controller.cancel()
            return
        if self.controller.preset.start_on_click:
            self.toggle_running()

    def undo_writing(self) -> None:
        """Take back the last run of writing and what it taught the model (writing stops)."""
        undone = self.controller.undo_run()
        if undone is not None:
            self.framed.emit(undone)  # direct output takes the run back out of the other program too
        frame = self.controller.zoom.idle()
        self.framed.emit(frame)
        self.show_running()
        self.view.set_frame(frame, 0.0)
        self.notices.show_message("Took back the last run of writing" if undone else "Nothing to take back")
