import json
import shutil

import numpy as np
import pytest
import torch

from dasher_rnn.lm.model_io import CONFIG_FILE, MSG_FILE, WEIGHTS_FILE, ModelFileError, load_model, load_msg
from dasher_rnn.lm.onnx_export import ONNX_TOLERANCE, verify_onnx
from dasher_rnn.lm.rnn_lm import RNNLanguageModel
from dasher_rnn.paths import DEFAULT_MODEL_DIR


@pytest.fixture
def model_copy(tiny_model_dir, tmp_path):
    return shutil.copytree(tiny_model_dir, tmp_path / "model")


def test_finished_model_has_everything_the_later_layers_need(tiny_model_dir):
    model, alphabet, config = load_model(tiny_model_dir)
    assert len(alphabet) == 96 and config["architecture"]["hidden_size"] == 32
    assert set(config["files"]) == {WEIGHTS_FILE, MSG_FILE, "model.onnx"}
    msg = load_msg(tiny_model_dir, model)
    assert set(msg) == {n for n, _ in model.named_parameters()} - {"h0", "c0"}
    assert all((v >= 0).all() and v.sum() > 0 for v in msg.values())
    assert config["initial_state"]["learned_state_bpc"] < config["initial_state"]["zero_state_bpc"]
    assert verify_onnx(tiny_model_dir, model) <= ONNX_TOLERANCE


def test_rnn_language_model_follows_the_protocol(tiny_model_dir):
    lm = RNNLanguageModel.from_dir(tiny_model_dir)
    first = lm.probs()
    assert first.sum() == pytest.approx(1.0)
    lm.advance(lm.alphabet.index("I"))
    assert not np.allclose(lm.probs(), first)
    lm.reset()
    assert np.allclose(lm.probs(), first)
    # stepping one symbol at a time equals running the sequence through the network at once
    text = "We need tea"
    ids = torch.tensor([[lm.alphabet.index(c) for c in text]])
    with torch.no_grad():
        full, _ = lm.model(ids, lm.model.initial_state(1))
    lm.reset()
    for i, ch in enumerate(text):
        lm.advance(lm.alphabet.index(ch))
        assert np.allclose(lm.log_probs(), full[0, i].double().numpy(), atol=1e-5)


def test_corrupt_weights_are_reported_with_the_file_name(model_copy):
    weights = model_copy / WEIGHTS_FILE
    data = bytearray(weights.read_bytes())
    data[-10] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match=r"weights.safetensors: SHA-256 .* does not match"):
        load_model(model_copy)


def test_truncated_weights_with_matching_hash_are_reported(model_copy):
    from dasher_rnn.lm.model_io import read_config, write_config

    weights = model_copy / WEIGHTS_FILE
    weights.write_bytes(weights.read_bytes()[:100])
    write_config(model_copy, read_config(model_copy))  # hash now matches the broken file
    with pytest.raises(ModelFileError, match="weights.safetensors: not a readable safetensors file"):
        load_model(model_copy)


def test_config_that_does_not_match_the_weights_is_reported(model_copy):
    path = model_copy / CONFIG_FILE
    config = json.loads(path.read_text())
    config["architecture"]["hidden_size"] = 64
    path.write_text(json.dumps(config))
    with pytest.raises(ModelFileError, match=r"tensor .* has shape .*config expects"):
        load_model(model_copy)
    config["architecture"]["hidden_size"] = 32
    config["normalisation_version"] = 99
    path.write_text(json.dumps(config))
    with pytest.raises(ModelFileError, match="normalisation version 99"):
        load_model(model_copy)
    path.write_text("{")
    with pytest.raises(ModelFileError, match="config.json: not valid JSON"):
        load_model(model_copy)
    with pytest.raises(ModelFileError, match="config.json: file missing"):
        load_model(model_copy / "nowhere")


def test_shipped_model_loads_and_its_onnx_export_agrees():
    model, alphabet, config = load_model(DEFAULT_MODEL_DIR)
    assert alphabet.name == "english" and len(alphabet) == 96
    assert verify_onnx(DEFAULT_MODEL_DIR, model) <= ONNX_TOLERANCE
    load_msg(DEFAULT_MODEL_DIR, model)


def test_whole_message_scoring_equals_stepping(tiny_model_dir):
    from dasher_rnn.evaluate import score_language_model

    class SteppingOnly:
        """The same model without the whole-message fast path."""

        def __init__(self, lm):
            self._lm = lm
            self.alphabet = lm.alphabet

        def __getattr__(self, name):
            if name == "sequence_probs":
                raise AttributeError(name)
            return getattr(self._lm, name)

    lines = ["I need tea now.", "Tom forgot \u4e2d my glasses!", "", "x"]
    lm = RNNLanguageModel.from_dir(tiny_model_dir)
    for floor in (0.0, 0.05):
        fast = score_language_model(lm, lines, floor=floor)
        slow = score_language_model(SteppingOnly(lm), lines, floor=floor)
        assert fast.skipped == slow.skipped == 1
        assert fast.bits == pytest.approx(slow.bits, rel=1e-6)
        assert fast.start_bits[5] == pytest.approx(slow.start_bits[5], rel=1e-6)


def test_multiplicative_lstm_option_trains_and_exports(tmp_path):
    from dasher_rnn.alphabet import load_alphabet
    from dasher_rnn.lm.model_io import save_model
    from dasher_rnn.lm.onnx_export import export_onnx
    from dasher_rnn.lm.train import new_model

    alphabet = load_alphabet("english")
    model = new_model(alphabet, embed=8, hidden=16, layers=2, cell="mlstm", seed=0)
    ids = torch.randint(0, len(alphabet), (3, 12))
    logp, (h, c) = model(ids, model.initial_state(3))
    assert logp.shape == (3, 12, len(alphabet)) and h.shape == c.shape == (2, 3, 16)
    logp.sum().backward()
    assert model.rnn[0].wmh.weight.grad.abs().sum() > 0
    save_model(tmp_path, model, alphabet)
    assert export_onnx(tmp_path) <= ONNX_TOLERANCE


