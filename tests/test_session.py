import errno
import hashlib
import json
import os
import stat

import numpy as np
import pytest
import torch

from dasher_rnn.adapt import profiles as profiles_module
from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.adapt.dynamic_eval import AdaptConfig
from dasher_rnn.adapt.profile_files import PROFILE_FILE, ProfileError
from dasher_rnn.adapt.profiles import ProfileStore
from dasher_rnn.adapt.session import WritingSession
from dasher_rnn.predictor import PredictorService

CONFIG = AdaptConfig(rule="sgd", eta=0.3, segment=5)
TEXT = "Grandma Zofia brings kefir on Thursday. "


def weights_of(session):
    return torch.cat([p.detach().reshape(-1) for p in session.evaluator.params]).clone()


def test_updates_reach_the_predictor_for_new_nodes_only(tiny_model_dir, tmp_path):
    with PredictorService.from_dir(tiny_model_dir, backend="torch") as service:
        session = WritingSession(tiny_model_dir, CONFIG, service=service)
        root = service.root("Grandma Zo")
        shown = service.distributions([service.child(root, "f")])[0]
        session.commit(TEXT * 3)
        session.flush()
        assert session.stats()["updates"] >= 20
        service.distributions([root])  # the weight swap is queued before this, so it has happened
        again = service.distributions([service.child(root, "f")])[0]
        fresh = service.distributions([service.child(service.child(root, "f"), "i")])[0]
        assert np.array_equal(again.log_probs, shown.log_probs)
        base = PredictorService.from_dir(tiny_model_dir, backend="torch")
        base_root = base.root("Grandma Zof")
        unadapted = base.distributions([base.child(base_root, "i")])[0]
        base.close()
        e = service.alphabet.index("a")
        assert fresh.log_probs[e] > unadapted.log_probs[e] + 0.5  # learned "Zofia"
        session.close()


def test_delete_and_reenter_through_the_session_matches_straight_typing(tiny_model_dir):
    straight = WritingSession(tiny_model_dir, CONFIG)
    straight.commit(TEXT)
    edited = WritingSession(tiny_model_dir, CONFIG)
    edited.commit(TEXT[:23] + "qqqq xx")
    edited.delete(7 + 4)
    edited.commit(TEXT[19:])
    for s in (straight, edited):
        s.flush()
    assert edited.stats()["rollbacks"] == 1
    assert torch.equal(weights_of(straight), weights_of(edited))
    for s in (straight, edited):
        s.close()


def writer(model_dir, profiles, profile):
    return build_writer(WriterConfig(model="rnn", model_dir=model_dir, profile=profile, profiles_dir=profiles,
                                     adaptation=CONFIG, backend="torch"))


def test_profile_round_trip_and_permissions(tiny_model_dir, tmp_path):
    store = ProfileStore(tmp_path / "profiles")
    first = writer(tiny_model_dir, store.folder, "alice")
    first.commit(TEXT * 2)
    first.close()
    folder = store.path("alice")
    info = json.loads((folder / PROFILE_FILE).read_text())
    assert info["characters_adapted"] == len(TEXT * 2) and info["base_model_hash"] and set(info["files"]) == {"rnn"}
    for f in folder.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    again = writer(tiny_model_dir, store.folder, "alice")
    assert again.status().notice is None and again.status().characters_adapted == len(TEXT * 2)
    assert torch.equal(weights_of(again.session), weights_of(first.session))
    assert [row["name"] for row in store.list()] == ["alice"]
    again.close(save=False)


def test_a_kill_while_saving_leaves_the_previous_version(tiny_model_dir, tmp_path, monkeypatch):
    store = ProfileStore(tmp_path / "profiles")
    first = writer(tiny_model_dir, store.folder, "bob")
    first.commit(TEXT)
    first.close()
    saved = weights_of(first.session)

    second = writer(tiny_model_dir, store.folder, "bob")
    second.commit(TEXT * 3)
    second.flush()
    real = profiles_module.atomic_write

    def killed(path, *args, **kwargs):
        if path.name == PROFILE_FILE:
            raise KeyboardInterrupt("killed while writing profile.json")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(profiles_module, "atomic_write", killed)
    with pytest.raises(KeyboardInterrupt):
        second.save()
    monkeypatch.undo()
    second.close(save=False)
    reloaded = writer(tiny_model_dir, store.folder, "bob")
    assert reloaded.status().notice is None
    assert torch.equal(weights_of(reloaded.session), saved)
    reloaded.close()
    assert len(list(store.path("bob").glob("rnn-*.safetensors"))) == 2  # the killed save's file is gone


