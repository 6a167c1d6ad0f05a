"""Recurrent cells beyond the LSTM: each step matches its equations on a hand-sized example, and the
tree predictor (torch and ONNX) and dynamic evaluation work through them unchanged."""

import numpy as np
import pytest
import torch

from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.lm.cells import ATTENTION_KINDS, MLSTMLayer, MogrifierLSTMLayer, WindowAttentionLSTMLayer


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def assert_one_step(layer, inputs, expected) -> None:
    """One step of ``layer`` from (x, h, c) gives the hand-computed (h, c), and outputs that h."""
    x, h, c = (torch.tensor(a, dtype=torch.float32)[None] for a in inputs)
    out, (h1, c1) = layer(x[:, None], (h, c))
    for got, want in [(h1, expected[0]), (c1, expected[1]), (out[:, 0], expected[0])]:
        assert np.allclose(got[0].detach().numpy(), want, atol=1e-6)


def test_mogrifier_step_matches_its_equations():
    torch.manual_seed(1)
    layer = MogrifierLSTMLayer(input_size=2, hidden_size=3, rounds=3, rank=1)
    x, h, c = np.array([0.5, -1.0]), np.array([0.2, -0.3, 0.4]), np.array([0.1, 0.0, -0.2])
    W = {n: p.detach().double().numpy() for n, p in layer.named_parameters()}
    q1 = W["q.0.1.weight"] @ W["q.0.0.weight"]  # rank-1 factors: (2 x 1) (1 x 3)
    r2 = W["r.0.1.weight"] @ W["r.0.0.weight"]
    q3 = W["q.1.1.weight"] @ W["q.1.0.weight"]
    xm = 2 * sigmoid(q1 @ h) * x  # round 1
    hm = 2 * sigmoid(r2 @ xm) * h  # round 2
    xm = 2 * sigmoid(q3 @ hm) * xm  # round 3
    i, f, g, o = np.split(W["wx.weight"] @ xm + W["wx.bias"] + W["wh.weight"] @ hm, 4)
    c_next = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    h_next = sigmoid(o) * np.tanh(c_next)
    assert_one_step(layer, (x, h, c), (h_next, c_next))


def test_multiplicative_lstm_step_matches_its_equations():
    torch.manual_seed(2)
    layer = MLSTMLayer(input_size=2, hidden_size=3)
    x, h, c = np.array([0.5, -1.0]), np.array([0.2, -0.3, 0.4]), np.array([0.1, 0.0, -0.2])
    W = {n: p.detach().double().numpy() for n, p in layer.named_parameters()}
    m = (W["wmx.weight"] @ x) * (W["wmh.weight"] @ h)
    i, f, g, o = np.split(W["wx.weight"] @ x + W["wx.bias"] + W["wm.weight"] @ m, 4)
    c_next = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    h_next = sigmoid(o) * np.tanh(c_next)
    assert_one_step(layer, (x, h, c), (h_next, c_next))


