import json

import pytest
import torch

from dasher_rnn.lm.corpus import BatchStream, prepare_text, split_documents
from dasher_rnn.lm.init_state import learn_initial_state
from dasher_rnn.lm.train import evaluate_corpus, lr_at, save_exact_checkpoint

from .conftest import tiny_trainer


def test_prepare_text_unwraps_books_and_keeps_messages():
    book = "It was a dark\n   and stormy night.\n\n\nThe end\nof it."
    assert prepare_text(book, unwrap=True) == "It was a dark and stormy night.\nThe end of it."
    assert prepare_text("hi\nthere\n\nyou", unwrap=False) == "hi\nthere\nyou"
    assert split_documents("a\nb\n\nc") == ["a\nb", "c"]


def test_batches_are_a_function_of_the_step(tiny_corpus_dir, tmp_path):
    trainer = tiny_trainer(tiny_corpus_dir, tmp_path, steps=1)
    corpus = trainer.corpus
    one, two = BatchStream(corpus, 4, 16, seed=3), BatchStream(corpus, 4, 16, seed=3)
    for step in (0, 5, 17):
        for a, b in zip(one.batch(step), two.batch(step), strict=True):
            assert (a == b).all()
    x, y, reset = one.batch(1)
    assert (x[:, 1:] == y[:, :-1]).all()
    assert x.shape == (4, 16) and reset.shape == (4,)


def test_learning_rate_schedule_warms_up_holds_and_decays(tiny_corpus_dir, tmp_path):
    tc = tiny_trainer(tiny_corpus_dir, tmp_path, steps=100).tc
    assert lr_at(0, tc) < lr_at(4, tc) == tc.lr == lr_at(50, tc)
    assert lr_at(99, tc) < lr_at(80, tc) < tc.lr
    assert abs(lr_at(100, tc) - tc.lr * tc.min_lr_frac) < 1e-12


def test_training_lowers_validation_loss(tiny_corpus_dir, tmp_path):
    trainer = tiny_trainer(tiny_corpus_dir, tmp_path, steps=120)
    before = evaluate_corpus(trainer.model, trainer.corpus, 2000, trainer.device)["overall"]
    trainer.run(progress=False)
    after = evaluate_corpus(trainer.model, trainer.corpus, 2000, trainer.device)["overall"]
    assert after < before - 2.0


def test_legacy_checkpoint_with_optimizer_state_resumes_exactly(tiny_corpus_dir, tmp_path):
    straight = tiny_trainer(tiny_corpus_dir, tmp_path / "straight", steps=30)
    straight.run(progress=False)

    first = tiny_trainer(tiny_corpus_dir, tmp_path / "split", steps=30)
    for _ in range(13):  # interrupted after 13 steps
        first.train_step()
    save_exact_checkpoint(first)
    resumed = tiny_trainer(tiny_corpus_dir, tmp_path / "split", steps=30)
    assert resumed.load_checkpoint() and resumed.step == 13 and resumed.resumed_at is None
    assert resumed.chars == 13 * 8 * 32
    resumed.run(progress=False)

    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_checkpoint_is_half_precision_without_optimizer_state_and_has_a_readme(tiny_corpus_dir, tmp_path):
    from dasher_rnn.lm.model_io import load_tensors
    from dasher_rnn.lm.train import CHECKPOINT, CHECKPOINT_META

    trainer = tiny_trainer(tiny_corpus_dir, tmp_path, steps=20, eval_every=10, checkpoint_every=10)
    trainer.command = "dasher-rnn train --out RUN --steps 20"
    trainer.run(progress=False)
    tensors = load_tensors(tmp_path / CHECKPOINT)
    assert not any(k.startswith("opt.") for k in tensors)
    assert all(v.dtype == torch.float16 for v in tensors.values())
    assert {"carry.h", "carry.c"} <= set(tensors)
    meta = json.loads((tmp_path / CHECKPOINT_META).read_text())
    assert meta["step"] == 20 and meta["chars"] == 20 * 8 * 32 and len(meta["history"]) == 2
    readme = (tmp_path / "README.md").read_text()
    assert "dasher-rnn train --out RUN --steps 20" in readme and "5,120 characters" in readme
    assert "| 10 | 2,560 |" in readme and "| 20 | 5,120 |" in readme
    assert not list(tmp_path.glob("*.tmp"))  # written atomically


