"""Profiles under faults: learning kept through crashes (background saves), a bad part repaired alone, imports
refused while a profile is held or when the folder is crafted, names that cannot move between machines."""

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.adapt.dynamic_eval import AdaptConfig
from dasher_rnn.adapt.profile_files import MAX_PART_BYTES, PROFILE_FILE, ProfileError
from dasher_rnn.adapt.profiles import ProfileInUse, ProfileStore, check_name
from dasher_rnn.adapt.progress import PROGRESS_FILE
from dasher_rnn.adapt.writer import AUTOSAVE_S, Writer
from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.lm.hybrid import HybridMixer
from dasher_rnn.lm.ppm import PPMModel

CONFIG = AdaptConfig(rule="sgd", eta=0.3, segment=5)
TEXT = "grandma zofia brings kefir on thursday. "
RECORD = '{"time": "2025-01-01T10:00:00", "characters": 12, "seconds": 30.0, "bits": 40.0}\n'
ROOT = Path(__file__).resolve().parent.parent


def hybrid(model_dir, profiles, name, **config):
    return build_writer(WriterConfig(model="hybrid", model_dir=model_dir, profile=name, profiles_dir=profiles,
                                     adaptation=CONFIG, backend="torch", **config))


def weights_of(writer):
    return torch.cat([p.detach().reshape(-1) for p in writer.session.evaluator.params]).clone()


def two_versions(model_dir, profiles, name="ann"):
    """A hybrid profile saved twice (so each part has a previous version) with a record of progress; the Writer's
    RNN weights and PPM bytes as saved each time."""
    w = hybrid(model_dir, profiles, name)
    w.commit(TEXT)
    w.save()
    first = (weights_of(w), w.mixer.to_bytes())
    w.commit(TEXT * 2)
    w.close()
    (Path(profiles) / name / PROGRESS_FILE).write_text(RECORD)
    return first, (weights_of(w), w.mixer.to_bytes())


def rewrite_part(folder: Path, part: str, data: bytes) -> None:
    """Replace a part's file with ``data``, its recorded SHA-256 updated (a file that is whole but holds bad numbers)."""
    info = json.loads((folder / PROFILE_FILE).read_text())
    (folder / info["files"][part]["file"]).write_bytes(data)
    info["files"][part]["sha256"] = hashlib.sha256(data).hexdigest()
    (folder / PROFILE_FILE).write_text(json.dumps(info))


def finishes(fn, *args):
    """``fn(*args)`` run on a thread: its result, or a failure when it has not returned in a minute (a FIFO waited
    on, /dev/zero read to the end), instead of a test that never ends."""
    out = {}

    def run() -> None:
        try:
            out["result"] = fn(*args)
        except BaseException as exc:  # raised again on the test's thread
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), f"{getattr(fn, '__name__', fn)} did not return: it waits on a special file"
    if "error" in out:
        raise out["error"]
    return out.get("result")


# -- defect 2: a crash loses at most the last interval of learning ----------------------------------------------
def test_the_profile_is_saved_in_the_background_at_the_interval_and_at_a_new_message(tmp_path):
    """On the Writer's own clock: nothing before the interval, a save once it passed (by a commit, or by the front
    end's timer after writing stopped), none when nothing new was learned, and one at once at a new message."""
    alphabet = load_alphabet("english")
    now = [0.0]
    store = ProfileStore(tmp_path)
    w = Writer("ppm", alphabet, mixer=HybridMixer(PPMModel(alphabet)), store=store, profile="pat",
               autosave_s=AUTOSAVE_S, clock=lambda: now[0])

    def saved() -> bytes | None:
        for future in list(w._started):  # wait for the saves started so far (written on the saving thread)
            future.result()
        loaded = store.load("pat")
        return None if loaded is None else loaded.parts["ppm"]

    w.commit("hello")
    now[0] = AUTOSAVE_S - 1
    assert w.autosave() is None and saved() is None  # not yet
    now[0] = AUTOSAVE_S + 1
    w.commit(" world")  # the interval passed: this commit starts a save
    assert saved() == w.mixer.to_bytes()
    now[0] += 5
    w.commit(" again")
    assert w.autosave() is None and saved() != w.mixer.to_bytes()  # 5 s since the last save: not yet
    now[0] += AUTOSAVE_S
    assert w.autosave() is not None and saved() == w.mixer.to_bytes()  # the timer, with nothing committed since
    now[0] += 10 * AUTOSAVE_S
    assert w.autosave() is None  # nothing new learned: nothing written
    w.commit(" bye")
    w.new_message()  # at once, whatever the clock says
    assert saved() == w.mixer.to_bytes()
    w.close()


