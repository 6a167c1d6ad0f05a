"""The tests never read or write the person's own profiles, settings, journal or documents (tests/conftest.py gives
every test folders of its own). The old failure: after `make run`, a window closed without saving left unsaved text
in the person's journal.json, and test_dock.py's Xvfb test read it, showed the restore bar and failed.

The proof runs a test in a pytest of its own, in an environment where the person's folders (the XDG folders
platformdirs reads, no DASHER_RNN_* variable set) hold a real journal of unsaved text, a settings file and a
trained profile, as `make run` leaves them: the test sees none of them, and not a byte of them changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dasher_rnn.adapt.profiles import ProfileStore
from dasher_rnn.journal import Journal
from dasher_rnn.settings import Preferences, SettingsStore
from dasher_rnn.ui.documents import documents_folder
from tests.conftest import USER_FOLDERS, writer_source

ROOT = Path(__file__).resolve().parent.parent


def test_a_test_sees_none_of_the_persons_files():
    """What the app reads at start-up, as a test sees it: no unsaved text to offer back (the restore bar), the
    default settings, no profile, an empty documents folder."""
    journal = Journal()
    assert journal.pending is None
    store = SettingsStore()
    assert store.load() == Preferences() and store.notice is None
    assert ProfileStore().list() == []
    assert not documents_folder().exists() or not any(documents_folder().iterdir())
    # and what a test starts inherits them
    out = subprocess.run([sys.executable, "-c", "from dasher_rnn.journal import default_path; print(default_path())"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert Path(out) == journal.path


def _persons_folders(home: Path) -> dict[str, str]:
    """The person's folders under ``home``, filled as `make run` leaves them; the environment that finds them."""
    env = {"XDG_DATA_HOME": str(home / ".local/share"), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_STATE_HOME": str(home / ".local/state"), "XDG_DOCUMENTS_DIR": str(home / "Documents")}
    data, config = home / ".local/share/dasher-rnn", home / ".config/dasher-rnn"
    config.mkdir(parents=True)
    (home / ".config/user-dirs.dirs").write_text(f'XDG_DOCUMENTS_DIR="{home / "Documents"}"\n')
    (home / "Documents/dasher-rnn").mkdir(parents=True)
    (home / "Documents/dasher-rnn/dasher-2026-11-27_10-00-00.txt").write_text("A letter to Zoë.\n", encoding="utf-8")
    journal = Journal(data / "journal.json")
    journal.note("Unsaved text, written in the window and closed without saving: ça va")
    journal.flush()
    SettingsStore(config / "settings.json").save(Preferences().updated(tutorial_done=True, profile="alice"))
    source = writer_source("ppm", profile="alice", profiles_dir=data / "profiles", adapt=True)
    source.writer.commit("The person's own words, learned.")
    source.writer.close(save=True)
    return env


def _snapshot(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()}


def test_a_real_journal_settings_and_profile_of_the_person_change_nothing(tmp_path):
    home = tmp_path / "person"
    env = {k: v for k, v in os.environ.items() if k not in USER_FOLDERS and k != "XDG_DOCUMENTS_DIR"}
    env.update(_persons_folders(home))
    before = _snapshot(home)
    assert {"journal.json", "settings.json"} <= {Path(p).name for p in before}
    assert any("profiles/alice" in p for p in before)
    # the person's folders are really the ones the app finds in this environment
    found = subprocess.run([sys.executable, "-c", "import json; from dasher_rnn.journal import default_path; "
                            "from dasher_rnn.settings import default_path as s; "
                            "from dasher_rnn.adapt.profiles import profiles_dir; "
                            "print(json.dumps([str(default_path()), str(s()), str(profiles_dir())]))"],
                           env=env, capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert json.loads(found) == [str(home / ".local/share/dasher-rnn/journal.json"),
                                 str(home / ".config/dasher-rnn/settings.json"),
                                 str(home / ".local/share/dasher-rnn/profiles")]

    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          f"{Path(__file__).name}::test_a_test_sees_none_of_the_persons_files"],
                         env=env, cwd=ROOT / "tests", capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert _snapshot(home) == before  # nothing read moved, nothing written
