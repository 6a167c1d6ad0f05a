"""Starting the desktop app, and a scripted run of it that makes the documentation's screenshots."""

from __future__ import annotations

import logging
import signal
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QMessageBox

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.adapt.profile_files import ProfileError
from dasher_rnn.adapt.profiles import check_name
from dasher_rnn.adapt.writer import AUTOSAVE_S
from dasher_rnn.desktop import ICONS_DIR
from dasher_rnn.journal import Journal
from dasher_rnn.settings import SettingsStore
from dasher_rnn.zoom.controller import WritingController
from dasher_rnn.zoom.sources import WriterSource

log = logging.getLogger(__name__)


def _application() -> QApplication:
    app = QApplication.instance()
    if app is None:
        app = QApplication(sys.argv[:1])
        app.setApplicationName("dasher-rnn")
        # the icon `dasher-rnn install-desktop` puts in the menu; Wayland finds it through the entry's name
        app.setDesktopFileName("dasher-rnn")
        app.setWindowIcon(QIcon(str(ICONS_DIR / "dasher-rnn.svg")))
    return app


def run_app(model: str = "hybrid", model_dir: str | Path | None = None, profile: str | None = None, adapt: bool = True,
            ppm_train: list[str] | None = None, settings_path: str | Path | None = None,
            prefs_overrides: dict[str, object] | None = None, exit_after_first_frame: bool = False) -> int:
    """Show the window until it is closed; the exit code (2 when the model cannot be loaded).

    ``prefs_overrides`` (from the command line, already checked) replace saved preferences of the same names; a
    "preset" among them is chosen as the Preset box chooses one (with its speeds, kept for the input).
    ``exit_after_first_frame``: print "first frame" once the window has painted its first boxes (the model loaded
    and predicting), then close it as a user would (a check that the app works, and start-up's finishing line).
    """
    from dasher_rnn.ui.window import MainWindow

    app = _application()
    store = SettingsStore(Path(settings_path) if settings_path is not None else None)
    overrides = dict(prefs_overrides or {})
    chosen_preset = overrides.pop("preset", None)  # `--preset`: chosen by hand for the input, with what it brings
    prefs = store.load().updated(**overrides)
    if chosen_preset is not None:
        prefs = prefs.with_preset(str(chosen_preset))
    adapt = adapt and prefs.adaptation
    profile_notice = None
    if profile is None:  # the profile in the settings: one that cannot be a profile's name never stops the app
        try:
            check_name(prefs.profile)
        except ProfileError as exc:
            profile_notice = f"The profile in the settings cannot be used ({exc}): the profile 'default' is used."
            log.warning("%s", profile_notice)
            prefs = prefs.updated(profile="default")

    def language_source(code: str) -> WriterSource:
        """The source that writes ``code`` ("en": English), with this run's options; the model folder and PPM text
        given on the command line are for the language the app started in."""
        language = code if code != "en" else None
        started_in = code == prefs.language
        return WriterSource(build_writer(WriterConfig(
            model=model, model_dir=model_dir if started_in else None,
            ppm_train=tuple(ppm_train or ()) if started_in else (), adapt=adapt, language=language,
            autosave_s=AUTOSAVE_S,  # a crash loses at most the last half minute of learning
            profile=profile or prefs.profile,  # used even while adaptation is off: it can be switched on
            alphabet=None if model in ("rnn", "hybrid") or language else prefs.alphabet)), prefs.start_lower_share)

    try:
        source = language_source(prefs.language)
    except Exception as exc:  # whatever went wrong, the user gets a message, not a traceback
        log.debug("loading the %s model failed", model, exc_info=True)
        QMessageBox.critical(None, "dasher-rnn", f"Could not load the {model!r} model:\n\n{exc}")
        return 2
    controller = WritingController(source, prefs.controller_config())
    window = MainWindow(controller, store, prefs, journal=Journal(), language_source=language_source)
    window.show_sized_to_screen()
    if profile_notice is not None:
        window.status.set_notice("settings-profile", profile_notice)
    if exit_after_first_frame:
        def first_frame() -> None:
            window.view.frame_painted.disconnect(first_frame)
            print("first frame", flush=True)
            QTimer.singleShot(0, window.close)  # after this paint; closing saves as a user's close does
            QTimer.singleShot(0, app.quit)  # also ends a dialog's own event loop (the tutorial's)

        window.view.frame_painted.connect(first_frame)
    elif not prefs.tutorial_done:  # the first start: learn to steer before writing
        QTimer.singleShot(0, window.open_tutorial)
    # Ctrl+C in the terminal or a polite kill closes the window properly (settings and profile saved, model
    # closed); the frame timer (while idle, its look at the input ten times a second) gives Python the chance to run
    # the handler. The handler only asks the event loop to
    # close the window: Python runs it between any two bytecodes, and closing in the middle of another slot (the
    # tutorial being opened) would leave that slot to finish on a closed window.
    previous = {sig: signal.signal(sig, lambda *_: QTimer.singleShot(0, window.close))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return app.exec()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        # the last window's close may have posted a quit after exec() had already returned (app.quit above): left
        # queued, it would end every later event loop of this process at once (a test's waits, a second run_app)
        QCoreApplication.removePostedEvents(None, QEvent.Type.Quit)


def take_screenshot(path: str | Path, text_to_write: str, seconds: float, colour_scheme: str = "default",
                    speed_bps: float = 3.0, size: tuple[int, int] | None = None, fps: float = 30.0,
                    start: bool = True, writer: WriterConfig | None = None) -> Path:
    """Write ``text_to_write`` with the shipped RNN (or the Writer ``writer`` describes: another language's PPM)
    for ``seconds`` of simulated time, steered like a user aiming at it, and save a picture of the window
    mid-writing (settings in a throwaway file).

    ``size`` None opens the window as the app does (sized to the screen); ``start`` False pictures the window
    as it opens, stopped."""
    from dasher_rnn.ui.window import MainWindow
    from dasher_rnn.zoom.simulate import target_pointer, wait_for_answers

    app = _application()
    with tempfile.TemporaryDirectory() as tmp:
        store = SettingsStore(Path(tmp) / "settings.json")
        # the scripted user holds its aim still while a box grows, which the rest stop would take for a resting
        # pointer: it is off here
        prefs = store.load().updated(colour_scheme=colour_scheme, speed_bps=speed_bps, auto_speed=False,
                                     rest_stop_seconds=0.0)
        controller = WritingController(WriterSource(build_writer(writer or WriterConfig(model="rnn")),
                                                    prefs.start_lower_share), prefs.controller_config())
        window = MainWindow(controller, store, prefs, start_timer=False)
        try:
            if size is None:
                window.show_sized_to_screen()
            else:
                window.resize(*size)
                window.show()
            app.processEvents()
            zoom, view = controller.zoom, window.view
            if start:
                controller.start()
            target = zoom.context + text_to_write
            dt = 1.0 / fps
            for _ in range(int(seconds * fps) if start else 0):
                wait_for_answers(zoom)  # the same picture however busy this machine is
                x, y = target_pointer(zoom, target)
                view.set_pointer_override(view.viewport().to_screen(x, y))
                window.writing.tick(dt)
                app.processEvents()
                if zoom.output == text_to_write:
                    break
            wait_for_answers(zoom)
            window.writing.tick(0.0)
            window.update_status()
            app.processEvents()
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            # a real screen capture where there is a screen (e.g. Xvfb); the widget's own rendering offscreen
            screen = window.screen()
            offscreen = QApplication.platformName() == "offscreen"
            picture = window.grab() if offscreen else screen.grabWindow(window.winId())
            if not picture.save(str(path)):
                raise OSError(f"could not save the screenshot to {path}")
        finally:
            window.close()
    return path
