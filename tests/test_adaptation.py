import copy

import numpy as np
import pytest
import torch

from dasher_rnn.adapt.adaptive_lm import AdaptiveRNNLanguageModel
from dasher_rnn.adapt.dynamic_eval import AdaptConfig, DynamicEvaluator
from dasher_rnn.evaluate import score_language_model
from dasher_rnn.lm.model_io import load_model, load_msg
from dasher_rnn.lm.rnn_lm import RNNLanguageModel

AMENDMENTS = "The Commission can accept Amendments " + ", ".join(
    str(n) for n in [1, 2, 5, 6, 8, 9, 12, 13, 14, 15, 17, 19, 20, 22, 23, 25, 26, 29, 31, 33, 34, 35, 36, 39, 41, 42,
                     44, 47, 48, 50, 51, 53, 56, 57, 58, 60, 61, 63, 64, 67, 70]) + "."


@pytest.fixture
def tiny(tiny_model_dir):
    model, alphabet, _ = load_model(tiny_model_dir)
    return model, alphabet, load_msg(tiny_model_dir, model)


def evaluator(tiny, **config):
    model, alphabet, msg = tiny
    return DynamicEvaluator(copy.deepcopy(model), AdaptConfig(**config), alphabet.index("\n"), msg), alphabet


def test_adaptation_learns_a_users_repeated_words(tiny):
    model, alphabet, msg = tiny
    lines = ["Grandma Zofia brings kefir on Thursday."] * 12
    static = score_language_model(RNNLanguageModel(model, alphabet), lines, floor=0)
    for rule, eta in (("sgd", 0.3), ("rms", 3e-3), ("rms-rms", 3e-3)):
        adaptive = AdaptiveRNNLanguageModel(copy.deepcopy(model), alphabet, AdaptConfig(rule=rule, eta=eta, lam=0.01), msg)
        score = score_language_model(adaptive, lines, floor=0, adaptive=True)
        assert score.bits < 0.8 * static.bits, rule
        assert adaptive.adapter.stats.updates >= 10


def ids(alphabet, text):
    return [alphabet.index(ch) for ch in text]


def test_deleting_past_updates_and_reentering_reproduces_the_weights_exactly(tiny):
    text = "We need some tea and a blue blanket before dinner at six, please. Tom forgot my glasses."
    straight, alphabet = evaluator(tiny, rule="rms", eta=3e-3, segment=8)
    for s in ids(alphabet, text):
        straight.commit(s)

    edited, _ = evaluator(tiny, rule="rms", eta=3e-3, segment=8)
    for s in ids(alphabet, text[:50] + "XQZJ wrong words typed here"):
        edited.commit(s)
    updates_before = edited.stats.updates
    edited.delete_to(37)  # back past several updates, into the middle of a segment
    assert edited.offset <= 37 and edited.stats.rollbacks == 1
    for s in ids(alphabet, text[37:]):
        edited.commit(s)
    assert edited.stats.updates > updates_before
    assert edited.committed == straight.committed
    for a, b in zip(straight.params, edited.params, strict=True):
        assert torch.equal(a, b)
    assert all(torch.equal(a, b) for a, b in zip(straight.state, edited.state, strict=True))


def test_deleting_only_uncommitted_buffer_restores_nothing(tiny):
    ev, alphabet = evaluator(tiny, segment=10)
    for s in ids(alphabet, "hello there you"):
        ev.commit(s)
    weights = ev._flat()
    ev.delete_to(12)
    assert ev.stats.rollbacks == 0 and torch.equal(weights, ev._flat()) and len(ev.committed) == 12
    with pytest.raises(ValueError, match="cannot delete to 99"):
        ev.delete_to(99)


def test_ring_is_bounded_by_memory(tiny):
    model = tiny[0]
    flat_bytes = sum(p.numel() for n, p in model.named_parameters() if n not in ("h0", "c0")) * 4
    ev, alphabet = evaluator(tiny, segment=5, ring_bytes=3 * flat_bytes)
    for s in ids(alphabet, "abcde" * 10):
        ev.commit(s)
    assert ev.stats.updates == 10 and len(ev.ring) == 3
    ev.delete_to(2)  # further back than the ring reaches: oldest checkpoint, and an event says so
    assert ev.stats.events[-1]["event"] == "rollback-beyond-ring"


def test_guard_catches_a_forced_explosion_and_recovers(tiny):
    numbers, english = AMENDMENTS + " ", "I need some tea please. " * 8
    runs = {}
    for name, guard in (("unguarded", dict(margin=float("inf"), spike=float("inf"))), ("guarded", dict(window=2))):
        ev, alphabet = evaluator(tiny, rule="sgd", eta=20.0, segment=10, **guard)
        for s in ids(alphabet, numbers):
            ev.commit(s)
        before = (ev.stats.adapted_bits, ev.stats.base_bits)
        for s in ids(alphabet, english):
            ev.commit(s)
        runs[name] = ev, ev.stats.adapted_bits - before[0], ev.stats.base_bits - before[1]
    unguarded, lost_unguarded, base_english = runs["unguarded"]
    guarded, lost_guarded, _ = runs["guarded"]
    assert unguarded.stats.guard_events == 0 and lost_unguarded > 2 * base_english  # the explosion is real
    assert guarded.stats.guard_events >= 1 and guarded.scale < 1.0
    assert lost_guarded < 0.5 * lost_unguarded
    event = next(e for e in guarded.stats.events if e["event"] == "guard")
    assert event["rolled_back_to"] == "base weights" or event["rolled_back_to"] < event["offset"]
    tail = guarded.committed[-60:]  # recovered: back to about the base model on the English at the end
    lines = [guarded.model, unguarded.base_model]
    bits = [score_language_model(RNNLanguageModel(m, tiny[1]), [tiny[1].decode(tail)], floor=0).bits for m in lines]
    assert bits[0] < 1.15 * bits[1]


