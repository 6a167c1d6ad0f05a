"""The LSTM step as a small int8 ONNX graph whose weights can be replaced without exporting again.

This is ``predictor/backends.py::FusedLSTMStep`` for onnxruntime, from the same folding (``fold_lstm``): the
embedding is folded into a (V, 4H) table of first-layer input gates. The recurrent products (and the input
products of upper layers) are onnxruntime's ``DynamicQuantizeMatMul``: int8 weights with one scale per output
column, activations quantised per call. The head stays float32 (it is small). Every weight is an initializer with a fixed name
(``fused_initializers``), so after an adaptation update a backend builds a new session from the same graph bytes
with the new values (``onnxruntime.SessionOptions.add_initializer``): milliseconds, no ``onnx`` package, no torch.

Graph, as ``lm/onnx_export.py``'s: (symbols int64 [B], h float32 [L, B, H], c float32 [L, B, H]) ->
(log_probs float32 [B, V], h_next, c_next). Building it (``fused_lstm_graph``) needs the ``onnx`` package, as any
export does; serving it needs onnxruntime and numpy only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

FUSED_GRAPH = "fused-lstm-int8"  # config.json's onnx_int8.graph when model.int8.onnx is this graph
INT8_LIMIT = 127  # symmetric: zero point 0


def quantise_columns(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(K, N) float -> (int8 (K, N), float32 scale (N,)) with ``w ~= q * scale``, one scale per column."""
    w = np.asarray(w, dtype=np.float32)
    scale = np.abs(w).max(axis=0) / INT8_LIMIT
    scale[scale == 0] = 1.0
    q = np.rint(w / scale)
    np.clip(q, -INT8_LIMIT, INT8_LIMIT, out=q)
    return q.astype(np.int8), scale.astype(np.float32)


def fold_lstm(weights: Mapping[str, Any], layers: int,
              contiguous: Callable[[Any], Any] = lambda w: w) -> tuple[list[tuple[Any, Any, Any]], tuple[Any, Any]]:
    """A plain LSTM's state dict (``CharRNN``'s names) as the fused step's matrices, for numpy arrays and torch
    tensors alike: per layer (input weights, their bias or None, recurrent weights), each (in, 4H), where layer 0's
    input weights are the (V, 4H) table of input gates with both biases folded in; then the head (H, V) and its
    bias. ``contiguous`` is applied to each transposed matrix."""
    folded = []
    for layer in range(layers):
        w_ih, w_hh = weights[f"rnn.weight_ih_l{layer}"], weights[f"rnn.weight_hh_l{layer}"]
        bias = weights[f"rnn.bias_ih_l{layer}"] + weights[f"rnn.bias_hh_l{layer}"]
        if layer == 0:
            folded.append((weights["embed.weight"] @ w_ih.T + bias, None, contiguous(w_hh.T)))
        else:
            folded.append((contiguous(w_ih.T), bias, contiguous(w_hh.T)))
    return folded, (contiguous(weights["head.weight"].T), weights["head.bias"])


def fused_initializers(weights: Mapping[str, np.ndarray], layers: int) -> dict[str, np.ndarray]:
    """The graph's initializers from a plain LSTM's state dict (``CharRNN``'s names, numpy float arrays)."""
    folded, (head, head_bias) = fold_lstm({k: np.asarray(v, dtype=np.float32) for k, v in weights.items()}, layers)
    out: dict[str, np.ndarray] = {}
    for layer, (w_in, bias, w_rec) in enumerate(folded):
        if layer == 0:
            out["in0"] = w_in  # a row per symbol
        else:
            out[f"in{layer}"], out[f"in{layer}_scale"] = quantise_columns(w_in)
            out[f"in{layer}_bias"] = bias
        out[f"rec{layer}"], out[f"rec{layer}_scale"] = quantise_columns(w_rec)
    out["head"] = np.ascontiguousarray(head)
    out["head_bias"] = head_bias
    return out


