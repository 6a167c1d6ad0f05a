"""The BciPy adapter against the behaviours BciPy's own language-model tests check of a character model
(bcipy/language/tests/test_{ngram,causal,mixture,uniform,oracle}.py, bcipy/helpers/tests/test_language_model.py),
written afresh for the shipped model in process, and the adapter's exception as BciPy code sees it."""

import importlib
import string
import sys
import types

import pytest
from dasher_rnn_client import bcipy as client_bcipy

from dasher_rnn.api import bcipy as api_bcipy

# What bcipy.core.symbols.alphabet() returns for text stimuli: the capitals, then BACKSPACE_CHAR and SPACE_CHAR.
ALPHABET = list(string.ascii_uppercase) + ["<", "_"]


@pytest.fixture(scope="module")
def lm():
    model = api_bcipy.DasherRNNLanguageModel.in_process()
    model.set_symbol_set(ALPHABET)
    yield model
    model.close()


def fresh(lm, **kwargs):
    """Another adapter on the fixture's loaded predictor (no second model load), with no symbol set yet."""
    return api_bcipy.DasherRNNLanguageModel(lm.backend, **kwargs)


def probs_of(answer):
    return [p for _, p in answer]


def top(answer):
    return max(answer, key=lambda pair: pair[1])[0]


def assert_distribution(answer):
    """Every symbol once, each probability in [0, 1), summing to 1, most probable first, not all equal."""
    assert sorted(s for s, _ in answer) == sorted(ALPHABET)
    probs = probs_of(answer)
    assert all(0.0 <= p < 1.0 for p in probs)
    assert sum(probs) == pytest.approx(1.0, abs=1e-6)
    assert probs == sorted(probs, reverse=True)
    assert len(set(probs)) > 1


# -- the symbol set ----------------------------------------------------------------------------------------------------
def test_the_adapter_has_the_character_model_shape_and_keeps_its_symbol_set(lm):
    """Mirrors test_ngram.py::test_init (and test_causal.py::test_gpt2_init, test_mixture.py, test_uniform.py::test_init)."""
    # BciPy's CharacterLanguageModel is a runtime-checkable protocol: a symbol_set attribute and the two methods.
    other = fresh(lm)
    assert other.symbol_set is None
    assert callable(other.set_symbol_set) and callable(other.predict_character)
    other.set_symbol_set(ALPHABET)
    assert other.symbol_set == ALPHABET and len(other.symbol_set) == 28


def test_predicting_before_a_symbol_set_is_set_raises(lm):
    """Mirrors test_ngram.py::test_invalid_symbol_set (and the same test in test_causal.py, test_mixture.py)."""
    with pytest.raises(api_bcipy.InvalidSymbolSet):
        fresh(lm).predict_character("this_should_fail")


def test_an_empty_symbol_set_is_taken_and_predicting_with_it_raises(lm):
    """Mirrors test_uniform.py::test_invalid_symbol_set (and test_oracle.py::test_invalid_symbol_set): BciPy's models
    take set_symbol_set([]) and raise when a prediction is asked for (ours raised at once, failing their test)."""
    other = fresh(lm)
    other.set_symbol_set([])
    assert other.symbol_set == []
    with pytest.raises(api_bcipy.InvalidSymbolSetException, match="empty"):
        other.predict_character("this_should_fail")
    other.set_symbol_set(ALPHABET)  # and a real one after it works
    assert_distribution(other.predict_character("TH"))


@pytest.mark.parametrize("symbol", ["\u00e9", "\u2603", "AB", "PLUS"])
def test_a_symbol_the_model_cannot_predict_is_refused(lm, symbol):
    """Mirrors test_ngram.py::test_invalid_symbol_set for the symbol set's content (BciPy's alphabet() may give image names)."""
    other = fresh(lm)
    with pytest.raises(api_bcipy.InvalidSymbolSet):
        other.set_symbol_set(ALPHABET + [symbol])
    assert other.symbol_set is None  # a refused set leaves the adapter as it was


def test_a_missing_model_is_an_error_when_the_adapter_is_built(tmp_path):
    """Mirrors test_ngram.py::test_invalid_model_path (and test_causal.py::test_invalid_model_path)."""
    with pytest.raises(ValueError, match="missing"):
        api_bcipy.DasherRNNLanguageModel.in_process(tmp_path / "no-such-model")


# -- the answer --------------------------------------------------------------------------------------------------------
def test_the_answer_for_empty_evidence(lm):
    """Mirrors test_ngram.py::test_predict_start_of_word (and test_causal.py, test_mixture.py; test_uniform.py::test_predict)."""
    answer = lm.predict_character([])
    assert_distribution(answer)
    assert answer == lm.predict_character("")
    assert top(answer) in "ITAWH"  # how English messages start


