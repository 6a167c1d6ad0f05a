import json
import mailbox
from email.message import EmailMessage
from pathlib import Path

import numpy as np
import pytest

from dasher_rnn.adapt import corpus_adapt
from dasher_rnn.adapt.corpus_adapt import CorpusAdaptConfig, Interrupted, adapt_to_corpus, corpus_engine
from dasher_rnn.adapt.profiles import ProfileStore, decode_weights
from dasher_rnn.adapt.user_corpus import read_user_corpus, strip_email_text
from dasher_rnn.cli import main
from dasher_rnn.lm.model_io import open_model

from .conftest import make_sentences

USER_LINES = [f"Zofia and Kazik bring {food} on {day}." for food in ("kefir", "pierogi", "bigos", "rye bread")
              for day in ("Monday", "Thursday", "Sunday")] * 6


def test_email_bodies_drop_quotes_replies_and_signatures(tmp_path):
    body = "Lunch at noon works for me.\nSee you there!\n\n> When shall we meet?\n> Bob\n-- \nAlice\nCEO"
    assert strip_email_text(body) == "Lunch at noon works for me.\nSee you there!"
    assert strip_email_text("Yes.\nOn Mon, 3 Jun 2024, Bob <b@x.org> wrote:\n> Ok?") == "Yes."
    msg = EmailMessage()
    msg["Subject"] = "hi"
    msg.set_content("Thanks for the flowers.\n\n-----Original Message-----\nFrom: Bob")
    (tmp_path / "one.eml").write_bytes(bytes(msg))
    box = mailbox.mbox(str(tmp_path / "mail.mbox"))
    for text in ("First note from me.", "Second note from me."):
        m = EmailMessage()
        m.set_content(text)
        box.add(m)
    box.flush()
    (tmp_path / "copy.txt").write_text("Thanks for the flowers.")  # a duplicate of the email body
    (tmp_path / "photo.jpg").write_bytes(b"\xff\xd8\x00\x00JFIF")
    (tmp_path / "latin.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    docs, report = read_user_corpus([tmp_path, tmp_path / "missing"])
    texts = sorted(d.text for d in docs)
    assert texts == ["First note from me.", "Second note from me.", "Thanks for the flowers.", "caf\ufffd au lait"]
    assert report.duplicates == 1 and report.skipped_binary == [str(tmp_path / "photo.jpg")]
    assert report.replaced_bytes == {str(tmp_path / "latin.txt"): 1}
    assert str(tmp_path / "missing") in report.unreadable


def adapt(tiny_model_dir, tmp_path, lines, engine="torch", **kwargs):
    folder = open_model(tiny_model_dir)
    corpus = tmp_path / "mine.txt"
    corpus.write_text("\n".join(lines))
    docs, _ = read_user_corpus([corpus])
    for doc in docs:  # the held-out split hashes the source name: the same split on every run, wherever tmp_path is
        doc.source = doc.source.replace(str(tmp_path), "")
    store = ProfileStore(tmp_path / "profiles")
    cfg = CorpusAdaptConfig(epochs=kwargs.pop("epochs", 4), batch_size=8, seq_len=32, lr=1e-2, held_out=0.2, patience=2,
                            max_bits=9.0,  # the tiny test model finds plain English harder than the shipped one
                            checkpoint_s=kwargs.pop("checkpoint_s", 60.0))
    report = adapt_to_corpus(corpus_engine(folder, cfg, engine, "cpu", 1), folder.alphabet, docs, store, "me",
                             folder.base_hash, cfg, progress=False, log=lambda *_: None, **kwargs)
    return report, store


@pytest.mark.parametrize("engine", ["torch", "numpy"])
def test_adapting_improves_held_out_text_from_the_same_source(tiny_model_dir, tmp_path, engine):
    report, store = adapt(tiny_model_dir, tmp_path, USER_LINES + make_sentences(20, seed=9), engine=engine)
    assert report["held_out_bpc_after"]["overall"] < 0.85 * report["held_out_bpc_before"]["overall"]
    info = store.load("me").info
    assert info["corpus_adaptation"]["held_out_bpc_after"] == report["held_out_bpc_after"]
    assert info["characters_adapted"] == report["train_chars"]


def test_the_numpy_engine_takes_torchs_steps(tiny_model_dir, tmp_path):
    """Without PyTorch a plain LSTM adapts to a corpus in numpy: the same scores, the same Adam steps with clipping
    and decay, the same profile (to float rounding)."""
    lines = USER_LINES + make_sentences(20, seed=9)
    reports, weights = {}, {}
    for engine in ("torch", "numpy"):
        (tmp_path / engine).mkdir()
        reports[engine], store = adapt(tiny_model_dir, tmp_path / engine, lines, engine=engine, epochs=2)
        folder = open_model(tiny_model_dir)
        shapes = {n: w.shape for n, w in folder.weights.items() if n not in ("h0", "c0")}
        weights[engine] = decode_weights(store.load("me"), shapes, folder.base_hash)
    torch_report, numpy_report = reports["torch"], reports["numpy"]
    assert numpy_report["dropped"] == torch_report["dropped"]
    assert numpy_report["held_out_bpc_before"] == pytest.approx(torch_report["held_out_bpc_before"], abs=1e-4)
    assert [h["epoch"] for h in numpy_report["history"]] == [h["epoch"] for h in torch_report["history"]] == [1, 2]
    assert numpy_report["held_out_bpc_after"] == pytest.approx(torch_report["held_out_bpc_after"], abs=1e-3)
    base = open_model(tiny_model_dir).weights
    for name, want in weights["torch"].items():
        moved = np.abs(want - base[name]).max()
        assert np.abs(weights["numpy"][name] - want).max() <= 1e-3 * max(1.0, moved), name
    assert any(np.abs(w - base[n]).max() > 1e-2 for n, w in weights["numpy"].items())  # it learned


def test_improbable_and_foreign_messages_are_dropped(tiny_model_dir, tmp_path):
    lines = USER_LINES[:20] + ["\u4e2d\u6587\u4e2d\u6587\u4e2d\u6587 ok", "}{|~^`}{|~^`}{|~^`}{|~^`"]
    report, _ = adapt(tiny_model_dir, tmp_path, lines, dry_run=True)
    assert report["dropped"] == {"mostly_outside_alphabet": 1, "improbable": 1}


def interrupt_at(epoch: int, step: int):
    def on_step(e: int, s: int) -> None:
        if (e, s) == (epoch, step):
            raise KeyboardInterrupt
    return on_step


def scoring_spy(monkeypatch) -> list[int]:
    """The number of messages of every scoring pass from now on."""
    counts: list[int] = []
    real = corpus_adapt.message_bits

    def spy(engine, messages, *args, **kwargs):
        counts.append(len(messages))
        return real(engine, messages, *args, **kwargs)

    monkeypatch.setattr(corpus_adapt, "message_bits", spy)
    return counts


def test_ctrl_c_mid_epoch_keeps_the_finished_epochs_and_resume_goes_on_without_scoring(tiny_model_dir, tmp_path,
                                                                                       monkeypatch):
    """Ctrl-C in the second epoch: the profile has the first epoch's weights (it improved), the message says so and
    where ``--resume`` goes on; ``--resume`` scores only the held-out messages (no pass over the corpus) and
    finishes from epoch 2."""
    with pytest.raises(Interrupted) as caught:
        adapt(tiny_model_dir, tmp_path, USER_LINES, epochs=3, on_step=interrupt_at(1, 1))
    message = str(caught.value)
    assert "best weights so far (after epoch 1" in message and "goes on from epoch 2 without scoring" in message
    store = ProfileStore(tmp_path / "profiles")
    saved = store.load("me")
    assert "rnn" in saved.parts and [h["epoch"] for h in saved.info["corpus_adaptation"]["history"]] == [1]
    assert corpus_adapt.resume_folder(store, "me").is_dir()
    scored = scoring_spy(monkeypatch)
    report, _ = adapt(tiny_model_dir, tmp_path, USER_LINES, epochs=3, resume=True)
    assert [h["epoch"] for h in report["history"]] == [1, 2, 3][len(report["history"]) == 2:]
    assert report["history"][-1]["epoch"] == 3 and report["history"][0]["epoch"] in (1, 2)
    assert set(scored) == {report["held_out_messages"]}  # only the held-out messages, after each epoch
    assert report["held_out_bpc_before"] == saved.info["corpus_adaptation"]["held_out_bpc_before"]
    assert store.load("me").characters_adapted == report["train_chars"]  # counted once for the run
    assert not corpus_adapt.resume_folder(store, "me").exists()


def test_ctrl_c_before_an_epoch_finished_says_so_and_resume_starts_where_it_was_saved(tiny_model_dir, tmp_path,
                                                                                     monkeypatch):
    """Ctrl-C in the first epoch leaves the profile as it was and never claims an epoch finished; with a checkpoint
    every step (``checkpoint_s`` 0), ``--resume`` goes on from the step after the last one saved."""
    with pytest.raises(Interrupted) as caught:
        adapt(tiny_model_dir, tmp_path, USER_LINES, epochs=2, on_step=interrupt_at(0, 0))
    message = str(caught.value)
    assert "profile 'me' unchanged" in message and "last epoch" not in message
    assert "no training step was saved; `--resume` starts the training again without scoring" in message
    store = ProfileStore(tmp_path / "profiles")
    assert store.load("me") is None
    with pytest.raises(Interrupted) as caught:
        adapt(tiny_model_dir, tmp_path, USER_LINES, epochs=2, checkpoint_s=0.0, on_step=interrupt_at(0, 2))
    assert "goes on from epoch 1, step 4 of" in str(caught.value) and store.load("me") is None
    scored, steps = scoring_spy(monkeypatch), []
    report, _ = adapt(tiny_model_dir, tmp_path, USER_LINES, epochs=2, resume=True,
                      on_step=lambda e, s: steps.append((e, s)))
    assert steps[0] == (0, 3) and set(scored) == {report["held_out_messages"]}
    assert [h["epoch"] for h in report["history"]] == [1, 2]


def test_dry_run_changes_nothing(tiny_model_dir, tmp_path):
    report, store = adapt(tiny_model_dir, tmp_path, USER_LINES, dry_run=True)
    assert "held_out_bpc_before" in report and "held_out_bpc_after" not in report
    assert store.list() == []


def test_a_dry_run_of_a_large_corpus_scores_a_sample_and_says_so(tiny_model_dir, tmp_path, monkeypatch):
    """Issue 48: ``adapt --dry-run`` on 100 MB gave no answer in 300 s (it scored all 10 million characters)."""
    from dasher_rnn.cli.adapt import summary

    scored = []
    real = corpus_adapt.message_bits

    def counting(engine, messages, *args, **kwargs):
        scored.append(sum(len(m.text) for m in messages))
        return real(engine, messages, *args, **kwargs)

    monkeypatch.setattr(corpus_adapt, "message_bits", counting)
    monkeypatch.setattr(corpus_adapt, "DRY_RUN_CHARS", 400)
    report, store = adapt(tiny_model_dir, tmp_path, USER_LINES * 4, dry_run=True)
    sample = report["sample"]
    # the plan's timing reads a few of the sample's messages first; the scoring pass reads the sample, never the whole
    assert scored[-1] == sample["characters"] and max(scored) == sample["characters"] < sample["of_characters"] / 2
    assert sample["messages"] < sample["of_messages"] and store.list() == []
    assert f"(a sample: one message in {sample['every']} of" in summary(report, dry_run=True)[0]


def test_one_message_is_learned_by_ppm_and_leaves_the_rnn_as_it_was(tiny_model_dir, tmp_path, capsys, monkeypatch):
    """With a single message nothing is held out to check the new weights on: the RNN is not adapted (it crashed
    with KeyError 'overall' before), PPM learns the text."""
    monkeypatch.chdir(tmp_path)  # the held-out split hashes the file's name as given: the same split on every run
    one = Path("one.txt")
    one.write_text("hello there, see you soon")
    assert main(["adapt", str(one), "--profile", "me", "--model-dir", str(tiny_model_dir), "--profiles-dir",
                 str(tmp_path / "p"), "--no-progress", "--epochs", "1", "--json"]) == 0
    out, err = capsys.readouterr()
    assert "too little text to check that adapting helps" in err
    report = json.loads(out)  # --json: the report alone on stdout, the summary on stderr
    assert report["train_messages"] == 1 and report["held_out_messages"] == 0 and "held_out_bpc_after" not in report
    assert "1 message to train on and none to keep aside" in err
    profile = ProfileStore(tmp_path / "p").load("me")
    assert profile.info["characters_adapted"] == 0 and report["ppm"]["characters_learned"] > 0


def test_cli_bad_inputs_get_messages_and_exit_codes(tiny_model_dir, tmp_path, capsys):
    common = ["--profile", "me", "--model-dir", str(tiny_model_dir), "--profiles-dir", str(tmp_path / "p"),
              "--no-progress"]
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert main(["adapt", str(empty), *common]) == 2
    assert "corpus is empty" in capsys.readouterr().err
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\x01\x02")
    assert main(["adapt", str(binary), *common]) == 2
    err = capsys.readouterr().err
    assert "blob.bin: binary file skipped" in err and "corpus is empty" in err
    assert main(["adapt", str(tmp_path / "nowhere"), *common]) == 2
    assert "nowhere: no such file or folder" in capsys.readouterr().err
    good = tmp_path / "good.txt"
    good.write_text("\n".join(USER_LINES))
    assert main(["adapt", str(good), *common, "--epochs", "1"]) == 0
    out, err = capsys.readouterr()
    assert err.index("adapting profile 'me' on torch: ") < err.index("epoch 1: held-out")  # the plan comes first
    assert "1 epoch (~" in err and "in all; Ctrl+C keeps what was learned" in err
    assert out.startswith("profile 'me':\n  RNN: ") and "{" not in out  # the summary, no JSON without --json
    assert "PPM and the mixing weights: learned" in out
    saved = ProfileStore(tmp_path / "p").load("me")
    assert saved.info["corpus_adaptation"]["train_messages"] > 0 and "ppm" in saved.parts
    scores = []
    for extra in ([], ["--profile", "me", "--profiles-dir", str(tmp_path / "p")]):
        assert main(["eval", "--model-dir", str(tiny_model_dir), str(good), "--json", *extra]) == 0
        scores.append(json.loads(capsys.readouterr().out)["overall"]["bits_per_char"])
    assert scores[1] < scores[0]
    assert main(["eval", "--model-dir", str(tiny_model_dir), str(good), "--profile", "nobody",
                 "--profiles-dir", str(tmp_path / "p")]) == 2
    assert "no profile named 'nobody'" in capsys.readouterr().err


def test_the_hybrids_ppm_and_weights_learn_the_corpus_and_persist(tiny_model_dir, tmp_path):
    from dasher_rnn.adapt.compose import WriterConfig, build_writer

    config = WriterConfig(model="hybrid", model_dir=tiny_model_dir, profile="me", profiles_dir=tmp_path, backend="torch")
    writer = build_writer(config)
    count = writer.learn_history(USER_LINES)
    writer.close()
    assert count == sum(len(line) for line in USER_LINES)
    again = build_writer(config)
    probs = again.mixer.ppm.probs_at(again.mixer.context_after("Zofia and Ka"))
    again.close(save=False)
    assert probs[again.alphabet.index("z")] > 0.5  # "Kazik", remembered


def test_a_history_is_learned_in_batched_passes_with_the_counts_and_weights_of_commits(tiny_model_dir, tmp_path):
    """``learn_history`` asks the RNN for whole messages in batches, not a request per message, and PPM and the mixing
    weights end as they would after committing each message alone (a message longer than the context a commit
    conditions on, one with characters outside the alphabet and an empty one included)."""
    from dasher_rnn.adapt.compose import WriterConfig, build_writer
    from dasher_rnn.adapt.writer import HISTORY_WHOLE

    long = " ".join(make_sentences(40, seed=5))
    assert len(long) > HISTORY_WHOLE
    history = USER_LINES[:20] + ["", "Żaneta’s café — naïve ☃"] + make_sentences(30, seed=4) + [long, "Bye."]
    config = WriterConfig(model="hybrid", model_dir=tiny_model_dir, backend="torch")
    one_by_one, batched = build_writer(config), build_writer(config)
    try:
        for message in history:  # what learn_history did before: the RNN asked per message, as ``commit`` asks
            one_by_one.mixer.new_message()
            one_by_one._mixer_learn([one_by_one.alphabet.index(ch) for ch in message if ch in one_by_one.alphabet])
        one_by_one.mixer.new_message()
        service, calls = batched.service, {"request": 0, "message_probs": 0}
        def counting(name: str):
            inner = getattr(service, name)

            def counted(*args, **kwargs):
                calls[name] += 1
                return inner(*args, **kwargs)
            return counted

        for name in calls:
            setattr(service, name, counting(name))
        done = []
        assert batched.learn_history(history, progress=done.append, batch=16) == sum(len(m) for m in history)
        assert sum(done) == len(history)
        assert calls == {"message_probs": -(-len(history) // 16), "request": -(-len(long) // 256)}  # the long one alone
        a, b = one_by_one.mixer.ppm.snapshot(), batched.mixer.ppm.snapshot()
        assert np.array_equal(a["keys"], b["keys"]) and np.array_equal(a["counts"], b["counts"])
        np.testing.assert_allclose(batched.mixer.gate.w, one_by_one.mixer.gate.w, rtol=0, atol=1e-6)
        assert not np.allclose(batched.mixer.gate.w, 0.9)  # the weights did learn
    finally:
        one_by_one.close(save=False)
        batched.close(save=False)


def test_ctrl_c_while_ppm_learns_keeps_the_rnn_and_resume_teaches_ppm_without_training(tiny_model_dir, tmp_path,
                                                                                      capsys, monkeypatch):
    from dasher_rnn.adapt.writer import Writer

    good = tmp_path / "good.txt"
    good.write_text("\n".join(USER_LINES))
    common = ["adapt", str(good), "--profile", "me", "--model-dir", str(tiny_model_dir), "--profiles-dir",
              str(tmp_path / "p"), "--no-progress", "--epochs", "1"]
    real = Writer.learn_history

    def interrupted(self, messages, progress=None, **kwargs):
        real(self, messages[:3], progress=progress)
        raise KeyboardInterrupt

    monkeypatch.setattr(Writer, "learn_history", interrupted)
    assert main(common) == 130
    err = capsys.readouterr().err
    assert "PPM and the mixing weights of profile 'me' are as they were" in err and "RNN's adapted weights are saved" in err
    store = ProfileStore(tmp_path / "p")
    assert "rnn" in store.load("me").parts and "ppm" not in store.load("me").parts
    monkeypatch.setattr(Writer, "learn_history", real)
    scored = scoring_spy(monkeypatch)
    assert main([*common, "--resume", "--json"]) == 0
    out, err = capsys.readouterr()
    assert scored == [] and "resuming after the RNN's training" in err  # no scoring, no training
    assert json.loads(out)["ppm"]["characters_learned"] == sum(len(line) for line in USER_LINES)
    assert "ppm" in store.load("me").parts and not corpus_adapt.resume_folder(store, "me").exists()
