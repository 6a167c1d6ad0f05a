"""Dynamic evaluation without PyTorch (issue 37): the numpy engine's forward and backward of a plain LSTM match
torch's, a stream of commits, deletions and new messages leaves the same weights and distributions in both engines,
profiles cross between them, and what still needs torch says which extra installs it."""

from __future__ import annotations

import ast
import copy
import dataclasses
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.adapt.dynamic_eval import DynamicEvaluator
from dasher_rnn.adapt.evaluation import TORCH_INSTALL, AdaptConfig, TorchMissing, choose_engine
from dasher_rnn.adapt.numpy_eval import NumpyEvaluator
from dasher_rnn.adapt.session import WritingSession
from dasher_rnn.lm import numpy_lstm
from dasher_rnn.lm.model_io import load_msg, open_model
from dasher_rnn.lm.rnn import CharRNN, RNNConfig
from tests.conftest import make_sentences

TOLERANCE = 1e-5
TORCH_FREE = ["dasher_rnn/lm/numpy_lstm.py", "dasher_rnn/lm/adapter_spec.py", "dasher_rnn/adapt/evaluation.py",
              "dasher_rnn/adapt/numpy_eval.py", "dasher_rnn/adapt/session.py", "dasher_rnn/lm/rnn_config.py",
              "dasher_rnn/adapt/corpus_adapt.py", "dasher_rnn/adapt/corpus_numpy.py", "dasher_rnn/extras.py"]


def random_lstm(layers: int = 2, vocab: int = 40, seed: int = 0) -> CharRNN:
    torch.manual_seed(seed)
    model = CharRNN(RNNConfig(vocab_size=vocab, embed_size=12, hidden_size=24, layers=layers))
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.4)
    return model.eval()


def arrays(model: CharRNN) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def torch_gradients(model: CharRNN, symbols: list[int], state):
    """What the torch engine computes for one segment: mean NLL, every network weight's gradient, the next state."""
    model.zero_grad()
    segment = torch.tensor(symbols)
    logp, new_state = model.score(segment[None, :], state)
    loss = F.nll_loss(logp[0], segment)
    loss.backward()
    return loss.item(), {n: p.grad.numpy().copy() for n, p in model.network_parameters().items()}, new_state


def assert_same_segment(model: CharRNN, symbols: list[int], lead: list[int]) -> None:
    """The segment's loss, gradients and next state, from the state after ``lead``, equal torch's."""
    with torch.no_grad():
        state = model.initial_state(1)
        if lead:
            _, state = model(torch.tensor(lead)[None, :], state)
    state = (state[0].detach(), state[1].detach())
    loss, grads, (h, c) = torch_gradients(model, symbols, state)
    state_np = (state[0][:, 0].numpy().copy(), state[1][:, 0].numpy().copy())
    loss_np, grads_np, (h_np, c_np) = numpy_lstm.segment_gradients(arrays(model), symbols, state_np)
    assert list(grads_np) == list(grads) == numpy_lstm.network_names(model.config.layers)
    assert loss_np == pytest.approx(loss, abs=TOLERANCE)
    for name, g in grads.items():
        assert grads_np[name].shape == g.shape and grads_np[name].dtype == np.float32
        assert np.abs(grads_np[name] - g).max() <= TOLERANCE, name
        assert np.abs(g).max() > 10 * TOLERANCE or len(symbols) == 1 or name.startswith("embed"), name  # not vacuous
    assert_same_state((h, c), (h_np, c_np))


def assert_same_state(state, state_np) -> None:
    """h to 1e-5; c, the LSTM's unbounded memory (|c| reaches 20 in the tiny model), to 1e-5 relative."""
    assert np.abs(state_np[0] - state[0][:, 0].detach().numpy()).max() <= TOLERANCE
    np.testing.assert_allclose(state_np[1], state[1][:, 0].detach().numpy(), rtol=TOLERANCE, atol=TOLERANCE)


def ids(alphabet, text: str) -> list[int]:
    return [alphabet.index(ch) for ch in text]


def test_segment_gradients_equal_torchs_on_the_tiny_model(tiny_model_dir):
    folder = open_model(tiny_model_dir)
    model, alphabet = folder.network(), folder.alphabet
    text = "We need some water please.\nTom can hear the radio today."
    assert_same_segment(model, ids(alphabet, text[:20]), [])  # from the learned initial state
    assert_same_segment(model, ids(alphabet, text[27:47]), ids(alphabet, text[:27]))  # from a state mid-stream
    assert_same_segment(model, ids(alphabet, text[:1]), [])  # a segment of one symbol