def test_resume_with_a_fresh_optimizer_rewarms_and_ends_near_an_uninterrupted_run(tiny_corpus_dir, tmp_path):
    straight = tiny_trainer(tiny_corpus_dir, tmp_path / "straight", steps=60, resume_warmup=5)
    straight.run(progress=False)

    first = tiny_trainer(tiny_corpus_dir, tmp_path / "split", steps=60, resume_warmup=5)
    for _ in range(30):
        first.train_step()
    first.save_checkpoint()
    resumed = tiny_trainer(tiny_corpus_dir, tmp_path / "split", steps=60, resume_warmup=5)
    assert resumed.load_checkpoint() and resumed.step == 30 and resumed.resumed_at == 30
    assert resumed.chars == first.chars
    for name, value in resumed.model.state_dict().items():  # the weights, rounded to float16
        assert torch.equal(value, first.model.state_dict()[name].half().float())
    assert resumed.lr(30) < resumed.lr(32) < resumed.lr(34) == lr_at(34, resumed.tc)
    resumed.run(progress=False)
    a = evaluate_corpus(straight.model, straight.corpus, 2000, straight.device)["overall"]
    b = evaluate_corpus(resumed.model, resumed.corpus, 2000, resumed.device)["overall"]
    assert abs(a - b) < 0.15


def test_case_augmentation_lowercases_whole_lines_deterministically(tiny_corpus_dir, tmp_path):
    corpus = tiny_trainer(tiny_corpus_dir, tmp_path, steps=1).corpus
    alphabet = corpus.alphabet
    plain = BatchStream(corpus, 6, 64, seed=1)
    half = BatchStream(corpus, 6, 64, seed=1, lowercase_frac=0.5)
    every = BatchStream(corpus, 6, 64, seed=1, lowercase_frac=1.0)
    changed_lines = kept_lines = 0
    for step in (0, 3, 11):
        x, _, _ = plain.batch(step)
        xh, _, _ = half.batch(step)
        xa, _, _ = every.batch(step)
        assert all((a == b).all() for a, b in zip(half.batch(step), BatchStream(
            corpus, 6, 64, seed=1, lowercase_frac=0.5).batch(step), strict=True))
        for row in range(6):
            text, lowered, all_lower = (alphabet.decode(v) for v in (x[row], xh[row], xa[row]))
            assert all_lower == text.lower()
            for line, line_half in zip(text.split("\n")[1:-1], lowered.split("\n")[1:-1], strict=True):
                if line != line.lower():  # a line with capitals is lowered as a whole or left as it is
                    assert line_half in (line, line.lower())
                    changed_lines += line_half != line
                    kept_lines += line_half == line
    assert changed_lines and kept_lines


def test_batch_rows_are_the_same_rows_as_in_the_whole_batch(tiny_corpus_dir, tmp_path):
    corpus = tiny_trainer(tiny_corpus_dir, tmp_path, steps=1).corpus
    stream = BatchStream(corpus, 6, 16, seed=2, lowercase_frac=0.3)
    for step in (0, 7):
        whole = stream.batch(step)
        part = stream.batch(step, slice(2, 4))
        assert all((a[2:4] == b).all() for a, b in zip(whole, part, strict=True))


@pytest.mark.parametrize("layers", [1, 2])
def test_widening_keeps_the_log_probs_exactly(layers):
    from dasher_rnn.lm.rnn import CharRNN, RNNConfig
    from dasher_rnn.lm.start_models import widen_model

    torch.manual_seed(0)
    model = CharRNN(RNNConfig(vocab_size=20, embed_size=6, hidden_size=16, layers=layers))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)  # a model that is not at its initialisation
    wide = widen_model(model, 24, seed=1)
    assert wide.config.hidden_size == 24 and wide.rnn.weight_hh_l0.shape == (96, 24)
    symbols = torch.randint(0, 20, (3, 40))
    with torch.no_grad():
        for learned in (True, False):
            a, _ = model.score(symbols, model.initial_state(3, learned=learned))
            b, _ = wide.score(symbols, wide.initial_state(3, learned=learned))
            assert torch.allclose(a, b, atol=1e-6, rtol=0)
    assert wide.rnn.weight_ih_l0[16:32].abs().sum() > 0  # new units have random incoming weights
    # ... and their outgoing weights get gradients at once, so they start to learn
    logp, _ = wide(symbols, wide.initial_state(3))
    logp[..., 0].sum().backward()
    assert wide.head.weight.grad[:, 16:].abs().sum() > 0


def test_learned_initial_state_lowers_start_of_message_loss(tiny_corpus_dir, tmp_path):
    trainer = tiny_trainer(tiny_corpus_dir, tmp_path, steps=100)
    trainer.run(progress=False)
    result = learn_initial_state(trainer.model, trainer.corpus, train_count=600, val_count=100, max_epochs=15,
                                 log=lambda *_: None)
    assert result["learned_state_bpc"] < result["zero_state_bpc"] - 0.3
    assert trainer.model.h0.abs().sum() > 0


