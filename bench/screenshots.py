"""The documentation's screenshots of the window, taken as a user would see it on a real (virtual) screen.

    xvfb-run -s "-screen 0 1600x900x24" python bench/screenshots.py docs/canvas-16x9 "hello, how are you"
    xvfb-run -s "-screen 0 1024x768x24" python bench/screenshots.py docs/canvas-4x3 "hello, how are you"

writes PREFIX-stopped.png (the window as it opens, stopped) and PREFIX-writing.png (part way through writing
the text with the shipped RNN, steered like a user aiming at it). The window is sized to the screen as the
app opens it.

    xvfb-run -s "-screen 0 1600x1000x24" python bench/screenshots.py docs/resting-pointer --rest 20

repeats what issue 22's evidence shows (the mouse preset, automatic speed on at 1.5 bits/s, the pointer left
resting right of the crosshair for 20 simulated seconds) and writes PREFIX.png; with the hybrid model, as
``make run`` opens it.

    xvfb-run -s "-screen 0 1600x900x24" python bench/screenshots.py docs/tutorial --tutorial

writes PREFIX-steering.png (the tutorial's explanation for the mouse), PREFIX-practice.png (part way through
the first phrase, the path to it shown) and PREFIX-speed.png (the speed suggested at the end).

    xvfb-run -s "-screen 0 1600x900x24" python bench/screenshots.py docs/tutorial-eye-tracker --tutorial-input eye-tracker

writes PREFIX.png: the tutorial's practice for that input preset (eye-tracker or head-mouse; the window's preset, no
gaze source: the pointer stands in for the gaze), the first phrase written by a simulated user who starts by resting
on the red cross, the other phrases skipped, then the control-box step's first task (delete the last word) pictured
while the user rests on the red cross to start: the dwell ring part filled, the way to the control box and its
Delete word box drawn, the step's task and hint shown.

    xvfb-run -s "-screen 0 1600x900x24" python bench/screenshots.py docs/tutorial-gaze-dwell --tutorial-gaze-dwell

writes PREFIX.png: the tutorial's first page on a first start with `--input gaze-udp` (the eye-tracker preset), the
gaze resting on Start practising, the dwell's fill part way across it.

    xvfb-run -s "-screen 0 1600x900x24" python bench/screenshots.py docs/progress --progress 40

has the simulated user write 40 messages of one person's (made-up) writing in the window, with the hybrid
model adapting to a new profile in a throwaway folder, finishing each with New message, then pictures View >
Progress as PREFIX.png.

    xvfb-run -s "-screen 0 1600x900x24" python bench/screenshots.py docs/control-mode "I want tea" --control delete-word

writes PREFIX.png: control mode on (the mouse preset, so no dwell toggles writing while the script steers), the
text written with the shipped RNN, then the pointer steering into the control box after it towards the named
action, pictured with the control box open (three quarters of the view high), all its actions in sight. An action
in More (`--control save`: docs/control-more.png) pictures More open; `--control "phrase:Thank you"`
(docs/quick-phrases.png) the Phrases box of a new profile, on the way to that phrase.

    xvfb-run -a -s "-screen 0 1600x900x24" python bench/screenshots.py docs/rtl-arabic "أنا أستطيع المشي الآن" \
        --language ar --ppm-train ../shared/corpora/languages/aac/ar_Arab.txt

writes PREFIX.png: the window part way through writing the text in that language (a language code, as
``dasher-rnn languages`` lists them) with Dasher's PPM over the language's alphabet, trained on the given text
(none: PPM starts from nothing); a right-to-left language's view is mirrored and its text panel right to left.

    xvfb-run -a -s "-screen 0 1600x900x24" python bench/screenshots.py docs/switch "hello, how are you" \
        --switch one-button --switch two-button --switch scanning

writes PREFIX-MODE.png for each switch input named (one-button, two-button, scanning, step-scan): the window with
that input and the Switches preset (control box on), the text written with the shipped RNN by the simulated switch
user (zoom/switch_user.py) pressing the window's switches, pictured part way through (at --at characters, default
half the text) with the mode's marks or scanning boxes over the boxes: one-button's two target marks at the right
edge (the one the zoom heads for filled), two-button's marks of the heights a press brings to the crosshair,
scanning's boxes with the highlighted one bold and the back box round the view (pictured as the user is about to
press for the highlighted box).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

import argparse

from dasher_rnn.ui.app import take_screenshot


def save_picture(widget: QWidget, path: str) -> None:
    """The widget's window as it is on the screen now, as a PNG at ``path``."""
    if not widget.screen().grabWindow(widget.winId()).save(path):
        raise OSError(f"could not save {path}")


