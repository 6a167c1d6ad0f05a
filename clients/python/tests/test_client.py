"""dasher-rnn-client on its own: the client against a stand-in server (httpx's MockTransport), the BciPy adapter's
evidence reading and context path against a stand-in backend, and, where ``DASHER_RNN_URL`` names a running
``dasher-rnn serve``, both against the real server. Runs on Python 3.9 with httpx and pytest alone."""

from __future__ import annotations

import json
import math
import os
import random

import httpx
import pytest

from dasher_rnn_client import ClientError, DasherClient, DasherRNNLanguageModel, InvalidSymbolSetException
from dasher_rnn_client.bcipy import FRESH_TAIL, ContextPath, EvidenceReader, sentence_case, typed_text

SYMBOLS = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ.'"
BCIPY_ALPHABET = [chr(c) for c in range(ord("A"), ord("Z") + 1)] + ["<", "_"]
URL = os.environ.get("DASHER_RNN_URL")


def fake_server(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/v1/model":
        return httpx.Response(200, json={"alphabet": {"symbols": SYMBOLS}})
    if request.url.path == "/v1/predict":
        texts = json.loads(request.content)["contexts"]
        if any(ch not in SYMBOLS for t in texts for ch in t):
            return httpx.Response(422, json={"error": {"code": "unknown_symbol", "message": "not in the alphabet"}})
        return httpx.Response(200, json={"distributions": [[-math.log(len(SYMBOLS))] * len(SYMBOLS) for _ in texts]})
    return httpx.Response(404, json={"error": {"code": "not_found", "message": request.url.path}})


def test_the_client_reads_distributions_and_raises_the_servers_errors():
    with DasherClient("http://test", transport=httpx.MockTransport(fake_server)) as client:
        assert client.symbols == SYMBOLS
        rows = client.predict(["hello", ""])
        assert len(rows) == 2 and len(rows[0]) == len(SYMBOLS)
        assert abs(sum(math.exp(x) for x in rows[0]) - 1) < 1e-6
        with pytest.raises(ClientError) as error:
            client.predict(["\u2603"])
        assert error.value.status == 422 and error.value.code == "unknown_symbol"


# -- the adapter's parts ------------------------------------------------------------------------------------------
class CountingBackend:
    """Probabilities that depend on the context's last character; counts the characters each call reads."""

    symbols = SYMBOLS

    def __init__(self):
        self.read = 0
        self.handles = {}  # handle -> context text
        self.released = []

    def _probs(self, text):
        last = SYMBOLS.find(text[-1]) if text else 0
        weights = [1.0 + (i == (last + 1) % len(SYMBOLS)) * 20 for i in range(len(SYMBOLS))]
        return [w / sum(weights) for w in weights]

    def _new(self, text):
        handle = len(self.handles) + 1
        self.handles[handle] = text
        return handle, self._probs(text)

    def root(self, text):
        self.read += len(text)
        return self._new(text)

    def start(self, text):
        self.read += len(text)
        return self._new(text)[0]

    def path(self, handle, symbols):
        self.read += len(symbols)
        base = self.handles[handle]
        return [self._new(base + symbols[:i]) for i in range(1, len(symbols) + 1)]

    def probs(self, handle):
        return self._probs(self.handles[handle])

    def release(self, handle):
        self.released.append(handle)

    def close(self):
        pass


def test_the_evidence_reader_spells_what_typed_text_and_sentence_case_spell():
    rng = random.Random(0)
    for fold in (True, False):
        reader = EvidenceReader(fold)
        evidence = []
        for step in range(400):
            if step % 97 == 96:
                evidence = []  # starting afresh
            evidence.append(rng.choice(["<", "_", "A", "B", ".", "C", "'", "D", "E"]))
            text, kept = reader.read(evidence if step % 2 else "".join(evidence))
            expected = typed_text(evidence)
            assert text == (sentence_case(expected) if fold else expected)
            assert 0 <= kept <= len(text)


def test_a_call_reads_only_what_the_evidence_adds_at_any_length():
    backend = CountingBackend()
    lm = DasherRNNLanguageModel(backend)
    lm.set_symbol_set(BCIPY_ALPHABET)
    evidence = []
    for i in range(1600):
        evidence.append("_" if i % 6 == 5 else "ABCDE"[i % 5])
        before = backend.read
        lm.predict_character(evidence)
        assert backend.read - before == 1  # one symbol: one step, however long the text
    before = backend.read
    evidence.append("<")
    answer = dict(lm.predict_character(evidence))
    assert backend.read == before  # a backspace goes back to a context already held
    assert backend.released  # and lets go of the one it left
    assert answer["<"] == 0.0 and abs(sum(answer.values()) - 1) < 1e-9


def test_the_path_starts_again_when_the_text_does():
    backend = CountingBackend()
    path = ContextPath(backend)
    path.probs("hello", 0)
    path.probs("hello there", 5)
    before = backend.read
    path.probs("bye", 0)
    assert backend.read - before == 3 and path.marks[-1][0] == 3


def test_fresh_text_leaves_a_handle_at_each_of_its_last_positions():
    backend = CountingBackend()
    path = ContextPath(backend)
    text = "a" * 100
    path.probs(text, 0)
    assert backend.read == 100  # read once
    assert [length for length, _, _ in path.marks] == list(range(100 - FRESH_TAIL, 101))
    path.probs(text[:-3], len(text) - 3)  # three backspaces: held, answered, nothing read
    assert backend.read == 100 and path.marks[-1][0] == 97

def test_the_symbol_set_is_checked_and_folded_case_sums_both_cases():
    lm = DasherRNNLanguageModel(CountingBackend())
    with pytest.raises(InvalidSymbolSetException):
        lm.predict_character(["A"])
    for bad in (["\u2603"], ["AB"]):
        with pytest.raises(ValueError):
            lm.set_symbol_set(bad)
    lm.set_symbol_set([])  # as BciPy's models: taken, and refused when a prediction is asked for
    with pytest.raises(InvalidSymbolSetException):
        lm.predict_character(["A"])
    lm.set_symbol_set(BCIPY_ALPHABET)
    answer = dict(lm.predict_character(list("HELLO_THERE")))
    assert set(answer) == set(BCIPY_ALPHABET) and abs(sum(answer.values()) - 1) < 1e-9
    exact = DasherRNNLanguageModel(CountingBackend(), case="exact", backspace_prob=0.1)
    exact.set_symbol_set(["a", "A", "<", "_"])
    pairs = exact.predict_character("")
    assert dict(pairs)["<"] == 0.1 and [p for _, p in pairs] == sorted((p for _, p in pairs), reverse=True)


# -- against a running server ---------------------------------------------------------------------------------------
live = pytest.mark.skipif(not URL, reason="DASHER_RNN_URL does not name a running dasher-rnn serve")


@live
def test_a_bcipy_speller_against_the_server():
    with DasherRNNLanguageModel.from_server(URL) as lm:
        lm.set_symbol_set(BCIPY_ALPHABET)
        evidence = list("DOES_IT_MAKE_SEN")
        answer = lm.predict_character(evidence)
        assert answer[0][0] == "S" and abs(sum(p for _, p in answer) - 1) < 1e-6
        assert lm.predict_character(evidence + ["S", "<"]) == answer  # back where it was


@live
def test_sessions_and_the_websocket_against_the_server():
    with DasherClient(URL) as client:
        session = client.open_session(adapt=False, model="rnn")
        root = session.root("Hello, how are ")
        rows = session.distributions([root, session.child(root, "y")])
        assert len(rows) == 2 and len(rows[0]) == len(client.symbols)
        try:
            import websockets  # noqa: F401
        except ImportError:
            pass
        else:
            with session.websocket() as ws:
                assert ws.call("info")["session"] == session.id
        session.close(save=False)


def test_no_server_is_a_language_model_that_cannot_be_loaded():
    import socket

    from dasher_rnn_client import LanguageModelUnavailable

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for url in (f"http://127.0.0.1:{port}", "phonymodel.txt"):
        with pytest.raises(LanguageModelUnavailable) as raised:
            DasherRNNLanguageModel.from_server(url)
        assert isinstance(raised.value, ConnectionError) and "dasher-rnn serve" in str(raised.value)
