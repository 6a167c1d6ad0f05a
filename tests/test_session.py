import json
import stat

import numpy as np
import pytest
import torch

from dasher_rnn.adapt import profiles as profiles_module
from dasher_rnn.adapt.dynamic_eval import AdaptConfig
from dasher_rnn.adapt.profiles import PROFILE_FILE, ProfileError, ProfileStore
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


def test_profile_round_trip_and_permissions(tiny_model_dir, tmp_path):
    store = ProfileStore(tmp_path / "profiles")
    session = WritingSession(tiny_model_dir, CONFIG, profile="alice", store=store)
    session.commit(TEXT * 2)
    session.close(save=True)
    folder = store.path("alice")
    info = json.loads((folder / PROFILE_FILE).read_text())
    assert info["characters_adapted"] == len(TEXT * 2) and info["base_model_hash"]
    for f in folder.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    again = WritingSession(tiny_model_dir, CONFIG, profile="alice", store=store)
    assert again.notice is None and again.characters_adapted == len(TEXT * 2)
    assert torch.equal(weights_of(again), weights_of(session))
    assert [row["name"] for row in store.list()] == ["alice"]
    again.close(save=False)


def test_a_kill_while_saving_leaves_the_previous_version(tiny_model_dir, tmp_path, monkeypatch):
    store = ProfileStore(tmp_path / "profiles")
    first = WritingSession(tiny_model_dir, CONFIG, profile="bob", store=store)
    first.commit(TEXT)
    first.close(save=True)
    saved = weights_of(first)

    second = WritingSession(tiny_model_dir, CONFIG, profile="bob", store=store)
    second.commit(TEXT * 3)
    second.flush()

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed while writing profile.json")

    monkeypatch.setattr(profiles_module, "atomic_write_bytes", killed)
    with pytest.raises(KeyboardInterrupt):
        second._save()
    monkeypatch.undo()
    second.close(save=False)
    reloaded = WritingSession(tiny_model_dir, CONFIG, profile="bob", store=store)
    assert reloaded.notice is None
    assert torch.equal(weights_of(reloaded), saved)
    reloaded.close(save=False)


@pytest.mark.parametrize("damage", ["json", "weights", "base"])
def test_corrupt_or_mismatched_profile_is_set_aside(tiny_model_dir, tmp_path, damage):
    store = ProfileStore(tmp_path / "profiles")
    session = WritingSession(tiny_model_dir, CONFIG, profile="carol", store=store)
    session.commit(TEXT)
    session.close(save=True)
    folder = store.path("carol")
    info = json.loads((folder / PROFILE_FILE).read_text())
    if damage == "json":
        (folder / PROFILE_FILE).write_text("{ not json")
    elif damage == "weights":
        (folder / info["weights_file"]).write_bytes(b"garbage")
    else:
        (folder / PROFILE_FILE).write_text(json.dumps({**info, "base_model_hash": "0" * 64}))
    fallback = WritingSession(tiny_model_dir, CONFIG, profile="carol", store=store)
    assert "could not be used" in fallback.notice and "using the base model" in fallback.notice
    base = WritingSession(tiny_model_dir, CONFIG)
    assert torch.equal(weights_of(fallback), weights_of(base))
    assert any(p.name.startswith("carol.broken-") for p in (tmp_path / "profiles").iterdir())
    for s in (fallback, base):
        s.close(save=False)


def test_profile_names_export_import_and_env_override(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("DASHER_RNN_PROFILES", str(tmp_path / "from-env"))
    store = ProfileStore()
    assert store.folder == tmp_path / "from-env"
    with pytest.raises(ProfileError, match="invalid profile name"):
        store.path("../escape")
    session = WritingSession(tiny_model_dir, CONFIG, profile="dave", store=store)
    session.commit(TEXT)
    session.close(save=True)
    exported = store.export("dave", tmp_path / "backup")
    store.import_(exported, "dave2")
    copy = WritingSession(tiny_model_dir, CONFIG, profile="dave2", store=store)
    assert torch.equal(weights_of(copy), weights_of(session))
    copy.close(save=False)
    store.reset("dave")
    assert [row["name"] for row in store.list()] == ["dave2"]


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
    session.close(save=False)


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
        s.close(save=False)