def resting_pointer(path: str, seconds: float, fps: float = 30.0) -> str:
    """The window after the pointer rested ``seconds`` (simulated) right of the crosshair while writing."""
    import tempfile
    from pathlib import Path

    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.settings import SettingsStore
    from dasher_rnn.ui.app import _application
    from dasher_rnn.ui.window import MainWindow
    from dasher_rnn.zoom.controller import WritingController
    from dasher_rnn.zoom.geometry import ORIGIN_X, ORIGIN_Y
    from dasher_rnn.zoom.simulate import wait_for_answers
    from dasher_rnn.zoom.sources import WriterSource

    app = _application()
    with tempfile.TemporaryDirectory() as tmp:
        store = SettingsStore(Path(tmp) / "settings.json")
        prefs = store.load().updated(speed_bps=1.5, auto_speed=True)
        source = WriterSource(build_writer(WriterConfig(model="hybrid", adapt=True, profile=None)),
                              prefs.start_lower_share)
        window = MainWindow(WritingController(source, prefs.controller_config()), store, prefs, start_timer=False)
        try:
            window.show_sized_to_screen()
            app.processEvents()
            view = window.view
            window.writing.toggle_running()
            for _ in range(int(seconds * fps)):
                wait_for_answers(window.controller.zoom)
                view.set_pointer_override(view.viewport().to_screen(0.6 * ORIGIN_X, ORIGIN_Y - 350.0))
                window.writing.tick(1.0 / fps)
                app.processEvents()
            window.update_status()
            app.processEvents()
            save_picture(window, path)
        finally:
            window.close()
    return path


def tutorial(prefix: str, fps: float = 30.0) -> list[str]:
    """The tutorial's three screens, with the shipped RNN, steered like a user aiming at the phrases."""
    import tempfile
    from pathlib import Path

    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.settings import SettingsStore
    from dasher_rnn.ui.app import _application
    from dasher_rnn.ui.window import MainWindow
    from dasher_rnn.zoom.controller import WritingController
    from dasher_rnn.zoom.simulate import target_pointer, wait_for_answers
    from dasher_rnn.zoom.sources import WriterSource

    app = _application()
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        store = SettingsStore(Path(tmp) / "settings.json")
        # the simulated user holds its aim still near the right edge while a box grows, which the rest stop
        # would take for a resting pointer: it is off here
        prefs = store.load().updated(speed_bps=1.5, rest_stop_seconds=0.0)
        source = WriterSource(build_writer(WriterConfig(model="rnn", adapt=True, profile=None)), prefs.start_lower_share)
        window = MainWindow(WritingController(source, prefs.controller_config()), store, prefs, start_timer=False)
        try:
            window.show_sized_to_screen()
            app.processEvents()
            dialog = window.open_tutorial(start_timer=False)

            def grab(name: str) -> None:
                for _ in range(5):
                    app.processEvents()
                path = f"{prefix}-{name}.png"
                save_picture(dialog, path)
                written.append(path)

            grab("steering")
            dialog.start_practice()
            dialog.toggle_running()
            zoom, view = dialog.controller.zoom, dialog.view
            for phrase_index in range(len(dialog.phrases)):
                for _ in range(int(60 * fps)):
                    wait_for_answers(zoom)
                    view.set_pointer_override(view.viewport().to_screen(*target_pointer(zoom, zoom.context + dialog.phrase)))
                    dialog.tick(1.0 / fps)
                    app.processEvents()
                    if phrase_index == 0 and zoom.output == "hel" and len(written) == 1:
                        wait_for_answers(zoom)
                        dialog.tick(0.0)
                        grab("practice")
                    if dialog.scores[phrase_index] is not None:
                        break
                for _ in range(int(2 * fps)):
                    dialog.tick(1.0 / fps)
                if dialog.pages.currentIndex() != 1:
                    break
                dialog.toggle_running()
            grab("speed")
            dialog.reject()
        finally:
            window.close()
    return written


