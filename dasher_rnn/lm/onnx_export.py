"""Export the batched one-step function to ONNX and check it against torch.

Graph: (symbols int64 [B], h float32 [L, B, H], c float32 [L, B, C]) ->
(log_probs float32 [B, V], h_next, c_next), with a dynamic batch axis. The initial state comes
from ``weights.safetensors`` (``h0``, ``c0``), which onnxruntime users read with
``safetensors.numpy``; the root distribution (the initial state's, which for attention cells
needs more than the head) is recorded in config.json as ``onnx.root_log_probs``.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from dasher_rnn.files import atomic_write
from dasher_rnn.lm.model_io import ONNX_FILE, load_model, read_config, write_config
from dasher_rnn.lm.rnn import CharRNN

ONNX_TOLERANCE = 1e-4


class OneStep(nn.Module):
    def __init__(self, model: CharRNN):
        super().__init__()
        self.model = model

    def forward(self, symbols: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
        logp, (h, c) = self.model.step(symbols, (h, c))
        return logp, h, c


def export_onnx(model_dir: str | Path, opset: int = 17) -> float:
    """Write ``model.onnx`` into a model directory, verify it, record its hash; returns the max abs difference."""
    model_dir = Path(model_dir)
    model, _, _ = load_model(model_dir)
    cfg = model.config
    batch = 3
    symbols = torch.arange(batch, dtype=torch.int64) % cfg.vocab_size
    with torch.no_grad():
        h, c = model.initial_state(batch)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            OneStep(model), (symbols, h, c), buffer, dynamo=False, opset_version=opset,
            input_names=["symbols", "h", "c"], output_names=["log_probs", "h_next", "c_next"],
            dynamic_axes={"symbols": {0: "batch"}, "h": {1: "batch"}, "c": {1: "batch"},
                          "log_probs": {0: "batch"}, "h_next": {1: "batch"}, "c_next": {1: "batch"}},
        )
    atomic_write(model_dir / ONNX_FILE, buffer.getvalue())
    diff = verify_onnx(model_dir, model)
    if diff > ONNX_TOLERANCE:
        raise RuntimeError(f"{model_dir / ONNX_FILE}: differs from torch by {diff:.2e} > {ONNX_TOLERANCE}")
    with torch.no_grad():
        root = model.state_log_probs(model.initial_state(1))[0]
    write_config(model_dir, dict(read_config(model_dir), onnx={"opset": opset, "max_abs_diff_vs_torch": float(diff),
                                                               "root_log_probs": root.tolist()}))
    return diff


def verify_onnx(model_dir: str | Path, model: CharRNN, steps: int = 20, batch: int = 17, seed: int = 0) -> float:
    """Run torch and onnxruntime side by side over random symbols; max abs difference of all outputs."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(Path(model_dir) / ONNX_FILE), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed)
    worst = 0.0
    with torch.no_grad():
        h, c = model.initial_state(batch)
        h_ort, c_ort = h.numpy(), c.numpy()
        for _ in range(steps):
            symbols = rng.integers(0, model.config.vocab_size, size=batch)
            logp, (h, c) = model.step(torch.from_numpy(symbols), (h, c))
            logp_ort, h_ort, c_ort = session.run(None, {"symbols": symbols.astype(np.int64), "h": h_ort, "c": c_ort})
            worst = max(worst, float(np.abs(logp.numpy() - logp_ort).max()), float(np.abs(h.numpy() - h_ort).max()),
                        float(np.abs(c.numpy() - c_ort).max()))
    return worst
