"""The RNN + PPM mixture: a proper mixture, learns whom to trust, and PPM learning can be undone exactly."""

from __future__ import annotations

import stat

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.lm.hybrid import HybridLanguageModel
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.lm.rnn_lm import RNNLanguageModel

ALPHABET = load_alphabet("english")


def hybrid(model_dir) -> HybridLanguageModel:
    ppm = PPMModel(ALPHABET)
    ppm.train_text("the cat sat on the mat. ")
    return HybridLanguageModel(RNNLanguageModel.from_dir(model_dir), ppm)


def test_mixture_sums_to_one_and_is_the_weighted_components(tiny_model_dir):
    lm = hybrid(tiny_model_dir)
    for ch in "the ca":
        p = lm.probs()
        w = lm.gate.weight(lm.ppm.prediction_order)
        assert abs(p.sum() - 1) < 1e-9
        np.testing.assert_allclose(p, w * lm.rnn.probs() + (1 - w) * lm.ppm.probs())
        lm.advance(ALPHABET.index(ch))


def test_sequence_probs_match_stepping(tiny_model_dir):
    a, b = hybrid(tiny_model_dir), hybrid(tiny_model_dir)
    symbols = [ALPHABET.index(c) for c in "the mat"]
    stepped = []
    for s in symbols:
        stepped.append(a.probs())
        a.advance(s)
    np.testing.assert_allclose(b.sequence_probs(symbols), np.array(stepped), atol=1e-6)


def test_a_new_name_written_twice_is_predicted_from_ppm(tiny_model_dir):
    lm = hybrid(tiny_model_dir)
    name = [ALPHABET.index(c) for c in "Zyxwort Qvanth"]

    def bits() -> float:
        lm.reset()
        p = lm.sequence_probs(name)
        return float(-np.log2(p[np.arange(len(name)), name]).sum())

    first = bits()
    for _ in range(3):
        lm.reset()
        for s in name:
            lm.learn(s)
    assert bits() < first / 2
    assert lm.gate.weight(lm.ppm.max_order) < 0.85  # long matches: PPM is trusted more than at first (0.9)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=60))