@pytest.mark.parametrize("kind", ATTENTION_KINDS)
def test_attention_step_matches_its_equations(kind):
    """H = 6 split into key / value / predict parts (or 3 n-gram parts), a window of the last 2 outputs."""
    torch.manual_seed(3)
    layer = WindowAttentionLSTMLayer(input_size=2, hidden_size=6, kind=kind, window=2)
    W = {n: p.detach().double().numpy() for n, p in layer.named_parameters()}
    x, h, cell = np.array([0.5, -1.0]), np.linspace(-0.5, 0.5, 6), np.linspace(0.3, -0.2, 6)
    window = np.array([np.linspace(0.1, 0.6, 6), np.linspace(0.4, -0.4, 6)])  # h_{t-3}, h_{t-2}; h is h_{t-1}
    read = np.array([window[1], h])  # step t reads h_{t-2}, h_{t-1}: this is also the window it leaves
    i, f, g, o = np.split(W["lstm.weight_ih_l0"] @ x + W["lstm.bias_ih_l0"] + W["lstm.weight_hh_l0"] @ h
                          + W["lstm.bias_hh_l0"], 4)
    cell_next = sigmoid(f) * cell + sigmoid(i) * np.tanh(g)
    h_next = sigmoid(o) * np.tanh(cell_next)
    if kind == "rnn-ngram":  # part 1 of h_t, part 2 of h_{t-1}, part 3 of h_{t-2}
        star = np.tanh(W["w_ngram.weight"] @ np.concatenate([h_next[:2], read[1, 2:4], read[0, 4:6]])
                       + W["w_ngram.bias"])
    else:
        key, value, pred = {"attention": (slice(0, 6),) * 3, "kv-attention": (slice(0, 3), slice(3, 6), slice(3, 6)),
                            "kvp-attention": (slice(0, 2), slice(2, 4), slice(4, 6))}[kind]
        m = np.tanh(read[:, key] @ W["w_memory.weight"].T + W["w_query.weight"] @ h_next[key] + W["w_query.bias"])
        scores = m @ W["w_score.weight"][0]
        alpha = np.exp(scores) / np.exp(scores).sum()
        star = np.tanh(W["w_read.weight"] @ (alpha @ read[:, value]) + W["w_out.weight"] @ h_next[pred]
                       + W["w_out.bias"])
    c = np.concatenate([cell, window.reshape(-1)])
    c_next = np.concatenate([cell_next, read.reshape(-1)])
    x_t, h_t, c_t = (torch.tensor(a, dtype=torch.float32)[None] for a in (x, h, c))
    out, (h1, c1) = layer(x_t[:, None], (h_t, c_t))
    for got, want in [(h1, h_next), (c1, c_next), (out[:, 0], star), (layer.state_readout(h1, c1), star)]:
        assert np.allclose(got[0].detach().numpy(), want, atol=1e-6)


@pytest.mark.parametrize("cell", ["mlstm", "mogrifier", *ATTENTION_KINDS])
def test_each_cell_serves_exactly_exports_and_adapts(tmp_path, cell):
    from dasher_rnn.adapt.dynamic_eval import AdaptConfig, DynamicEvaluator
    from dasher_rnn.lm.model_io import load_model, save_model
    from dasher_rnn.lm.onnx_export import export_onnx
    from dasher_rnn.lm.rnn_lm import RNNLanguageModel
    from dasher_rnn.lm.start_models import new_model
    from dasher_rnn.predictor import PredictorService

    alphabet = load_alphabet("english")
    model = new_model(alphabet, embed=8, hidden=16, layers=2, cell=cell, seed=0, mog_rank=4, attn_window=3)
    with torch.no_grad():  # a non-zero start state (for attention cells, a non-zero starting window too)
        model.h0.normal_(0, 0.3)
        model.c0.normal_(0, 0.3)
    save_model(tmp_path, model, alphabet)
    assert export_onnx(tmp_path) <= 1e-4
    loaded, _, config = load_model(tmp_path)
    assert config["architecture"] == loaded.config.to_json() == model.config.to_json()
    lm = RNNLanguageModel(loaded, alphabet)

    def reference(text: str) -> np.ndarray:
        lm.reset()
        for ch in text:
            lm.advance(alphabet.index(ch))
        return np.log(lm.probs())

    for backend in ("torch", "onnx"):
        with PredictorService.from_dir(tmp_path, backend) as service:
            root = service.root("Hi you")  # longer than the attention window: the window slides in the root too
            nodes = [root, service.child(root, " "), service.child(service.child(root, " "), "t")]
            for node, text in zip(nodes, ["Hi you", "Hi you ", "Hi you t"], strict=True):
                assert np.allclose(service.distributions([node])[0].log_probs, reference(text), atol=1e-4)
    evaluator = DynamicEvaluator(loaded, AdaptConfig(segment=5, eta=0.3), alphabet.index("\n"))
    before = [p.detach().clone() for p in evaluator.params]
    for ch in "hello hello hello":
        evaluator.commit(alphabet.index(ch))
    assert evaluator.stats.updates >= 3
    assert any(not torch.equal(a, b) for a, b in zip(before, evaluator.params, strict=True))
