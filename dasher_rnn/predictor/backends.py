"""Backends that run the recurrent step on numpy arrays: torch (CPU or CUDA) and onnxruntime.

All speak numpy so the context tree can keep its states in one preallocated host pool:
- ``initial()`` -> (log_probs (V,), h (L, H), c (L, C)): the learned message-start state;
- ``step(symbols (B,), h (L, B, H), c (L, B, C))`` -> (log_probs (B, V), h, c): one batched step;
- ``run(symbols (T,), h (L, H), c (L, C))`` -> (log_probs (V,), h, c): a whole context, for roots.
C (``cell_size``) is H for the LSTM cells and H (1 + window) for the attention cells.
Backends with ``can_swap_weights`` take adapted weights in two halves: ``prepare_weights`` does the work on the
caller's thread and returns the install, which the predictor's worker runs between batches.
The onnxruntime backend never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from dasher_rnn.lm.fused_step import FUSED_GRAPH, fold_lstm, fused_initializers
from dasher_rnn.lm.model_io import (
    INT8_ONNX_FILE,
    ONNX_FILE,
    WEIGHTS_FILE,
    ModelFileError,
    ModelFolder,
    onnx_exports,
    open_model,
    read_checked_config,
    read_verified,
    verify_hash,
)

if TYPE_CHECKING:
    from dasher_rnn.lm.state_adapter import AdapterSpec


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


class Backend(Protocol):
    name: str
    layers: int
    hidden: int
    cell_size: int
    vocab: int
    can_swap_weights: bool  # whether ``prepare_weights`` may be called

    def initial(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    def step(self, symbols: np.ndarray, h: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    def run(self, symbols: np.ndarray, h: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...

    def prepare_weights(self, state_dict: dict, adapter: AdapterSpec | None = None) -> Callable[[], None]: ...


class FusedLSTMStep:
    """One LSTM step written out: the embedding is folded into a (V, 4H) table of first-layer input
    gates, so a step is one matrix product per layer. Exact to float rounding; several times faster
    than ``nn.LSTM`` for the small batches the tree asks for."""

    def __init__(self, model):
        import torch

        self.torch = torch
        with torch.no_grad():
            self.layers, (self.head_w, head_b) = fold_lstm(model.state_dict(), model.config.layers,
                                                           contiguous=lambda w: w.contiguous())
            self.head_b = head_b.clone()  # the others are new tensors; this one is the parameter itself

    def __call__(self, symbols, h, c):
        torch = self.torch
        x, hs, cs = None, [], []
        for layer, (w_in, bias, w_hh) in enumerate(self.layers):
            pre = w_in[symbols] if layer == 0 else torch.addmm(bias, x, w_in)
            i, f, g, o = torch.addmm(pre, h[layer], w_hh).chunk(4, dim=1)
            c_new = torch.sigmoid(f) * c[layer] + torch.sigmoid(i) * torch.tanh(g)
            x = torch.sigmoid(o) * torch.tanh(c_new)
            hs.append(x)
            cs.append(c_new)
        return torch.log_softmax(torch.addmm(self.head_b, x, self.head_w), dim=-1), torch.stack(hs), torch.stack(cs)


class TorchBackend:
    """The torch model on CPU or CUDA. Inputs go over in one packed transfer per batch and back in one."""

    def __init__(self, model, device: str = "cpu", threads: int | None = None, chunk: int = 2048,
                 zero_state: bool = False):
        import torch

        if threads:
            torch.set_num_threads(threads)
        self.torch = torch
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        cfg = model.config
        self.name = f"torch-{self.device.type}"
        self.layers, self.hidden, self.cell_size, self.vocab = cfg.layers, cfg.hidden_size, cfg.cell_state_size, cfg.vocab_size
        self.chunk, self.zero_state = chunk, zero_state
        self._choose_step()

    def _choose_step(self) -> None:
        """The written-out LSTM step serves a plain LSTM; anything else (other cells, a state adapter) runs the model."""
        plain = self.model.config.cell == "lstm" and self.model.adapter is None
        self._fused = FusedLSTMStep(self.model) if plain else None

    can_swap_weights = True

    def prepare_weights(self, state_dict: dict, adapter: AdapterSpec | None = None) -> Callable[[], None]:
        """The torch model is the one serving: everything happens in the install."""
        return partial(self.load_weights, state_dict, adapter)

    def load_weights(self, state_dict: dict, adapter: AdapterSpec | None = None) -> None:
        """Swap in new weights (online adaptation), with the state adapter (``AdapterSpec``) whose parameters
        they include, if any (tensors, or numpy arrays from the numpy adaptation engine); callers serialise this
        with ``step``."""
        torch = self.torch
        self.model.set_adapter(adapter)
        with torch.no_grad():
            self.model.load_state_dict({k: v if isinstance(v, torch.Tensor) else torch.from_numpy(np.asarray(v))
                                        for k, v in state_dict.items()})
        self._choose_step()

    def initial(self):
        torch = self.torch
        with torch.no_grad():
            h, c = self.model.initial_state(1, learned=not self.zero_state)
            logp = self.model.state_log_probs((h, c))
        return logp[0].detach().float().cpu().numpy(), h[:, 0].detach().cpu().numpy(), c[:, 0].detach().cpu().numpy()

    def step(self, symbols, h, c):
        torch = self.torch
        L = self.layers
        B, V, H, C = len(symbols), self.vocab, self.hidden, self.cell_size
        packed = torch.from_numpy(np.concatenate([h.reshape(-1), c.reshape(-1)])).to(self.device, non_blocking=True)
        sym = torch.from_numpy(np.asarray(symbols, dtype=np.int64)).to(self.device, non_blocking=True)
        h_in, c_in = packed[: L * B * H].view(L, B, H), packed[L * B * H :].view(L, B, C)
        with torch.no_grad():
            if self._fused is not None:
                logp, h2, c2 = self._fused(sym, h_in, c_in)
            else:
                logp, (h2, c2) = self.model.step(sym, (h_in, c_in))
            out = torch.cat([logp.reshape(-1), h2.reshape(-1), c2.reshape(-1)]).cpu().numpy()
        return (out[: B * V].reshape(B, V), out[B * V : B * V + L * B * H].reshape(L, B, H),
                out[B * V + L * B * H :].reshape(L, B, C))

    def run(self, symbols, h, c):
        torch = self.torch
        hs = torch.from_numpy(np.ascontiguousarray(h[:, None, :])).to(self.device)
        cs = torch.from_numpy(np.ascontiguousarray(c[:, None, :])).to(self.device)
        ids = torch.from_numpy(np.asarray(symbols, dtype=np.int64)).to(self.device)
        with torch.no_grad():
            logp = None
            for i in range(0, len(ids), self.chunk):
                out, (hs, cs) = self.model(ids[None, i : i + self.chunk], (hs, cs))
                logp = out[0, -1]
        if logp is None:
            raise ValueError("run() needs at least one symbol")
        return logp.float().cpu().numpy(), hs[:, 0].cpu().numpy(), cs[:, 0].cpu().numpy()


def onnx_file_served(model_dir: Path, config: dict, int8: bool | None = None) -> str:
    """The ONNX export an onnxruntime backend serves from a model folder (its config.json ``config``): the int8 one
    (``model.int8.onnx``) when config.json lists it, else the float32 one (``model.onnx``, which the shipped folders
    leave out); ``int8`` True or False asks for that one. ``ModelFileError`` saying what is missing and which
    command writes it."""
    files = config.get("files", {})
    if int8 is None:
        found = next((name for name in (INT8_ONNX_FILE, ONNX_FILE) if name in files), None)
        if found is None:
            raise ModelFileError(f"{model_dir}: its config.json lists no ONNX export ({INT8_ONNX_FILE} or {ONNX_FILE}) "
                                 f"for onnxruntime to serve; `dasher-rnn export-onnx {model_dir}` writes the int8 one, "
                                 "or use the torch backend")
        return found
    if int8 and INT8_ONNX_FILE not in files:
        raise ModelFileError(f"{model_dir / INT8_ONNX_FILE}: this folder has no int8 ONNX export; `dasher-rnn "
                             f"export-onnx --int8 {model_dir}` writes it")
    if not int8 and ONNX_FILE not in files:
        raise ModelFileError(f"{model_dir / ONNX_FILE}: this folder has no float32 ONNX export (the shipped models "
                             f"carry only the int8 one, {INT8_ONNX_FILE}); `dasher-rnn export-onnx --fp32 {model_dir}` "
                             "writes it, or serve the int8 export")
    return INT8_ONNX_FILE if int8 else ONNX_FILE


class OnnxBackend:
    """onnxruntime on CPU over the folder's ONNX export; the initial state comes from ``weights.safetensors``
    read with safetensors.numpy, the root distribution from the head there (LSTM cells) or, where
    the head reads more than h (attention cells), from the one the export recorded. No torch anywhere.
    The int8 export (``model.int8.onnx``, verified when written; the only one the shipped models carry) is used
    when the folder has it, else the float32 one (``model.onnx``); ``int8`` True or False asks for one of them
    (``onnx_file_served``). When the int8 export is the fused LSTM step (``lm/fused_step.py``) the backend can swap
    weights: a new session over the same graph bytes with the adapted weights as its initializers."""

    def __init__(self, model_dir: str | Path, threads: int | None = None, int8: bool | None = None,
                 config: dict | None = None, weights: Mapping[str, np.ndarray] | None = None):
        """``config``: the folder's config.json when the caller has already read and checked it; ``weights``: its
        weights, when the caller has already read and checked those too (``ModelFolder.weights``)."""
        from safetensors.numpy import load_file

        model_dir = Path(model_dir)
        if config is None:
            config, _ = read_checked_config(model_dir)
        onnx_file = onnx_file_served(model_dir, config, int8)
        use_int8 = onnx_file == INT8_ONNX_FILE
        if not (model_dir / onnx_file).is_file():
            raise ModelFileError(f"{model_dir / onnx_file}: file missing (config.json lists it)")
        graph = read_verified(model_dir, config, onnx_file)
        self.can_swap_weights = use_int8 and swaps_weights(config)
        self._graph = graph if self.can_swap_weights else b""  # a swap builds another session from it
        if weights is None:
            verify_hash(model_dir, config, WEIGHTS_FILE)
            try:
                weights = load_file(str(model_dir / WEIGHTS_FILE))
            except Exception as exc:  # safetensors raises several types for broken files
                raise ModelFileError(f"{model_dir / WEIGHTS_FILE}: not a readable safetensors file ({exc})") from None
        arch = config["architecture"]
        self.name = "onnxruntime-cpu-int8" if use_int8 else "onnxruntime-cpu"
        self.layers, self.hidden, self.vocab = arch["layers"], arch["hidden_size"], arch["vocab_size"]
        self._h0 = weights["h0"].astype(np.float32)
        self._c0 = weights["c0"].astype(np.float32)
        self.cell_size = self._c0.shape[-1]
        recorded = config.get("onnx", {}).get("root_log_probs")
        if weights["head.weight"].shape[-1] == self.hidden or recorded is None:  # the head reads h alone
            self._root_logp = _head_log_probs(self._h0, weights)  # (the h0 given: a language's, for one)
        else:
            self._root_logp = np.array(recorded, np.float32)
        self._threads = threads
        self.session = self._session(graph)

    def _session(self, graph: bytes, values: dict | None = None):
        """An onnxruntime session over ``graph``, its initializers replaced by ``values`` (OrtValues, which
        onnxruntime reads in place: they are kept on the session, so they live exactly as long as it does)."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        if self._threads:
            options.intra_op_num_threads = self._threads
        for name, value in (values or {}).items():
            options.add_initializer(name, value)
        session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        session.dasher_initializers = values
        return session

    def prepare_weights(self, state_dict: dict, adapter: AdapterSpec | None = None) -> Callable[[], None]:
        """A session with ``state_dict``'s weights (CharRNN's names; numpy arrays or CPU tensors, copied), built on
        the caller's thread (about 20 ms at 1x768); the returned install swaps it in."""
        import onnxruntime as ort

        if not self.can_swap_weights:
            raise NotImplementedError(f"{self.name}: only the fused LSTM int8 export can swap weights; "
                                      "export it again (dasher-rnn export-onnx --int8) or use a torch backend")
        if adapter is not None:
            raise NotImplementedError("a state adapter is served by the torch backends")
        weights = {k: np.asarray(v, dtype=np.float32).copy() for k, v in state_dict.items()}  # the caller may change its own
        values = {k: ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(v))
                  for k, v in fused_initializers(weights, self.layers).items()}
        session = self._session(self._graph, values)
        h0, c0, root = weights["h0"], weights["c0"], _head_log_probs(weights["h0"], weights)

        def install() -> None:
            self.session, self._h0, self._c0, self._root_logp = session, h0, c0, root

        return install

    def initial(self):
        return self._root_logp.copy(), self._h0.copy(), self._c0.copy()

    def step(self, symbols, h, c):
        logp, h2, c2 = self.session.run(
            None, {"symbols": np.asarray(symbols, dtype=np.int64), "h": np.ascontiguousarray(h, dtype=np.float32),
                   "c": np.ascontiguousarray(c, dtype=np.float32)})
        return logp, h2, c2

    def run(self, symbols, h, c):
        if len(symbols) == 0:
            raise ValueError("run() needs at least one symbol")
        h, c = h[:, None, :], c[:, None, :]
        for s in symbols:
            logp, h, c = self.step(np.array([s]), h, c)
        return logp[0], h[:, 0], c[:, 0]