def tutorial_dwell(path: str, preset: str, fps: float = 30.0, ring: float = 0.6) -> str:
    """The tutorial's practice for a dwell preset at its control-box step, the dwell ring ``ring`` full."""
    import tempfile
    from pathlib import Path

    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.settings import SettingsStore
    from dasher_rnn.ui.app import _application
    from dasher_rnn.ui.window import MainWindow
    from dasher_rnn.zoom.controller import WritingController
    from dasher_rnn.zoom.geometry import ORIGIN_X, ORIGIN_Y
    from dasher_rnn.zoom.simulate import target_pointer, wait_for_answers
    from dasher_rnn.zoom.sources import WriterSource

    app = _application()
    with tempfile.TemporaryDirectory() as tmp:
        store = SettingsStore(Path(tmp) / "settings.json")
        prefs = store.load().updated(preset=preset, rest_stop_seconds=0.0)  # the preset's own speed and control box
        source = WriterSource(build_writer(WriterConfig(model="rnn", adapt=True, profile=None)), prefs.start_lower_share)
        window = MainWindow(WritingController(source, prefs.controller_config()), store, prefs, start_timer=False)
        try:
            window.show_sized_to_screen()
            app.processEvents()
            dialog = window.open_tutorial(start_timer=False)
            dialog.setGeometry(dialog.screen().geometry())  # full screen, as a window manager makes it for this preset
            app.processEvents()
            dialog.start_practice()
            c, view = dialog.controller, dialog.view

            def look(x: float, y: float) -> None:
                view.set_pointer_override(view.viewport().to_screen(x, y))

            for _ in range(int(120 * fps)):  # the first phrase: rest on the cross to start, then steer
                wait_for_answers(c.zoom)
                look(*(target_pointer(c.zoom, *dialog.goal()) if c.running else (ORIGIN_X, ORIGIN_Y)))
                dialog.tick(1.0 / fps)
                app.processEvents()
                if dialog.scores[0] is not None:
                    break
            else:
                raise RuntimeError(f"the first phrase was not written: {c.zoom.output!r}")
            while not dialog.control_step:
                dialog.skip_phrase()
            for _ in range(int(ring * c.preset.dwell_seconds * fps)):  # resting on the cross: the ring fills
                wait_for_answers(c.zoom)
                look(ORIGIN_X, ORIGIN_Y)
                dialog.tick(1.0 / fps)
                app.processEvents()
            if c.running or not dialog.view.dwell_progress > 0:
                raise RuntimeError("the picture would show no dwell ring")
            for _ in range(5):
                app.processEvents()
            save_picture(dialog, path)
            dialog.reject()
        finally:
            window.close()
    return path


def tutorial_gaze_dwell(path: str, fill: float = 0.6, fps: float = 30.0) -> str:
    """The tutorial's first page as a gaze user sees it on a first start (`app --input gaze-udp`: the eye-tracker
    preset), the gaze resting on "Start practising" with the dwell's fill ``fill`` across it."""
    import tempfile
    import time
    from pathlib import Path

    from PySide6.QtWidgets import QApplication

    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.input.gaze import GazeSource
    from dasher_rnn.settings import SettingsStore
    from dasher_rnn.ui.app import _application
    from dasher_rnn.ui.tutorial import BUTTON_DWELL_S
    from dasher_rnn.ui.window import MainWindow
    from dasher_rnn.zoom.controller import WritingController
    from dasher_rnn.zoom.sources import WriterSource

    class Gaze(GazeSource):  # a gaze resting where the script looks
        def look_at(self, widget: QWidget) -> None:
            centre, screen = widget.mapToGlobal(widget.rect().center()), widget.screen().geometry()
            self._push((centre.x() - screen.x()) / screen.width(), (centre.y() - screen.y()) / screen.height(),
                       time.monotonic())

    app = _application()
    with tempfile.TemporaryDirectory() as tmp:
        store = SettingsStore(Path(tmp) / "settings.json")
        prefs = store.load().updated(input="gaze-udp", gaze_port=1)  # the port is never opened: the gaze is faked
        prefs = prefs.with_preset(prefs.preset_for_input(), by_hand=False)
        source = WriterSource(build_writer(WriterConfig(model="uniform")), prefs.start_lower_share)
        window = MainWindow(WritingController(source, prefs.controller_config()), store, prefs, start_timer=False)
        try:
            window.input.close()
            gaze = window.input.gaze = Gaze(stale_after=600.0)
            window.show_sized_to_screen()
            app.processEvents()
            dialog = window.open_tutorial(start_timer=False)
            dialog.setGeometry(dialog.screen().geometry())  # full screen, as a window manager makes it for this preset
            for _ in range(5):
                app.processEvents()
            for _ in range(int(fill * BUTTON_DWELL_S * fps)):
                gaze.look_at(dialog.start_practice_button)
                dialog.tick(1.0 / fps)
                app.processEvents()
            for _ in range(5):
                app.processEvents()
            if QApplication.platformName() == "offscreen":
                dialog.grab().save(path)
            else:
                save_picture(dialog, path)
            dialog.reject()
        finally:
            window.close()
    return path