def test_segment_gradients_equal_torchs_on_a_random_two_layer_lstm():
    model = random_lstm(layers=2)
    rng = random.Random(1)
    assert_same_segment(model, [rng.randrange(40) for _ in range(20)], [rng.randrange(40) for _ in range(7)])
    assert_same_segment(random_lstm(layers=3, seed=2), [rng.randrange(40) for _ in range(20)], [])


def writing_stream(length: int, seed: int = 0) -> list[tuple[str, int]]:
    """A user's writing as (action, argument): commits of symbols, deletions (some reaching back past updates, then
    other text), and new messages, ``length`` committed symbols in all."""
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ.,!?'"
    from dasher_rnn.alphabet import load_alphabet

    english = load_alphabet("english")
    out: list[tuple[str, int]] = []
    committed = 0
    for sentence in make_sentences(400, seed=seed):
        for ch in sentence:
            out.append(("commit", english.index(ch)))
            committed += 1
            if rng.random() < 0.02:  # a mistake: some text, deleted again (past an update, at times), then the sentence
                typo = [english.index(rng.choice(alphabet)) for _ in range(rng.randrange(1, 30))]
                out += [("commit", s) for s in typo]
                out.append(("delete", len(typo) + rng.randrange(0, 3)))
                committed += len(typo)
        out.append(("new_message", 0))
        if committed >= length:
            break
    return out


def replay(evaluator, stream) -> None:
    for action, arg in stream:
        if action == "commit":
            evaluator.commit(arg)
        elif action == "delete":
            evaluator.delete_to(max(0, len(evaluator.committed) - arg))
        else:
            evaluator.end_message()


def assert_same_evaluators(torch_ev: DynamicEvaluator, numpy_ev: NumpyEvaluator, probe: list[int]) -> None:
    assert torch_ev.names == numpy_ev.names
    for name, p, q in zip(torch_ev.names, torch_ev.params, numpy_ev.params, strict=True):
        assert np.abs(p.detach().numpy() - q).max() <= TOLERANCE, name
    assert_same_state(torch_ev.state, numpy_ev.state)
    assert_same_state(torch_ev.base_state, numpy_ev.base_state)
    ts, ns = torch_ev.stats, numpy_ev.stats
    assert (ts.updates, ts.rollbacks, ts.guard_events) == (ns.updates, ns.rollbacks, ns.guard_events)
    assert [e["event"] for e in ts.events] == [e["event"] for e in ns.events]
    assert ns.adapted_bits == pytest.approx(ts.adapted_bits, rel=1e-5)
    assert (torch_ev.offset, torch_ev.committed, torch_ev.scale) == (numpy_ev.offset, numpy_ev.committed, numpy_ev.scale)
    # the next-symbol distributions: after the stream, and after a probe from a message start
    with torch.no_grad():
        after_stream = torch_ev.model.state_log_probs(torch_ev.state)[0].numpy()
        logp, _ = torch_ev.model.score(torch.tensor(probe)[None, :], torch_ev.model.initial_state(1))
    assert_same_distribution(numpy_ev.log_probs(), after_stream)
    weights = numpy_ev.state_dict()
    state = numpy_lstm.initial_state(weights)
    for t, symbol in enumerate(probe):
        assert_same_distribution(numpy_lstm.log_probs(weights, state), logp[0, t].numpy())
        state = numpy_lstm.run(weights, [symbol], state)


def assert_same_distribution(log_probs: np.ndarray, torch_log_probs: np.ndarray) -> None:
    """The probabilities to 1e-5; their logs (down to -15 here, where float32 holds about 6 digits) to 1e-4."""
    assert np.abs(np.exp(log_probs) - np.exp(torch_log_probs)).max() <= TOLERANCE
    assert np.abs(log_probs - torch_log_probs).max() <= 10 * TOLERANCE


STREAM_CONFIGS = {
    "sgd": dict(rule="sgd", eta=0.3),
    "rms with decay": dict(rule="rms", eta=3e-3, lam=0.01),
    "rms-rms with decay": dict(rule="rms-rms", eta=3e-3, lam=0.02),
    "sgd exploding": dict(rule="sgd", eta=40.0, margin=0.2),  # the guard rolls back and damps the step
}


