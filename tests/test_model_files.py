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


def _phrase_bits(backend, ids: np.ndarray) -> float:
    """Bits per character of a phrase, stepped from the learned initial state."""
    log_probs, h, c = backend.initial()
    nats = -float(log_probs[ids[0]])
    for prev, symbol in zip(ids[:-1], ids[1:], strict=True):
        log_probs, h, c = backend.run(np.array([prev]), h, c)
        nats -= float(log_probs[symbol])
    return nats / np.log(2) / len(ids)


def test_shipped_model_loads_and_its_int8_export_agrees():
    from dasher_rnn.lm.model_io import open_model
    from dasher_rnn.predictor.backends import OnnxBackend, TorchBackend

    model, alphabet, config = load_model(DEFAULT_MODEL_DIR)
    assert alphabet.name == "english" and len(alphabet) == 96
    load_msg(DEFAULT_MODEL_DIR, model)
    folder = open_model(DEFAULT_MODEL_DIR)
    ids = np.array([alphabet.index(ch) for ch in "I would like a cup of tea, please."])
    int8, fp32 = OnnxBackend(DEFAULT_MODEL_DIR, config=folder.config), TorchBackend(folder.network())
    assert int8.name == "onnxruntime-cpu-int8"
    assert abs(_phrase_bits(int8, ids) - _phrase_bits(fp32, ids)) < 0.02  # 0.002 when written


SHIPPED = sorted(p for p in DEFAULT_MODEL_DIR.parent.iterdir() if (p / CONFIG_FILE).is_file())


@pytest.mark.parametrize("folder", SHIPPED, ids=lambda p: p.name)
def test_the_shipped_models_carry_the_int8_export_alone(folder):
    """The app serves the int8 export; the float32 one (21 MB for the two models) stays out of the package and of the
    tree a GPU job sends (docs/history/gpu-runbook.md). Asking for it says what is missing and how to make it."""
    from dasher_rnn.lm.model_io import INT8_ONNX_FILE, LANGUAGES_FILE, ONNX_FILE, read_config
    from dasher_rnn.predictor.backends import OnnxBackend, make_backend, swaps_weights

    config = read_config(folder)
    assert set(config["files"]) - {LANGUAGES_FILE} == {WEIGHTS_FILE, MSG_FILE, INT8_ONNX_FILE}
    assert not (folder / ONNX_FILE).exists(), f"{folder / ONNX_FILE}: the shipped folders go without the fp32 export"
    assert swaps_weights(config) and config["onnx"]["root_log_probs"]  # the record of the fp32 check stays
    backend = make_backend(folder)  # auto: onnxruntime, since the folder has an ONNX export (cuda where a GPU is)
    assert backend.name in ("onnxruntime-cpu-int8", "torch-cuda")
    with pytest.raises(ModelFileError, match=r"model\.onnx: this folder has no float32 ONNX export.*export-onnx --fp32"):
        OnnxBackend(folder, int8=False)


ORT_MIN_IR = 9  # the newest ONNX file format that onnxruntime 1.17 (pyproject's floor) reads


@pytest.mark.parametrize("folder", SHIPPED, ids=lambda p: p.name)
def test_the_shipped_int8_exports_are_in_a_format_the_oldest_onnxruntime_allowed_reads(folder):
    """onnxruntime refuses a file format newer than it knows ("Unsupported model IR version: 14, max supported IR
    version: 13" from 1.30, seen on the GPU machine): the exports are written in the oldest format their operators
    need. A ModelProto's first field is its ir_version (tag 0x08, then a varint)."""
    from dasher_rnn.lm.model_io import INT8_ONNX_FILE

    head = (folder / INT8_ONNX_FILE).read_bytes()[:2]
    assert head[0] == 0x08 and head[1] <= ORT_MIN_IR, f"{folder.name}: ONNX IR version {head[1]}"