PERSON = {  # one made-up person's writing: their people, places and needs come back again and again
    "start": ["Can you ask", "Please tell", "I would like", "Could", "Remind"],
    "who": ["Marguerite", "Dr Okonkwo", "the night nurse", "Tobias", "my physio Anneliese"],
    "what": ["to bring the blue blanket", "to call me after lunch", "to open the window a little",
             "to read me the football results", "to charge the tablet", "to book the wheelchair taxi"],
    "end": [".", " please.", " tomorrow.", " before six.", ", thanks."],
}


def person_messages(n: int, seed: int = 3) -> list[str]:
    import random

    rng = random.Random(seed)
    return [f"{rng.choice(PERSON['start'])} {rng.choice(PERSON['who'])} {rng.choice(PERSON['what'])}"
            f"{rng.choice(PERSON['end'])}" for _ in range(n)]


def progress(path: str, messages: int, fps: float = 30.0, speed: float = 2.0) -> str:
    """The Progress view after the simulated user wrote ``messages`` messages with a new, adapting profile."""
    import tempfile
    from pathlib import Path

    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.settings import SettingsStore
    from dasher_rnn.ui.app import _application
    from dasher_rnn.ui.window import MainWindow
    from dasher_rnn.zoom.controller import WritingController
    from dasher_rnn.zoom.simulate import target_pointer, wait_for_answers
    from dasher_rnn.zoom.sources import WriterSource

    app = _application()
    with tempfile.TemporaryDirectory() as tmp:
        store = SettingsStore(Path(tmp) / "settings.json")
        prefs = store.load().updated(speed_bps=speed, auto_speed=False, rest_stop_seconds=0.0, tutorial_done=True)
        source = WriterSource(build_writer(WriterConfig(model="hybrid", adapt=True, profile="demo",
                                                        profiles_dir=Path(tmp) / "profiles")), prefs.start_lower_share)
        window = MainWindow(WritingController(source, prefs.controller_config()), store, prefs, start_timer=False)
        try:
            window.show_sized_to_screen()
            app.processEvents()
            c = window.controller
            for i, message in enumerate(person_messages(messages)):
                c.start()
                for _ in range(int(180 * fps)):
                    wait_for_answers(c.zoom)
                    c.frame(target_pointer(c.zoom, c.zoom.context + message), 1.0 / fps)
                    if c.zoom.output == message:
                        break
                c.stop()
                window.messages.new_message()
                print(f"{i + 1}/{messages} {c.history.splitlines()[-1]!r}", flush=True)
            dialog = window.progress.open_progress()
            dialog.setGeometry(window.geometry())
            for _ in range(10):
                app.processEvents()
            save_picture(dialog, path)
            dialog.close()
        finally:
            window.close()
    return path