def fused_lstm_graph(initializers: Mapping[str, np.ndarray], layers: int, hidden: int, vocab: int) -> bytes:
    """The serialised ONNX model of one batched step with ``initializers`` as its weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def node(op: str, inputs: list[str], outputs: list[str], **kw) -> onnx.NodeProto:
        return helper.make_node(op, inputs, outputs, **kw)

    nodes = [node("Constant", [], ["axis0"], value=numpy_helper.from_array(np.array([0], np.int64)))]
    x = ""
    for layer in range(layers):
        at = np.array([layer], np.int64)
        nodes += [node("Constant", [], [f"at{layer}"], value=numpy_helper.from_array(at)),
                  node("Gather", ["h", f"at{layer}"], [f"h{layer}_"], axis=0),
                  node("Squeeze", [f"h{layer}_", "axis0"], [f"h{layer}"]),
                  node("Gather", ["c", f"at{layer}"], [f"c{layer}_"], axis=0),
                  node("Squeeze", [f"c{layer}_", "axis0"], [f"c{layer}"])]
        if layer == 0:
            nodes.append(node("Gather", ["in0", "symbols"], ["pre0"], axis=0))
        else:
            nodes.append(node("DynamicQuantizeMatMul", [x, f"in{layer}", f"in{layer}_scale", "", f"in{layer}_bias"],
                              [f"pre{layer}"], domain="com.microsoft"))
        p = f"l{layer}_"
        nodes += [node("DynamicQuantizeMatMul", [f"h{layer}", f"rec{layer}", f"rec{layer}_scale"], [p + "rec"],
                       domain="com.microsoft"),
                  node("Add", [f"pre{layer}", p + "rec"], [p + "gates"]),
                  node("Split", [p + "gates"], [p + "i", p + "f", p + "g", p + "o"], axis=1, num_outputs=4),
                  node("Sigmoid", [p + "i"], [p + "si"]), node("Sigmoid", [p + "f"], [p + "sf"]),
                  node("Tanh", [p + "g"], [p + "tg"]), node("Sigmoid", [p + "o"], [p + "so"]),
                  node("Mul", [p + "sf", f"c{layer}"], [p + "fc"]), node("Mul", [p + "si", p + "tg"], [p + "ig"]),
                  node("Add", [p + "fc", p + "ig"], [f"c{layer}_next"]),
                  node("Tanh", [f"c{layer}_next"], [p + "tc"]), node("Mul", [p + "so", p + "tc"], [f"h{layer}_next"]),
                  node("Unsqueeze", [f"h{layer}_next", "axis0"], [f"h{layer}_out"]),
                  node("Unsqueeze", [f"c{layer}_next", "axis0"], [f"c{layer}_out"])]
        x = f"h{layer}_next"
    nodes += [node("Gemm", [x, "head", "head_bias"], ["logits"]),
              node("LogSoftmax", ["logits"], ["log_probs"], axis=1)]
    if layers == 1:
        nodes += [node("Identity", ["h0_out"], ["h_next"]), node("Identity", ["c0_out"], ["c_next"])]
    else:
        nodes += [node("Concat", [f"h{n}_out" for n in range(layers)], ["h_next"], axis=0),
                  node("Concat", [f"c{n}_out" for n in range(layers)], ["c_next"], axis=0)]
    state: list[str | int] = [layers, "batch", hidden]
    graph = helper.make_graph(
        nodes, "fused_lstm_step",
        [helper.make_tensor_value_info("symbols", TensorProto.INT64, ["batch"]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, state),
         helper.make_tensor_value_info("c", TensorProto.FLOAT, state)],
        [helper.make_tensor_value_info("log_probs", TensorProto.FLOAT, ["batch", vocab]),
         helper.make_tensor_value_info("h_next", TensorProto.FLOAT, state),
         helper.make_tensor_value_info("c_next", TensorProto.FLOAT, state)],
        [numpy_helper.from_array(np.ascontiguousarray(v), k) for k, v in initializers.items()])
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)]
    # the oldest file format these operators need (8), not the onnx package's newest: onnxruntime reads only the
    # formats it knows (1.30 stops at 13, while onnx 1.23 writes 14), and pyproject allows onnxruntime from 1.17
    model = helper.make_model(graph, opset_imports=opsets,
                              ir_version=helper.find_min_ir_version_for(opsets, ignore_unknown=True))
    onnx.checker.check_model(model)
    return model.SerializeToString()