def test_the_answer_is_a_list_of_symbol_and_float_pairs(lm):
    """Mirrors test_language_model.py::test_insert_sym_with_zero_prob (BciPy's with_min_prob and histogram read these pairs)."""
    answer = lm.predict_character(list("HELLO_"))
    assert isinstance(answer, list)
    for pair in answer:
        assert isinstance(pair, tuple) and len(pair) == 2
        assert isinstance(pair[0], str) and type(pair[1]) is float
    assert dict(answer)["<"] == 0.0


def test_in_the_middle_of_a_word(lm):
    """Mirrors test_ngram.py::test_predict_middle_of_word (and test_causal.py, test_mixture.py)."""
    answer = lm.predict_character(list("TH"))
    assert_distribution(answer)
    assert top(answer) == "E"


def test_a_phrase_as_evidence(lm):
    """Mirrors test_ngram.py::test_phrase (and test_causal.py::test_gpt2_phrase, test_mixture.py::test_phrase)."""
    assert top(lm.predict_character(list("does_it_make_sen"))) == "S"


@pytest.mark.parametrize("after", ["the_", "the_n"])
def test_space_is_less_likely_after_a_space(lm, after):
    """Mirrors test_ngram.py::test_multiple_spaces ("the_") and test_mixture.py::test_multiple_spaces ("the_n")."""
    before = dict(lm.predict_character(list("the")))["_"]
    assert dict(lm.predict_character(list(after)))["_"] < before


def test_every_symbol_but_backspace_has_a_nonzero_probability(lm):
    """Mirrors test_ngram.py::test_nonzero_prob (and test_causal.py, test_mixture.py)."""
    answer = lm.predict_character(list("does_it_make_sens"))
    assert all(p > 0.0 for s, p in answer if s != "<")
    assert dict(answer)["<"] == 0.0  # as BciPy's adapters give it (LanguageModelAdapter.predict_character)


def test_a_backspace_probability_is_taken_from_the_others(lm):
    """Mirrors test_language_model.py::test_insert_sym_with_non_zero_prob (BciPy gives backspace a minimum probability)."""
    plain = dict(lm.predict_character(list("I_NEED_")))
    other = fresh(lm, backspace_prob=0.05)
    other.set_symbol_set(ALPHABET)
    answer = other.predict_character(list("I_NEED_"))
    assert_distribution(answer)
    assert dict(answer)["<"] == 0.05
    for symbol, p in answer:
        if symbol != "<":
            assert p == pytest.approx(0.95 * plain[symbol], rel=1e-9)


# -- the evidence ------------------------------------------------------------------------------------------------------
def test_the_same_evidence_gives_the_same_answer(lm):
    """Mirrors test_ngram.py::test_identical (and test_causal.py::test_gpt2_identical, test_mixture.py::test_identical)."""
    first = lm.predict_character(list("evidenc"))
    second = lm.predict_character(list("evidenc"))
    assert [s for s, _ in first] == [s for s, _ in second]
    assert probs_of(first) == pytest.approx(probs_of(second), abs=1e-9)


def test_upper_and_lower_case_evidence_give_the_same_answer(lm):
    """Mirrors test_ngram.py::test_upper_lower_case (and test_causal.py::test_gpt2_upper_lower_case, test_mixture.py)."""
    upper, lower = lm.predict_character(list("EVIDENC")), lm.predict_character(list("evidenc"))
    assert [s for s, _ in upper] == [s for s, _ in lower]
    assert probs_of(upper) == pytest.approx(probs_of(lower), abs=1e-9)
    assert top(upper) == "E"


def test_evidence_as_a_string_or_a_list(lm):
    """Mirrors test_oracle.py::test_evidence_exceeds_task (evidence as a string) and test_ngram.py::test_invalid_symbol_set."""
    for text in ["", "TH", "HELLO_WOR", "I_WAX<NT_"]:
        assert lm.predict_character(text) == lm.predict_character(list(text))


def test_evidence_with_backspaces(lm):
    """Mirrors test_oracle.py::test_predict_with_incorrectly_spelled_text (evidence holding typed errors; here corrected)."""
    assert lm.predict_character(list("THX<")) == lm.predict_character(list("TH"))
    assert lm.predict_character(list("I_WAX<NT_")) == lm.predict_character(list("I_WANT_"))
    assert lm.predict_character(list("<<TH")) == lm.predict_character(list("TH"))  # nothing to delete yet
    assert lm.predict_character(list("AB<<")) == lm.predict_character([])


