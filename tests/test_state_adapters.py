"""Sparse dynamic evaluation and LHUC: adapters on the top layer's hidden state, with and without
feeding the modified state into the recurrence, adapted by the same dynamic evaluation."""

import copy

import numpy as np
import pytest
import torch

from dasher_rnn.adapt.dynamic_eval import AdaptConfig, DynamicEvaluator
from dasher_rnn.evaluate import score_language_model
from dasher_rnn.lm.model_io import load_model
from dasher_rnn.lm.rnn_lm import RNNLanguageModel
from dasher_rnn.lm.state_adapter import AdapterSpec

METHODS = [("sparse", True), ("sparse", False), ("lhuc", True), ("lhuc", False)]
TEXT = "We need some tea and a blue blanket before dinner at six, please. Tom forgot my glasses."


@pytest.fixture
def tiny(tiny_model_dir):
    model, alphabet, _ = load_model(tiny_model_dir)
    return model, alphabet


def ids(alphabet, text: str) -> torch.Tensor:
    return torch.tensor([[alphabet.index(ch) for ch in text]])


@pytest.mark.parametrize("kind,feed", METHODS)
def test_a_fresh_adapter_is_the_identity(tiny, kind, feed):
    model, alphabet = tiny
    adapted = copy.deepcopy(model)
    adapted.set_adapter(AdapterSpec(kind, feed, units=10))
    with torch.no_grad():
        want, want_state = model.score(ids(alphabet, TEXT), model.initial_state(1))
        got, got_state = adapted.score(ids(alphabet, TEXT), adapted.initial_state(1))
    assert torch.allclose(got, want, atol=1e-6)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(got_state, want_state, strict=True))


@pytest.mark.parametrize("kind,feed", METHODS)
def test_adapter_step_matches_its_equations(tiny, kind, feed):
    """One step from a message start: without feed the state is the base model's and only the head
    reads h'; with feed h' is the new state."""
    model, alphabet = tiny
    adapted = copy.deepcopy(model)
    adapted.set_adapter(AdapterSpec(kind, feed, units=10))
    with torch.no_grad():
        if kind == "sparse":
            adapted.adapter.m.normal_(0, 0.3)
        else:
            adapted.adapter.r.normal_(0, 1.0)
        symbol = torch.tensor([alphabet.index("W")])
        _, (h, c) = model.step(symbol, model.initial_state(1))
        logp, (h_a, c_a) = adapted.step(symbol, adapted.initial_state(1))
    h_top = h[-1, 0].double().numpy()
    if kind == "sparse":
        m = adapted.adapter.m.detach().double().numpy()
        h_mod = np.concatenate([h_top[:10] + m @ h_top[:10], h_top[10:]])
    else:
        h_mod = h_top * 2 / (1 + np.exp(-adapted.adapter.r.detach().double().numpy()))
    head_w, head_b = (p.detach().double().numpy() for p in (model.head.weight, model.head.bias))
    logits = head_w @ h_mod + head_b
    want_logp = logits - np.log(np.exp(logits - logits.max()).sum()) - logits.max()
    assert np.allclose(logp[0].numpy(), want_logp, atol=1e-5)
    assert torch.allclose(c_a, c, atol=1e-6)
    assert np.allclose(h_a[-1, 0].numpy(), h_mod if feed else h_top, atol=1e-6)


@pytest.mark.parametrize("kind,feed", METHODS)
def test_adapting_a_state_adapter_learns_and_leaves_the_weights_alone(tiny, kind, feed):
    model, alphabet = tiny
    lines = ["Grandma Zofia brings kefir on Thursday."] * 12
    static = score_language_model(RNNLanguageModel(model, alphabet), lines, floor=0)
    from dasher_rnn.adapt.adaptive_lm import AdaptiveRNNLanguageModel

    config = AdaptConfig(method=kind, feed=feed, units=16, eta=1.0)
    adaptive = AdaptiveRNNLanguageModel(copy.deepcopy(model), alphabet, config)
    score = score_language_model(adaptive, lines, floor=0, adaptive=True)
    assert score.bits < 0.95 * static.bits  # a few dozen parameters learn less than every weight (0.8 there)
    ev = adaptive.adapter
    assert ev.names == (["adapter.m"] if kind == "sparse" else ["adapter.r"])
    assert ev.ring[-1].weights.numel() == (16 * 16 if kind == "sparse" else model.config.hidden_size)
    for name, p in model.network_parameters().items():  # the network itself never moved
        assert torch.equal(p, adaptive.model.network_parameters()[name])