def test_guard_rolls_back_on_a_non_finite_loss(tiny, monkeypatch):
    ev, alphabet = evaluator(tiny, rule="sgd", eta=0.1, segment=5)
    for s in ids(alphabet, "hello there"):
        ev.commit(s)
    real = ev._segment_loss

    def poisoned(model, state, segment):
        loss, new_state = real(model, state, segment)
        return loss * float("nan") if model is ev.model else loss, new_state

    monkeypatch.setattr(ev, "_segment_loss", poisoned)
    for s in ids(alphabet, " you"):
        ev.commit(s)
    assert ev.stats.guard_events == 1 and "non-finite" in ev.stats.events[-1]["reason"]
    assert torch.isfinite(ev._flat()).all()
    target = ev.stats.events[-1]["rolled_back_to"]
    base = torch.cat([b.reshape(-1) for b in ev.base])
    assert (target == "base weights" and torch.equal(ev._flat(), base)) or target < ev.stats.events[-1]["offset"]
    monkeypatch.setattr(ev, "_segment_loss", real)
    for s in ids(alphabet, " and me too"):
        ev.commit(s)
    assert torch.isfinite(ev._flat()).all() and ev.stats.guard_events == 1


def test_rms_rules_need_msg_and_configs_are_checked(tiny):
    model, alphabet, _ = tiny
    with pytest.raises(ValueError, match="mean squared gradients"):
        DynamicEvaluator(copy.deepcopy(model), AdaptConfig(rule="rms"), alphabet.index("\n"), None)
    with pytest.raises(ValueError, match="unknown rule"):
        AdaptConfig(rule="adam")
    with pytest.raises(ValueError, match="segment"):
        AdaptConfig(segment=0)


def test_eval_command_runs_the_adaptive_rnn(tiny_model_dir, tmp_path, capsys):
    import json

    from dasher_rnn.cli import main

    phrases = tmp_path / "p.txt"
    phrases.write_text("I need tea.\n" * 8)
    assert main(["eval", "--model-dir", str(tiny_model_dir), str(phrases), "--json"]) == 0
    static = json.loads(capsys.readouterr().out)
    assert main(["eval", "--model-dir", str(tiny_model_dir), str(phrases), "--adaptive", "--rule", "sgd",
                 "--eta", "0.3", "--segment", "5", "--json"]) == 0
    adaptive = json.loads(capsys.readouterr().out)
    assert adaptive["settings"]["adaptive"] and not static["settings"]["adaptive"]
    assert adaptive["overall"]["bits_per_char"] < static["overall"]["bits_per_char"]
    assert np.isfinite(adaptive["overall"]["bits_per_char"])


# -- issue 48: learning that recovers ---------------------------------------------------------------------------------
def test_a_guard_events_damping_wears_off_as_normal_learning_goes_on(tiny):
    """Issue 48: each guard event halved the saved step scale for good (six bursts: 0.5 -> 1/64, silently)."""
    assert AdaptConfig().recovery > 0  # on by default
    ev, alphabet = evaluator(tiny, rule="sgd", eta=0.03, segment=10, recovery=5, heldout_every=0)
    for _ in range(6):  # as an update that fails does: its checkpoint, then the guard
        ev.ring.append(ev._checkpoint())
        ev._guard("a burst of one repeated character")
    assert ev.scale == pytest.approx(1 / 64)
    english = ids(alphabet, "I need some tea please. Could you open the window? " * 20)
    scales = []
    for s in english:
        if ev.commit(s):
            scales.append(ev.scale)
    assert scales[0] == pytest.approx(1 / 64) and scales[-1] == 1.0 and ev.stats.guard_events == 6
    assert scales == sorted(scales)  # it wears off step by step, never jumps back down without a guard event


def test_text_that_makes_held_out_text_worse_is_not_kept(tiny):
    """Issue 48: random text raised held-out bits by 0.33 with no guard event, and that was saved."""
    rng = np.random.default_rng(4)
    english = "I need some tea please. Could you open the window? My daughter comes on Sunday. "
    for name, burst in (("english", english * 12), ("random", "".join(rng.choice(list("qzxjvkwy#%&@"), 900)))):
        ev, alphabet = evaluator(tiny, rule="sgd", eta=0.5, segment=10, heldout_every=10, heldout_symbols=400,
                                 margin=float("inf"), spike=float("inf"))  # the guard off: the check alone
        for s in ids(alphabet, english * 6):
            ev.commit(s)
        ev._check_heldout()
        kept = ev._flat().clone()
        for s in ids(alphabet, burst):
            ev.commit(s)
        if name == "english":
            assert ev.stats.heldout_events == 0 and not torch.equal(ev._flat(), kept)  # learning goes on
        else:
            event = next(e for e in ev.stats.events if e["event"] == "held-out")
            assert ev.stats.heldout_events >= 1 and event["worse_by"] > ev.config.heldout_margin
            assert ev.stats.guard_events == 0  # the guard could not see it
