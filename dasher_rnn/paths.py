"""Where the package's data lives: the alphabets, icons, samples and training mixes (``assets``) and the shipped
models (``models``). In the repository they are folders at its top, beside ``dasher_rnn/``; the wheel (and the
bundle built from it) carries them inside the package, as ``dasher_rnn/assets`` and ``dasher_rnn/models``
(setup.py maps them there). ``data_dir`` finds either, so a checkout and an install find them the same way, from any
working folder; every user of these folders goes through it (the names below)."""

from importlib import resources
from pathlib import Path

# the checkout: the folder above the package, recognised by its pyproject.toml
_CHECKOUT = Path(__file__).resolve().parent.parent


def data_dir(name: str) -> Path:
    """The data folder ``name`` (``"assets"`` or ``"models"``) as a real path (model files are opened by name:
    safetensors, onnxruntime): inside the installed package (a wheel, the bundle), else at the top of the checkout
    this package runs from."""
    installed = resources.files("dasher_rnn") / name
    if isinstance(installed, Path) and installed.is_dir():
        return installed
    checkout = _CHECKOUT / name
    if (_CHECKOUT / "pyproject.toml").is_file() and checkout.is_dir():
        return checkout
    if not isinstance(installed, Path):  # a zipped install: nothing to open by name
        raise RuntimeError(f"dasher_rnn's data folder {name!r} is not on the file system ({installed!r}); "
                           "install the package unzipped (pip and pipx do)")
    raise RuntimeError(f"dasher_rnn's data folder {name!r} is missing: neither {installed} (an installed package) "
                       f"nor {checkout} (a checkout) is there; reinstall the package")


ASSETS_DIR = data_dir("assets")
MODELS_DIR = data_dir("models")
# The shipped default model: the one place that names its folder.
DEFAULT_MODEL_DIR = MODELS_DIR / "english-lstm"
