"""What the optional extras bring, and the one error for a feature whose extra is not installed.

The base install (``pip install dasher-rnn``) writes, predicts and adapts on numpy and onnxruntime alone. PyTorch
comes with the ``train`` extra (``TORCH_INSTALL``): training, ONNX export, the research cells, the state adapters,
the torch and CUDA predictor backends, and the torch adaptation engine. Nothing imports torch until one of those is
used; ``require_torch`` is how they import it, so that its absence says which extra installs it.
"""

from __future__ import annotations

import sys
from types import ModuleType

TORCH_EXTRA = "train"
TORCH_INSTALL = f"pip install 'dasher-rnn[{TORCH_EXTRA}]'"  # the extra that brings PyTorch


class TorchMissing(ImportError, ValueError):
    """Something needs PyTorch, which this installation lacks; the message says which extra installs it. A
    ValueError too, so that the front ends report it as they report a setting they cannot honour."""


def torch_available() -> bool:
    """Whether PyTorch can be imported (imports it when it can)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def require_torch(what: str) -> ModuleType:
    """``torch``, or ``TorchMissing`` saying that ``what`` needs PyTorch and which extra installs it."""
    try:
        import torch
    except ImportError:
        raise TorchMissing(f"{what} needs PyTorch, which is not installed: {TORCH_INSTALL} installs it") from None
    return torch


def set_torch_threads(threads: int, load: bool = False) -> None:
    """PyTorch's CPU threads, where this process uses PyTorch: set when torch is already imported, or, with
    ``load``, imported for it where it is installed. Nothing otherwise (more threads than cores fight whatever else
    the machine runs)."""
    torch = sys.modules.get("torch")
    if torch is None and load and torch_available():
        torch = sys.modules["torch"]
    if torch is not None:
        torch.set_num_threads(threads)