def control_box(path: str, text: str, action_name: str, speed_bps: float, fps: float = 30.0) -> str:
    """The window with the control box open after ``text``, the pointer on its way to ``action_name``: an action
    (``delete-word``; one in More, ``save``, pictures More open) or ``phrase:TEXT`` (the Phrases box open, on the
    way to that quick phrase of a new profile's)."""
    import os
    import tempfile
    from pathlib import Path

    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.settings import SettingsStore
    from dasher_rnn.ui.app import _application
    from dasher_rnn.ui.window import MainWindow
    from dasher_rnn.zoom.control import ACTION_PATH, CONTROL_BOX, CONTROL_ITEMS, PHRASES_BOX, Action
    from dasher_rnn.zoom.controller import WritingController
    from dasher_rnn.zoom.geometry import MAX_Y
    from dasher_rnn.zoom.simulate import target_pointer, wait_for_answers
    from dasher_rnn.zoom.sources import WriterSource

    phrase = action_name[len("phrase:"):] if action_name.startswith("phrase:") else None
    action = Action.PHRASE if phrase is not None else Action(action_name)
    path_in = ACTION_PATH.get(action, ())
    opened = PHRASES_BOX if phrase is not None else CONTROL_ITEMS[path_in[0]] if len(path_in) > 1 else CONTROL_BOX
    app = _application()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["DASHER_RNN_PROFILES"] = str(Path(tmp) / "profiles")  # a new profile's quick phrases
        store = SettingsStore(Path(tmp) / "settings.json")
        prefs = store.load().updated(control_mode=True, speed_bps=speed_bps, auto_speed=False)
        source = WriterSource(build_writer(WriterConfig(model="rnn", profile="pictured")), prefs.start_lower_share)
        window = MainWindow(WritingController(source, prefs.controller_config()), store, prefs, start_timer=False)
        try:
            window.show_sized_to_screen()
            app.processEvents()
            view, zoom = window.view, window.controller.zoom
            window.writing.toggle_running()
            aiming = False
            for _ in range(int(120 * fps)):
                wait_for_answers(zoom)  # the same picture however busy this machine is
                aiming = aiming or zoom.output == text  # the text is written: on to the control box
                x, y = target_pointer(zoom, zoom.context + text, action if aiming else None, phrase)
                view.set_pointer_override(view.viewport().to_screen(x, y))
                frame = window.writing.tick(1.0 / fps)
                app.processEvents()
                if frame.action is not None:
                    raise RuntimeError(f"{frame.action} happened before the picture")
                control = next((d for d in frame.boxes if d.box.item is opened), None)
                if aiming and control is not None and control.y2 - control.y1 > 0.75 * MAX_Y:
                    break  # open: all its boxes in view
            window.update_status()
            app.processEvents()
            save_picture(window, path)
        finally:
            window.close()
    return path


def language(path: str, code: str, text: str, ppm_train: tuple[str, ...], seconds: float, speed_bps: float,
             scheme: str = "default") -> str:
    """The window part way through writing ``text`` in language ``code`` with PPM over its alphabet."""
    from dasher_rnn.adapt.compose import WriterConfig
    from dasher_rnn.alphabet import load_alphabet
    from dasher_rnn.normalise import normalise

    alphabet = load_alphabet(code)
    text = normalise(text, alphabet)
    outside = sorted({ch for ch in text if ch not in alphabet})
    if outside:
        raise SystemExit(f"the text has characters outside the {code!r} alphabet: {''.join(outside)!r}")
    writer = WriterConfig(model="ppm", alphabet=code, ppm_train=ppm_train)
    return str(take_screenshot(path, text, seconds, scheme, speed_bps, writer=writer))


