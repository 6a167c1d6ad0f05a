"""An installation without PyTorch (issue 37): a model folder is read into numpy arrays, a static RNN is served and a
plain LSTM with its fused int8 export adapts without torch, and whatever needs torch says which extra installs it.
Here torch is made unimportable (``sys.modules["torch"] = None``); tests/test_install.py runs the commands in an
environment where torch is not installed at all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.extras import TORCH_INSTALL, TorchMissing
from dasher_rnn.lm.model_io import open_model

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def no_torch(monkeypatch) -> None:
    """As an installation without PyTorch: ``import torch`` raises ImportError."""
    monkeypatch.setitem(sys.modules, "torch", None)


def test_the_extra_is_train():
    assert TORCH_INSTALL == "pip install 'dasher-rnn[train]'"


def test_a_model_folder_is_read_into_numpy_and_its_network_needs_torch(tiny_model_dir, no_torch):
    folder = open_model(tiny_model_dir)
    assert all(isinstance(w, np.ndarray) and w.dtype == np.float32 for w in folder.weights.values())
    assert folder.weights["rnn.weight_hh_l0"].shape == (4 * 32, 32)
    with pytest.raises(TorchMissing, match=r"the torch network of .* needs PyTorch.*dasher-rnn\[train\]"):
        folder.network()


def test_a_research_cell_needs_torch_to_be_opened(tiny_model_dir, tmp_path, no_torch):
    import json
    import shutil

    copy = shutil.copytree(tiny_model_dir, tmp_path / "model")
    config = json.loads((copy / "config.json").read_text())
    config["architecture"]["cell"] = "mlstm"
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(TorchMissing, match=r"the mlstm cell needs PyTorch"):
        open_model(copy)


def test_a_static_rnn_is_served_by_onnxruntime(tiny_model_dir, no_torch):
    writer = build_writer(WriterConfig(model="rnn", model_dir=tiny_model_dir, adapt=False))
    try:
        (answer,) = writer.request([writer.root("We need")]).result(60)
        assert writer.service.backend.name.startswith("onnxruntime")
        assert abs(float(np.exp(answer.log_probs).sum()) - 1.0) < 1e-4
    finally:
        writer.close(save=False)


def test_adapting_a_model_without_its_fused_int8_export_says_what_it_needs(tiny_model_dir, no_torch):
    with pytest.raises(TorchMissing) as caught:
        build_writer(WriterConfig(model="rnn", model_dir=tiny_model_dir))  # the tiny model has model.onnx alone
    assert "fused int8 ONNX export" in str(caught.value) and "export-onnx --int8" in str(caught.value)
    assert TORCH_INSTALL in str(caught.value)


def blocked(*argv: str) -> subprocess.CompletedProcess:
    """``dasher-rnn ARGV`` in a process where torch cannot be imported."""
    script = "import sys; sys.modules['torch'] = None\nfrom dasher_rnn.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", script, *argv], cwd=REPO, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("argv, what", [
    (["train", "--out", "nowhere"], "this command needs PyTorch"),
    (["train", "--help"], "this command needs PyTorch"),
    (["export-onnx", "nowhere"], "ONNX export needs PyTorch"),
    (["eval", "--backend", "torch", "README.md"], "the torch network of"),
    (["eval", "--adaptive", "--method", "lhuc", "README.md"], "the lhuc state adapter needs PyTorch"),
    (["adapt", "README.md", "--profile", "x", "--engine", "torch", "--dry-run"], "the torch adaptation engine"),
])
def test_commands_that_need_torch_say_which_extra_installs_it(argv, what):
    done = blocked(*argv)
    assert done.returncode == 2, done.stderr
    assert what in done.stderr and TORCH_INSTALL in done.stderr and "Traceback" not in done.stderr