@pytest.mark.parametrize("kind,feed", METHODS)
def test_rollback_reproduces_an_adapter_exactly(tiny, kind, feed):
    model, alphabet = tiny
    config = AdaptConfig(method=kind, feed=feed, units=16, eta=1.0, segment=8)
    straight = DynamicEvaluator(copy.deepcopy(model), config, alphabet.index("\n"))
    for s in ids(alphabet, TEXT)[0]:
        straight.commit(int(s))
    edited = DynamicEvaluator(copy.deepcopy(model), config, alphabet.index("\n"))
    for s in ids(alphabet, TEXT[:50] + "XQZJ wrong words typed here")[0]:
        edited.commit(int(s))
    edited.delete_to(37)
    for s in ids(alphabet, TEXT[37:])[0]:
        edited.commit(int(s))
    assert edited.stats.rollbacks == 1 and edited.committed == straight.committed
    assert all(torch.equal(a, b) for a, b in zip(straight.params, edited.params, strict=True))


@pytest.mark.parametrize("feed", [True, False])
def test_the_tree_predictor_serves_published_adapter_weights_exactly(tiny, tiny_model_dir, feed):
    from dasher_rnn.predictor import PredictorService

    model, alphabet = tiny
    config = AdaptConfig(method="lhuc", feed=feed, eta=1.0)
    ev = DynamicEvaluator(copy.deepcopy(model), config, alphabet.index("\n"))
    for s in ids(alphabet, TEXT)[0]:
        ev.commit(int(s))
    assert ev.stats.updates >= 4
    lm = RNNLanguageModel(ev.model, alphabet)

    def reference(text: str) -> np.ndarray:
        lm.reset()
        for ch in text:
            lm.advance(alphabet.index(ch))
        return np.log(lm.probs())

    with PredictorService.from_dir(tiny_model_dir, "torch") as service:
        service.set_weights(copy.deepcopy(ev.model.state_dict()), config.adapter_spec).result(5)
        root = service.root("I need")
        child = service.child(service.child(root, " "), "t")
        for node, text in [(root, "I need"), (child, "I need t")]:
            assert np.allclose(service.distributions([node])[0].log_probs, reference(text), atol=1e-5)


def test_adapter_configs_are_checked():
    with pytest.raises(ValueError, match="unknown adaptation method"):
        AdaptConfig(method="lora")
    with pytest.raises(ValueError, match="adapts with sgd"):
        AdaptConfig(method="lhuc", rule="rms")
    with pytest.raises(ValueError, match="at least one unit"):
        AdaptConfig(method="sparse", units=0)


def test_a_writing_session_with_an_adapter_publishes_it_and_keeps_it_in_the_profile(tiny_model_dir, tmp_path):
    from dasher_rnn.adapt.compose import WriterConfig, build_writer

    config = WriterConfig(model="rnn", model_dir=tiny_model_dir, profile="erin", profiles_dir=tmp_path,
                          adaptation=AdaptConfig(method="sparse", units=16, eta=1.0, segment=5), backend="torch")
    writer = build_writer(config)
    writer.commit("Grandma Zofia brings kefir on Thursday. " * 2)
    writer.flush()
    service, session = writer.service, writer.session
    service.distributions([service.root("")])  # after the queued weight swap
    assert service.backend.model.adapter.spec == config.adaptation.adapter_spec
    assert torch.equal(service.backend.model.adapter.m, session.evaluator.model.adapter.m)
    writer.close()
    assert session.evaluator.model.adapter.m.abs().sum() > 0
    again = build_writer(config)
    assert again.status().notice is None
    assert torch.equal(again.session.evaluator.model.adapter.m, session.evaluator.model.adapter.m)
    again.close(save=False)