def test_the_fused_graph_is_written_in_the_oldest_format_its_operators_need():
    onnx = pytest.importorskip("onnx")
    from dasher_rnn.lm.fused_step import fused_initializers, fused_lstm_graph

    rng = np.random.default_rng(0)
    H, V, E = 4, 5, 3
    weights = {"embed.weight": rng.normal(size=(V, E)), "rnn.weight_ih_l0": rng.normal(size=(4 * H, E)),
               "rnn.weight_hh_l0": rng.normal(size=(4 * H, H)), "rnn.bias_ih_l0": rng.normal(size=4 * H),
               "rnn.bias_hh_l0": rng.normal(size=4 * H), "head.weight": rng.normal(size=(V, H)),
               "head.bias": rng.normal(size=V)}
    model = onnx.load_from_string(fused_lstm_graph(fused_initializers(
        {k: v.astype(np.float32) for k, v in weights.items()}, 1), 1, H, V))
    assert model.ir_version == 8 <= ORT_MIN_IR


def _without_fp32(folder):
    """A model folder as the shipped ones are: no model.onnx, config.json rewritten without it."""
    from dasher_rnn.lm.model_io import ONNX_FILE, read_config, write_config

    (folder / ONNX_FILE).unlink()
    write_config(folder, read_config(folder))
    return folder


def test_int8_export_without_a_float32_one_in_the_folder_makes_it_aside(model_copy, tmp_path):
    """export_int8 checks against a float32 export made in a temporary folder, leaves none behind, and the folder is
    served by onnxruntime from the int8 export alone, auto included; with neither export, onnx says what to run."""
    from dasher_rnn.lm.model_io import INT8_ONNX_FILE, read_config
    from dasher_rnn.lm.onnx_export import export_int8
    from dasher_rnn.predictor.backends import OnnxBackend, make_backend

    folder = _without_fp32(model_copy)
    assert make_backend(folder).name == "torch-cpu"  # no ONNX export at all: auto falls back to torch
    with pytest.raises(ModelFileError, match=r"lists no ONNX export.*export-onnx"):
        make_backend(folder, "onnx")
    with pytest.raises(ModelFileError, match=r"no int8 ONNX export.*export-onnx --int8"):
        OnnxBackend(folder, int8=True)
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("I need some water.\nTom can hear the radio now.\n")
    report = export_int8(folder, check_files=[phrases])
    assert sorted(p.name for p in folder.iterdir()) == sorted([CONFIG_FILE, WEIGHTS_FILE, MSG_FILE, INT8_ONNX_FILE])
    config = read_config(folder)
    assert set(config["files"]) == {WEIGHTS_FILE, MSG_FILE, INT8_ONNX_FILE}
    assert config["onnx"]["max_abs_diff_vs_torch"] <= ONNX_TOLERANCE  # the float32 export made aside was checked
    assert set(report["bpc"]) == {"fp32", "int8"} and abs(report["bits_lost_floor"]) <= 0.005
    assert make_backend(folder).name == "onnxruntime-cpu-int8" == make_backend(folder, "onnx").name
    with pytest.raises(ModelFileError, match="no float32 ONNX export"):
        OnnxBackend(folder, int8=False)


def test_export_onnx_command_writes_int8_by_default_and_float32_when_asked(model_copy, tmp_path, capsys):
    from dasher_rnn.cli import main
    from dasher_rnn.lm.model_io import INT8_ONNX_FILE, ONNX_FILE, read_config

    folder = _without_fp32(model_copy)
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("I need some water.\n")
    assert main(["export-onnx", "--check", str(phrases), "--", str(folder)]) == 0
    assert set(read_config(folder)["files"]) == {WEIGHTS_FILE, MSG_FILE, INT8_ONNX_FILE}
    out = capsys.readouterr().out
    assert not (folder / ONNX_FILE).exists() and f"wrote {folder / INT8_ONNX_FILE}" in out
    assert "bits/char" in out and "{" not in out  # its summary; the JSON report only with --json
    assert main(["export-onnx", "--fp32", str(folder)]) == 0  # float32 alone: the int8 export is left as it is
    assert set(read_config(folder)["files"]) == {WEIGHTS_FILE, MSG_FILE, INT8_ONNX_FILE, ONNX_FILE}
    out = capsys.readouterr().out
    assert f"wrote {folder / ONNX_FILE}" in out and INT8_ONNX_FILE not in out
    assert main(["export-onnx", "--check", str(phrases), "--", str(folder)]) == 0  # a folder that has one keeps it
    assert (folder / ONNX_FILE).is_file() and "a folder to ship goes without it" in capsys.readouterr().out


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
    from dasher_rnn.lm.start_models import new_model

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
    from dasher_rnn.lm.start_models import new_model
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