class LanguageView:
    """A multilingual model writing one language, whose alphabet is a subset of the model's: symbols go in as the
    model's ids (``index[k]`` is the model's id of the language's symbol ``k``) and each distribution comes out
    over the language's symbols alone, renormalised (the model's softmax restricted to them). Everything else is
    the inner backend's, adapted weights included (they are the whole model's)."""

    def __init__(self, inner: Backend, index: Sequence[int] | np.ndarray):
        self.inner, self.index = inner, np.asarray(index, dtype=np.int64)
        self.name, self.layers, self.hidden, self.cell_size = inner.name, inner.layers, inner.hidden, inner.cell_size
        self.vocab = len(self.index)
        self.can_swap_weights = inner.can_swap_weights

    def _project(self, log_probs: np.ndarray) -> np.ndarray:
        return log_softmax(log_probs[..., self.index]).astype(np.float32)

    def initial(self):
        log_probs, h, c = self.inner.initial()
        return self._project(log_probs), h, c

    def step(self, symbols, h, c):
        log_probs, h2, c2 = self.inner.step(self.index[np.asarray(symbols, dtype=np.int64)], h, c)
        return self._project(log_probs), h2, c2

    def run(self, symbols, h, c):
        log_probs, h2, c2 = self.inner.run(self.index[np.asarray(symbols, dtype=np.int64)], h, c)
        return self._project(log_probs), h2, c2

    def prepare_weights(self, state_dict: dict, adapter: AdapterSpec | None = None) -> Callable[[], None]:
        return self.inner.prepare_weights(state_dict, adapter)


