"""The wheel as a user gets it: built from the sources, installed (not editable) into a fresh virtual
environment, and run from a folder that is not the checkout.

So that this takes seconds, not minutes, the fresh environment installs only the wheel (``--no-deps``) and finds
the dependencies (torch, PySide6, onnxruntime...) in the environment running the tests, through a ``.pth``
file: installing them again would copy about a gigabyte, and an unpinned torch would download the CUDA build.
The package itself, its data and its ``dasher-rnn`` script all come from the wheel; the test checks that the
installed code, not the checkout, is what runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from dasher_rnn.paths import ASSETS_DIR, DEFAULT_MODEL_DIR

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.wheel


def _run(cmd: list[str | Path], cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def _parent_site_dirs() -> list[str]:
    """Where the running interpreter finds installed packages (venv, system, user), not the checkout."""
    return [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]


def user_env(home: Path) -> dict[str, str]:
    """The environment of a user somewhere else: no PYTHONPATH to the checkout, config and data in ``home``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"),
               XDG_CACHE_HOME=str(home / "cache"), DASHER_RNN_PROFILES=str(home / "profiles"),
               DASHER_RNN_CONFIG=str(home / "config" / "settings.json"))
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """(the wheel, the fresh environment's bin folder, a user's environment variables)."""
    tmp = tmp_path_factory.mktemp("wheel")
    env = user_env(tmp / "home")
    # a copy of what goes into the wheel, so that the build leaves no build/ or egg-info in the checkout (and no
    # stale build/lib from an earlier build can slip files into it)
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "dasher_rnn", src / "dasher_rnn", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-cache-dir",
          "--disable-pip-version-check", "-q", "-w", dist, src], cwd=src, env=env)
    (wheel,) = dist.glob("dasher_rnn-*.whl")

    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp, env=env)
    python = venv / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, env=env, check=True).stdout.strip()
    (Path(purelib) / "_test_dependencies.pth").write_text("\n".join(_parent_site_dirs()) + "\n")
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
          "--disable-pip-version-check", "-q", wheel], cwd=tmp, env=env)
    assert sysconfig.get_paths()["purelib"] != purelib
    return wheel, venv / "bin", env


def test_wheel_carries_the_shipped_model_and_the_assets(installed):
    wheel, _, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in (DEFAULT_MODEL_DIR, ASSETS_DIR):
        files = [f for f in folder.rglob("*") if f.is_file() and "__pycache__" not in f.parts]
        assert files
        for f in files:
            assert f"dasher_rnn/{f.relative_to(REPO / 'dasher_rnn').as_posix()}" in names
    for required in ("config.json", "weights.safetensors", "model.onnx", "MODEL_CARD.md"):
        assert f"dasher_rnn/models/english-lstm/{required}" in names
    assert "dasher_rnn/assets/alphabets/english.json" in names


def test_installed_package_is_the_wheel_not_the_checkout(installed, tmp_path):
    _, bin_dir, env = installed
    done = _run([bin_dir / "python", "-c", "import dasher_rnn, dasher_rnn.paths as p; "
                 "print(dasher_rnn.__file__); print(p.DEFAULT_MODEL_DIR)"], cwd=tmp_path, env=env)
    package_file, model_dir = map(Path, done.stdout.split())
    venv = bin_dir.parent
    assert package_file.is_relative_to(venv) and model_dir.is_relative_to(venv)
    assert (model_dir / "weights.safetensors").is_file()


def test_installed_eval_from_another_folder(installed, tmp_path):
    _, bin_dir, env = installed
    (tmp_path / "phrases.txt").write_text("hello, how are you\nI would like a cup of tea.\n")
    done = _run([bin_dir / "dasher-rnn", "eval", "phrases.txt"], cwd=tmp_path, env=env)
    assert str(bin_dir.parent) in done.stdout  # "RNN lstm ... from <the venv's dasher_rnn/models/english-lstm>"
    overall = next(line for line in done.stdout.splitlines() if line.startswith("overall"))
    bits_per_char, chars = float(overall.split()[1]), int(overall.split()[2])
    assert chars == len("hello, how are you") + len("I would like a cup of tea.")
    assert 0.5 < bits_per_char < 4.0  # the shipped English model (about 1.8 here), not a uniform guess (6+)


def test_installed_simulate_from_another_folder(installed, tmp_path):
    _, bin_dir, env = installed
    done = _run([bin_dir / "dasher-rnn", "simulate", "--text", "hello there", "--json", "--no-progress", "--render"],
                cwd=tmp_path, env=env)
    report = json.loads(done.stdout)
    assert report["model"] == "hybrid" and report["rendered"] is True
    assert report["phrases"] == 1 and report["failed"] == 0
    assert report["characters"] == len("hello there")
    assert report["bits_per_char"] < 4.0
