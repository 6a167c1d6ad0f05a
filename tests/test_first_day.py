"""The small confusions a first day at the command line and in the window met (issue 51), each as it was met."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QLabel

from dasher_rnn.adapt.profiles import ProfileStore
from dasher_rnn.cli import main
from dasher_rnn.settings import SettingsStore
from dasher_rnn.ui.parts.learning import LearningPart
from dasher_rnn.ui.parts.prefs import PrefsKeeper
from dasher_rnn.ui.preferences_dialog import ProfileDialog
from tests.conftest import writer_source
from tests.test_ui_parts import Notices


def learned_profile(name: str, text: str = "The person's own words, learned as they were written. ") -> None:
    """A profile (in the test's own profiles folder) whose PPM learned ``text``, as the app saves one."""
    writer = writer_source("ppm", profile=name, adapt=True).writer
    writer.commit(text * 5)
    writer.close(save=True)


def test_stats_without_a_profile_draws_the_apps_profile(qapp, capsys):
    """`stats` refused to run without --profile, although the app writes into the profile 'default'."""
    from dasher_rnn.adapt.progress import ProgressLog
    from tests.test_progress import record

    log = ProgressLog.for_profile(ProfileStore(), "default")
    for i in range(3):
        log.record(record(i))
    assert main(["stats", "--size", "400x300"]) == 0
    assert "dasher-rnn-progress-default-" in capsys.readouterr().out


def test_a_language_profile_is_the_same_person(qtbot):
    """The Profile dialog listed default.de (what 'default' writes in German) as if it were another person."""
    from dasher_rnn.adapt.compose import profile_person

    assert profile_person("default.de") == ("default", "de") and profile_person("anna.b") == ("anna.b", "")
    assert profile_person("sam.sr-Latn") == ("sam", "sr-Latn") and profile_person("default") == ("default", "")
    learned_profile("default")
    learned_profile("default.de")
    store = SettingsStore()
    dialog = ProfileDialog(None, PrefsKeeper(store, store.load(), Notices()))
    qtbot.addWidget(dialog)
    assert list(dialog.choice.buttons) == ["default"]
    assert "also de" in dialog.choice.buttons["default"].text()


def test_eval_of_a_profile_says_what_its_ppm_learned(capsys):
    """`eval --profile P` said PPM was "trained on nothing" for a profile whose PPM had learned its person's text."""
    learned_profile("pat")
    phrases = ProfileStore().folder.parent / "phrases.txt"
    phrases.write_text("The person's own words.\n", encoding="utf-8")
    assert main(["eval", "--model", "ppm", "--profile", "pat", str(phrases)]) == 0
    model = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("model:"))
    assert "trained on nothing" not in model and "what profile 'pat' learned" in model


@pytest.mark.parametrize("command", [["app"], ["eval", "phrases.txt"], ["simulate"]])
def test_an_unknown_language_is_said_at_once_in_one_line_with_the_nearest_codes(command, capsys):
    """`--language xx` was caught only by the app's dialog box, after the model had loaded."""
    with pytest.raises(SystemExit) as stopped:
        main([*command, "--language", "xx"])
    assert stopped.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "unknown language 'xx'; nearest: xh" in line and "dasher-rnn languages" in line
    with pytest.raises(SystemExit):
        main(["eval", "phrases.txt", "--language", "German"])
    assert "nearest: de," in capsys.readouterr().err


class _Hybrid:
    """A Writer's face as the Adapt box sees it: a hybrid that learns."""

    can_adapt, model = True, "hybrid"

    def status(self):
        from types import SimpleNamespace

        return SimpleNamespace(learns=("rnn", "ppm", "mixing weights"))

    def set_adapting(self, on: bool) -> None:
        pass


def test_preferences_speak_plainly(qtbot):
    """The Adapt box said "rnn and ppm and mixing weights adapt to you"; the input page's row was titled "Ports"."""
    store = SettingsStore()
    learning = LearningPart(_Hybrid(), PrefsKeeper(store, store.load(), Notices()), Notices())  # type: ignore[arg-type]
    learning.apply_prefs()
    tip = " ".join(learning.adapt_box.toolTip().split())
    assert "the letter predictor, the memory of your words and the balance between the two" in tip
    assert "rnn" not in tip.lower() and "ppm" not in tip.lower()

    from PySide6.QtWidgets import QStatusBar

    from dasher_rnn.adapt.writer import WriterStatus
    from dasher_rnn.ui.parts.status import StatusPart
    from dasher_rnn.zoom.figures import Stats

    status = StatusPart(QStatusBar())  # the status bar said "adapting: ppm and mixing weights"
    status.show_figures(Stats(speed_bps=2.5, bits_per_second=1.0, chars_per_minute=10.0, characters=3, running=True),
                        WriterStatus(model="ppm", description="", profile="anna", adapting=True, can_adapt=True,
                                     learns=("ppm",), backend=None))
    assert status.adaptation_label.text() == "adapting: the memory of your words"

    from tests.test_preferences_switches import input_page
    from tests.test_ui import open_window

    window = open_window(qtbot)
    dialog = input_page(qtbot, window)
    titles = [label.text() for label in dialog.ports_row.findChildren(QLabel)]
    assert "Connections" in titles and "Ports" not in titles
