"""Recurrent cells beyond the LSTM: each step matches its equations on a hand-sized example, and the
tree predictor (torch and ONNX) and dynamic evaluation work through them unchanged."""

import numpy as np
import pytest
import torch

from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.lm.rnn import MLSTMLayer, MogrifierLSTMLayer


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


@pytest.mark.parametrize("cell", ["mlstm", "mogrifier"])
def test_each_cell_serves_exactly_exports_and_adapts(tmp_path, cell):
    from dasher_rnn.adapt.dynamic_eval import AdaptConfig, DynamicEvaluator
    from dasher_rnn.lm.model_io import load_model, save_model
    from dasher_rnn.lm.onnx_export import export_onnx
    from dasher_rnn.lm.rnn_lm import RNNLanguageModel
    from dasher_rnn.lm.train import new_model
    from dasher_rnn.predictor import PredictorService

    alphabet = load_alphabet("english")
    model = new_model(alphabet, embed=8, hidden=16, layers=2, cell=cell, seed=0, mog_rounds=5, mog_rank=4)
    with torch.no_grad():
        model.h0.normal_(0, 0.3)
    save_model(tmp_path, model, alphabet)
    assert export_onnx(tmp_path) <= 1e-4
    loaded, _, config = load_model(tmp_path)
    assert config["architecture"]["cell"] == cell and config["architecture"].get("mog_rank", 4) == 4
    lm = RNNLanguageModel(loaded, alphabet)

    def reference(text: str) -> np.ndarray:
        lm.reset()
        for ch in text:
            lm.advance(alphabet.index(ch))
        return np.log(lm.probs())

    for backend in ("torch", "onnx"):
        with PredictorService.from_dir(tmp_path, backend) as service:
            root = service.root("Hi")
            nodes = [root, service.child(root, " "), service.child(service.child(root, " "), "t")]
            for node, text in zip(nodes, ["Hi", "Hi ", "Hi t"], strict=True):
                assert np.allclose(service.distributions([node])[0].log_probs, reference(text), atol=1e-4)
    evaluator = DynamicEvaluator(loaded, AdaptConfig(segment=5, eta=0.3), alphabet.index("\n"))
    before = [p.detach().clone() for p in evaluator.params]
    for ch in "hello hello hello":
        evaluator.commit(alphabet.index(ch))
    assert evaluator.stats.updates >= 3
    assert any(not torch.equal(a, b) for a, b in zip(before, evaluator.params, strict=True))