@pytest.mark.parametrize("name", list(STREAM_CONFIGS))
def test_a_2000_character_stream_leaves_the_same_weights_and_distributions(tiny_model_dir, name):
    folder = open_model(tiny_model_dir)
    model, alphabet = folder.network(), folder.alphabet
    config = AdaptConfig(**STREAM_CONFIGS[name])
    msg = load_msg(tiny_model_dir, model)
    torch_ev = DynamicEvaluator(copy.deepcopy(model), config, alphabet.index("\n"), msg)
    numpy_ev = NumpyEvaluator(arrays(model), config, alphabet.index("\n"), folder.msg_arrays())
    stream = writing_stream(2000)
    assert sum(1 for action, _ in stream if action == "commit") >= 2000
    probe = ids(alphabet, "Our dog wants the blue blanket.")
    for start in range(0, len(stream), 700):  # compared along the way, not only at the end
        replay(torch_ev, stream[start : start + 700])
        replay(numpy_ev, stream[start : start + 700])
        assert_same_evaluators(torch_ev, numpy_ev, probe)
    assert numpy_ev.stats.updates >= 80 and numpy_ev.stats.rollbacks >= 3
    if name == "sgd exploding":
        assert numpy_ev.stats.guard_events >= 1
        assert [e["rolled_back_to"] for e in numpy_ev.stats.events if e["event"] == "guard"] == \
            [e["rolled_back_to"] for e in torch_ev.stats.events if e["event"] == "guard"]
    else:
        base = numpy_lstm.network_names(1)
        assert any(np.abs(numpy_ev.weights[n] - arrays(model)[n]).max() > 1e-3 for n in base)  # it learned


def test_a_stream_on_a_random_two_layer_lstm_matches_too():
    model = random_lstm(layers=2, vocab=96)
    config = AdaptConfig(rule="sgd", eta=0.05, lam=0.01, margin=5.0)
    torch_ev = DynamicEvaluator(copy.deepcopy(model), config, 0)
    numpy_ev = NumpyEvaluator(arrays(model), config, 0)
    stream = writing_stream(600, seed=3)
    replay(torch_ev, stream)
    replay(numpy_ev, stream)
    assert numpy_ev.stats.updates >= 25
    assert_same_evaluators(torch_ev, numpy_ev, [5, 17, 3, 0, 42])


def session_writer(model_dir, profiles, engine: str, profile: str = "anna"):
    return build_writer(WriterConfig(model="rnn", model_dir=model_dir, profile=profile, profiles_dir=profiles,
                                     adaptation=AdaptConfig(rule="rms", eta=3e-3, segment=5), backend="torch",
                                     adapt_engine=engine))


def adapted(writer) -> dict[str, np.ndarray]:
    return {k: np.asarray(v, dtype=np.float32) for k, v in writer.session.evaluator.adapted_weights().items()}


def test_the_engines_save_profiles_each_other_loads_and_serve_the_same_predictions(tiny_model_dir, tmp_path):
    text = "Grandma Zofia brings kefir on Thursday. "
    writers = {}
    for engine in ("numpy", "torch"):
        w = session_writer(tiny_model_dir, tmp_path, engine, profile=f"by-{engine}")
        assert w.session.engine == engine
        assert ("in numpy" in w.description) == (engine == "numpy")
        w.commit(text * 3)
        w.delete(4)
        w.commit("day. ")
        w.flush()
        writers[engine] = w
    one, other = adapted(writers["numpy"]), adapted(writers["torch"])
    assert list(one) == list(other)
    assert all(np.abs(one[n] - other[n]).max() <= TOLERANCE for n in one)
    # the predictor serves the adapted weights either way (the numpy engine hands the torch backend arrays)
    shown = {engine: w.request([w.child(w.root("Grandma Zo"), w.alphabet.index("f"))]).result()[0].log_probs
             for engine, w in writers.items()}
    assert np.abs(shown["numpy"] - shown["torch"]).max() <= TOLERANCE
    for w in writers.values():
        w.save()
        w.close()
    # each engine's profile loads in the other, with the same names, shapes and float32 values
    for saved_by, loaded_by in (("numpy", "torch"), ("torch", "numpy")):
        w = session_writer(tiny_model_dir, tmp_path, loaded_by, profile=f"by-{saved_by}")
        got, want = adapted(w), (one if saved_by == "numpy" else other)
        assert {n: v.shape for n, v in got.items()} == {n: v.shape for n, v in want.items()}
        assert all(np.array_equal(got[n], want[n]) for n in want)
        assert w.status().characters_adapted == len(text * 3) + 1
        w.close()


def torch_absent(monkeypatch) -> None:
    """As an installation without PyTorch: ``import torch`` raises ImportError."""
    monkeypatch.setitem(sys.modules, "torch", None)