def test_without_autosave_nothing_is_written_until_asked(tmp_path):
    alphabet = load_alphabet("english")
    w = Writer("ppm", alphabet, mixer=HybridMixer(PPMModel(alphabet)), store=ProfileStore(tmp_path), profile="api")
    w.commit("hello")
    w.new_message()
    assert w.autosave() is None and not ProfileStore(tmp_path).exists("api")
    w.close()
    assert ProfileStore(tmp_path).exists("api")


def test_a_background_save_that_fails_says_so_and_the_next_one_writes_everything(tiny_model_dir, tmp_path, monkeypatch):
    from dasher_rnn.adapt import profiles as profiles_module

    w = hybrid(tiny_model_dir, tmp_path, "full", autosave_s=0.0)
    real = profiles_module.atomic_write

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(profiles_module, "atomic_write", full)
    with pytest.raises(ProfileError):
        w.save_in_background().result()
    assert "could not be saved" in w.status().notice
    monkeypatch.setattr(profiles_module, "atomic_write", real)
    w.commit(TEXT)
    w.save_in_background().result()
    assert w.status().notice is None and ProfileStore(tmp_path).load("full").characters_adapted == len(TEXT)
    w.close()


KILLED = """
import sys
from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.adapt.dynamic_eval import AdaptConfig
w = build_writer(WriterConfig(model="hybrid", model_dir=sys.argv[1], profile="victim", profiles_dir=sys.argv[2],
                              backend="torch", adaptation=AdaptConfig(rule="sgd", eta=0.3, segment=5), autosave_s=0.0))
learned = w.status().characters_adapted
print("ready", flush=True)
while True:
    for ch in "grandma zofia brings kefir on thursday. ":
        w.commit(ch)  # every commit may start a background save (autosave_s 0)
    learned += 40
    w.new_message()
    w.save_in_background().result()
    print(learned, flush=True)  # this much is on disk
"""


