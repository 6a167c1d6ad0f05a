"""tools/gpu_run.py, the turnkey GPU run (issue 39), on the CPU: pack -> train for a few seconds -> the exported
checkpoint in parts -> join -> `dasher-rnn train` continues it, and it loads as a model; and the hooks it needs in
lm/train.py (autocast with a gradient scaler, a wall-time limit, the batch hook). No timing is asserted."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from .conftest import tiny_trainer

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gpu_run():
    spec = importlib.util.spec_from_file_location("gpu_run", ROOT / "tools" / "gpu_run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gpu_shard(gpu_run):
    """tools/gpu_shard.py, as gpu_run.py imports it."""
    return sys.modules["gpu_shard"]


@pytest.fixture(scope="module")
def gpu_trainer(gpu_run):
    """tools/gpu_trainer.py, as gpu_run.py imports it."""
    return sys.modules["gpu_trainer"]


def pack_tiny(gpu_shard, corpus_dir: Path, job: Path, budget: int, **kw) -> dict:
    from dasher_rnn.alphabet import load_alphabet
    from dasher_rnn.lm.corpus import sources_from_paths

    return gpu_shard.pack(sources_from_paths([str(corpus_dir)]), load_alphabet("english"), job / "cache", job, "tiny",
                        budget, val_fraction=0.2, val_chars=1500, say=lambda *_: None, **kw)


def test_allocation_shares_by_weight_and_caps_a_source_at_its_length(gpu_shard):
    assert gpu_shard.allocate(100, [1, 1], [1000, 1000]) == [50, 50]
    assert gpu_shard.allocate(100, [3, 1], [10, 1000]) == [10, 90]  # what the short source cannot take goes on
    assert gpu_shard.allocate(10**6, [1, 1, 0], [10, 20, 30]) == [10, 20, 0]
    data = np.frombuffer(b"aa\nbbb\ncc\ndddd\neee\nff\n" * 50, dtype=np.uint8)
    pieces, count = gpu_shard.take_pieces(data, 60, 20, gpu_shard.line_starts(data, ord("\n")))
    assert count == 3 and 0 < len(pieces) <= 60 and pieces[-1] == ord("\n")
    assert all(line in (b"aa", b"bbb", b"cc", b"dddd", b"eee", b"ff") for line in pieces.tobytes().split(b"\n")[:-1])


def test_pack_keeps_validation_whole_subsamples_training_within_the_budget_and_decodes(gpu_shard, tiny_corpus_dir, tmp_path):
    from dasher_rnn.alphabet import load_alphabet
    from dasher_rnn.lm.corpus import build_corpus, sources_from_paths

    full = build_corpus(sources_from_paths([str(tiny_corpus_dir)]), load_alphabet("english"), tmp_path / "job" / "cache",
                        val_fraction=0.2).sources[0]
    budget = 5_200  # the manifest (1.6 kB), the validation text, and about a third of the training text
    manifest = pack_tiny(gpu_shard, tiny_corpus_dir, tmp_path / "job", budget, piece_chars=2000)
    size = sum((tmp_path / "job" / f"tiny.{ext}").stat().st_size for ext in ("bin", "json"))
    assert size <= budget
    entry = manifest["sources"][0]
    assert entry["train"]["of_chars"] == len(full.train) > entry["train"]["chars"] > 0  # a part of it, in pieces
    assert entry["train"]["pieces"] > 1
    corpus, _ = gpu_shard.load_shard(tmp_path / "job" / "tiny")
    src = corpus.sources[0]
    assert np.array_equal(src.val, np.asarray(full.val[:1500]))  # the CPU runs' validation text, exactly
    assert corpus.alphabet.symbols == load_alphabet("english").symbols
    data, newline = bytes(full.train), bytes([corpus.alphabet.index("\n")])
    lines = src.train.tobytes().split(newline)
    assert lines[-1] == b"" and len(lines) > 20  # whole lines ...
    assert all(newline + line + newline in data for line in lines[1:-1])  # ... of the source's own text

    big = pack_tiny(gpu_shard, tiny_corpus_dir, tmp_path / "all", 10**7)  # room for everything: all of it
    assert big["sources"][0]["train"]["chars"] == len(full.train)
    with pytest.raises(SystemExit):
        pack_tiny(gpu_shard, tiny_corpus_dir, tmp_path / "none", 1000)  # not even the validation text fits


def test_amp_with_a_grad_scaler_and_a_wall_time_limit_stop_with_a_checkpoint_that_resumes(tiny_corpus_dir, tmp_path):
    from dasher_rnn.lm.train import CHECKPOINT_META

    torch.set_num_threads(1)
    trainer = tiny_trainer(tiny_corpus_dir, tmp_path, steps=10**6, eval_every=10**6, checkpoint_every=10**6)
    trainer.use_amp(torch.bfloat16, scale_grads=True)
    assert trainer.scaler is not None and trainer.scaler.is_enabled()
    seen = []
    original = trainer.batch
    trainer.batch = lambda step: (seen.append(step), original(step))[1]  # the hook a GPU trainer feeds batches through
    trainer.run(progress=False, max_seconds=0.5)
    assert 0 < trainer.step < 10**6 and seen == list(range(trainer.step))
    assert trainer.state[0].dtype == torch.float32  # the carried state stays float32 under autocast
    meta = json.loads((tmp_path / CHECKPOINT_META).read_text())
    assert meta["step"] == trainer.step and meta["history"][-1]["step"] == trainer.step  # validated and saved
    assert np.isfinite(meta["history"][-1]["val_bpc"]["overall"])
    again = tiny_trainer(tiny_corpus_dir, tmp_path, steps=trainer.step + 2)
    assert again.load_checkpoint() and again.step == trainer.step
    again.run(progress=False)
    assert again.step == trainer.step + 2
    trainer.use_amp(None)
    assert trainer.amp_dtype is None and trainer.scaler is None


def test_the_chain_pack_train_join_resume_and_load(gpu_run, gpu_shard, gpu_trainer, tiny_corpus_dir, tmp_path):
    from dasher_rnn.cli import main
    from dasher_rnn.lm.model_io import load_tensors
    from dasher_rnn.lm.start_models import load_start_model
    from dasher_rnn.lm.train import CHECKPOINT, CHECKPOINT_META

    pack_tiny(gpu_shard, tiny_corpus_dir, tmp_path / "gpu_job", 30_000)
    out, work = tmp_path / "out", tmp_path / "work"
    # as the device call runs it: a script from the tree, its own process, $OUT for the output folder; a fixed
    # number of steps and time to spare, so that a slow or busy machine runs the same chain (with --minutes 0.3 and
    # --steps auto, a loaded machine's setup took longer than the whole budget)
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gpu_run.py"), "train", "--shard", str(tmp_path / "gpu_job" / "tiny"),
         "--work", str(work), "--embed", "8", "--hidden", "32", "--layers", "2", "--batch-size", "8", "--seq-len", "32",
         "--warmup", "3", "--val-chars", "1500", "--steps", "30", "--eval-every", "15", "--minutes", "60",
         "--device", "cpu", "--threads", "1", "--workers", "1", "--part-mb", "0.02", "--scale-grads", "on"],
        cwd=tmp_path, env=dict(os.environ, OUT=str(out), OMP_NUM_THREADS="1"),
        capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "validation curve" in done.stdout and "timed 10 steps" in done.stdout
    exported = out / "run"
    names = sorted(p.name for p in exported.iterdir())
    assert "checkpoint.parts.json" in names and CHECKPOINT not in names  # cut in parts of at most --part-mb
    assert all(p.stat().st_size <= 0.02 * 2**20 for p in exported.glob(f"{CHECKPOINT}.part*"))
    meta = json.loads((exported / CHECKPOINT_META).read_text())
    assert meta["step"] == meta["train_config"]["steps"] > 10 and len(meta["history"]) >= 2
    assert meta["command"].startswith("python tools/gpu_run.py train --shard")

    home = tmp_path / "home"
    gpu_trainer.join_run(exported, home)
    tensors = load_tensors(home / CHECKPOINT)
    assert all(v.dtype == torch.float16 for v in tensors.values())
    model, alphabet, origin = load_start_model(home)  # loads as a model
    assert origin["architecture"] == "lstm 2x32" and model.config.vocab_size == len(alphabet)
    with pytest.raises(SystemExit):
        gpu_trainer.join_run(exported, home)  # no silent overwrite

    # `dasher-rnn train` continues it on the CPU, from the text itself, and finishes a model
    step = meta["step"]
    assert main(["train", str(tiny_corpus_dir), "--out", str(home), "--embed", "8", "--hidden", "32", "--layers", "2",
                 "--steps", str(step + 3), "--batch-size", "4", "--seq-len", "16", "--val-fraction", "0.2",
                 "--val-chars", "500", "--eval-every", "1000", "--no-progress", "--threads", "1"]) == 0
    resumed = json.loads((home / CHECKPOINT_META).read_text())
    assert resumed["step"] == step + 3 and (home / "model" / "weights.safetensors").is_file()


def test_probe_needs_no_shard(gpu_run, capsys):
    assert gpu_run.main(["probe", "--archs", "1x16,2x8", "--batches", "2,4", "--seq-len", "8", "--device", "cpu",
                         "--repeats", "1", "--threads", "1"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [(r["arch"], r["batch"]) for r in rows] == [("1x16", 2), ("1x16", 4), ("2x8", 2), ("2x8", 4)]
    assert all(r["chars_s"] > 0 for r in rows)


def test_dropout_trains_only_inside_the_loop(tiny_corpus_dir, tmp_path):
    torch.set_num_threads(1)
    trainer = tiny_trainer(tiny_corpus_dir, tmp_path, steps=3, dropout=0.5)
    model = trainer.model
    ids = torch.randint(0, model.config.vocab_size, (2, 12))
    rates = []
    original = trainer.train_step
    trainer.train_step = lambda: (rates.append(model.dropout), original())[1]
    trainer.run(progress=False)
    assert rates == [0.5, 0.5, 0.5] and model.dropout == 0.0  # on for the steps, off after them
    model.dropout = 0.5
    model.eval()
    with torch.no_grad():  # validation and every use after training: model.eval() switches it off
        a, _ = model(ids, model.initial_state(2))
        b, _ = model(ids, model.initial_state(2))
    assert torch.equal(a, b)
    model.train()
    with torch.no_grad():
        c, _ = model(ids, model.initial_state(2))
    assert not torch.allclose(a, c)
    meta = json.loads((tmp_path / "checkpoint.json").read_text())
    assert meta["train_config"]["dropout"] == 0.5


def test_weights_and_best_by_pick_what_is_trained_and_what_is_exported(gpu_shard, gpu_trainer, tiny_corpus_dir,
                                                                       tmp_path, monkeypatch):
    from dasher_rnn.lm.train import Trainer

    pack_tiny(gpu_shard, tiny_corpus_dir, tmp_path / "gpu_job", 30_000)
    corpus, _ = gpu_shard.load_shard(tmp_path / "gpu_job" / "tiny")
    gpu_shard.reweigh(corpus, [f"{corpus.sources[0].name}=0.25"])
    assert corpus.sources[0].weight == 0.25
    with pytest.raises(SystemExit, match="SOURCE=W"):
        gpu_shard.reweigh(corpus, ["nosuch=1"])

    trainer = tiny_trainer(tiny_corpus_dir, tmp_path / "run", steps=1)
    gpu_class = gpu_trainer.make_gpu_trainer(Trainer)
    trainer.__class__ = gpu_class
    trainer.export_dir, trainer.best_by = tmp_path / "export", ("overall",)
    exported = []
    monkeypatch.setattr(gpu_trainer, "export_run", lambda src, dest, part: exported.append(trainer.step))
    for step, score in [(0, 3.0), (1, 2.5), (2, 2.7), (3, 2.4), (4, float("nan"))]:
        trainer.step = step
        trainer.history.append({"step": step, "val_bpc": {"overall": score}})
        trainer.save_checkpoint()
    trainer.step = 5
    trainer.save_checkpoint()  # a checkpoint without a validation at its step is not exported
    # step 2 was worse and step 4 diverged: the export stayed at step 1, then at step 3
    assert exported == [0, 1, 3] and trainer.best == (3, 2.4)

    resumed = tiny_trainer(tiny_corpus_dir, tmp_path / "run2", steps=1)  # a resumed run brings its history along
    resumed.__class__ = gpu_class
    resumed.export_dir, resumed.best_by = tmp_path / "export", ("overall",)
    resumed.history = [{"step": 0, "val_bpc": {"overall": 3.0}}, {"step": 1, "val_bpc": {"overall": 2.5}},
                       {"step": 2, "val_bpc": {"overall": 2.9}}]
    exported.clear()
    resumed.step = 2
    resumed.save_checkpoint()
    assert exported == [] and resumed.best == (1, 2.5)  # not better than step 1 of before the resume
    with pytest.raises(SystemExit, match="a number from 0"):
        gpu_shard.reweigh(corpus, [f"{corpus.sources[0].name}=-1"])


def test_a_backward_outside_training_needs_dropout_off(tiny_corpus_dir, tmp_path):
    model = tiny_trainer(tiny_corpus_dir, tmp_path, steps=1).model.eval()
    with model.gradable():
        assert not model.training  # on the CPU the mode stays; on CUDA cuDNN's backward needs training mode
    model.dropout = 0.3
    with pytest.raises(RuntimeError, match="dropout off"), model.gradable():
        pass
    from dasher_rnn.lm.train import TrainConfig

    with pytest.raises(ValueError, match="dropout 1.0"):
        TrainConfig(dropout=1.0)
