import torch

from dasher_rnn.lm.corpus import BatchStream, prepare_text, split_documents
from dasher_rnn.lm.init_state import learn_initial_state
from dasher_rnn.lm.train import evaluate_corpus, lr_at

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


def test_resume_gives_the_same_result_as_an_uninterrupted_run(tiny_corpus_dir, tmp_path):
    straight = tiny_trainer(tiny_corpus_dir, tmp_path / "straight", steps=30)
    straight.run(progress=False)

    first = tiny_trainer(tiny_corpus_dir, tmp_path / "split", steps=30)
    for _ in range(13):  # interrupted after 13 steps
        first.train_step()
    first.save_checkpoint()
    resumed = tiny_trainer(tiny_corpus_dir, tmp_path / "split", steps=30)
    assert resumed.load_checkpoint() and resumed.step == 13
    resumed.run(progress=False)

    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_learned_initial_state_lowers_start_of_message_loss(tiny_corpus_dir, tmp_path):
    trainer = tiny_trainer(tiny_corpus_dir, tmp_path, steps=100)
    trainer.run(progress=False)
    result = learn_initial_state(trainer.model, trainer.corpus, train_count=600, val_count=100, max_epochs=15,
                                 log=lambda *_: None)
    assert result["learned_state_bpc"] < result["zero_state_bpc"] - 0.3
    assert trainer.model.h0.abs().sum() > 0
