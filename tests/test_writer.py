"""The Writer as every front end sees it: eval scores exactly what the app predicts, profiles move between
machines whole, and a save killed at any moment leaves a profile that loads."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest
import torch

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.adapt.profiles import ProfileStore
from dasher_rnn.adapt.writer import WriterError
from dasher_rnn.cli import main
from dasher_rnn.lm.protocol import DASHER_TOTAL
from dasher_rnn.zoom.sources import WriterSource

from .conftest import make_sentences

HISTORY = ["Grandma Zofia brings kefir on Thursday.", "Zofia said the kefir was cold.", "Ask Zofia about Thursday."]


def adapted_profile(model_dir: Path, profiles: Path, model: str, name: str = "p") -> None:
    """A profile that learned HISTORY in the app's way (committed message by message, then saved)."""
    writer = build_writer(WriterConfig(model=model, model_dir=model_dir, profile=name, profiles_dir=profiles,
                                       backend="torch"))
    for message in HISTORY:
        writer.commit(message)
        writer.new_message()
    writer.close()


def app_bits(source: WriterSource, lines: list[str], adaptive: bool, exact: bool = False) -> float:
    """Bits/char of ``lines`` through the zoom's own source: each character's box size, from a message start,
    one context at a time as the zoom descends (``exact``: the probability behind the box size)."""
    bits = chars = 0
    alphabet = source.alphabet
    for line in lines:
        handle, contexts = source.start(""), []
        for ch in line:
            if exact:
                probs = source.writer.request([handle]).result(30)[0].probs
                bits -= math.log2(probs[alphabet.index(ch)] / probs.sum())
            else:
                answer: Future = Future()
                source.request(handle, 1.0, answer.set_result)
                bits += math.log2(DASHER_TOTAL / answer.result(30)[alphabet.index(ch)])
            contexts.append(handle)
            handle = source.child(handle, alphabet.index(ch))
        chars += len(line)
        source.release(contexts[0])
        if adaptive:  # the message is committed once written, as the zoom commits it
            for ch, context in zip(line, contexts, strict=True):
                source.commit(alphabet.index(ch), context)
            source.new_message()
            source.writer.flush()
    return bits / chars