def test_torchrun_with_two_cpu_processes_matches_one_process_with_their_global_batch(tiny_corpus_dir, tmp_path):
    import os
    import socket
    import subprocess
    import sys

    from dasher_rnn.cli import main
    from dasher_rnn.lm.model_io import load_tensors
    from dasher_rnn.lm.train import CHECKPOINT, CHECKPOINT_META

    common = [str(tiny_corpus_dir), "--embed", "8", "--hidden", "32", "--steps", "12", "--seq-len", "32",
              "--lr", "1e-2", "--warmup", "3", "--eval-every", "6", "--checkpoint-every", "6", "--val-fraction", "0.2",
              "--val-chars", "500", "--threads", "1", "--no-progress"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    with socket.socket() as s:  # a free port for the rendezvous, rather than torchrun's --standalone guess
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    logs = tmp_path / "ranks"  # each process's own output, shown if the run fails
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
         "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--log-dir", str(logs),
         "--redirects", "3", "--tee", "3", "-m", "dasher_rnn",
         "train", "--out", str(tmp_path / "ddp"), "--batch-size", "4", *common],
        env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, "\n".join(
        [done.stderr[-2000:]] + [f"--- {f.relative_to(logs)}:\n{f.read_text()[-1500:]}" for f in sorted(logs.rglob("*.log"))])
    assert main(["train", "--out", str(tmp_path / "one"), "--batch-size", "8", *common]) == 0

    ddp = json.loads((tmp_path / "ddp" / CHECKPOINT_META).read_text())
    one = json.loads((tmp_path / "one" / CHECKPOINT_META).read_text())
    assert ddp["world_size"] == 2 and ddp["chars"] == one["chars"] == 12 * 8 * 32  # global characters
    assert [r["step"] for r in ddp["history"]] == [6, 12]  # rank 0 alone logged: one record per evaluation
    assert done.stdout.count("model written to") == 1 and (tmp_path / "ddp" / "model" / "weights.safetensors").is_file()
    a, b = load_tensors(tmp_path / "ddp" / CHECKPOINT), load_tensors(tmp_path / "one" / CHECKPOINT)
    assert a["carry.h"].shape == b["carry.h"].shape == (1, 8, 32)
    for key in a:
        if key.startswith("model."):
            assert torch.allclose(a[key].float(), b[key].float(), atol=1e-3), key


def test_a_model_started_in_another_alphabet_keeps_what_the_shared_symbols_predict():
    from dasher_rnn.alphabet import Alphabet, SymbolGroup
    from dasher_rnn.lm.rnn import CharRNN, RNNConfig
    from dasher_rnn.lm.start_models import remap_alphabet

    old = Alphabet("old", (SymbolGroup("letters", "#fff", "aeAE \n"),))
    new = Alphabet("new", (SymbolGroup("letters", "#fff", "aeéÉAEß \n"),))
    torch.manual_seed(0)
    model = CharRNN(RNNConfig(vocab_size=len(old), embed_size=6, hidden_size=16))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    moved = remap_alphabet(model, old, new)
    assert moved.config.vocab_size == len(new)
    assert torch.equal(moved.embed.weight[new.index("é")], model.embed.weight[old.index("e")])  # é starts as e
    assert torch.equal(moved.embed.weight[new.index("É")], model.embed.weight[old.index("E")])
    shared = [new.index(c) for c in old.symbols]
    text = "ae Ea\nea"
    with torch.no_grad():
        a, _ = model.score(torch.tensor([[old.index(c) for c in text]]), model.initial_state(1))
        b, _ = moved.score(torch.tensor([[new.index(c) for c in text]]), moved.initial_state(1))
    b_shared = b[..., shared]
    assert torch.allclose(a, b_shared - torch.logsumexp(b_shared, -1, keepdim=True), atol=1e-5)  # same ratios
    assert (b_shared.exp().sum(-1) > 0.9).all()  # the new symbols start with little probability


def test_train_starts_a_model_in_another_alphabet_from_a_model_folder(tiny_model_dir, tiny_corpus_dir, tmp_path,
                                                                      capsys):
    from dasher_rnn.cli import main
    from dasher_rnn.lm.model_io import load_model

    out = tmp_path / "run"
    assert main(["train", str(tiny_corpus_dir), "--out", str(out), "--init-from", str(tiny_model_dir),
                 "--alphabet", "english-limited", "--embed", "8", "--hidden", "32", "--steps", "3", "--batch-size", "4",
                 "--seq-len", "16", "--warmup", "1", "--eval-every", "100", "--val-chars", "500", "--no-progress",
                 "--threads", "1"]) == 0
    assert "alphabet 'english' -> 'english-limited'" in capsys.readouterr().out
    model, alphabet, config = load_model(out / "model")
    assert alphabet.name == "english-limited" and model.config.vocab_size == len(alphabet)
    assert config["training"]["origin"]["alphabet"] == "english"
