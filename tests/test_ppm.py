import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dasher_rnn.alphabet import Alphabet, SymbolGroup, load_alphabet
from dasher_rnn.lm.ppm import PPMModel
from dasher_rnn.lm.protocol import DASHER_TOTAL, LanguageModel, quantise, uniform_add

ABC = Alphabet("abc", (SymbolGroup("letters", "#fff", "abc"),))


def abc_model(text: str) -> PPMModel:
    model = PPMModel(ABC, default_context="")
    model.train_text(text)
    return model


def stored_counts(model: PPMModel) -> dict[int, int]:
    counts = dict(zip(model._keys.tolist(), model._counts.tolist(), strict=True))
    for ctx, children in model._overlay.items():
        for sym in list(counts):
            if ctx * 128 < sym < ctx * 128 + 128:
                del counts[sym]
        counts.update({ctx * 128 + s + 1: c for s, c in children.items() if c})
    return counts


def test_ppm_implements_the_protocol():
    assert isinstance(abc_model("ab"), LanguageModel)


def test_hand_worked_example():
    # Training "aab" leaves root {a: 2, b: 1}, "a" {a: 1, b: 1}, "aa" {b: 1}.
    model = abc_model("aab")
    # Empty context: p = 1000 * (100c - 77) // (100 * 3 + 49): a 352, b 65; 583 left, 194 each, 1 to the last.
    assert model.distribution(1000).tolist() == [546, 259, 195]
    # After "a": order-1 slice gives 92 to a and b (816 left), root gives a 287, b 53 (476 left),
    # 158 each, the 2 left over go to the last two symbols.
    model.advance(ABC.index("a"))
    assert model.distribution(1000).tolist() == [537, 304, 159]


def test_update_exclusion_increments_only_the_longest_context():
    model = abc_model("aab")
    a, b = ABC.index("a"), ABC.index("b")
    model.reset()
    model.learn(a)  # known at the root: root count of a 2 -> 3
    model.learn(b)  # known after "a": "ab" 1 -> 2, root b stays 1
    counts = stored_counts(model)
    assert counts[a + 1] == 3
    assert counts[b + 1] == 1
    assert counts[(a + 1) * 128 + b + 1] == 2
    model.learn(ABC.index("c"))  # new everywhere: created at orders 2, 1 and 0
    counts = stored_counts(model)
    assert counts[ABC.index("c") + 1] == 1


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet="abc", min_size=1, max_size=60))
def test_vectorised_training_equals_sequential_learning(text):
    fast = abc_model(text)
    slow = PPMModel(ABC, default_context="")
    slow._overlay = {0: {}}  # not empty: forces the sequential path
    slow.train_text(text)
    assert stored_counts(fast) == stored_counts(slow)


@settings(max_examples=30, deadline=None)
@given(st.text(alphabet="abc", max_size=40), st.text(alphabet="abc", max_size=8))
def test_distribution_sums_exactly_and_is_positive(train, context):
    model = abc_model(train)
    for ch in context:
        model.advance(ABC.index(ch))
    d = model.dasher_distribution()
    assert d.sum() == DASHER_TOTAL and (d > 0).all()
    assert model.probs().sum() == pytest.approx(1.0)


def test_learning_raises_the_probability_of_what_was_written():
    english = load_alphabet("english")
    model = PPMModel(english)
    model.train_text("the quick brown fox jumps over the lazy dog.\n" * 3)
    word = "zanzibar"

    def word_bits() -> float:
        model.reset()
        bits = 0.0
        for ch in word:
            bits -= np.log2(model.probs()[english.index(ch)])
            model.advance(english.index(ch))
        return bits

    before = word_bits()
    model.reset()
    for ch in word:
        model.learn(english.index(ch))
    assert word_bits() < before - 5


def test_fork_is_independent():
    model = abc_model("abcabc")
    twin = model.fork()
    twin.reset()
    for _ in range(5):
        twin.learn(ABC.index("c"))
    assert model.distribution(1000).tolist() == abc_model("abcabc").distribution(1000).tolist()
    assert twin.distribution(1000).tolist() != model.distribution(1000).tolist()


def test_default_context_and_dashers_floor():
    english = load_alphabet("english-limited")
    assert uniform_add(len(english), 0.05) == 53  # Dasher: max(1, 3276 // 61)
    model = PPMModel(english)
    model.train_text("Hello. How are you? Fine. Thanks.")
    model.reset()
    d = model.dasher_distribution()
    assert d.sum() == DASHER_TOTAL and d.min() >= 53
    assert d[english.index("H")] == d.max()  # after ". " a capital comes next


def test_quantise_contract():
    p = np.array([0.7, 0.2, 0.1, 0.0])
    q = quantise(p, floor=0.05)
    assert q.sum() == DASHER_TOTAL and (q >= uniform_add(4, 0.05)).all()
    assert q[0] > q[1] > q[2] > q[3]