def test_a_writer_killed_while_learning_keeps_what_it_saved_in_the_background(tiny_model_dir, tmp_path):
    """SIGKILL at random moments of a Writer that learns and saves in the background: the profile always loads,
    whole, and holds at least what the Writer had said was saved (before, a kill kept nothing learned)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rng = random.Random(2)
    store = ProfileStore(tmp_path)
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", KILLED, str(tiny_model_dir), str(tmp_path)],
                                stdout=subprocess.PIPE, env=env, text=True)
        assert proc.stdout.readline().strip() == "ready"
        said = [int(proc.stdout.readline()) for _ in range(rng.randint(1, 4))]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        loaded = store.load("victim")  # strict: raises if anything of it is unusable
        assert loaded.characters_adapted >= said[-1]
    w = hybrid(tiny_model_dir, tmp_path, "victim")
    assert w.status().notice is None and w.status().characters_adapted >= said[-1]
    w.close(save=False)


# -- defect 4: a profile is repaired part by part -----------------------------------------------------------------
def test_a_bad_counter_resets_the_counter_alone(tiny_model_dir, tmp_path):
    """characters_adapted -5: the RNN weights, PPM and the record of progress are kept; the user is told."""
    _, (weights, ppm) = two_versions(tiny_model_dir, tmp_path)
    folder = tmp_path / "ann"
    info = json.loads((folder / PROFILE_FILE).read_text())
    (folder / PROFILE_FILE).write_text(json.dumps({**info, "characters_adapted": -5}))
    w = hybrid(tiny_model_dir, tmp_path, "ann")
    assert "characters_adapted" in w.status().notice and "what was learned is kept" in w.status().notice
    assert torch.equal(weights_of(w), weights) and w.mixer.to_bytes() == ppm
    assert (folder / PROGRESS_FILE).read_text() == RECORD and not list(tmp_path.glob("ann.broken-*"))
    w.close(save=False)


@pytest.mark.parametrize("damage", ["truncated", "negative count", "huge count"])
def test_a_bad_ppm_part_gives_way_to_its_previous_version_and_the_rest_is_kept(tiny_model_dir, tmp_path, damage):
    (_, first_ppm), (weights, _) = two_versions(tiny_model_dir, tmp_path)
    folder = tmp_path / "ann"
    info = json.loads((folder / PROFILE_FILE).read_text())
    current = folder / info["files"]["ppm"]["file"]
    if damage == "truncated":  # a torn copy: no longer its recorded SHA-256
        current.write_bytes(current.read_bytes()[: current.stat().st_size // 2])
    else:  # whole, hash and all, but a count of -5 (or one that would overflow the sums) in it
        from safetensors.numpy import load, save

        arrays = load(current.read_bytes())
        arrays["counts"][0] = -5 if damage == "negative count" else 1 << 60
        rewrite_part(folder, "ppm", save(arrays))
    w = hybrid(tiny_model_dir, tmp_path, "ann")
    notice = w.status().notice
    assert "PPM" in notice and "previous version is used" in notice
    assert w.mixer.to_bytes() == first_ppm  # the previous version of the part
    assert torch.equal(weights_of(w), weights)  # the intact RNN part, as it was
    assert (folder / PROGRESS_FILE).read_text() == RECORD
    assert len(list(folder.glob("ppm-*.broken-*"))) == 1 and not list(tmp_path.glob("ann.broken-*"))
    w.close()
    again = hybrid(tiny_model_dir, tmp_path, "ann")  # the next save is whole: nothing more to repair
    assert again.status().notice is None
    again.close(save=False)


def test_an_rnn_part_of_bad_numbers_gives_way_to_its_previous_version(tiny_model_dir, tmp_path):
    (first_weights, _), (_, ppm) = two_versions(tiny_model_dir, tmp_path)
    folder = tmp_path / "ann"
    from safetensors.torch import load, save

    info = json.loads((folder / PROFILE_FILE).read_text())
    tensors = load((folder / info["files"]["rnn"]["file"]).read_bytes())
    next(iter(tensors.values())).view(-1)[0] = float("inf")
    rewrite_part(folder, "rnn", save(tensors))
    w = hybrid(tiny_model_dir, tmp_path, "ann")
    assert "RNN" in w.status().notice and "previous version is used" in w.status().notice
    assert torch.equal(weights_of(w), first_weights) and w.mixer.to_bytes() == ppm
    w.close(save=False)


@pytest.mark.parametrize("special", ["fifo", "zero", "huge", "missing"])
def test_a_part_that_is_not_a_regular_file_within_bounds_is_set_aside_without_waiting(tiny_model_dir, tmp_path, special):
    if special == "fifo" and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    (first_weights, _), (_, ppm) = two_versions(tiny_model_dir, tmp_path)
    folder = tmp_path / "ann"
    current = folder / json.loads((folder / PROFILE_FILE).read_text())["files"]["rnn"]["file"]
    current.unlink()
    if special == "fifo":
        os.mkfifo(current)
    elif special == "zero":
        current.symlink_to("/dev/zero")
    elif special == "huge":
        with open(current, "wb") as f:  # sparse: nothing is written, nothing may be read
            f.truncate(MAX_PART_BYTES + 1)
    loaded = finishes(ProfileStore(tmp_path).load, "ann", True)
    assert "previous version is used" in loaded.notices[0]
    w = hybrid(tiny_model_dir, tmp_path, "ann")
    assert torch.equal(weights_of(w), first_weights) and w.mixer.to_bytes() == ppm
    w.close(save=False)


@pytest.mark.parametrize("special", ["fifo", "zero", "json", "deep"])
def test_an_unusable_profile_json_is_set_aside_alone_and_every_part_is_kept(tiny_model_dir, tmp_path, special):
    """Issue 48: a profile.json that is not JSON set aside all four parts; each part can be checked on its own."""
    if special == "fifo" and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    _, (weights, ppm) = two_versions(tiny_model_dir, tmp_path)
    folder = tmp_path / "ann"
    parts = sorted(p.name for p in folder.glob("*.safetensors"))
    (folder / PROFILE_FILE).unlink()
    if special == "fifo":
        os.mkfifo(folder / PROFILE_FILE)
    elif special == "zero":
        (folder / PROFILE_FILE).symlink_to("/dev/zero")
    elif special == "deep":
        (folder / PROFILE_FILE).write_text("[" * 1000 + "]" * 1000)
    else:
        (folder / PROFILE_FILE).write_text('{"format": 2, "files": ')
    with pytest.raises(ProfileError, match="unreadable"):  # a strict load (eval, export) refuses, moving nothing
        finishes(ProfileStore(tmp_path).load, "ann")
    loaded = finishes(ProfileStore(tmp_path).load, "ann", True)
    assert set(loaded.parts) == {"rnn", "ppm"} and "newest file is tried" in loaded.notices[0]
    assert (folder / PROGRESS_FILE).read_text() == RECORD and list(folder.glob("profile.json.broken-*"))
    assert sorted(p.name for p in folder.glob("*.safetensors")) == parts  # nothing set aside but profile.json
    w = hybrid(tiny_model_dir, tmp_path, "ann")  # what was learned goes on: the newest weights and counts
    assert torch.equal(weights_of(w), weights) and w.mixer.to_bytes() == ppm
    w.close()
    assert ProfileStore(tmp_path).load("ann").parts  # saved again with a profile.json of its own


def test_one_stray_entry_in_files_passes_over_that_entry_alone(tiny_model_dir, tmp_path):
    """Issue 48: one stray entry in profile.json's ``files`` set aside the whole profile."""
    _, (weights, ppm) = two_versions(tiny_model_dir, tmp_path)
    folder = tmp_path / "ann"
    info = json.loads((folder / PROFILE_FILE).read_text())
    info["files"]["stray"] = {"file": "../elsewhere", "sha256": None}
    (folder / PROFILE_FILE).write_text(json.dumps(info))
    loaded = finishes(ProfileStore(tmp_path).load, "ann", True)
    assert set(loaded.parts) == {"rnn", "ppm"} and "'stray'" in loaded.notices[0] and "passed over" in loaded.notices[0]
    assert not list(folder.glob("*.broken-*"))
    w = hybrid(tiny_model_dir, tmp_path, "ann")
    assert torch.equal(weights_of(w), weights) and w.mixer.to_bytes() == ppm
    w.commit(TEXT)
    w.close()  # the next save drops the stray entry and keeps the previous version, as every save does
    assert ProfileStore(tmp_path).load("ann").parts and len(list(folder.glob("rnn-*.safetensors"))) == 2


