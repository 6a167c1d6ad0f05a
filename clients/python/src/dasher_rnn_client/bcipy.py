"""An adapter with BciPy's character language-model protocol over a ``dasher-rnn serve`` predictor.

    lm = DasherRNNLanguageModel.from_server("http://127.0.0.1:8765")
    lm.set_symbol_set(list("ABCDEFGHIJKLMNOPQRSTUVWXYZ") + ["<", "_"])
    lm.predict_character(["H", "E", "L", "L", "<", "L", "O", "_"])  # [("W", 0.09), ("T", 0.08), ...]

BciPy's conventions: evidence is the list of typed symbols, ``"_"`` is a space and ``"<"`` a backspace
(it removes the symbol before it); the answer lists every symbol of the symbol set with its
probability, most probable first. Choices made here (see the dasher-rnn docs, API.md):
- backspace gets the fixed probability ``backspace_prob`` (0.0 by default, as BciPy's own adapters
  give it) and the other symbols share the rest, renormalised over the symbol set;
- ``case="fold"`` (default) suits spellers whose symbols are capitals: the context is written in
  sentence case (lower case, a capital at the start and after ". ", "! ", "? ") and a letter's
  probability is the sum of its two cases; ``case="exact"`` uses symbols as they are;
- ``learn=True`` opens an adapting session: typed text is committed (backspaces roll learning
  back, evidence that starts afresh begins a new message), so predictions adapt to the user.

A call costs the same at any length of evidence: the adapter keeps the evidence it last read, the context it
spelled and a context handle at each length it was asked about, so one more symbol is one step of the model and
a backspace goes back to a handle it holds (``ContextPath``). Evidence it has not seen (the first call, or text
pre-filled by a copy-phrase task) is read in one batched pass that leaves a handle, and its distribution, at each of
its last ``FRESH_TAIL`` positions: a backspace after it costs no step of the model, a symbol after that one.

The errors are BciPy's own. A symbol set that the model cannot predict, or none (an empty one is accepted, as
BciPy's models accept it, until a prediction is asked for): ``InvalidSymbolSetException`` (ours subclasses
``bcipy.exceptions.InvalidSymbolSetException`` where ``bcipy`` is installed; a ``ValueError`` elsewhere). A server
that is missing, unreachable or refuses the client, when the adapter is built or later: ``LanguageModelUnavailable``,
which subclasses textslinger's ``InvalidLanguageModelException`` where ``textslinger`` is installed (BciPy's callers
catch it for a model that cannot be loaded), and is a ``ConnectionError`` everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

try:
    from bcipy.exceptions import InvalidSymbolSetException as _BciPyInvalidSymbolSet
except ImportError:  # no BciPy here: ours stands alone
    _BciPyInvalidSymbolSet = None
try:
    from textslinger.exceptions import InvalidLanguageModelException as _InvalidLanguageModel
except ImportError:  # no textslinger (BciPy's language models) here
    _InvalidLanguageModel = None

SPACE_CHAR = "_"
BACKSPACE_CHAR = "<"
EXTEND_LIMIT = 64  # symbols one step along the path may add (the server's max_symbols); more: the text is read anew
FRESH_TAIL = 16  # positions at the end of unseen evidence that get a handle each (at most EXTEND_LIMIT)
MAX_MARKS = 4096  # handles one path holds; at this many it starts again from the text (one read of the whole text)

if _BciPyInvalidSymbolSet is not None:
    class InvalidSymbolSetException(_BciPyInvalidSymbolSet, ValueError):  # type: ignore[misc, valid-type]
        """No symbol set yet, or a symbol the model cannot predict (BciPy's exception, and a ``ValueError``)."""
else:
    class InvalidSymbolSetException(ValueError):  # type: ignore[no-redef]
        """No symbol set yet, or a symbol the model cannot predict."""

InvalidSymbolSet = InvalidSymbolSetException  # the name before BciPy's was adopted

if _InvalidLanguageModel is not None:
    class LanguageModelUnavailable(_InvalidLanguageModel, ConnectionError):  # type: ignore[misc, valid-type]
        """The server is missing, unreachable or refuses us (textslinger's exception for a model that cannot be
        loaded, which BciPy's callers catch, and a ``ConnectionError``)."""

        def __init__(self, message: str, errors: Any = None):
            super().__init__(message, errors)
else:
    class LanguageModelUnavailable(ConnectionError):  # type: ignore[no-redef]
        """The server is missing, unreachable or refuses us."""

        def __init__(self, message: str, errors: Any = None):
            super().__init__(message)
            self.message, self.errors = message, errors


def typed_text(evidence: str | list[str]) -> str:
    """The text BciPy evidence spells: backspaces applied, ``_`` made a space."""
    out: list[str] = []
    for symbol in evidence:
        if symbol == BACKSPACE_CHAR:
            if out:
                out.pop()
        else:
            out.append(" " if symbol == SPACE_CHAR else symbol)
    return "".join(out)


# The state of sentence casing after some text: whether the next letter starts a sentence, and the last character.
_CaseState = tuple[bool, str]
_START: _CaseState = (True, "")


def _case_step(state: _CaseState, ch: str) -> tuple[str, _CaseState]:
    """One character of ``sentence_case``: its cased form and the state after it."""
    start, prev = state
    low = ch.lower()
    if start and low.isalpha():
        return low.upper(), (False, low)
    if low.isspace():
        start = start or prev in (".", "!", "?") or low == "\n"
    elif start and low not in "\"'(":
        start = False
    return low, (start, low)


def sentence_case(text: str) -> str:
    """Lower case with a capital at the start and after ". ", "! ", "? " or a newline (each character's case
    depends only on what precedes it, so the case of a prefix never changes as text is added)."""
    out, state = [], _START
    for ch in text:
        cased, state = _case_step(state, ch)
        out.append(cased)
    return "".join(out)


class EvidenceReader:
    """The model's context for BciPy evidence, kept up to date a symbol at a time: evidence that extends the
    evidence read before (a speller's, one symbol a call, backspaces included) costs only its new symbols."""

    def __init__(self, fold: bool):
        self.fold = fold
        self.clear()

    def clear(self) -> None:
        """Forget the evidence read: the next read reads all of its evidence."""
        self.evidence: list[str] = []
        self.pieces: list[str] = []  # the context, one piece per typed symbol (a symbol may lower to two characters)
        self.states: list[_CaseState] = [_START]  # the casing state after each piece
        self.length = 0  # characters in the pieces

    def read(self, evidence: str | Sequence[str]) -> tuple[str, int]:
        """(the context ``evidence`` spells, how many of its first characters are unchanged since the last read)."""
        evidence = list(evidence)
        if evidence[:len(self.evidence)] != self.evidence:
            self.clear()  # evidence started afresh or was edited: read it all
        kept = self.length
        for symbol in evidence[len(self.evidence):]:
            if symbol == BACKSPACE_CHAR:
                if self.pieces:
                    self.length -= len(self.pieces.pop())
                    self.states.pop()
                    kept = min(kept, self.length)
                continue
            ch = " " if symbol == SPACE_CHAR else symbol
            if self.fold:
                piece, state = _case_step(self.states[-1], ch)
            else:
                piece, state = ch, _START
            self.pieces.append(piece)
            self.states.append(state)
            self.length += len(piece)
        self.evidence = evidence
        return "".join(self.pieces), kept


class ContextPath:
    """Context handles along the text last asked about, one at each length asked for (shortest first), so that
    the next text costs what it adds: one more symbol is one step from the last handle, a backspace goes back to
    an earlier one. Handles beyond what the new text keeps are released (the first of them frees the rest). Text
    read afresh is read in one pass that leaves a handle at each of its last ``FRESH_TAIL`` positions (with its
    distribution), and symbols added to a handle leave one at each symbol.

    ``backend`` has ``root(text)`` (``(handle, probabilities)``), ``start(text)`` (a handle, its distribution not
    asked for), ``path(handle, symbols)`` (a ``(handle, probabilities or None)`` after each symbol, the last with
    its probabilities; the model's steps batched), ``probs(handle)`` and ``release(handle)``."""

    def __init__(self, backend: Any):
        self.backend = backend
        self.marks: list[tuple[int, Any, Sequence[float] | None]] = []  # (length of the text, handle, its answer)
        # symbols one path may add: a path is one context per symbol, each at most the server's max_symbols long
        self.limit = min(EXTEND_LIMIT, getattr(backend, "max_symbols", EXTEND_LIMIT),
                         getattr(backend, "max_contexts", EXTEND_LIMIT))

    def probs(self, text: str, kept: int) -> Sequence[float]:
        """The next-symbol probabilities after ``text``, whose first ``kept`` characters are those of the text
        last asked about."""
        keep = len(self.marks)
        while keep and self.marks[keep - 1][0] > kept:
            keep -= 1
        if keep < len(self.marks):
            self.backend.release(self.marks[keep][1])
            del self.marks[keep:]
        if keep == 0 or len(text) - self.marks[-1][0] > self.limit or len(self.marks) >= MAX_MARKS:
            return self._read(text)
        length, parent, answer = self.marks[-1]
        if length == len(text):
            if answer is None:
                answer = self.backend.probs(parent)
                self.marks[-1] = (length, parent, answer)
            return answer
        return self._extend(length, parent, text[length:])

    def _read(self, text: str) -> Sequence[float]:
        """``text`` read afresh: its start in one batched read, its last ``FRESH_TAIL`` symbols as a path below."""
        self.clear()
        tail = min(len(text), FRESH_TAIL, self.limit)
        if tail == 0:
            handle, answer = self.backend.root(text)
            self.marks.append((0, handle, answer))
            return answer
        start = len(text) - tail
        self.marks.append((start, self.backend.start(text[:start]), None))
        return self._extend(start, self.marks[0][1], text[start:])

    def _extend(self, length: int, parent: Any, symbols: str) -> Sequence[float]:
        steps = self.backend.path(parent, symbols)
        for i, (handle, answer) in enumerate(steps, 1):
            self.marks.append((length + i, handle, answer))
        answer = steps[-1][1]
        assert answer is not None  # a path answers for its last handle
        return answer

    def clear(self) -> None:
        if self.marks:
            self.backend.release(self.marks[0][1])
        self.marks = []


def _unavailable(url: str, exc: Exception) -> LanguageModelUnavailable:
    """What BciPy's callers catch for a model that cannot be loaded, saying why in one line."""
    from dasher_rnn_client.client import ClientError

    if isinstance(exc, ClientError):
        why = f"it answered {exc.status} {exc.code}: {exc}"
    else:
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return LanguageModelUnavailable(f"no dasher-rnn server to predict with at {url!r} ({why}); start one with "
                                    "`dasher-rnn serve`", errors=exc)


def _failures() -> tuple[type[Exception], ...]:
    """The errors that mean the server is missing, unreachable or refuses us (not a mistake of the caller's)."""
    import httpx

    from dasher_rnn_client.client import ClientError

    return httpx.HTTPError, httpx.InvalidURL, ClientError, OSError


class HttpBackend:
    """Contexts, learning and probabilities through a session of ``dasher-rnn serve`` (adapting when ``learn``);
    a server missing, unreachable or refusing raises ``LanguageModelUnavailable``, here and at every call."""

    def __init__(self, client: Any, profile: str | None, learn: bool, model: str = "rnn"):
        self.client = client
        try:
            self.symbols: str = client.symbols
            limits = client.model().get("limits", {})
            self.max_symbols = int(limits.get("max_symbols", EXTEND_LIMIT))
            self.max_contexts = int(limits.get("max_contexts", EXTEND_LIMIT))
            self.session = client.open_session(profile, adapt=learn, model=model)
        except _failures() as exc:
            client.close()
            raise _unavailable(client.url, exc) from None

    def _call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except _failures() as exc:
            raise _unavailable(self.client.url, exc) from None

    def root(self, text: str) -> tuple[int, list[float]]:
        handles, dists = self._call(self.session.contexts, [{"text": text, "unknown": "break"}], format="log_probs")
        return handles[0], [math.exp(x) for x in dists[0]]

    def start(self, text: str) -> int:
        return self._call(self.session.root, text, unknown="break")

    def path(self, handle: int, symbols: str) -> list[tuple[int, list[float] | None]]:
        """A handle after each symbol and its distribution, in one request (the server computes every state on the
        path for the last one anyway; a path is at most ``FRESH_TAIL`` or ``max_symbols`` long)."""
        specs = [{"parent": handle, "symbols": symbols[:i]} for i in range(1, len(symbols) + 1)]
        handles, dists = self._call(self.session.contexts, specs, format="log_probs")
        return [(h, [math.exp(x) for x in d]) for h, d in zip(handles, dists)]

    def probs(self, handle: int) -> list[float]:
        return [math.exp(x) for x in self._call(self.session.distributions, [handle])[0]]

    def release(self, handle: int) -> None:
        self._call(self.session.release, handle)

    def commit(self, text: str) -> None:
        self._call(self.session.commit, text, unknown="break")

    def delete(self, count: int) -> None:
        self._call(self.session.delete, count)

    def new_message(self) -> None:
        self._call(self.session.reset)

    def close(self) -> None:
        try:
            self._call(self.session.close)
        finally:
            self.client.close()


class DasherRNNLanguageModel:
    """BciPy's ``CharacterLanguageModel``: ``set_symbol_set`` then ``predict_character(evidence)``."""

    def __init__(self, backend: Any, *, case: str = "fold", backspace_prob: float = 0.0, learn: bool = False):
        if case not in ("fold", "exact"):
            raise ValueError(f"case must be 'fold' or 'exact', not {case!r}")
        if not 0.0 <= backspace_prob < 1.0:
            raise ValueError("backspace_prob must be in [0, 1)")
        self.backend, self.case, self.backspace_prob, self.learn = backend, case, backspace_prob, learn
        self.alphabet: str = backend.symbols
        self._index = {ch: i for i, ch in enumerate(self.alphabet)}
        self.symbol_set: list[str] | None = None
        self._columns: list[list[int]] = []
        self._reader = EvidenceReader(fold=case == "fold")
        self._path = ContextPath(backend)
        self._learned = 0  # characters of the context committed to the session

    @classmethod
    def from_server(cls, url: str = "http://127.0.0.1:8765", token: str | None = None,
                    profile: str | None = None, learn: bool = False, model: str = "rnn",
                    **kwargs: Any) -> DasherRNNLanguageModel:
        """Predictions from a running ``dasher-rnn serve``, through a session of its own (of ``profile`` if given,
        adapting when ``learn``; ``model``: the session's, "rnn" or another the server has, "uniform" among them).
        ``LanguageModelUnavailable`` when no server answers there."""
        from dasher_rnn_client.client import DasherClient

        try:
            client = DasherClient(url, token)
        except _failures() as exc:  # a URL that is none
            raise _unavailable(url, exc) from None
        return cls(HttpBackend(client, profile, learn, model), learn=learn, **kwargs)

    # -- BciPy's protocol --------------------------------------------------------------
    def set_symbol_set(self, symbol_set: list[str]) -> None:
        """The symbols to predict; a symbol the model cannot predict raises ``InvalidSymbolSetException`` at once,
        an empty set (as BciPy's models) when a prediction is asked for."""
        columns = []
        for symbol in symbol_set:
            if symbol == BACKSPACE_CHAR:
                columns.append([])
                continue
            ch = " " if symbol == SPACE_CHAR else symbol
            forms = {ch, ch.lower(), ch.upper()} if self.case == "fold" else {ch}
            ids = sorted({self._index[f] for f in forms if len(f) == 1 and f in self._index})
            if not ids:
                raise InvalidSymbolSetException(f"symbol {symbol!r} is not in the model's alphabet {self.alphabet!r}")
            columns.append(ids)
        self.symbol_set, self._columns = list(symbol_set), columns

    def predict_character(self, evidence: str | list[str]) -> list[tuple[str, float]]:
        """(symbol, probability) for every symbol of the symbol set, most probable first."""
        if self.symbol_set is None:
            raise InvalidSymbolSetException("symbol set must be set prior to requesting predictions")
        if not self.symbol_set:
            raise InvalidSymbolSetException("the symbol set is empty: set one with symbols to predict")
        context, kept = self._reader.read(evidence)
        outside = [ch for ch in context[kept:] if ch not in self._index]
        if outside:
            self._reader.clear()  # nothing of this evidence was taken
            raise InvalidSymbolSetException(f"evidence character {outside[0]!r} is not in the model's alphabet")
        probs = self._path.probs(context, kept)
        mass = [sum(probs[i] for i in ids) if ids else 0.0 for ids in self._columns]
        scale = (1.0 - self.backspace_prob) / float(sum(mass))
        pairs = [(sym, self.backspace_prob if sym == BACKSPACE_CHAR else float(p) * scale)
                 for sym, p in zip(self.symbol_set, mass)]
        if self.learn:
            self._learn(context, kept)
        return sorted(pairs, key=lambda pair: -pair[1])  # stable: ties keep the symbol-set order

    def _learn(self, text: str, kept: int) -> None:
        """Commit what ``text`` adds to what was learned, delete what it took back; a new message when it starts
        afresh."""
        common = min(kept, self._learned)
        if common == 0 and self._learned:
            self.backend.new_message()  # evidence started afresh: a new message, not a deletion
        elif common < self._learned:
            self.backend.delete(self._learned - common)
        if len(text) > common:
            self.backend.commit(text[common:])
        self._learned = len(text)

    def close(self) -> None:
        """End the session (saving its profile) and the connection or predictor."""
        self._path.clear()
        self.backend.close()

    def __enter__(self) -> DasherRNNLanguageModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
