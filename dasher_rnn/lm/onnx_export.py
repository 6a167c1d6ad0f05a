"""Export the batched one-step function to ONNX and check it against torch.

Graph: (symbols int64 [B], h float32 [L, B, H], c float32 [L, B, C]) ->
(log_probs float32 [B, V], h_next, c_next), with a dynamic batch axis. The initial state comes
from ``weights.safetensors`` (``h0``, ``c0``), which onnxruntime users read with
``safetensors.numpy``; the root distribution (the initial state's, which for attention cells
needs more than the head) is recorded in config.json as ``onnx.root_log_probs``.

What a model folder carries: the int8 export (``export_int8``, ``model.int8.onnx``), which onnxruntime serves. The
float32 export (``export_onnx``, ``model.onnx``) is the int8 one's yardstick (and, for cells other than a plain
LSTM, its source); ``export_int8`` makes it in a temporary folder when the model folder has none, so the shipped
folders go without it. ``train`` and ``export-onnx --fp32`` write it into the folder.
"""

from __future__ import annotations

import io
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from dasher_rnn.files import atomic_write
from dasher_rnn.lm.fused_step import FUSED_GRAPH, fused_initializers, fused_lstm_graph
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


def export_onnx(model_dir: str | Path, opset: int = 17, path: str | Path | None = None) -> float:
    """Write the float32 export into a model directory (``model.onnx``), verify it against torch, record its hash and
    in config.json's ``onnx`` the check and the root distribution; returns the max abs difference. ``path``: write it
    there instead (a scratch file: the folder then does not carry it, and config.json lists no hash for it)."""
    model_dir = Path(model_dir)
    target = model_dir / ONNX_FILE if path is None else Path(path)
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
            # the TorchScript exporter (dynamo=False) writes to a file object too; the stub names paths only
            OneStep(model), (symbols, h, c), buffer, dynamo=False, opset_version=opset,  # type: ignore[arg-type]
            input_names=["symbols", "h", "c"], output_names=["log_probs", "h_next", "c_next"],
            dynamic_axes={"symbols": {0: "batch"}, "h": {1: "batch"}, "c": {1: "batch"},
                          "log_probs": {0: "batch"}, "h_next": {1: "batch"}, "c_next": {1: "batch"}},
        )
    atomic_write(target, buffer.getvalue())
    diff = verify_onnx(model_dir, model, path=target)
    if diff > ONNX_TOLERANCE:
        raise RuntimeError(f"{target}: differs from torch by {diff:.2e} > {ONNX_TOLERANCE}")
    with torch.no_grad():
        root = model.state_log_probs(model.initial_state(1))[0]
    write_config(model_dir, dict(read_config(model_dir), onnx={"opset": opset, "max_abs_diff_vs_torch": float(diff),
                                                               "root_log_probs": root.tolist()}))
    return diff