def test_a_strict_load_never_repairs(tiny_model_dir, tmp_path):
    two_versions(tiny_model_dir, tmp_path)
    folder = tmp_path / "ann"
    info = json.loads((folder / PROFILE_FILE).read_text())
    (folder / info["files"]["ppm"]["file"]).write_bytes(b"torn")
    before = sorted(p.name for p in folder.iterdir())
    with pytest.raises(ProfileError, match="SHA-256"):
        ProfileStore(tmp_path).load("ann")
    with pytest.raises(ProfileError):
        build_writer(WriterConfig(model="hybrid", model_dir=tiny_model_dir, profile="ann", profiles_dir=tmp_path,
                                  backend="torch", read_only=True))
    assert sorted(p.name for p in folder.iterdir()) == before


# -- defect 6 and 8: profile import ---------------------------------------------------------------------------------
HOLDER = """
import sys
from dasher_rnn.adapt.profiles import ProfileStore
lock = ProfileStore(sys.argv[1]).lock(sys.argv[2])
print("held", flush=True)
sys.stdin.read()
"""


def test_an_import_into_a_profile_another_program_holds_is_refused(tiny_model_dir, tmp_path):
    profiles = tmp_path / "profiles"
    two_versions(tiny_model_dir, profiles)
    store = ProfileStore(profiles)
    exported = store.export("ann", tmp_path / "usb")
    w = hybrid(tiny_model_dir, profiles, "bob")
    w.commit("bob writes this")
    w.close()
    before = store.load("bob").parts
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(profiles), "bob"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ProfileInUse, match="open in another program"):
            store.import_(exported, "bob")
        assert store.load("bob").parts == before  # untouched: the holder's next save would have overwritten it
    finally:
        holder.stdin.close()
        holder.wait()
        holder.stdout.close()
    store.import_(exported, "bob")  # let go: the import goes ahead
    assert store.load("bob").parts == store.load("ann").parts


