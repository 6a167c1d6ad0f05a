"""The documentation's pictures of the dialogs, on a real (virtual) screen:

    xvfb-run -s "-screen 0 1600x1000x24" python bench/screenshot_dialogs.py docs/

writes PREFIXpreferences.png (the Preferences dialog on its Speed page), PREFIXpreferences-input.png (its Input
page), PREFIXprofile-picker.png and PREFIXhelp.png. Settings, profiles and
documents are throwaway folders.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path


def grab(widget, path: str) -> str:
    from PySide6.QtWidgets import QApplication

    QApplication.processEvents()
    screen = widget.screen()
    picture = widget.grab() if QApplication.platformName() == "offscreen" else screen.grabWindow(widget.winId())
    if not picture.save(path):
        raise OSError(f"could not save {path}")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prefix", help="path prefix of the PNG files (e.g. docs/)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["DASHER_RNN_PROFILES"] = str(Path(tmp) / "profiles")
        os.environ["DASHER_RNN_DOCUMENTS"] = str(Path(tmp) / "Documents" / "dasher-rnn")
        from dasher_rnn.adapt.compose import WriterConfig, build_writer
        from dasher_rnn.adapt.profiles import ProfileStore
        from dasher_rnn.settings import SettingsStore
        from dasher_rnn.ui.app import _application
        from dasher_rnn.ui.help import HelpDialog
        from dasher_rnn.ui.window import MainWindow
        from dasher_rnn.zoom.controller import WritingController
        from dasher_rnn.zoom.sources import WriterSource

        app = _application()
        store = SettingsStore(Path(tmp) / "settings.json")
        prefs = store.load()
        ProfileStore().save("default", {}, {"characters_adapted": 5210})
        ProfileStore().save("evenings", {}, {"characters_adapted": 880})
        source = WriterSource(build_writer(WriterConfig(model="rnn", profile="default")), prefs.start_lower_share)
        window = MainWindow(WritingController(source, prefs.controller_config()), store, prefs, start_timer=False)
        try:
            window.show_sized_to_screen()
            app.processEvents()
            dialog = window.preferences_dialog()
            dialog.show()
            print(grab(dialog, f"{args.prefix}preferences.png"))
            dialog.tabs.setCurrentIndex(1)
            print(grab(dialog, f"{args.prefix}preferences-input.png"))
            dialog.close()
            profiles = window.profile_dialog()
            profiles.show()
            print(grab(profiles, f"{args.prefix}profile-picker.png"))
            profiles.close()
            help_dialog = HelpDialog(window, Path("~/Documents/dasher-rnn"), Path("~/.local/share/dasher-rnn/journal.json"),
                                     Path("~/.local/share/dasher-rnn/profiles"),
                                     Path("~/.config/dasher-rnn/settings.json"))
            help_dialog.show()
            print(grab(help_dialog, f"{args.prefix}help.png"))
            help_dialog.close()
        finally:
            window.close()


if __name__ == "__main__":
    main()