def test_the_evidence_is_not_changed(lm):
    """Mirrors test_ngram.py::test_non_mutable_evidence (and test_causal.py, test_mixture.py)."""
    for text in ["Test_test", "TEST_TEX<ST"]:
        evidence = list(text)
        lm.predict_character(evidence)
        assert evidence == list(text)


def test_changing_an_answer_does_not_change_the_next(lm):
    """Mirrors test_language_model.py::test_insert_sym_when_already_exists (callers may adjust the list they are given)."""
    answer = lm.predict_character(list("TH"))
    expected = list(answer)
    answer.clear()
    assert lm.predict_character(list("TH")) == expected


# -- the exception as BciPy code sees it -------------------------------------------------------------------------------
@pytest.fixture
def reload_adapter(monkeypatch):
    """Reloads the adapter (dasher_rnn_client.bcipy, where the exception is made, then dasher_rnn.api.bcipy) with the
    given sys.modules entries; puts the modules and sys.modules back afterwards."""
    modules = [client_bcipy, api_bcipy]
    saved = [dict(m.__dict__) for m in modules]

    def reload_with(entries):
        for name, module in entries.items():
            monkeypatch.setitem(sys.modules, name, module)
        for m in modules:
            importlib.reload(m)
        return api_bcipy

    yield reload_with
    monkeypatch.undo()
    for m, contents in zip(modules, saved, strict=True):
        m.__dict__.clear()
        m.__dict__.update(contents)


def fake_bcipy():
    """A stand-in for the bcipy package with the shape of its bcipy.exceptions (message and errors)."""
    package = types.ModuleType("bcipy")
    package.__path__ = []
    exceptions = types.ModuleType("bcipy.exceptions")

    class BciPyCoreException(Exception):
        def __init__(self, message, errors=None):
            super().__init__(message)
            self.message, self.errors = message, errors

    class InvalidSymbolSetException(BciPyCoreException):
        pass

    exceptions.BciPyCoreException = BciPyCoreException
    exceptions.InvalidSymbolSetException = InvalidSymbolSetException
    package.exceptions = exceptions
    return {"bcipy": package, "bcipy.exceptions": exceptions}


def test_with_bcipy_its_code_catches_our_exception(lm, reload_adapter):
    """Mirrors test_ngram.py::test_invalid_symbol_set as BciPy sees it: `except bcipy.exceptions.InvalidSymbolSetException`."""
    modules = fake_bcipy()
    theirs = modules["bcipy.exceptions"].InvalidSymbolSetException
    adapter = reload_adapter(modules)
    ours = adapter.InvalidSymbolSetException
    assert issubclass(ours, theirs) and issubclass(ours, ValueError)
    assert adapter.InvalidSymbolSet is ours
    other = adapter.DasherRNNLanguageModel(lm.backend)
    for attempt in (lambda: other.predict_character("this_should_fail"), lambda: other.set_symbol_set(["\u2603"])):
        try:
            attempt()
        except theirs as error:
            assert isinstance(error, ours) and str(error)
        else:
            pytest.fail("no InvalidSymbolSetException")


def test_without_bcipy_our_exception_is_a_value_error(lm, reload_adapter):
    """Mirrors test_uniform.py::test_invalid_symbol_set with no BciPy installed: the exception is a ValueError."""
    adapter = reload_adapter({"bcipy": None, "bcipy.exceptions": None})  # `import bcipy` fails
    ours = adapter.InvalidSymbolSetException
    assert issubclass(ours, ValueError) and adapter.InvalidSymbolSet is ours
    other = adapter.DasherRNNLanguageModel(lm.backend)
    with pytest.raises(ours):
        other.predict_character("this_should_fail")
    with pytest.raises(ValueError):
        other.set_symbol_set(["\u2603"])


def fake_textslinger():
    """A stand-in for textslinger.exceptions (BciPy's language models' exceptions): message and errors."""
    package = types.ModuleType("textslinger")
    package.__path__ = []
    exceptions = types.ModuleType("textslinger.exceptions")

    class TextSlingerException(Exception):
        def __init__(self, message, errors=None):
            super().__init__(message)
            self.message, self.errors = message, errors

    class InvalidLanguageModelException(TextSlingerException):
        pass

    exceptions.TextSlingerException = TextSlingerException
    exceptions.InvalidLanguageModelException = InvalidLanguageModelException
    package.exceptions = exceptions
    return {"textslinger": package, "textslinger.exceptions": exceptions}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("where", ["nobody", "phonymodel.txt", "refuses"])