@pytest.mark.parametrize("adaptive", [False, True])
def test_eval_of_a_hybrid_profile_is_what_the_app_predicts(tiny_model_dir, tmp_path, capsys, adaptive):
    adapted_profile(tiny_model_dir, tmp_path / "profiles", "hybrid")
    lines = make_sentences(12, seed=5) + ["Zofia, kefir on Thursday?"]
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("\n".join(lines) + "\n")
    common = ["--model", "hybrid", "--model-dir", str(tiny_model_dir), "--profile", "p",
              "--profiles-dir", str(tmp_path / "profiles"), "--json", str(phrases)]
    assert main(["eval", "--adaptive" if adaptive else "--static", *common]) == 0
    reported = json.loads(capsys.readouterr().out)["overall"]["bits_per_char"]
    source = WriterSource(build_writer(WriterConfig(model="hybrid", model_dir=tiny_model_dir, profile="p",
                                                    profiles_dir=tmp_path / "profiles", adapt=adaptive)))
    try:
        expected = app_bits(source, lines, adaptive)
    finally:
        source.writer.close(save=False)
    assert reported == pytest.approx(expected, abs=1e-4)  # the report rounds to 4 decimals
    # and the profile's PPM is in it: without the profile the same text costs more
    assert main(["eval", "--static", *[a for a in common if a not in ("--profile", "p")]]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["bits_per_char"] > reported


def test_eval_through_the_writer_matches_the_app_path_exactly(tiny_model_dir, tmp_path):
    """To 1e-6 bits/char on the probabilities. (Box sizes are integers: eval asks for many messages' contexts in
    one batch and the zoom for a few at a time, and a last-bit difference in a batched step can move one box by
    one unit of 65536, so the integer figures agree to about 1e-5.)"""
    from dasher_rnn.evaluate import score_messages

    adapted_profile(tiny_model_dir, tmp_path, "hybrid")
    lines = make_sentences(10, seed=7)
    config = WriterConfig(model="hybrid", model_dir=tiny_model_dir, profile="p", profiles_dir=tmp_path, adapt=False)
    writer = build_writer(config)
    exact, floored = score_messages(writer, lines, floor=0), score_messages(writer, lines)
    writer.close(save=False)
    source = WriterSource(build_writer(config))
    try:
        assert exact.bits_per_char == pytest.approx(app_bits(source, lines, False, exact=True), abs=1e-6)
        assert floored.bits_per_char == pytest.approx(app_bits(source, lines, False), abs=1e-4)
    finally:
        source.writer.close(save=False)


@pytest.mark.parametrize("model", ["rnn", "ppm", "hybrid"])
def test_an_exported_then_imported_profile_predicts_identically(tiny_model_dir, tmp_path, model):
    profiles = tmp_path / "profiles"
    adapted_profile(tiny_model_dir, profiles, model, "home")
    store = ProfileStore(profiles)
    exported = store.export("home", tmp_path / "usb")
    other = ProfileStore(tmp_path / "other-machine")
    other.import_(exported, "moved")
    assert set(other.load("moved").parts) == set(store.load("home").parts)

    def distributions(folder: Path, name: str) -> np.ndarray:
        writer = build_writer(WriterConfig(model=model, model_dir=tiny_model_dir, profile=name, profiles_dir=folder,
                                           adapt=False, backend="torch"))
        try:
            assert writer.status().notice is None
            contexts = [writer.root("")]
            for ch in "Zofia brings kef":
                contexts.append(writer.child(contexts[-1], ch))
            return np.stack([d.log_probs for d in writer.request(contexts).result()])
        finally:
            writer.close(save=False)

    moved, home = distributions(other.folder, "moved"), distributions(profiles, "home")
    np.testing.assert_array_equal(moved, home)
    fresh = build_writer(WriterConfig(model=model, model_dir=tiny_model_dir, adapt=False, backend="torch"))
    root = fresh.root("Zofia brings kef")
    assert not np.array_equal(fresh.request([root]).result()[0].log_probs, home[-1])  # the profile matters
    fresh.close()


SAVER = """
import sys, time
from dasher_rnn.adapt.profiles import ProfileStore
store = ProfileStore(sys.argv[1])
rnn, ppm = open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read()
base = open(sys.argv[4]).read()
print("ready", flush=True)
n = 0
while True:
    n += 1
    store.save("victim", {"rnn": rnn, "ppm": ppm} if n % 3 else {"ppm": ppm}, {"characters_adapted": n}, base)
"""


def test_a_profile_survives_being_killed_at_random_points_while_saving(tiny_model_dir, tmp_path):
    """Several dozen SIGKILLs at random moments of saves that write every part: the profile always loads."""
    profiles = tmp_path / "profiles"
    adapted_profile(tiny_model_dir, profiles, "hybrid", "victim")
    store = ProfileStore(profiles)
    saved = store.load("victim")
    parts = {}
    for part in ("rnn", "ppm"):
        parts[part] = tmp_path / f"{part}.bin"
        parts[part].write_bytes(saved.parts[part])
    (tmp_path / "base").write_text(saved.info["base_model_hash"])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    rng = random.Random(0)
    for _ in range(40):
        proc = subprocess.Popen([sys.executable, "-c", SAVER, str(profiles), str(parts["rnn"]), str(parts["ppm"]),
                                 str(tmp_path / "base")], stdout=subprocess.PIPE, env=env)
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.0, 0.05))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        loaded = store.load("victim")  # raises if the kill left anything unusable
        assert loaded.parts == saved.parts
    writer = build_writer(WriterConfig(model="hybrid", model_dir=tiny_model_dir, profile="victim",
                                       profiles_dir=profiles, backend="torch"))
    assert writer.status().notice is None and writer.status().characters_adapted > 0
    writer.close()
    left = {f.name for f in store.path("victim").iterdir()}
    assert len(left) <= 5  # profile.json and at most two versions of each part: nothing piles up


def test_the_writer_says_what_learns_and_refuses_what_it_cannot_do(tiny_model_dir):
    static = build_writer(WriterConfig(model="hybrid", model_dir=tiny_model_dir, adapt=False))
    try:
        assert static.status().learns == () and not static.status().adapting
        with pytest.raises(WriterError):
            static.set_adapting(True)
        assert static.save() is None  # no profile: nothing to save
    finally:
        static.close()
    adapting = build_writer(WriterConfig(model="hybrid", model_dir=tiny_model_dir))
    try:
        assert adapting.status().learns == ("rnn", "ppm", "mixing weights") and adapting.status().adapting
        adapting.set_adapting(False)
        assert not adapting.status().adapting
    finally:
        adapting.close()
    ppm = build_writer(WriterConfig(model="ppm"))
    assert ppm.status().learns == ("ppm",) and ppm.status().backend is None
    ppm.close()


def test_the_readme_python_example_runs_as_written(tmp_path):
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    start = readme.index("```python\n", readme.index("## Using the predictor from Python")) + len("```python\n")
    code = readme[start : readme.index("```", start)]
    env = {**os.environ, "DASHER_RNN_PROFILES": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "alice" / "profile.json").is_file()


def test_building_a_writer_reads_the_model_folder_once(tiny_model_dir, tmp_path, monkeypatch):
    from dasher_rnn.lm import model_io

    reads: list[str] = []
    for name in ("sha256_file", "load_arrays", "read_config"):
        real = getattr(model_io, name)
        monkeypatch.setattr(model_io, name, lambda path, *a, _real=real, _name=name, **k:
                            reads.append(f"{_name} {Path(path).name}") or _real(path, *a, **k))
    adapted_profile(tiny_model_dir, tmp_path, "hybrid")
    reads.clear()
    writer = build_writer(WriterConfig(model="hybrid", model_dir=tiny_model_dir, profile="p", profiles_dir=tmp_path))
    writer.close(save=False)
    assert sorted(reads) == ["load_arrays weights.safetensors", "read_config model", "sha256_file weights.safetensors"]