def _head_log_probs(h0: np.ndarray, weights: Mapping[str, np.ndarray]) -> np.ndarray:
    """The root distribution of an LSTM: the head on the top layer of the initial state."""
    head_w, head_b = np.asarray(weights["head.weight"], np.float32), np.asarray(weights["head.bias"], np.float32)
    return log_softmax(h0[-1] @ head_w.T + head_b).astype(np.float32)


BACKENDS = ("auto", "torch", "cuda", "onnx")


def swaps_weights(config: dict) -> bool:
    """Whether a model folder's int8 export (its config.json) is the fused LSTM step of these very weights, whose
    weights onnxruntime can then swap after each adaptation update."""
    files, int8 = config.get("files", {}), config.get("onnx_int8", {})
    return (INT8_ONNX_FILE in files and int8.get("graph") == FUSED_GRAPH
            and int8.get("weights_sha256") == files.get(WEIGHTS_FILE))


def make_backend(model: str | Path | ModelFolder, kind: str = "auto", threads: int | None = None,
                 zero_state: bool = False) -> Backend:
    """A backend for a model folder (a path, or a ``ModelFolder`` already read). ``auto``: torch on CUDA when a
    GPU is present, else onnxruntime when the model has an ONNX export (the int8 one or the float32 one), else
    torch. ``zero_state``: messages start from the zero state instead of the learned one (torch backends only)."""
    folder: ModelFolder | None = None
    if isinstance(model, ModelFolder):
        folder, path = model, model.path
    else:
        path = Path(model)
    if kind == "auto":
        kind = "cuda" if cuda_available() else "torch" if zero_state or not onnx_exports(path) else "onnx"
    if kind == "onnx":
        if zero_state:
            raise ValueError("the onnx backend serves the learned initial state only; use the torch backend")
        if folder is None:
            return OnnxBackend(path, threads)
        return OnnxBackend(path, threads, config=folder.config, weights=folder.weights)
    if kind in ("torch", "cuda"):
        net = (folder or open_model(path)).network()
        return TorchBackend(net, device="cuda" if kind == "cuda" else "cpu", threads=threads, zero_state=zero_state)
    raise ValueError(f"unknown backend {kind!r} (choose from {', '.join(BACKENDS)})")


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()