def test_unlearn_restores_ppm_exactly(prefix):
    ppm = PPMModel(ALPHABET)
    ppm.train_text("abcabcab aaab")
    for s in prefix[: len(prefix) // 2]:
        ppm.learn(s)
    probes = [ppm.context_after(t) for t in ["", "a", "ab", "abc", "ba", "cab"]]
    before = [ppm.distribution(65536, c) for c in probes]
    learn_before = ppm._learn
    records = [ppm.learn(s) for s in prefix[len(prefix) // 2 :]]
    for record in reversed(records):
        ppm.unlearn(record)
    assert ppm._learn is learn_before
    for c, dist in zip(probes, before, strict=True):
        np.testing.assert_array_equal(ppm.distribution(65536, c), dist)


def test_hybrid_source_mixes_and_takes_back_deleted_text_exactly(tiny_model_dir):
    from dasher_rnn.adapt.session import WritingSession
    from dasher_rnn.predictor.service import PredictorService
    from dasher_rnn.zoom.sources import HybridSource, ServiceSource

    ppm = PPMModel(ALPHABET)
    ppm.train_text("the cat sat on the mat. ")
    with PredictorService.from_dir(tiny_model_dir, "torch") as service:
        source = HybridSource(ServiceSource(service, WritingSession(tiny_model_dir, service=service)), ppm)
        root = source.start("")
        got = []
        source.request(root, 1.0, got.append)
        service.distributions([root.node])  # the worker has answered by now
        w = source.gate.weight(root.ppm_context.order)
        expected = w * root.p_rnn + (1 - w) * ppm.probs_at(root.ppm_context)
        assert got[0].sum() == 65536 and np.argmax(got[0]) == np.argmax(expected)
        probes = [ppm.context_after(t) for t in ["", "t", "th", "the "]]
        before = ([ppm.distribution(65536, c) for c in probes], source.gate.w.copy())
        context = root
        for ch in "the zzq":
            symbol = ALPHABET.index(ch)
            if context.p_rnn is None:
                source.request(context, 1.0, got.append)
                service.distributions([context.node])
            source.commit(symbol, context)
            context = source.child(context, symbol)
        assert not np.array_equal(source.gate.w, before[1])
        source.uncommit(7)
        assert [list(ppm.distribution(65536, c)) for c in probes] == [list(d) for d in before[0]]
        np.testing.assert_array_equal(source.gate.w, before[1])


def test_ppm_snapshot_round_trips_learned_counts_and_rejects_bad_ones():
    ppm = PPMModel(ALPHABET)
    ppm.train_text("the cat sat on the mat. ")
    for ch in "the zebra":
        ppm.learn(ALPHABET.index(ch))
    twin = PPMModel(ALPHABET)
    twin.restore(ppm.snapshot())
    for text in ["", "the ", "the z", "zeb"]:
        np.testing.assert_array_equal(twin.distribution(65536, twin.context_after(text)),
                                      ppm.distribution(65536, ppm.context_after(text)))
    bad = ppm.snapshot()
    bad["keys"] = bad["keys"][::-1].copy()
    try:
        twin.restore(bad)
        raise AssertionError("unsorted keys were accepted")
    except ValueError as exc:
        assert "sorted" in str(exc)


def test_hybrid_state_persists_with_the_profile_and_a_corrupt_one_is_set_aside(tiny_model_dir, tmp_path):
    from dasher_rnn.adapt.session import WritingSession
    from dasher_rnn.predictor.service import PredictorService
    from dasher_rnn.zoom.sources import HybridSource, ServiceSource

    state = tmp_path / "alice" / "ppm.safetensors"
    with PredictorService.from_dir(tiny_model_dir, "torch") as service:
        source = HybridSource(ServiceSource(service, WritingSession(tiny_model_dir, service=service)),
                              PPMModel(ALPHABET), state_file=state)
        for ch in "Qwyzx Qwyzx":
            source.commit(ALPHABET.index(ch))
        source.gate.w[3] = 0.5
        source.save_state()
        assert stat.S_IMODE(state.stat().st_mode) == 0o600 and not list(state.parent.glob("*.tmp"))
        again = HybridSource(ServiceSource(service), PPMModel(ALPHABET), state_file=state)
        ctx = again.ppm.context_after("Qwy")
        assert again.ppm.probs_at(ctx)[ALPHABET.index("z")] > 0.5 and again.gate.w[3] == 0.5
        state.write_bytes(b"not safetensors")
        fresh = HybridSource(ServiceSource(service), PPMModel(ALPHABET), state_file=state)
        assert fresh.notice and not state.exists() and list(state.parent.glob("ppm.safetensors.bad-*"))


def test_mixer_paused_commits_change_nothing_and_deleting_them_takes_back_nothing_learned():
    from dasher_rnn.lm.hybrid import HybridMixer

    mixer = HybridMixer(PPMModel(ALPHABET))
    for ch in "the cat":
        mixer.commit(ALPHABET.index(ch), 0.5)
    probe = mixer.context_after("the c")
    learned = (mixer.ppm.distribution(65536, probe), mixer.gate.w.copy())
    for ch in " zzq":
        mixer.commit(ALPHABET.index(ch), 0.5, learn=False)
    np.testing.assert_array_equal(mixer.ppm.distribution(65536, probe), learned[0])
    mixer.uncommit(4)
    assert mixer.message == [ALPHABET.index(ch) for ch in "the cat"]
    np.testing.assert_array_equal(mixer.ppm.distribution(65536, probe), learned[0])
    np.testing.assert_array_equal(mixer.gate.w, learned[1])
    mixer.uncommit(7)
    assert mixer.message == [] and mixer.ppm.distribution(65536, probe).tolist() != learned[0].tolist()


def test_the_gate_learns_under_the_context_order_a_prediction_saw():
    """Before PPM has seen "a", a prediction after "a" matches no context (order 0): committing "ab"
    must teach the order-0 weight, not the order-1 weight that learning "a" has just created."""
    from dasher_rnn.lm.hybrid import HybridMixer

    mixer = HybridMixer(PPMModel(ALPHABET, default_context=""))
    before = mixer.gate.w.copy()
    mixer.commit(ALPHABET.index("a"), 0.9)
    mixer.commit(ALPHABET.index("b"), 0.9)
    assert mixer.gate.w[0] != before[0] and mixer.gate.w[1] == before[1]


def test_hybrid_source_without_adaptation_learns_nothing(tiny_model_dir):
    from dasher_rnn.predictor.service import PredictorService
    from dasher_rnn.zoom.sources import HybridSource, ServiceSource

    with PredictorService.from_dir(tiny_model_dir, "torch") as service:
        source = HybridSource(ServiceSource(service), PPMModel(ALPHABET))  # --no-adapt: no writing session
        probe = source.ppm.context_after("Qw")
        before = source.ppm.distribution(65536, probe)
        for ch in "Qwyzx Qwyzx":
            source.commit(ALPHABET.index(ch))
        np.testing.assert_array_equal(source.ppm.distribution(65536, probe), before)