HOLDER = """
import sys
from dasher_rnn.adapt.compose import WriterConfig, build_writer
writer = build_writer(WriterConfig(model="ppm", profile="shared", profiles_dir=sys.argv[1]))
writer.commit("held by another program")
print("holding", flush=True)
sys.stdin.read()
"""


def test_two_programs_never_save_over_each_other(tiny_model_dir, tmp_path, capsys):
    from dasher_rnn.adapt.profiles import ProfileInUse

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, env=env)
    try:
        assert holder.stdout.readline().strip() == b"holding"
        with pytest.raises(ProfileInUse, match="open in another program"):
            build_writer(WriterConfig(model="ppm", profile="shared", profiles_dir=tmp_path))
        corpus = tmp_path / "mine.txt"
        corpus.write_text("\n".join(make_sentences(30)))
        assert main(["adapt", str(corpus), "--profile", "shared", "--profiles-dir", str(tmp_path),
                     "--model-dir", str(tiny_model_dir), "--no-progress"]) == 2
        assert "open in another program" in capsys.readouterr().err
        reader = build_writer(WriterConfig(model="ppm", profile="shared", profiles_dir=tmp_path, read_only=True))
        reader.close()  # eval reads without holding it, and never saves
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
        holder.stdin.close()
    # the operating system freed the lock with the killed holder: the profile opens again
    writer = build_writer(WriterConfig(model="ppm", profile="shared", profiles_dir=tmp_path))
    writer.close()


def test_an_adapting_writer_serves_from_the_int8_step_and_learns_as_the_torch_one_does(tiny_model_dir, tmp_path):
    """With the fused int8 export in the folder, the adapting RNN is served by onnxruntime; the weights it learns
    reach it, and it predicts what the torch-served Writer predicts after the same text, to int8 rounding."""
    import shutil

    from dasher_rnn.lm.onnx_export import export_int8

    folder = shutil.copytree(tiny_model_dir, tmp_path / "model")
    text = "I would like a cup of tea with milk please, and then some water. " * 2
    served = {}
    for backend in ("torch", "onnx"):
        if backend == "onnx":
            export_int8(folder)
        writer = build_writer(WriterConfig(model="rnn", model_dir=folder, backend=backend, read_only=True))
        try:
            base = writer.request([writer.root(text[:30])]).result(10)[0].log_probs
            writer.commit(text)
            writer.flush()
            logp = writer.request([writer.root(text[:30])]).result(10)[0].log_probs  # queued after the swap
            status = writer.status()
            assert status.updates >= 6 and status.weights_version >= 1
            assert np.abs(logp - base).max() > 0.1  # it learned
            served[status.backend] = logp
        finally:
            writer.close(save=False)
    assert set(served) == {"torch-cpu", "onnxruntime-cpu-int8"}
    torch_lp, int8_lp = served.values()
    assert np.abs(torch_lp - int8_lp).max() < 0.05


def test_the_adapting_rnn_is_served_by_onnxruntime_only_where_it_can_take_the_weights(tiny_model_dir, tmp_path):
    import shutil

    from dasher_rnn.adapt.dynamic_eval import AdaptConfig
    from dasher_rnn.lm.model_io import load_model, save_model
    from dasher_rnn.lm.onnx_export import export_int8

    folder = shutil.copytree(tiny_model_dir, tmp_path / "model")

    def served(**config) -> str:
        writer = build_writer(WriterConfig(model="rnn", model_dir=folder, read_only=True, **config))
        try:
            return writer.status().backend
        finally:
            writer.close(save=False)

    assert served(backend="onnx") == "torch-cpu"  # the folder has no fused int8 export
    export_int8(folder)
    assert served(backend="onnx") == "onnxruntime-cpu-int8"
    assert served(backend="onnx", zero_state=True) == "torch-cpu"
    assert served(backend="onnx", adaptation=AdaptConfig(method="lhuc")) == "torch-cpu"
    assert served(backend="torch") == "torch-cpu"
    model, alphabet, _ = load_model(folder)
    with torch.no_grad():
        model.head.bias += 1.0
    save_model(folder, model, alphabet)  # new weights: the exports made from the old ones go
    assert not (folder / "model.int8.onnx").exists() and served(backend="onnx") == "torch-cpu"
    export_int8(folder)
    config = json.loads((folder / "config.json").read_text())
    config["onnx_int8"]["weights_sha256"] = "0" * 64  # an int8 export of other weights is never given adapted ones
    (folder / "config.json").write_text(json.dumps(config))
    assert served(backend="onnx") == "torch-cpu"
