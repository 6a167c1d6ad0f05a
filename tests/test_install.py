"""The wheel as a user gets it: built from the sources, installed (not editable) into a fresh virtual
environment, and run from a folder that is not the checkout.

So that this takes seconds, not minutes, the fresh environment installs only the wheel (``--no-deps``) and finds
the dependencies (torch, PySide6, onnxruntime...) in the environment running the tests, through a ``.pth``
file: installing them again would copy about a gigabyte, and an unpinned torch would download the CUDA build.
The package itself, its data and its ``dasher-rnn`` script all come from the wheel; the test checks that the
installed code, not the checkout, is what runs.

The base install has no PyTorch (it is the ``train`` extra). A second environment is given every installed package
but torch: a folder of links to the entries of this environment's site-packages, less torch's own (``torch``,
``torchgen``, ``functorch`` and torch's metadata), so that torch is not on its path at all, as where it was never
installed; in it the app path runs: ``eval``, ``simulate``, ``serve``, ``adapt``, and the window writing and
learning.
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

from dasher_rnn.paths import ASSETS_DIR, DEFAULT_MODEL_DIR, MODELS_DIR

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
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of what goes into it."""
    tmp = tmp_path_factory.mktemp("wheel")
    env = user_env(tmp / "home")
    # a copy of what goes into the wheel, so that the build leaves no build/ or egg-info in the checkout (and no
    # stale build/lib from an earlier build can slip files into it)
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO / name, src / name)
    # the package, and the models (with their training checkpoints, which the wheel leaves out) and the assets from
    # the top of the repository, which the wheel carries inside the package
    for name in ("dasher_rnn", "models", "assets"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-cache-dir",
          "--disable-pip-version-check", "-q", "-w", dist, src], cwd=src, env=env)
    (built,) = dist.glob("dasher_rnn-*.whl")
    return built


def fresh_venv(wheel: Path, tmp: Path, dependencies: list[str], editable: bool = False) -> tuple[Path, dict[str, str]]:
    """A fresh virtual environment in ``tmp`` with the wheel installed (or, ``editable``, the source folder ``wheel``
    installed editable, as `make install` installs the checkout) and ``dependencies`` (folders of installed
    packages) on its path through a ``.pth``; (its bin folder, a user's environment variables)."""
    env = user_env(tmp / "home")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp, env=env)
    python = venv / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, env=env, check=True).stdout.strip()
    (Path(purelib) / "_test_dependencies.pth").write_text("\n".join(dependencies) + "\n")
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
          "--disable-pip-version-check", "-q", *(["--no-build-isolation", "-e"] if editable else []), wheel],
         cwd=tmp, env=env)
    assert sysconfig.get_paths()["purelib"] != purelib
    return venv / "bin", env


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """(the wheel, the fresh environment's bin folder, a user's environment variables)."""
    bin_dir, env = fresh_venv(wheel, tmp_path_factory.mktemp("venv"), _parent_site_dirs())
    return wheel, bin_dir, env


def test_the_checkout_keeps_the_models_and_the_assets_at_its_top():
    assert (MODELS_DIR, ASSETS_DIR) == (REPO / "models", REPO / "assets")
    assert DEFAULT_MODEL_DIR == REPO / "models" / "english-lstm"
    assert not (REPO / "dasher_rnn" / "models").exists() and not (REPO / "dasher_rnn" / "assets").exists()


def test_wheel_carries_the_shipped_models_and_the_assets_not_the_checkpoints(installed):
    wheel, _, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = sorted(p for p in MODELS_DIR.iterdir() if (p / "config.json").is_file())
    assert DEFAULT_MODEL_DIR in shipped and len(shipped) >= 2
    for folder in (*shipped, ASSETS_DIR):
        files = [f for f in folder.rglob("*") if f.is_file() and "__pycache__" not in f.parts]
        assert files
        for f in files:
            assert f"dasher_rnn/{f.relative_to(REPO).as_posix()}" in names
    # what the predictor was trained as (models/checkpoints/) stays in the repository
    assert (MODELS_DIR / "checkpoints").is_dir()
    assert not any("checkpoint" in name for name in names)
    assert not any(name.startswith(("models/", "assets/")) for name in names)
    for required in ("config.json", "weights.safetensors", "msg.safetensors", "model.int8.onnx", "MODEL_CARD.md"):
        assert f"dasher_rnn/models/english-lstm/{required}" in names
    # the float32 export is not shipped: the app serves the int8 one (docs/history/gpu-runbook.md)
    assert not any(name.endswith("/model.onnx") for name in names)
    assert "dasher_rnn/assets/alphabets/english.json" in names