def test_int8_export_is_verified_recorded_and_used_by_the_onnx_backend(model_copy, tmp_path):
    from dasher_rnn.lm.model_io import INT8_ONNX_FILE, read_config
    from dasher_rnn.lm.onnx_export import export_int8
    from dasher_rnn.predictor.backends import OnnxBackend

    phrases = tmp_path / "phrases.txt"
    phrases.write_text("I need some water.\nTom can hear the radio now.\n")
    report = export_int8(model_copy, check_files=[phrases])
    config = read_config(model_copy)
    assert INT8_ONNX_FILE in config["files"] and config["onnx_int8"]["check_chars"] == 45
    assert abs(report["bits_lost_floor"]) <= 0.005 and report["max_abs_log_prob_diff_vs_torch"] < 1.0
    int8, fp32 = OnnxBackend(model_copy), OnnxBackend(model_copy, int8=False)
    assert int8.name.endswith("int8") and not fp32.name.endswith("int8")
    logp, h, c = int8.initial()
    symbols = np.array([3, 40, 41])
    a = int8.step(symbols, np.repeat(h[:, None], 3, 1), np.repeat(c[:, None], 3, 1))[0]
    b = fp32.step(symbols, np.repeat(h[:, None], 3, 1), np.repeat(c[:, None], 3, 1))[0]
    assert np.abs(a - b).max() < 0.2
    with pytest.raises(RuntimeError, match="loses"):
        export_int8(model_copy, check_files=[phrases], max_bits_lost=-1.0)


@pytest.mark.parametrize("layers", [1, 2])
def test_the_fused_int8_step_takes_adapted_weights_without_exporting_again(tmp_path, layers):
    """A plain LSTM's int8 export is the fused step; swapping weights builds a new session on the caller's
    thread, and only the install changes what the backend serves; it then follows the new weights as torch does."""
    from dasher_rnn.alphabet import load_alphabet
    from dasher_rnn.lm.fused_step import FUSED_GRAPH
    from dasher_rnn.lm.model_io import read_config, save_model
    from dasher_rnn.lm.onnx_export import export_int8
    from dasher_rnn.lm.train import new_model
    from dasher_rnn.predictor.backends import OnnxBackend, TorchBackend, swaps_weights

    alphabet = load_alphabet("english")
    model = new_model(alphabet, embed=8, hidden=32, layers=layers, cell="lstm", seed=1)
    save_model(tmp_path, model, alphabet)
    export_int8(tmp_path)
    config = read_config(tmp_path)
    assert config["onnx_int8"]["graph"] == FUSED_GRAPH and swaps_weights(config)
    onnx_backend, torch_backend = OnnxBackend(tmp_path), TorchBackend(model)
    assert onnx_backend.can_swap_weights

    rng = np.random.default_rng(0)
    symbols = rng.integers(0, len(alphabet), 5)
    _, h, c = onnx_backend.initial()
    h, c = np.repeat(h[:, None], 5, 1) + 0.1, np.repeat(c[:, None], 5, 1)
    before = onnx_backend.step(symbols, h, c)[0]
    adapted = {k: v + 0.3 * torch.randn_like(v) for k, v in model.state_dict().items()}
    install = onnx_backend.prepare_weights(adapted)
    assert np.array_equal(onnx_backend.step(symbols, h, c)[0], before)  # nothing changes until the install
    install()
    torch_backend.load_weights(adapted)
    want_logp, want_h, want_c = torch_backend.step(symbols, h, c)
    got_logp, got_h, got_c = onnx_backend.step(symbols, h, c)
    assert np.abs(got_logp - want_logp).max() < 0.1 < np.abs(before - want_logp).max()
    assert np.abs(got_h - want_h).max() < 0.1 and np.abs(got_c - want_c).max() < 0.1
    root, h0, _ = onnx_backend.initial()
    want_root, want_h0, _ = torch_backend.initial()
    assert np.allclose(h0, want_h0) and np.allclose(root, want_root, atol=1e-5)
    # every weight was replaced: exactly what a graph built from the adapted weights computes
    import onnxruntime as ort

    from dasher_rnn.lm.fused_step import fused_initializers, fused_lstm_graph

    numpy_weights = {k: v.numpy() for k, v in adapted.items()}
    fresh = ort.InferenceSession(fused_lstm_graph(fused_initializers(numpy_weights, layers), layers, 32,
                                                  len(alphabet)), providers=["CPUExecutionProvider"])
    want = fresh.run(None, {"symbols": symbols.astype(np.int64), "h": h.astype(np.float32), "c": c})
    for got, expected in zip((got_logp, got_h, got_c), want, strict=True):
        assert np.array_equal(got, expected)


def test_exports_that_cannot_swap_weights_say_so(model_copy):
    from dasher_rnn.lm.state_adapter import AdapterSpec
    from dasher_rnn.predictor.backends import OnnxBackend

    fp32 = OnnxBackend(model_copy, int8=False)
    assert not fp32.can_swap_weights
    with pytest.raises(NotImplementedError, match="fused LSTM int8"):
        fp32.prepare_weights({})
    from dasher_rnn.lm.onnx_export import export_int8

    export_int8(model_copy)
    with pytest.raises(NotImplementedError, match="state adapter"):
        OnnxBackend(model_copy).prepare_weights({}, AdapterSpec("lhuc"))
