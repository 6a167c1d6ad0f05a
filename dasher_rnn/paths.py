"""Where the package's data files live: the alphabets, samples and training mix (``assets``) and the shipped
model, package data inside ``dasher_rnn`` found through ``importlib.resources``, so that an installed wheel finds
them as a checkout does, from any working folder."""

from importlib import resources
from pathlib import Path


def _package_dir(name: str) -> Path:
    """A data folder of the package as a real path (model files are opened by name: safetensors, onnxruntime)."""
    found = resources.files("dasher_rnn") / name
    if not isinstance(found, Path):  # a zipped install: nothing to open by name
        raise RuntimeError(f"dasher_rnn's data folder {name!r} is not on the file system ({found!r}); "
                           "install the package unzipped (pip and pipx do)")
    return found


ASSETS_DIR = _package_dir("assets")
MODELS_DIR = _package_dir("models")
# The shipped default model: the one place that names its folder.
DEFAULT_MODEL_DIR = MODELS_DIR / "english-lstm"