def test_installed_package_is_the_wheel_not_the_checkout(installed, tmp_path):
    _, bin_dir, env = installed
    done = _run([bin_dir / "python", "-c", "import dasher_rnn, dasher_rnn.paths as p; "
                 "print(dasher_rnn.__file__); print(p.DEFAULT_MODEL_DIR); print(p.ASSETS_DIR)"], cwd=tmp_path, env=env)
    package_file, model_dir, assets_dir = map(Path, done.stdout.split())
    venv = bin_dir.parent
    assert package_file.is_relative_to(venv) and model_dir.is_relative_to(venv)
    # inside the installed package (the checkout keeps them at its top: dasher_rnn/paths.py finds either)
    assert model_dir == package_file.parent / "models" / "english-lstm"
    assert assets_dir == package_file.parent / "assets" and (assets_dir / "alphabets" / "english.json").is_file()
    assert (model_dir / "weights.safetensors").is_file()


def test_an_editable_install_finds_the_models_and_the_assets_at_the_top_of_its_checkout(wheel, tmp_path):
    """`make install` installs the checkout editable and `make run` runs its `dasher-rnn`: the package is the
    checkout's, its data the checkout's top-level models/ and assets/ (here a copy of the checkout, the wheel's
    source, so that the install writes nothing into this one)."""
    checkout = wheel.parent.parent / "src"
    (tmp_path / "editable").mkdir()
    bin_dir, env = fresh_venv(checkout, tmp_path / "editable", _parent_site_dirs(), editable=True)
    done = _run([bin_dir / "python", "-c", "import dasher_rnn, dasher_rnn.paths as p; "
                 "print(dasher_rnn.__file__); print(p.DEFAULT_MODEL_DIR); print(p.ASSETS_DIR)"], cwd=tmp_path, env=env)
    assert list(map(Path, done.stdout.split())) == [checkout / "dasher_rnn" / "__init__.py",
                                                    checkout / "models" / "english-lstm", checkout / "assets"]
    (tmp_path / "phrases.txt").write_text("hello, how are you\n")
    done = _run([bin_dir / "dasher-rnn", "eval", "phrases.txt"], cwd=tmp_path, env=env)
    assert str(checkout / "models" / "english-lstm") in done.stdout


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


# -- the base install, without PyTorch --------------------------------------------------------------------------

TORCH_ENTRIES = ("torch", "torchgen", "functorch")  # torch's packages; its metadata is torch-VERSION.dist-info


def _is_torchs(name: str) -> bool:
    return name in TORCH_ENTRIES or name.split("-")[0] in TORCH_ENTRIES and name.endswith((".dist-info", ".egg-info"))


def torch_free_dependencies(folder: Path) -> Path:
    """A folder of links to every entry of this environment's site-packages but torch's (and the checkout's
    editable dasher_rnn: the fresh environment has the wheel's)."""
    folder.mkdir()
    for site in _parent_site_dirs():
        for entry in Path(site).iterdir():
            skip = _is_torchs(entry.name) or entry.name.startswith(("dasher_rnn", "__editable__", "_dasher_rnn"))
            if not skip and entry.suffix != ".pth" and not (folder / entry.name).exists():
                (folder / entry.name).symlink_to(entry)
    return folder