def test_quantise_gives_the_remainder_to_the_largest_fractions_ties_to_the_lower_index():
    rng = np.random.default_rng(3)
    stack = rng.dirichlet(np.ones(96) * 0.3, size=50)
    stack[0] = 1 / 96  # every remainder tied
    stack[1, :10] = stack[1, 10]  # a run of ties inside a row
    q = quantise(stack, floor=0.05)
    add = uniform_add(96, 0.05)
    rest = DASHER_TOTAL - add * 96
    for row, probs in zip(q, stack / stack.sum(axis=1, keepdims=True), strict=True):
        scaled = probs * rest
        base = np.floor(scaled).astype(int)
        short = rest - base.sum()
        # largest remainder first, ties in index order: the symbols that get one more unit
        winners = sorted(range(96), key=lambda i: (-(scaled[i] - base[i]), i))[:short]
        expected = base + add
        expected[winners] += 1
        assert (row == expected).all() and row.sum() == DASHER_TOTAL
    assert (q[1:] == np.stack([quantise(p, floor=0.05) for p in stack[1:]])).all()


def test_unfloored_probabilities_never_give_an_unseen_symbol_zero():
    """With a long history the escape mass falls below one integer unit per symbol; scoring without
    Dasher's floor must still give every symbol a (tiny) probability, not infinite bits."""
    ppm = PPMModel(load_alphabet("english"))
    ppm.train_text("ab" * 500_000)
    probs = ppm.probs_at(ppm.context_after("ababab"))
    assert probs.min() > 0 and np.isclose(probs.sum(), 1.0)
    assert probs.argmax() == ppm.alphabet.index("a")


def test_orders_up_to_eight_work_and_higher_ones_are_refused():
    ppm = PPMModel(load_alphabet("english"), max_order=8)
    ppm.train_text("my dog is called Bartholomew and he is a good dog")
    ctx = ppm.context_after("called Bartholome")
    assert ctx.order == 8 and ppm.probs_at(ctx).argmax() == ppm.alphabet.index("w")
    with pytest.raises(ValueError, match="order must be 0..8"):
        PPMModel(load_alphabet("english"), max_order=9)


@settings(max_examples=30, deadline=None)
@given(st.text(alphabet="abc", max_size=30), st.text(alphabet="abc", min_size=1, max_size=60), st.integers(0, 60))
def test_compacting_the_learned_counts_changes_no_prediction_and_undo_still_works(train, learned, undo):
    import dasher_rnn.lm.ppm as ppm_module

    plain, compacted = abc_model(train), abc_model(train)
    for ch in learned:
        plain.learn(ABC.index(ch))
    old, ppm_module.COMPACT_AT = ppm_module.COMPACT_AT, 2  # merged into the arrays every symbol or two
    try:
        records = [compacted.learn(ABC.index(ch)) for ch in learned]
    finally:
        ppm_module.COMPACT_AT = old
    assert len(compacted._overlay) < 2 and len(plain._overlay) >= 1
    assert stored_counts(compacted) == stored_counts(plain)
    assert compacted.num_contexts == plain.num_contexts == len(stored_counts(plain))  # counted once, merged or not
    for ch in learned[:5]:
        plain.advance(ABC.index(ch))
        compacted.advance(ABC.index(ch))
        assert compacted.distribution(1000).tolist() == plain.distribution(1000).tolist()
    undo = min(undo, len(learned))
    for record in reversed(records[len(records) - undo :]):  # undo reaches back across compactions
        compacted.unlearn(record)
    expected = abc_model(train)
    for ch in learned[: len(learned) - undo]:
        expected.learn(ABC.index(ch))
    assert stored_counts(compacted) == stored_counts(expected)


def test_ppm_writes_an_alphabet_of_more_than_127_symbols():
    from dasher_rnn.adapt.compose import HYBRID_PPM_ORDER, build_ppm
    from dasher_rnn.lm.ppm import max_order_for

    french = load_alphabet("fr")
    assert len(french) > 127 and max_order_for(french) == 6 and max_order_for(load_alphabet("english")) == 8
    text = "Où est la gare ? Je voudrais un café, s'il vous plaît. Ça coûte combien ?\n" * 5
    fast = PPMModel(french, max_order=6)
    fast.train_text(text)
    slow = PPMModel(french, max_order=6)
    slow._overlay = {0: {}}  # not empty: forces the sequential path
    slow.train_text(text)
    assert fast.snapshot()["keys"].tolist() == slow.snapshot()["keys"].tolist()  # keys in base 256 agree
    assert fast.snapshot()["counts"].tolist() == slow.snapshot()["counts"].tolist()
    fast.reset()
    for ch in "Ça coût":
        fast.advance(french.index(ch))
    assert int(np.argmax(fast.distribution(DASHER_TOTAL))) == french.index("e")  # "Ça coûte": it learned
    with pytest.raises(ValueError, match="0..6"):
        PPMModel(french, max_order=7)
    model, _ = build_ppm([], "fr", HYBRID_PPM_ORDER)  # the hybrid asks for order 8: it gets what fits
    assert model.max_order == 6
    again = PPMModel(french, max_order=6)
    again.restore(fast.snapshot())
    assert again.num_contexts == fast.num_contexts