def test_without_torch_a_plain_lstm_adapts_in_numpy(tiny_model_dir, monkeypatch):
    folder = open_model(tiny_model_dir)
    assert all(isinstance(v, np.ndarray) and v.dtype == np.float32 for v in folder.weights.values())  # no tensors
    text = "We need some water please."
    reference = WritingSession(folder, AdaptConfig(rule="rms", eta=3e-3, segment=5), engine="torch")
    reference.commit(text)
    reference.close()
    torch_absent(monkeypatch)
    assert choose_engine("lstm", AdaptConfig()) == "numpy"
    session = WritingSession(open_model(tiny_model_dir), AdaptConfig(rule="rms", eta=3e-3, segment=5))
    assert session.engine == "numpy"
    session.commit(text)
    session.close()
    assert session.stats()["updates"] == reference.stats()["updates"] >= 5
    assert session.notice is None
    got, want = session.evaluator.adapted_weights(), reference.evaluator.adapted_weights()
    assert all(np.abs(got[n] - want[n].numpy()).max() <= TOLERANCE for n in want)


@pytest.mark.parametrize("cell, config, named", [
    ("mlstm", AdaptConfig(), "adapting the mlstm cell"),
    ("kv-attention", AdaptConfig(), "adapting the kv-attention cell"),
    ("lstm", AdaptConfig(method="sparse"), "the sparse state adapter"),
    ("lstm", AdaptConfig(method="lhuc", feed=False), "the lhuc state adapter"),
])
def test_without_torch_research_cells_and_state_adapters_say_which_extra_installs_it(tiny_model_dir, monkeypatch, cell,
                                                                                      config, named):
    folder = open_model(tiny_model_dir)
    research = dataclasses.replace(folder, config={**folder.config,
                                                   "architecture": {**folder.config["architecture"], "cell": cell}})
    torch_absent(monkeypatch)
    with pytest.raises(TorchMissing) as caught:
        WritingSession(research, config)
    assert named in str(caught.value) and TORCH_INSTALL in str(caught.value)
    assert isinstance(caught.value, ImportError) and isinstance(caught.value, ValueError)  # the CLI reports it plainly
    with pytest.raises(TorchMissing, match=r"the torch adaptation engine needs PyTorch"):
        choose_engine("lstm", AdaptConfig(), "torch")


def test_the_engine_rule():
    assert choose_engine("lstm", AdaptConfig()) == "torch"  # torch installed: torch, unless numpy is asked for
    assert choose_engine("lstm", AdaptConfig(rule="rms-rms"), "numpy") == "numpy"
    assert choose_engine("mogrifier", AdaptConfig()) == "torch"
    with pytest.raises(ValueError, match="plain LSTM's weights only; adapting the mogrifier cell needs torch"):
        choose_engine("mogrifier", AdaptConfig(), "numpy")
    with pytest.raises(ValueError, match="the sparse state adapter needs torch"):
        choose_engine("lstm", AdaptConfig(method="sparse"), "numpy")
    with pytest.raises(ValueError, match="unknown adaptation engine"):
        choose_engine("lstm", AdaptConfig(), "jax")


def test_the_numpy_engine_imports_no_torch():
    root = Path(__file__).resolve().parent.parent
    for path in TORCH_FREE:
        tree = ast.parse((root / path).read_text(encoding="utf-8"))
        allowed = {id(node) for f in ast.walk(tree)
                   if isinstance(f, ast.FunctionDef) and f.name in ("torch_available", "require_torch")
                   for node in ast.walk(f)}  # the places that try whether torch is there
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert id(node) in allowed or not any(n == "torch" or n.startswith("torch.") for n in names), path
    blocked = ("import sys; sys.modules['torch'] = None\n"
               "from dasher_rnn.adapt.session import WritingSession\n"
               "from dasher_rnn.adapt.numpy_eval import NumpyEvaluator\n"
               "from dasher_rnn.adapt.compose import build_writer\n"
               "from dasher_rnn.adapt.profiles import encode_weights, decode_weights\n"
               "from dasher_rnn.adapt.corpus_adapt import adapt_to_corpus, corpus_engine\n"
               "from dasher_rnn.adapt.corpus_numpy import NumpyCorpusEngine\n"
               "from dasher_rnn.lm.model_io import open_model\n"
               "from dasher_rnn.cli import main\n")
    subprocess.run([sys.executable, "-c", blocked], check=True, cwd=root, timeout=120)