@pytest.mark.parametrize("craft", ["fifo info", "zero info", "huge part", "zero part", "fifo progress", "huge progress",
                                   "negative count", "step scale", "nan weights", "negative ppm count",
                                   "overflowing ppm count"])
def test_a_crafted_folder_is_refused_cleanly(tiny_model_dir, tmp_path, craft):
    profiles = tmp_path / "profiles"
    two_versions(tiny_model_dir, profiles)
    store = ProfileStore(profiles)
    src = store.export("ann", tmp_path / "usb")
    info = json.loads((src / PROFILE_FILE).read_text())
    rnn, ppm = (src / info["files"][p]["file"] for p in ("rnn", "ppm"))
    if craft.startswith("fifo") and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    target = {"info": src / PROFILE_FILE, "part": rnn, "progress": src / PROGRESS_FILE}.get(craft.split()[-1])
    if craft.startswith(("fifo", "zero", "huge")):
        target.unlink()
    if craft.startswith("fifo"):
        os.mkfifo(target)
    elif craft.startswith("zero"):
        target.symlink_to("/dev/zero")
    elif craft.startswith("huge"):
        with open(target, "wb") as f:
            f.truncate(MAX_PART_BYTES + 1)
    elif craft == "negative count":
        (src / PROFILE_FILE).write_text(json.dumps({**info, "characters_adapted": -5}))
    elif craft == "step scale":
        (src / PROFILE_FILE).write_text(json.dumps({**info, "step_scale": 1e308 * 10}).replace("Infinity", "1e999"))
    elif craft == "nan weights":
        from safetensors.torch import load, save

        tensors = load(rnn.read_bytes())
        next(iter(tensors.values())).view(-1)[0] = float("nan")
        rewrite_part(src, "rnn", save(tensors))
    else:
        from safetensors.numpy import load, save

        arrays = load(ppm.read_bytes())
        arrays["counts"][3] = -5 if craft == "negative ppm count" else 1 << 60
        rewrite_part(src, "ppm", save(arrays))
    with pytest.raises(ProfileError):
        finishes(store.import_, src, "carl")
    assert not store.exists("carl")


@pytest.mark.parametrize("craft", ["linked phrases", "linked progress", "linked part", "no sha256", "wrong shape",
                                   "huge rnn part"])
def test_an_import_checks_everything_before_it_changes_anything(tiny_model_dir, tmp_path, craft):
    """Issue 48: ``profile import`` followed symbolic links out of the folder (outside phrases copied in), accepted a
    500 MB part of the wrong shape and ``sha256: null``, and could fail after replacing the parts."""
    from dasher_rnn.adapt.phrases import PHRASES_FILE
    from dasher_rnn.adapt.session import expected_shapes
    from dasher_rnn.lm.model_io import open_model

    profiles = tmp_path / "profiles"
    two_versions(tiny_model_dir, profiles)
    store = ProfileStore(profiles)
    src = store.export("ann", tmp_path / "usb")
    store.import_(src, "bob")
    before = store.load("bob").parts
    info = json.loads((src / PROFILE_FILE).read_text())
    rnn = src / info["files"]["rnn"]["file"]
    outside = tmp_path / "secret.json"
    if craft.startswith("linked"):
        target = {"phrases": src / PHRASES_FILE, "progress": src / PROGRESS_FILE, "part": rnn}[craft.split()[1]]
        outside.write_bytes(target.read_bytes() if target.exists() else b'{"format": 1, "phrases": [{"text": "x"}]}')
        target.unlink(missing_ok=True)
        target.symlink_to(outside)
    elif craft == "no sha256":
        info["files"]["ppm"]["sha256"] = None
        (src / PROFILE_FILE).write_text(json.dumps(info))
    elif craft == "wrong shape":
        from safetensors.numpy import save

        rewrite_part(src, "rnn", save({"encoder.weight": np.zeros((3, 3), np.float32)}))
    else:
        with open(rnn, "wb") as f:  # sparse: within MAX_PART_BYTES, far beyond what the model's weights take
            f.truncate(400 * 2**20)
        info["files"]["rnn"]["sha256"] = "0" * 64
        (src / PROFILE_FILE).write_text(json.dumps(info))
    folder = open_model(tiny_model_dir)
    with pytest.raises(ProfileError, match="symbolic link|SHA-256|does not fit|bytes"):
        finishes(store.import_, src, "bob", expected_shapes(folder), folder.base_hash)
    assert store.load("bob").parts == before  # nothing changed