def switch_writing(prefix: str, modes: list[str], text: str, at: int, speed_bps: float, fps: float = 30.0,
                   seed: int = 0) -> list[str]:
    """The window part way through writing ``text`` with each switch input in ``modes``, steered by the simulated
    switch user, pictured once ``at`` characters of it are written and the mode's marks show what it does next."""
    import tempfile
    from pathlib import Path

    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.settings import SettingsStore
    from dasher_rnn.ui.app import _application
    from dasher_rnn.ui.window import MainWindow
    from dasher_rnn.zoom.controller import WritingController
    from dasher_rnn.zoom.simulate import wait_for_answers
    from dasher_rnn.zoom.sources import WriterSource
    from dasher_rnn.zoom.switch_modes import MenuMode
    from dasher_rnn.zoom.switch_user import SwitchUser, SwitchUserConfig

    app = _application()
    written = []
    for mode in modes:
        with tempfile.TemporaryDirectory() as tmp:
            store = SettingsStore(Path(tmp) / "settings.json")
            prefs = store.load().updated(input=mode, preset="switch", control_mode=True, speed_bps=speed_bps,
                                         auto_speed=False, tutorial_done=True)
            source = WriterSource(build_writer(WriterConfig(model="rnn")), prefs.start_lower_share)
            controller = WritingController(source, prefs.controller_config())
            window = MainWindow(controller, store, prefs, start_timer=False)
            try:
                window.show_sized_to_screen()
                app.processEvents()
                if controller.switch is None or controller.switch.name != mode:
                    raise RuntimeError(f"the window did not start the {mode} input")
                person = SwitchUser(controller, SwitchUserConfig(seed=seed))
                zoom, dt = controller.zoom, 1.0 / fps
                goal = text[: max(1, min(at, len(text)))]
                for _ in range(int(300 * fps)):
                    wait_for_answers(zoom)  # the same picture however busy this machine is
                    now = controller.clock
                    person.decide(now, zoom.context + text, None)
                    person.land(now + dt)
                    frame = window.writing.tick(dt)
                    app.processEvents()
                    if frame.action is not None:
                        raise RuntimeError(f"{mode}: the control box's {frame.action} happened before the picture")
                    mode_now = controller.switch
                    # the moment: the goal written (the text so far right), writing on, and (scanning) the user
                    # about to press for the box highlighted now, the view still between selections
                    due = not isinstance(mode_now, MenuMode) or (not zoom.zooming and any(
                        event.down and event.aim == mode_now.highlighted for event in person.events))
                    if len(zoom.output) >= len(goal) and text.startswith(zoom.output) and controller.running and due:
                        break
                else:
                    raise RuntimeError(f"{mode}: {goal!r} was not written in 300 s (got {zoom.output!r})")
                wait_for_answers(zoom)
                window.writing.tick(0.0)
                window.update_status()
                app.processEvents()
                path = f"{prefix}-{mode}.png"
                save_picture(window, path)
                written.append(path)
                person.finish()
            finally:
                window.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prefix", help="path prefix of the two PNG files")
    parser.add_argument("text", nargs="?", default="hello, how are you", help="the text written in the second picture")
    parser.add_argument("--rest", type=float, default=0.0,
                        help="instead: rest the pointer this many seconds while writing and picture PREFIX.png")
    parser.add_argument("--seconds", type=float, default=12.0, help="simulated seconds of writing (default 12)")
    parser.add_argument("--speed", type=float, default=3.0, help="speed in bits/s (default 3)")
    parser.add_argument("--scheme", default="default", help="colour scheme (default: default)")
    parser.add_argument("--control", metavar="ACTION", default="",
                        help="instead: write the text, then open the control box towards ACTION (e.g. delete-word) "
                             "and picture PREFIX.png")
    parser.add_argument("--tutorial", action="store_true", help="instead: picture the tutorial's three screens")
    parser.add_argument("--tutorial-input", metavar="PRESET", choices=("eye-tracker", "head-mouse"),
                        help="instead: picture the tutorial's practice for this preset at its control-box step, "
                             "resting on the red cross (PREFIX.png)")
    parser.add_argument("--tutorial-gaze-dwell", action="store_true",
                        help="instead: picture the tutorial's first page for a gaze input, the gaze resting on "
                             "Start practising, its dwell fill part way (PREFIX.png)")
    parser.add_argument("--progress", type=int, default=0, metavar="N",
                        help="instead: write N messages with a new profile and picture View > Progress")
    parser.add_argument("--language", metavar="CODE", default="",
                        help="instead: write the text in this language with PPM over its alphabet, picture PREFIX.png")
    parser.add_argument("--ppm-train", metavar="FILE", action="append", default=[],
                        help="with --language: PPM's training text (repeatable)")
    parser.add_argument("--switch", metavar="MODE", action="append", default=[],
                        choices=("one-button", "two-button", "scanning", "step-scan"),
                        help="instead: write the text with this switch input, picture PREFIX-MODE.png (repeatable)")
    parser.add_argument("--at", type=int, default=0,
                        help="with --switch: picture once this many characters are written (default: half the text)")
    args = parser.parse_args()
    if args.switch:
        speed = args.speed if args.speed != parser.get_default("speed") else 1.5  # the switch users' pace
        print("\n".join(switch_writing(args.prefix, args.switch, args.text, args.at or len(args.text) // 2, speed)))
        return
    if args.language:
        print(language(f"{args.prefix}.png", args.language, args.text, tuple(args.ppm_train), args.seconds,
                       args.speed, args.scheme))
        return
    if args.control:
        print(control_box(f"{args.prefix}.png", args.text, args.control, args.speed))
        return
    if args.progress:
        print(progress(f"{args.prefix}.png", args.progress))
        return
    if args.tutorial:
        print("\n".join(tutorial(args.prefix)))
        return
    if args.tutorial_gaze_dwell:
        print(tutorial_gaze_dwell(f"{args.prefix}.png"))
        return
    if args.tutorial_input:
        print(tutorial_dwell(f"{args.prefix}.png", args.tutorial_input))
        return
    if args.rest > 0:
        print(resting_pointer(f"{args.prefix}.png", args.rest))
        return
    print(take_screenshot(f"{args.prefix}-stopped.png", "", 0.0, args.scheme, args.speed, start=False))
    print(take_screenshot(f"{args.prefix}-writing.png", args.text, args.seconds, args.scheme, args.speed))


if __name__ == "__main__":
    main()