@pytest.mark.parametrize("damage", ["json", "weights", "base", "nan", "step_scale", "count", "deep"])
def test_a_corrupt_or_mismatched_part_is_set_aside_alone(tiny_model_dir, tmp_path, damage):
    store = ProfileStore(tmp_path / "profiles")
    first = writer(tiny_model_dir, store.folder, "carol")
    first.commit(TEXT)
    first.close()
    folder = store.path("carol")
    info = json.loads((folder / PROFILE_FILE).read_text())
    weights_file = folder / info["files"]["rnn"]["file"]
    if damage == "json":
        (folder / PROFILE_FILE).write_text("{ not json")
    elif damage == "weights":
        weights_file.write_bytes(b"garbage")
    elif damage == "base":
        (folder / PROFILE_FILE).write_text(json.dumps({**info, "base_model_hash": "0" * 64}))
    elif damage == "nan":
        from safetensors.torch import load, save

        tensors = load(weights_file.read_bytes())
        next(iter(tensors.values()))[0] = float("nan")
        data = save(tensors)
        weights_file.write_bytes(data)
        info["files"]["rnn"]["sha256"] = hashlib.sha256(data).hexdigest()
        (folder / PROFILE_FILE).write_text(json.dumps(info))
    elif damage == "step_scale":
        (folder / PROFILE_FILE).write_text(json.dumps({**info, "step_scale": "NaN"}).replace('"NaN"', "NaN"))
    elif damage == "count":
        (folder / PROFILE_FILE).write_text(json.dumps({**info, "characters_adapted": None}))
    else:
        (folder / PROFILE_FILE).write_text("[" * 100_000 + "]" * 100_000)
    (folder / "progress.jsonl").write_text('{"time": "t", "characters": 5, "seconds": 2.0, "bits": 9.0}\n')
    fallback = writer(tiny_model_dir, store.folder, "carol")
    notice = fallback.status().notice
    base = WritingSession(tiny_model_dir, CONFIG)
    if damage in ("step_scale", "count"):  # a bad number is reset; the weights it describes are kept
        assert f"{'step_scale' if damage == 'step_scale' else 'characters_adapted'} starts again" in notice
        assert torch.equal(weights_of(fallback.session), weights_of(first.session))
    elif damage in ("json", "deep"):  # profile.json alone is set aside: the part's newest file is checked by the model
        assert "newest file is tried" in notice and "count of characters learned starts again" in notice
        assert torch.equal(weights_of(fallback.session), weights_of(first.session))
        assert list(folder.glob("profile.json.broken-*")) and not list(folder.glob("*.safetensors.broken-*"))
    else:  # what cannot be used is set aside, alone (the profile's folder stays), and the RNN starts afresh
        assert "could not be used" in notice and "starts afresh" in notice
        assert torch.equal(weights_of(fallback.session), weights_of(base))
        assert list(folder.glob("*.broken-*")) and not list(store.folder.glob("carol.broken-*"))
    assert (folder / "progress.jsonl").is_file()  # the record of progress is never set aside with a part
    assert [row["name"] for row in store.list()] in ([], ["carol"])  # listing never fails
    fallback.close(save=False)
    base.close()


def test_profile_names_and_env_override(tmp_path, monkeypatch):
    monkeypatch.setenv("DASHER_RNN_PROFILES", str(tmp_path / "from-env"))
    store = ProfileStore()
    assert store.folder == tmp_path / "from-env"
    for bad in ("../escape", "alice\n", "", ".hidden", "x" * 65):
        with pytest.raises(ProfileError, match="invalid profile name"):
            store.path(bad)


def test_paused_adaptation_learns_nothing(tiny_model_dir):
    session = WritingSession(tiny_model_dir, CONFIG)
    before = weights_of(session)
    session.pause()
    session.commit(TEXT * 2)
    session.flush()
    assert torch.equal(before, weights_of(session)) and session.stats()["updates"] == 0
    session.resume()
    session.commit(TEXT)
    session.flush()
    assert session.stats()["updates"] > 0
    session.close()


def test_deleting_text_written_while_paused_takes_back_nothing_learned(tiny_model_dir):
    straight = WritingSession(tiny_model_dir, CONFIG)
    straight.commit(TEXT)
    edited = WritingSession(tiny_model_dir, CONFIG)
    edited.commit(TEXT)
    edited.pause()
    edited.commit("typed while paused")
    edited.delete(len("typed while paused"))
    edited.resume()
    for s in (straight, edited):
        s.flush()
    assert edited.stats()["rollbacks"] == 0 and edited.stats()["committed"] == straight.stats()["committed"]
    assert torch.equal(weights_of(straight), weights_of(edited))
    for s in (straight, edited):
        s.close()