def test_an_imported_record_of_progress_keeps_only_its_records(tiny_model_dir, tmp_path):
    profiles = tmp_path / "profiles"
    two_versions(tiny_model_dir, profiles)
    store = ProfileStore(profiles)
    src = store.export("ann", tmp_path / "usb")
    (src / PROGRESS_FILE).write_text(RECORD + '{"characters": 1' + "0" * 400 + ', "seconds": 1, "bits": 1}\n'
                                     + "not json\n" + RECORD)
    store.import_(src, "dot")
    lines = (profiles / "dot" / PROGRESS_FILE).read_text().splitlines()
    assert [json.loads(line)["characters"] for line in lines] == [12, 12]


# -- defect 9: names, and a bad name in the settings -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["CON", "con", "nul.de", "Aux", "COM1", "lpt9", "prof.", "anna..", "PRN.backup"])
def test_names_windows_cannot_hold_are_refused_everywhere(name):
    with pytest.raises(ProfileError, match="invalid profile name"):
        check_name(name)


@pytest.mark.parametrize("code", ["de", "fr", "sr-Latn", "pt_BR", "zh-Hant-TW"])
def test_a_64_character_name_with_a_language_is_still_a_profile(tmp_path, code):
    """Issue 48: a 64-character profile name with ``language: de`` stopped the app at every start (anna...a.de has 67
    characters, past the bound of a name)."""
    from dasher_rnn.adapt.compose import language_profile

    name = language_profile("a" * 64, code)
    assert check_name(name) == name and ProfileStore(tmp_path).path(name).name == name
    with pytest.raises(ProfileError):
        check_name("a" * 65)


@pytest.mark.parametrize("name", ["console", "anna.de", "com10", "nullable", "a.b-c_d"])
def test_names_that_move_between_machines_are_kept(name):
    assert check_name(name) == name


def test_an_invalid_profile_name_in_the_settings_starts_the_app_with_the_default_profile(qapp, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QApplication

    from dasher_rnn.ui import app as app_module
    from dasher_rnn.ui.window import MainWindow

    monkeypatch.setenv("DASHER_RNN_JOURNAL", str(tmp_path / "journal.json"))
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"profile": "CON", "tutorial_done": True}))
    configs, notices = [], []

    def uniform(config):
        configs.append(config)
        return build_writer(WriterConfig(model="uniform"))

    def exec_once(self) -> int:
        window = next(w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible())
        notices.append(window.status.notice)
        window.close()
        return 0

    monkeypatch.setattr(app_module, "build_writer", uniform)
    monkeypatch.setattr(QApplication, "exec", exec_once)
    assert app_module.run_app("uniform", settings_path=settings) == 0
    assert configs[0].profile == "default" and configs[0].autosave_s == AUTOSAVE_S
    assert "'CON'" in notices[0] and "'default'" in notices[0]


def test_the_loaded_ppm_and_weights_are_what_was_saved(tiny_model_dir, tmp_path):
    """The repairing load changes nothing in a whole profile."""
    _, (weights, ppm) = two_versions(tiny_model_dir, tmp_path)
    before = sorted(p.name for p in (tmp_path / "ann").iterdir())
    w = hybrid(tiny_model_dir, tmp_path, "ann")
    assert w.status().notice is None and torch.equal(weights_of(w), weights) and w.mixer.to_bytes() == ppm
    assert sorted(p.name for p in (tmp_path / "ann").iterdir()) == before
    w.close(save=False)