def test_a_missing_server_raises_what_bcipys_callers_catch_for_a_model_that_cannot_be_loaded(reload_adapter, where):
    """Mirrors test_ngram.py::test_invalid_model_path over HTTP: a server that is not there (a closed port, a path
    that is no URL, a server that refuses the client) raised httpx.ConnectError and the like; BciPy's callers catch
    textslinger's InvalidLanguageModelException."""
    import httpx
    from dasher_rnn_client.client import DasherClient

    modules = fake_textslinger()
    theirs = modules["textslinger.exceptions"].InvalidLanguageModelException
    adapter = reload_adapter(modules)
    ours = adapter.LanguageModelUnavailable
    assert issubclass(ours, theirs) and issubclass(ours, ConnectionError)
    with pytest.raises(theirs) as raised:
        if where == "refuses":  # a server that answers 401 (a token is needed)
            refusing = httpx.MockTransport(lambda request: httpx.Response(401, json={"error": {
                "code": "unauthorized", "message": "a token is needed"}}))
            adapter.DasherRNNLanguageModel(client_bcipy.HttpBackend(DasherClient("http://x", transport=refusing),
                                                                   None, False))
        else:
            url = f"http://127.0.0.1:{_free_port()}" if where == "nobody" else where
            adapter.DasherRNNLanguageModel.from_server(url)
    assert isinstance(raised.value, ours) and "dasher-rnn serve" in str(raised.value)
    assert raised.value.message == str(raised.value) and raised.value.errors is not None


def test_without_textslinger_a_missing_server_is_a_connection_error(reload_adapter):
    adapter = reload_adapter({"textslinger": None, "textslinger.exceptions": None})
    with pytest.raises(ConnectionError, match="no dasher-rnn server"):
        adapter.DasherRNNLanguageModel.from_server(f"http://127.0.0.1:{_free_port()}")


class Counting:
    """A backend that counts what is asked of the model: requests, and the symbols stepped in them."""

    def __init__(self, backend):
        self.backend, self.symbols, self.calls = backend, backend.symbols, []

    def __getattr__(self, name):
        method = getattr(self.backend, name)

        def counted(*args):
            self.calls.append((name, len(args[-1]) if name in ("path", "root", "start") else 0))
            return method(*args)
        return counted


def test_fresh_evidence_is_read_in_one_pass_and_a_backspace_after_it_costs_no_step(lm):
    """BciPy's copy-phrase task starts from pre-filled text: it was read in one pass that left one handle, so a
    backspace after it read the whole text again. Now the pass leaves a handle at each of its last positions."""
    counting = Counting(lm.backend)
    other = api_bcipy.DasherRNNLanguageModel(counting)
    other.set_symbol_set(ALPHABET)
    text = list("I_WOULD_LIKE_A_CUP_OF_TEA_PLEASE_AND_SOME_BISCUITS_IF_THERE_ARE_ANY_LEFT_IN_THE_TIN_THANK_YOU_VERY_M")
    assert len(text) == 100
    other.predict_character(text)
    assert counting.calls == [("start", 100 - client_bcipy.FRESH_TAIL), ("path", client_bcipy.FRESH_TAIL)]
    counting.calls.clear()
    after = other.predict_character(text + ["<"])  # a backspace: a handle held, its state computed
    assert counting.calls == [("release", 0), ("probs", 0)]  # the handle beyond it let go, no symbol stepped
    counting.calls.clear()
    other.predict_character(text + ["<", "H"])  # then a symbol: one step
    assert counting.calls == [("path", 1)]
    afresh = fresh(lm)
    afresh.set_symbol_set(ALPHABET)
    read = dict(afresh.predict_character(text[:-1]))
    assert max(abs(p - read[s]) for s, p in after) < 1e-4


def test_typing_a_symbol_at_a_time_answers_as_reading_the_evidence_afresh(lm):
    """The adapter extends the context it holds (one step a symbol, back to a held context on a backspace): each
    answer equals that of an adapter reading the whole evidence for the first time."""
    evidence: list[str] = []
    for symbol in "I_WANT_TEA<<<<COFFEE_PLEASE._<<THANKS":
        evidence.append(symbol)
        stepped = dict(lm.predict_character(evidence))
        afresh = fresh(lm)
        afresh.set_symbol_set(ALPHABET)
        read = dict(afresh.predict_character(evidence))
        assert stepped.keys() == read.keys()
        assert max(abs(stepped[s] - read[s]) for s in stepped) < 1e-4, "".join(evidence)
