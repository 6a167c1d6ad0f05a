import os
import random
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

SUBJECTS = ["I", "We", "You", "My sister", "The nurse", "Tom", "Our dog", "Everyone"]
VERBS = ["want", "need", "like", "would love", "have", "see", "can hear", "forgot"]
OBJECTS = ["some water", "a cup of tea", "the blue blanket", "more time", "my glasses", "the radio",
           "a short walk", "dinner at six"]
ENDINGS = [".", "!", "?", " please.", " now.", " today."]


def make_sentences(n: int, seed: int = 0) -> list[str]:
    """Small, regular English-like messages written for the tests."""
    rng = random.Random(seed)
    return [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}{rng.choice(ENDINGS)}" for _ in range(n)]


@pytest.fixture(scope="session", autouse=True)
def _few_threads():
    torch.set_num_threads(1)


# Where the app keeps a person's things, each redirected by the environment: its own variables (profiles, settings,
# journal, documents) and the XDG folders platformdirs reads (the data, config and state folders, and the documents
# folder through user-dirs.dirs), so that code that asks platformdirs directly is covered too.
USER_FOLDERS = {"DASHER_RNN_PROFILES": "data/dasher-rnn/profiles", "DASHER_RNN_CONFIG": "config/dasher-rnn/settings.json",
                "DASHER_RNN_JOURNAL": "data/dasher-rnn/journal.json", "DASHER_RNN_DOCUMENTS": "Documents/dasher-rnn",
                "XDG_DATA_HOME": "data", "XDG_CONFIG_HOME": "config", "XDG_STATE_HOME": "state"}


def own_folders(home: Path) -> dict[str, str]:
    """The environment that puts every folder of the person's under ``home`` (made here, empty)."""
    env = {name: str(home / sub) for name, sub in USER_FOLDERS.items()}
    (home / "config").mkdir(parents=True, exist_ok=True)
    (home / "Documents").mkdir(exist_ok=True)
    (home / "config" / "user-dirs.dirs").write_text(f'XDG_DOCUMENTS_DIR="{home / "Documents"}"\n')
    env["XDG_DOCUMENTS_DIR"] = str(home / "Documents")
    return env


def pytest_configure(config) -> None:
    """Before anything is collected or any session fixture runs: the session's own folders (the fixture below then
    gives each test its own), inherited by every program a test starts."""
    home = Path(tempfile.mkdtemp(prefix="dasher-rnn-tests-home-"))
    os.environ.update(own_folders(home))
    config.add_cleanup(lambda: shutil.rmtree(home, ignore_errors=True))


@pytest.fixture(autouse=True)
def _own_user_folders(tmp_path_factory, monkeypatch) -> Path:
    """Every test gets its own profiles, settings, journal and documents folders: a test never reads or writes the
    person's own (a journal of unsaved text from `make run` once showed its restore bar in a test's window). A test
    that sets one of these variables itself overrides it for itself."""
    home = tmp_path_factory.mktemp("home")
    for name, value in own_folders(home).items():
        monkeypatch.setenv(name, value)
    return home


@pytest.fixture
def settings_path(tmp_path, monkeypatch) -> Path:
    """The app's settings file for this test (``DASHER_RNN_CONFIG``), not yet written."""
    path = tmp_path / "settings.json"
    monkeypatch.setenv("DASHER_RNN_CONFIG", str(path))
    return path


@pytest.fixture(scope="module")
def sender() -> Iterator[socket.socket]:
    """A UDP socket that sends datagrams to an input under test (one a module: Hypothesis's tests share it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        yield sock


@pytest.fixture(scope="session")
def tiny_corpus_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("corpus")
    for i in range(6):
        (folder / f"doc{i}.txt").write_text("\n".join(make_sentences(150, seed=i)) + "\n")
    return folder


TINY_ARGS = dict(embed=8, hidden=32, layers=1, cell="lstm", seed=0)


def tiny_trainer(corpus_dir: Path, out: Path, steps: int, **overrides):
    from dasher_rnn.alphabet import load_alphabet
    from dasher_rnn.lm.corpus import SourceSpec, build_corpus
    from dasher_rnn.lm.start_models import new_model
    from dasher_rnn.lm.train import TrainConfig, Trainer

    alphabet = load_alphabet("english")
    corpus = build_corpus([SourceSpec("tiny", [str(corpus_dir)], documents="file")], alphabet, out / "corpus",
                          val_fraction=0.2)
    settings = dict(steps=steps, batch_size=8, seq_len=32, lr=1e-2, warmup=5, eval_every=10_000,
                    checkpoint_every=10_000, val_chars=2000, span_batches=8)
    tc = TrainConfig(**{**settings, **overrides})
    model = new_model(alphabet, **TINY_ARGS)
    return Trainer(model, corpus, tc, out, torch.device("cpu"))


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_corpus_dir, tmp_path_factory) -> Path:
    """A tiny model trained, given a learned state, MS_g and an ONNX export, as `train` does."""
    from dasher_rnn.lm.train import finish_model

    out = tmp_path_factory.mktemp("run")
    trainer = tiny_trainer(tiny_corpus_dir, out, steps=150)
    trainer.run(progress=False)
    finish_model(trainer, out / "model", log=lambda *_: None)
    return out / "model"


def writer_source(model: str = "uniform", trained_ppm=None, **config):
    """The zoom's source over a Writer built as the app builds one (``trained_ppm``: PPM to start from)."""
    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.zoom.sources import WriterSource

    return WriterSource(build_writer(WriterConfig(model=model, **config), trained_ppm=trained_ppm))


@contextmanager
def xvfb_display() -> Iterator[str]:
    """A private X server (``:N``) while the block runs; skips the test where Xvfb is not installed or cannot start."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (Debian: apt-get install xvfb; `make test` installs it as root)")
    read, write = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as f:
        number = f.readline().strip()  # Xvfb writes its display number once it accepts connections
    if not number:
        proc.kill()
        pytest.skip("Xvfb did not start")
    try:
        yield f":{number}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