@pytest.fixture(scope="module")
def light(wheel, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """(the bin folder of a fresh environment with the wheel and every dependency but torch, a user's variables)."""
    tmp = tmp_path_factory.mktemp("light")
    bin_dir, env = fresh_venv(wheel, tmp, [str(torch_free_dependencies(tmp / "dependencies"))])
    return bin_dir, env


NO_TORCH = ("import importlib.util, sys\n"
            "assert importlib.util.find_spec('torch') is None, 'torch is installed here'\n")


def test_the_light_environment_has_no_torch_and_its_dependencies_declare_none(light, tmp_path):
    bin_dir, env = light
    done = _run([bin_dir / "python", "-c", NO_TORCH + "import importlib.metadata as m, dasher_rnn\n"
                 "print(dasher_rnn.__file__)\n"
                 "print(m.requires('dasher-rnn'))\n"], cwd=tmp_path, env=env)
    package, requires = done.stdout.splitlines()
    assert Path(package).is_relative_to(bin_dir.parent)
    base = [r for r in eval(requires) if "extra ==" not in r]  # the requirements pip installs without an extra
    assert not any(r.startswith(("torch", "onnx>", "onnx ")) for r in base), base
    assert any(r.startswith("torch") and 'extra == "train"' in r for r in eval(requires))


def test_without_torch_eval_and_simulate_the_shipped_model(light, tmp_path):
    bin_dir, env = light
    (tmp_path / "phrases.txt").write_text("hello, how are you\nI would like a cup of tea.\n")
    done = _run([bin_dir / "dasher-rnn", "eval", "phrases.txt", "--adaptive"], cwd=tmp_path, env=env)
    assert "onnxruntime-cpu-int8" in done.stdout and "in numpy" in done.stdout  # adapting without torch
    overall = next(line for line in done.stdout.splitlines() if line.startswith("overall"))
    assert 0.5 < float(overall.split()[1]) < 4.0
    done = _run([bin_dir / "dasher-rnn", "simulate", "--text", "hello there", "--json", "--no-progress", "--render"],
                cwd=tmp_path, env=env)
    report = json.loads(done.stdout)
    assert report["failed"] == 0 and report["characters"] == len("hello there") and report["bits_per_char"] < 4.0


def test_without_torch_serve_answers_a_prediction(light, tmp_path):
    import httpx

    bin_dir, env = light
    server = subprocess.Popen([str(bin_dir / "dasher-rnn"), "serve", "--port", "0"], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()  # "dasher-rnn serve: http://127.0.0.1:PORT/v1 ..." once it is ready
        assert line.startswith("dasher-rnn serve: http://"), line + (server.stderr.read() if server.poll() else "")
        url = line.split()[2]
        answer = httpx.post(f"{url}/predict", json={"contexts": ["I would like a cup of te"]}, timeout=60)
        assert answer.status_code == 200
        (log_probs,) = answer.json()["distributions"]
        alphabet = httpx.get(f"{url}/model", timeout=60).json()["alphabet"]["symbols"]
        assert alphabet[max(range(len(log_probs)), key=log_probs.__getitem__)] == "a"  # "tea"
    finally:
        server.terminate()
        server.wait(60)


def test_without_torch_adapt_teaches_a_profile(light, tmp_path):
    bin_dir, env = light
    lines = [f"Zofia and Kazik bring {food} on {day}." for food in ("kefir", "pierogi", "bigos", "rye bread")
             for day in ("Monday", "Thursday", "Sunday")] * 4
    (tmp_path / "mine.txt").write_text("\n".join(lines) + "\n")
    (tmp_path / "probe.txt").write_text("Zofia and Kazik bring bigos on Sunday.\n")
    done = _run([bin_dir / "dasher-rnn", "adapt", "mine.txt", "--profile", "zofia", "--epochs", "2", "--threads", "1",
                 "--no-progress", "--json"], cwd=tmp_path, env=env)
    report = json.loads(done.stdout)
    assert report["held_out_bpc_after"]["overall"] < report["held_out_bpc_before"]["overall"]
    assert report["ppm"]["characters_learned"] > 0
    scores = []
    for extra in ([], ["--profile", "zofia"]):
        done = _run([bin_dir / "dasher-rnn", "eval", "--model", "hybrid", "--static", "probe.txt", "--json", *extra],
                    cwd=tmp_path, env=env)
        scores.append(json.loads(done.stdout)["overall"]["bits_per_char"])
    assert scores[1] < scores[0]


WINDOW = NO_TORCH + r"""
import json, os
from pathlib import Path

from PySide6.QtWidgets import QApplication

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.adapt.evaluation import AdaptConfig
from dasher_rnn.adapt.profiles import ProfileStore, decode_weights
from dasher_rnn.lm.model_io import open_model
from dasher_rnn.paths import DEFAULT_MODEL_DIR
from dasher_rnn.settings import SettingsStore
from dasher_rnn.ui.app import _application
from dasher_rnn.ui.window import MainWindow
from dasher_rnn.zoom.controller import WritingController
from dasher_rnn.zoom.simulate import target_pointer, wait_for_answers
from dasher_rnn.zoom.sources import WriterSource

PHRASE = "Zofia brings kefir."


def bits(writer, text):
    # what the writer predicts for text from a message start: bits of each character in its context
    alphabet = writer.alphabet
    contexts = [writer.root("")]
    for ch in text[:-1]:
        contexts.append(writer.child(contexts[-1], alphabet.index(ch)))
    answers = writer.request(contexts).result(60)
    total = -sum(float(d.log_probs[alphabet.index(ch)]) for d, ch in zip(answers, text))
    writer.release(contexts[0])
    return total / 0.6931471805599453


app = _application()
store = SettingsStore(Path(os.environ["DASHER_RNN_CONFIG"]))
prefs = store.load().updated(speed_bps=3.0, auto_speed=False, rest_stop_seconds=0.0, tutorial_done=True)
writer = build_writer(WriterConfig(model="rnn", profile="anna", adaptation=AdaptConfig(segment=5)))
controller = WritingController(WriterSource(writer, prefs.start_lower_share), prefs.controller_config())
window = MainWindow(controller, store, prefs, start_timer=False)
window.resize(760, 700)
window.show()
app.processEvents()
before = bits(writer, PHRASE)
zoom, view = controller.zoom, window.view
controller.start()
for _ in range(6000):  # written as a user steers, a frame at a time
    wait_for_answers(zoom)
    view.set_pointer_override(view.viewport().to_screen(*target_pointer(zoom, zoom.context + PHRASE)))
    window.writing.tick(1 / 30)
    app.processEvents()
    if zoom.output == PHRASE:
        break
written = zoom.output
controller.stop()
for _ in range(4):  # the same message again, as learned text (what the window commits as boxes leave the screen)
    writer.new_message()
    writer.commit(PHRASE)
writer.flush()
status = writer.status()
after = bits(writer, PHRASE)
window.close()  # saves the profile
saved = ProfileStore().load("anna")
folder = open_model(DEFAULT_MODEL_DIR)
shapes = {n: w.shape for n, w in folder.weights.items() if n not in ("h0", "c0")}
adapted = decode_weights(saved, shapes, folder.base_hash)
import sys
print(json.dumps({"written": written, "before": before, "after": after, "updates": status.updates,
                  "engine": writer.session.engine, "backend": writer.service.backend.name,
                  "changed": max(float(abs(adapted[n] - folder.weights[n]).max()) for n in adapted),
                  "torch_loaded": "torch" in sys.modules and sys.modules["torch"] is not None}))
"""


def test_without_torch_the_window_writes_and_learns(light, tmp_path):
    bin_dir, env = light
    done = _run([bin_dir / "python", "-c", WINDOW], cwd=tmp_path, env=env)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["written"] == "Zofia brings kefir."
    assert report["engine"] == "numpy" and report["backend"] == "onnxruntime-cpu-int8" and not report["torch_loaded"]
    assert report["updates"] >= 10, report
    assert report["changed"] > 1e-4, report  # the profile holds adapted weights
    assert report["after"] < 0.8 * report["before"], report  # and they predict what was written better


def test_without_torch_the_app_command_opens_the_window_and_paints_a_frame(light, tmp_path):
    """``dasher-rnn app`` as the command line runs it, offscreen, until its first zoom frame (bench/startup_bench.py's
    child): it never loads torch."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("startup_bench", REPO / "bench" / "startup_bench.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bin_dir, env = light
    run = bench.one_run(["--settings", str(tmp_path / "settings.json")], env, 300, python=str(bin_dir / "python"),
                        cwd=tmp_path)
    assert run["exit_code"] == 0 and run["torch_loaded"] is False