def test_non_finite_weights_are_never_kept_or_saved(tiny_model_dir, tmp_path):
    """Whatever makes a step non-finite (here a corrupt step size), the guard takes it back and the
    profile saved afterwards holds finite weights."""
    w = writer(tiny_model_dir, tmp_path, "nan")
    w.session.evaluator.scale = float("nan")
    w.commit(TEXT * 2)
    w.flush()
    assert w.status().guard_events >= 1
    assert torch.isfinite(weights_of(w.session)).all()
    w.close()
    again = writer(tiny_model_dir, tmp_path, "nan")
    assert again.status().notice is None and torch.isfinite(weights_of(again.session)).all()
    again.close(save=False)


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EROFS])
def test_a_save_that_cannot_be_written_keeps_the_previous_version_and_the_writer(tiny_model_dir, tmp_path, monkeypatch,
                                                                                  error):
    store = ProfileStore(tmp_path)
    first = writer(tiny_model_dir, tmp_path, "erin")
    first.commit(TEXT)
    first.close()
    saved = store.load("erin").parts
    second = writer(tiny_model_dir, tmp_path, "erin")
    second.commit(TEXT * 2)
    real = profiles_module.atomic_write

    def failing(*args, **kwargs):
        raise OSError(error, os.strerror(error))

    monkeypatch.setattr(profiles_module, "atomic_write", failing)
    with pytest.raises(ProfileError, match=f"{os.strerror(error)}.*previous version is kept"):
        second.close()
    assert not second.closed and store.load("erin").parts == saved  # nothing closed, the old version intact
    second.commit("and it goes on learning")
    monkeypatch.setattr(profiles_module, "atomic_write", real)
    second.close()  # space again: what was learned meanwhile is saved
    assert store.load("erin").characters_adapted == len(TEXT * 3) + len("and it goes on learning")


def test_message_starts_use_the_adapted_weights_too(tiny_model_dir, tmp_path):
    """The first character of a message is predicted by the adapted head, as every other one (the tree used to
    keep the base model's start distribution for ever)."""
    w = writer(tiny_model_dir, tmp_path, "starts")
    before = w.request([w.root("")]).result()[0].log_probs
    w.commit(TEXT * 3)
    w.flush()
    after = w.request([w.root("")]).result()[0].log_probs
    model = w.session.evaluator.model
    with torch.no_grad():
        expected = model.state_log_probs(model.initial_state(1))[0].numpy()
    assert not np.allclose(after, before, atol=1e-4)
    np.testing.assert_allclose(after, expected, atol=1e-5)
    w.close(save=False)


def test_a_profile_folder_that_cannot_be_read_is_set_aside_and_nothing_leaks(tiny_model_dir, tmp_path):
    """profile.json a directory: it is set aside with a notice (not opened silently as new), closing saves a fresh
    profile, and five such cycles leave no thread behind."""
    import threading

    store = ProfileStore(tmp_path)
    before = threading.active_count()
    for _ in range(5):
        (tmp_path / "odd").mkdir()
        (tmp_path / "odd" / PROFILE_FILE).mkdir()
        w = writer(tiny_model_dir, tmp_path, "odd")
        assert "unreadable" in w.status().notice and "a folder" in w.status().notice
        w.commit(TEXT)
        w.close()
        assert store.load("odd").characters_adapted == len(TEXT)
        assert len(list(tmp_path.glob("odd/profile.json.broken-*"))) == 1
        store.reset("odd")
    assert threading.active_count() <= before


def test_hostile_profile_files_are_refused_clearly(tiny_model_dir, tmp_path):
    store = ProfileStore(tmp_path / "profiles")
    w = writer(tiny_model_dir, store.folder, "frank")
    w.commit(TEXT)
    w.close()
    exported = store.export("frank", tmp_path / "usb")
    info = json.loads((exported / PROFILE_FILE).read_text())
    (exported / PROFILE_FILE).write_text(json.dumps({k: v for k, v in info.items() if k != "base_model_hash"}))
    with pytest.raises(ProfileError, match="no base_model_hash"):
        store.import_(exported, "frank2")
    info["files"]["rnn"]["file"] = "../../etc/passwd"  # a weights file name must be a file in the folder
    (exported / PROFILE_FILE).write_text(json.dumps(info))
    with pytest.raises(ProfileError, match="bad entry"):
        store.import_(exported, "frank3")
    (store.folder / "deep").mkdir()
    (store.folder / "deep" / PROFILE_FILE).write_text("[" * 100_000 + "]" * 100_000)
    rows = {row["name"]: row for row in store.list()}  # one bad profile never breaks the listing
    assert rows["frank"]["characters_adapted"] == len(TEXT) and "unreadable" in rows["deep"]["error"]


def test_the_status_says_when_learning_was_not_kept_or_is_slowed(tiny_model_dir):
    """Issue 48: learning slowed by guard events, and learning on text that made held-out text worse, were silent."""
    rng = np.random.default_rng(4)
    config = AdaptConfig(rule="sgd", eta=0.5, segment=10, heldout_every=10, heldout_symbols=400,
                         margin=float("inf"), spike=float("inf"))
    session = WritingSession(tiny_model_dir, config)
    try:
        session.commit("I need some tea please. Could you open the window? My daughter comes on Sunday. " * 6)
        session.flush()
        assert session.stats()["notice"] is None
        session.commit("".join(rng.choice(list("qzxjvkwy#%&@"), 900)))
        session.flush()
        stats = session.stats()
        assert stats["heldout_events"] >= 1 and "was not kept" in stats["notice"]
        session.evaluator.scale, session.evaluator.stats.guard_events = 1 / 64, 6
        assert "slowed to 1/64" in session.stats()["notice"] and session.stats()["step_scale"] == 1 / 64
    finally:
        session.close()
