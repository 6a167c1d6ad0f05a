"""Model directories: safetensors weights + config.json (+ MS_g, ONNX, model card).

A model directory holds
- ``config.json``: format version, alphabet (name and symbols), normalisation version,
  architecture, SHA-256 of every other file, training summary and metrics;
- ``weights.safetensors``: the network including the learned initial state (``h0``, ``c0``);
- ``msg.safetensors``: mean squared gradients over training batches (for RMS dynamic evaluation);
- ``model.int8.onnx``: the one-step function with int8 weights for onnxruntime, verified against torch (for a
  plain LSTM the fused step of ``lm/fused_step.py``, whose weights an adapting backend replaces); what the shipped
  models carry and the onnxruntime backend serves;
- ``model.onnx`` (optional): the batched one-step function in float32, which ``train`` writes into its model
  folder and ``export-onnx --fp32`` on request; served only where the int8 export is missing or turned off.
  The shipped models leave it out (21 MB that the app never reads; ``export-onnx --fp32`` writes it again);
  a folder has at least one of the two to be served by onnxruntime, and older folders with both still load;
- ``languages.safetensors`` (a multilingual model): a learned initial state for each language it writes
  (``CODE.h0``, ``CODE.c0``), listed with their figures under ``languages`` in config.json. Writing one language,
  the model starts each message from that language's state (``ModelFolder.for_language``) and its distributions
  are renormalised over that language's alphabet, a subset of the model's (``predictor.backends.LanguageView``).
Loading checks everything and raises ``ModelFileError`` naming the file and the mismatch.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from safetensors import SafetensorError

from dasher_rnn.alphabet import Alphabet
from dasher_rnn.extras import require_torch
from dasher_rnn.files import MiB, atomic_write, read_json
from dasher_rnn.lm.rnn_config import CELLS, RNNConfig
from dasher_rnn.normalise import NORMALISATION_VERSION

if TYPE_CHECKING:  # torch is imported only where tensors are made (training, export): reading a model needs none
    import torch

    from dasher_rnn.lm.rnn import CharRNN

MODEL_FORMAT = 1
WEIGHTS_FILE = "weights.safetensors"
MSG_FILE = "msg.safetensors"
ONNX_FILE = "model.onnx"  # optional: the float32 export (lm/onnx_export.py::export_onnx), not in the shipped folders
INT8_ONNX_FILE = "model.int8.onnx"  # the int8 export (lm/onnx_export.py::export_int8), used by onnxruntime when present
ONNX_EXPORTS = (INT8_ONNX_FILE, ONNX_FILE)  # the ONNX exports a folder may have, in the order onnxruntime prefers them
CONFIG_FILE = "config.json"
LANGUAGES_FILE = "languages.safetensors"
MAX_CONFIG_BYTES = 16 * MiB  # config.json: an alphabet, hashes and figures are a few KiB


class ModelFileError(ValueError):
    """A model file is missing, corrupt or does not match its config."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def save_tensors(path: Path, tensors: dict[str, torch.Tensor], metadata: dict[str, str] | None = None,
                 private: bool = False) -> None:
    """Write a safetensors file atomically (``files.atomic_write``)."""
    from safetensors.torch import save

    atomic_write(path, save({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, metadata=metadata), private)


def load_tensors(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    if not path.is_file():
        raise ModelFileError(f"{path}: file missing")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise ModelFileError(f"{path}: not a readable safetensors file ({exc})") from None


_NUMPY_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2"}


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """A safetensors file of floating-point tensors as float32 numpy arrays, without torch. bfloat16 is read too
    (numpy has no such type: its bits are the top half of a float32's), exactly as torch converts it."""
    if not path.is_file():
        raise ModelFileError(f"{path}: file missing")
    data = path.read_bytes()
    try:
        size = int.from_bytes(data[:8], "little")
        header = json.loads(data[8 : 8 + size])
        body = memoryview(data)[8 + size :]
        arrays = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            start, end = info["data_offsets"]
            if not 0 <= start <= end <= len(body):
                raise ValueError(f"{name} lies outside the file")
            raw = body[start:end]
            if info["dtype"] == "BF16":
                array = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
            elif info["dtype"] in _NUMPY_DTYPES:
                array = np.frombuffer(raw, _NUMPY_DTYPES[info["dtype"]]).astype(np.float32)
            else:
                raise ValueError(f"{name} is {info['dtype']}, not a floating-point type")
            arrays[name] = array.reshape([int(n) for n in info["shape"]])
    except (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError) as exc:
        raise ModelFileError(f"{path}: not a readable safetensors file ({exc})") from None
    return arrays


def read_config(model_dir: Path) -> dict:
    path = model_dir / CONFIG_FILE
    if not path.is_file():
        raise ModelFileError(f"{path}: file missing (is {model_dir} a model directory?)")
    try:
        config = read_json(path, MAX_CONFIG_BYTES)
    except (OSError, ValueError) as exc:  # UnreadableFile (a FIFO, too large), BadFile (not JSON, nested too deeply)
        raise ModelFileError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(config, dict) or config.get("format") != MODEL_FORMAT:
        raise ModelFileError(f"{path}: unsupported model format {config.get('format') if isinstance(config, dict) else None!r}")
    return config


def read_checked_config(model_dir: Path) -> tuple[dict, Alphabet]:
    """config.json and its alphabet, checked for the fields and versions every loader relies on."""
    config = read_config(model_dir)
    cfg_path = model_dir / CONFIG_FILE
    try:
        alphabet = Alphabet.from_json(config["alphabet"], source=str(cfg_path))
        arch = config["architecture"]
        vocab, hidden, layers = int(arch["vocab_size"]), int(arch["hidden_size"]), int(arch["layers"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{cfg_path}: missing or malformed field ({exc!r})") from None
    if config.get("normalisation_version") != NORMALISATION_VERSION:
        raise ModelFileError(
            f"{cfg_path}: trained with normalisation version {config.get('normalisation_version')}, "
            f"this program uses {NORMALISATION_VERSION}"
        )
    if vocab != len(alphabet):
        raise ModelFileError(f"{cfg_path}: vocab_size {vocab} != {len(alphabet)} alphabet symbols")
    if hidden < 1 or layers < 1:
        raise ModelFileError(f"{cfg_path}: hidden_size and layers must be positive")
    return config, alphabet


def onnx_exports(model_dir: Path) -> tuple[str, ...]:
    """The ONNX exports a model folder has (file names, int8 first): an onnxruntime backend needs one of them."""
    return tuple(name for name in ONNX_EXPORTS if (Path(model_dir) / name).is_file())


def write_config(model_dir: Path, config: dict) -> None:
    """Write config.json with fresh hashes of the files it lists."""
    config = dict(config, format=MODEL_FORMAT)
    config["files"] = {
        name: sha256_file(model_dir / name)
        for name in (WEIGHTS_FILE, MSG_FILE, ONNX_FILE, INT8_ONNX_FILE, LANGUAGES_FILE)
        if (model_dir / name).is_file()
    }
    atomic_write(model_dir / CONFIG_FILE, (json.dumps(config, indent=2) + "\n").encode())


def verify_hash(model_dir: Path, config: dict, name: str, data: bytes | None = None) -> None:
    """Check a file (or ``data``, its bytes already read) against the SHA-256 config.json records."""
    expected = config.get("files", {}).get(name)
    if expected is None:
        raise ModelFileError(f"{model_dir / CONFIG_FILE}: no hash recorded for {name}")
    actual = sha256_file(model_dir / name) if data is None else hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise ModelFileError(f"{model_dir / name}: SHA-256 {actual[:12]}... does not match config ({expected[:12]}...)")


def read_verified(model_dir: Path, config: dict, name: str) -> bytes:
    """A file's bytes, read once and checked against config.json."""
    data = (model_dir / name).read_bytes()
    verify_hash(model_dir, config, name, data)
    return data


def save_model(model_dir: str | Path, model: CharRNN, alphabet: Alphabet, info: dict | None = None,
               half: bool = False) -> None:
    """Save weights (fp16 when ``half``) and config.json. Other files already in the folder are kept, except the
    ONNX exports: made from other weights, they are removed (``export-onnx`` writes them again)."""
    model_dir = Path(model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    tensors = {k: (v.half() if half else v.float()) for k, v in model.state_dict().items()}
    save_tensors(model_dir / WEIGHTS_FILE, tensors)
    old = {}
    if (model_dir / CONFIG_FILE).is_file():
        try:
            old = read_config(model_dir)
        except ModelFileError:
            old = {}
    for name in (ONNX_FILE, INT8_ONNX_FILE):
        (model_dir / name).unlink(missing_ok=True)
    old = {k: v for k, v in old.items() if k not in ("onnx", "onnx_int8")}
    config = {
        **old,
        **(info or {}),
        "alphabet": alphabet.to_json(),
        "normalisation_version": NORMALISATION_VERSION,
        "architecture": model.config.to_json(),
        "weights_dtype": "float16" if half else "float32",
    }
    write_config(model_dir, config)


@dataclass(eq=False)
class ModelFolder:
    """A model folder read and verified once: its config, alphabet and float32 weights (numpy arrays: reading a
    model needs no torch). Everything that serves or adapts the model (backends, the writing session) is built from
    this, not from the path."""

    path: Path
    config: dict
    alphabet: Alphabet
    weights: dict[str, np.ndarray]
    language: str | None = None  # the language written, for a multilingual model viewed through ``for_language``

    @property
    def base_hash(self) -> str:
        """SHA-256 of the weights file (and the language written): what a profile's adapted weights belong to."""
        digest = self.config["files"][WEIGHTS_FILE]
        return digest if self.language is None else f"{digest}:{self.language}"

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages a multilingual model has a learned initial state for (none for a one-language model)."""
        return tuple(self.config.get("languages") or {})

    def for_language(self, code: str) -> ModelFolder:
        """This model writing ``code``: its weights with that language's learned initial state. ``ModelFileError``
        when the model has none for it, or its file does not match config.json."""
        if code not in self.languages:
            raise ModelFileError(f"{self.path}: no initial state for language {code!r} "
                                 f"(it has {', '.join(self.languages) or 'none'})")
        verify_hash(self.path, self.config, LANGUAGES_FILE)
        states = load_arrays(self.path / LANGUAGES_FILE)
        weights = dict(self.weights)
        for name in ("h0", "c0"):
            state = states.get(f"{code}.{name}")
            if state is None or state.shape != weights[name].shape:
                raise ModelFileError(f"{self.path / LANGUAGES_FILE}: {code}.{name} is missing or has the wrong shape")
            weights[name] = state
        return replace(self, weights=weights, language=code)

    def network(self, device: str | torch.device = "cpu") -> CharRNN:
        """A fresh copy of the network (eval mode, float32): torch's, so this needs PyTorch (``TorchMissing``)."""
        torch = require_torch(f"the torch network of {self.path}")
        from dasher_rnn.lm.rnn import CharRNN, RNNConfig

        model = CharRNN(RNNConfig(**self.config["architecture"]))
        model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in self.weights.items()})
        return model.to(device).eval()

    def msg(self, model: CharRNN) -> dict[str, torch.Tensor]:
        """Mean squared gradients shipped with the model (RMS dynamic evaluation), checked against ``model``."""
        return load_msg(self.path, model, self.config)

    def msg_arrays(self) -> dict[str, np.ndarray]:
        """``msg`` as float32 numpy arrays, checked against the weights' shapes, without torch."""
        verify_hash(self.path, self.config, MSG_FILE)
        msg = load_arrays(self.path / MSG_FILE)
        for name, array in msg.items():
            if name in self.weights and tuple(array.shape) != tuple(self.weights[name].shape):
                raise ModelFileError(f"{self.path / MSG_FILE}: {name} has shape {tuple(array.shape)}, "
                                     f"expected {tuple(self.weights[name].shape)}")
        return msg


def expected_shapes(arch: RNNConfig) -> dict[str, tuple[int, ...]]:
    """The name and shape of every tensor of a network of ``arch``: a plain LSTM's from its sizes alone; another
    cell's from its torch layers (``TorchMissing`` without PyTorch: nothing can run that cell without it)."""
    if arch.cell == "lstm":
        return arch.lstm_shapes()
    require_torch(f"the {arch.cell} cell")
    from dasher_rnn.lm.rnn import CharRNN

    return {name: tuple(t.shape) for name, t in CharRNN(arch).state_dict().items()}


def open_model(model_dir: str | Path) -> ModelFolder:
    """Read and check a model directory once: config, alphabet, weights (hash, names and shapes). No torch for a
    plain LSTM."""
    model_dir = Path(model_dir)
    config, alphabet = read_checked_config(model_dir)
    try:
        arch = RNNConfig(**config["architecture"])
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"{model_dir / CONFIG_FILE}: bad architecture ({exc})") from None
    if arch.cell not in CELLS:
        raise ModelFileError(f"{model_dir / CONFIG_FILE}: unknown cell {arch.cell!r} (one of {', '.join(CELLS)})")
    verify_hash(model_dir, config, WEIGHTS_FILE)
    arrays = load_arrays(model_dir / WEIGHTS_FILE)
    expected = expected_shapes(arch)
    missing = sorted(set(expected) - set(arrays))
    unexpected = sorted(set(arrays) - set(expected))
    if missing or unexpected:
        raise ModelFileError(f"{model_dir / WEIGHTS_FILE}: missing tensors {missing}, unexpected {unexpected}")
    for name, array in arrays.items():
        if tuple(array.shape) != expected[name]:
            raise ModelFileError(
                f"{model_dir / WEIGHTS_FILE}: tensor {name} has shape {tuple(array.shape)}, "
                f"config expects {expected[name]}"
            )
    return ModelFolder(model_dir, config, alphabet, arrays)


def load_model(model_dir: str | Path, device: str | torch.device = "cpu") -> tuple[CharRNN, Alphabet, dict]:
    """Load and check a model directory: (model in eval mode, float32), its alphabet, its config."""
    folder = open_model(model_dir)
    return folder.network(device), folder.alphabet, folder.config


def load_msg(model_dir: str | Path, model: CharRNN, config: dict | None = None) -> dict[str, torch.Tensor]:
    """Mean squared gradients shipped with a model, checked against its parameters."""
    model_dir = Path(model_dir)
    verify_hash(model_dir, config or read_config(model_dir), MSG_FILE)
    msg = {k: v.float() for k, v in load_tensors(model_dir / MSG_FILE).items()}  # stored in float32 or bfloat16
    for name, p in model.named_parameters():
        if name in msg and msg[name].shape != p.shape:
            raise ModelFileError(f"{model_dir / MSG_FILE}: {name} has shape {tuple(msg[name].shape)}, expected {tuple(p.shape)}")
    return msg