def verify_onnx(model_dir: str | Path, model: CharRNN, steps: int = 20, batch: int = 17, seed: int = 0,
                path: str | Path | None = None) -> float:
    """Run torch and onnxruntime (the folder's ``model.onnx``, or the export at ``path``) side by side over random
    symbols; max abs difference of all outputs."""
    import onnxruntime as ort

    path = Path(model_dir) / ONNX_FILE if path is None else Path(path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
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


INT8_MAX_BITS_LOST = 0.005  # bits/char the int8 export may cost on the phrase files it is checked on


def _message_symbols(paths: list[str | Path], alphabet) -> list[list[int]]:
    from dasher_rnn.lm.messages import encoded_messages, read_messages

    return [ids for path in paths for _, _, ids in encoded_messages(read_messages(path, alphabet=alphabet), alphabet) if ids]


def onnx_message_log_probs(session, root_logp: np.ndarray, h0: np.ndarray, c0: np.ndarray,
                           messages: list[list[int]], batch: int = 256) -> list[np.ndarray]:
    """Per message, the (T, V) log-probs before each symbol: the first from ``root_logp`` (the learned initial state),
    the rest from ``session``'s steps; messages run side by side in batches."""
    out: list[np.ndarray] = []
    for start in range(0, len(messages), batch):
        group = messages[start : start + batch]
        B, T = len(group), max(len(m) for m in group)
        sym = np.zeros((B, T), dtype=np.int64)
        for i, m in enumerate(group):
            sym[i, : len(m)] = m
        h = np.repeat(h0[:, None, :], B, axis=1).astype(np.float32)
        c = np.repeat(c0[:, None, :], B, axis=1).astype(np.float32)
        logps = [np.repeat(root_logp[None, :], B, axis=0)]
        for t in range(T - 1):
            logp, h, c = session.run(None, {"symbols": sym[:, t], "h": h, "c": c})
            logps.append(logp)
        stacked = np.stack(logps, axis=1)
        out.extend(stacked[i, : len(m)] for i, m in enumerate(group))
    return out


def export_int8(model_dir: str | Path, check_files: list[str | Path] | None = None,
                max_bits_lost: float = INT8_MAX_BITS_LOST) -> dict:
    """Write ``model.int8.onnx``, verified against torch. A plain LSTM gets the fused step of ``lm/fused_step.py``
    (whose weights an adapting backend replaces after each update); other cells get the float32 export dynamically
    quantised to int8 with onnxruntime.quantization. The check: the max abs log-prob difference over random
    steps, and on ``check_files`` (phrase files) the bits/char of the fp32 and int8 exports, with and without
    Dasher's floor. Raises (writing nothing) when the int8 export loses more than ``max_bits_lost`` bits/char
    there; records the figures in config.json. The float32 export is the folder's ``model.onnx`` where it has one
    (an older folder, or ``export-onnx --fp32``), else one made in a temporary folder for this alone
    (``export_onnx(path=...)``, which records its check in config.json) and not kept."""
    model_dir = Path(model_dir)
    with tempfile.TemporaryDirectory(prefix="dasher-rnn-fp32-") as scratch:
        fp32 = model_dir / ONNX_FILE
        if not fp32.is_file():  # the yardstick (and, for other cells, the source), made for this check alone
            fp32 = Path(scratch) / ONNX_FILE
            export_onnx(model_dir, path=fp32)
        return _export_int8(model_dir, fp32, check_files, max_bits_lost)


def _export_int8(model_dir: Path, fp32: Path, check_files: list[str | Path] | None, max_bits_lost: float) -> dict:
    """``export_int8`` with the float32 export at ``fp32``."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from dasher_rnn.lm.messages import symbol_bits
    from dasher_rnn.lm.model_io import INT8_ONNX_FILE, WEIGHTS_FILE
    from dasher_rnn.lm.protocol import DASHER_FLOOR

    model, alphabet, config = load_model(model_dir)
    tmp = model_dir / (INT8_ONNX_FILE + ".tmp")
    arch = model.config
    if arch.cell == "lstm" and model.adapter is None:  # the graph whose weights an adapting backend can replace
        weights = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
        atomic_write(tmp, fused_lstm_graph(fused_initializers(weights, arch.layers), arch.layers, arch.hidden_size,
                                           arch.vocab_size))
        graph = FUSED_GRAPH
    else:
        quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True)
        graph = "onnxruntime.quantization.quantize_dynamic"
    try:
        sessions = {name: ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
                    for name, path in (("fp32", fp32), ("int8", tmp))}
        # random steps against torch
        rng = np.random.default_rng(0)
        worst = 0.0
        with torch.no_grad():
            h, c = model.initial_state(17)
            h_q, c_q = h.numpy(), c.numpy()
            for _ in range(40):
                symbols = rng.integers(0, model.config.vocab_size, size=17)
                logp, (h, c) = model.step(torch.from_numpy(symbols), (h, c))
                logp_q, h_q, c_q = sessions["int8"].run(None, {"symbols": symbols.astype(np.int64), "h": h_q, "c": c_q})
                worst = max(worst, float(np.abs(logp.numpy() - logp_q).max()))
            h0, c0 = (t[:, 0].numpy() for t in model.initial_state(1))
            root = model.state_log_probs(model.initial_state(1))[0].numpy()
        report: dict = {"file": INT8_ONNX_FILE, "graph": graph, "weights_sha256": config["files"][WEIGHTS_FILE],
                        "weight_type": "QInt8, per channel", "max_abs_log_prob_diff_vs_torch": worst}
        if check_files:
            messages = _message_symbols(check_files, alphabet)
            chars = sum(len(m) for m in messages)
            figures = {}
            for name, session in sessions.items():
                logps = onnx_message_log_probs(session, root, h0, c0, messages)
                exact = floor = 0.0
                for m, lp in zip(messages, logps, strict=True):
                    probs = np.exp(lp.astype(np.float64))
                    exact += sum(symbol_bits(probs, m, 0.0))
                    floor += sum(symbol_bits(probs, m, DASHER_FLOOR))
                figures[name] = {"bpc_floor": float(floor / chars), "bpc_exact": float(exact / chars)}
            lost = figures["int8"]["bpc_floor"] - figures["fp32"]["bpc_floor"]
            report.update({"check_files": [Path(p).name for p in check_files], "check_chars": chars,
                           "bpc": figures, "bits_lost_floor": lost,
                           "bits_lost_exact": figures["int8"]["bpc_exact"] - figures["fp32"]["bpc_exact"]})
            if lost > max_bits_lost:
                raise RuntimeError(f"int8 export loses {lost:.4f} bits/char on {len(check_files)} files "
                                   f"(> {max_bits_lost}): not written")
        tmp.replace(model_dir / INT8_ONNX_FILE)
    finally:
        tmp.unlink(missing_ok=True)
    write_config(model_dir, dict(read_config(model_dir), onnx_int8=report))
    return report
