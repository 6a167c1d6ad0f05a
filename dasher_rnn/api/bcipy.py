"""An adapter with BciPy's character language-model protocol, backed by a dasher-rnn server or in-process.

    lm = DasherRNNLanguageModel.from_server("http://127.0.0.1:8765")   # or DasherRNNLanguageModel.in_process()
    lm.set_symbol_set(list("ABCDEFGHIJKLMNOPQRSTUVWXYZ") + ["<", "_"])
    lm.predict_character(["H", "E", "L", "L", "<", "L", "O", "_"])  # [("W", 0.09), ("T", 0.08), ...]

BciPy's conventions: evidence is the list of typed symbols, ``"_"`` is a space and ``"<"`` a backspace
(it removes the symbol before it); the answer lists every symbol of the symbol set with its
probability, most probable first. Choices made here (see docs/API.md):
- backspace gets the fixed probability ``backspace_prob`` (0.0 by default, as BciPy's own adapters
  give it) and the other symbols share the rest, renormalised over the symbol set;
- ``case="fold"`` (default) suits spellers whose symbols are capitals: the context is written in
  sentence case (lower case, a capital at the start and after ". ", "! ", "? ") and a letter's
  probability is the sum of its two cases; ``case="exact"`` uses symbols as they are;
- ``learn=True`` opens an adapting session: typed text is committed (backspaces roll learning
  back, evidence that starts afresh begins a new message), so predictions adapt to the user.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

SPACE_CHAR = "_"
BACKSPACE_CHAR = "<"


class InvalidSymbolSet(ValueError):
    """No symbol set yet, or a symbol the model cannot predict."""


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


def sentence_case(text: str) -> str:
    """Lower case with a capital at the start and after ". ", "! ", "? " or a newline (each character's case
    depends only on what precedes it, so the case of a prefix never changes as text is added)."""
    out, start, prev = [], True, ""
    for ch in text.lower():
        if start and ch.isalpha():
            out.append(ch.upper())
            start = False
        else:
            out.append(ch)
            if ch.isspace():
                start = start or prev in (".", "!", "?") or ch == "\n"
            elif start and ch not in "\"'(":
                start = False
        prev = ch
    return "".join(out)


class _HttpBackend:
    def __init__(self, client, profile: str | None, learn: bool):
        self.client = client
        self.symbols = client.symbols
        self.session = client.open_session(profile, adapt=learn, model="rnn") if (learn or profile is not None) else None

    def probs(self, text: str) -> np.ndarray:
        if self.session is None:
            return np.exp(self.client.predict([text], unknown="break")[0].astype(np.float64))
        handles, dists = self.session.contexts([{"text": text, "unknown": "break"}], format="log_probs")
        self.session.release(handles[0])
        return np.exp(dists[0].astype(np.float64))

    def commit(self, text: str) -> None:
        self.session.commit(text, unknown="break")

    def delete(self, count: int) -> None:
        self.session.delete(count)

    def new_message(self) -> None:
        self.session.reset()

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
        self.client.close()


class _LocalBackend:
    def __init__(self, model_dir: Path, profile: str | None, learn: bool, profiles_dir, backend: str):
        from dasher_rnn.adapt.compose import WriterConfig, build_writer

        self.writer = build_writer(WriterConfig(model="rnn", model_dir=model_dir, profile=profile, adapt=learn,
                                                profiles_dir=profiles_dir, backend=backend))
        self.symbols = self.writer.alphabet.symbols

    def probs(self, text: str) -> np.ndarray:
        root = self.writer.root(text)
        try:
            return self.writer.request([root]).result()[0].probs
        finally:
            self.writer.release(root)

    def commit(self, text: str) -> None:
        self.writer.commit(text)

    def delete(self, count: int) -> None:
        self.writer.delete(count)

    def new_message(self) -> None:
        self.writer.new_message()

    def close(self) -> None:
        self.writer.close(save=True)


class DasherRNNLanguageModel:
    """BciPy's ``CharacterLanguageModel``: ``set_symbol_set`` then ``predict_character(evidence)``."""

    def __init__(self, backend, *, case: str = "fold", backspace_prob: float = 0.0, learn: bool = False):
        if case not in ("fold", "exact"):
            raise ValueError(f"case must be 'fold' or 'exact', not {case!r}")
        if not 0.0 <= backspace_prob < 1.0:
            raise ValueError("backspace_prob must be in [0, 1)")
        self.backend, self.case, self.backspace_prob, self.learn = backend, case, backspace_prob, learn
        self.alphabet = backend.symbols
        self._index = {ch: i for i, ch in enumerate(self.alphabet)}
        self.symbol_set: list[str] | None = None
        self._columns: list[list[int]] = []
        self._learned = ""

    @classmethod
    def from_server(cls, url: str = "http://127.0.0.1:8765", token: str | None = None, profile: str | None = None,
                    learn: bool = False, **kwargs) -> DasherRNNLanguageModel:
        """Predictions from a running ``dasher-rnn serve`` (a session of ``profile`` when learning or given)."""
        from dasher_rnn.api.client import DasherClient

        return cls(_HttpBackend(DasherClient(url, token), profile, learn), learn=learn, **kwargs)

    @classmethod
    def in_process(cls, model_dir: str | Path | None = None, profile: str | None = None, learn: bool = False,
                   profiles_dir: str | Path | None = None, backend: str = "auto", **kwargs) -> DasherRNNLanguageModel:
        """Predictions from a predictor service in this process (no server)."""
        from dasher_rnn.paths import DEFAULT_MODEL_DIR

        return cls(_LocalBackend(Path(model_dir or DEFAULT_MODEL_DIR), profile, learn, profiles_dir, backend),
                   learn=learn, **kwargs)

    # -- BciPy's protocol --------------------------------------------------------------
    def set_symbol_set(self, symbol_set: list[str]) -> None:
        columns = []
        for symbol in symbol_set:
            if symbol == BACKSPACE_CHAR:
                columns.append([])
                continue
            ch = " " if symbol == SPACE_CHAR else symbol
            forms = {ch, ch.lower(), ch.upper()} if self.case == "fold" else {ch}
            ids = sorted({self._index[f] for f in forms if len(f) == 1 and f in self._index})
            if not ids:
                raise InvalidSymbolSet(f"symbol {symbol!r} is not in the model's alphabet {self.alphabet!r}")
            columns.append(ids)
        self.symbol_set, self._columns = list(symbol_set), columns

    def predict_character(self, evidence: str | list[str]) -> list[tuple[str, float]]:
        """(symbol, probability) for every symbol of the symbol set, most probable first."""
        if self.symbol_set is None:
            raise InvalidSymbolSet("symbol set must be set prior to requesting predictions")
        text = typed_text(evidence)
        context = sentence_case(text) if self.case == "fold" else text
        outside = [ch for ch in context if ch not in self._index]
        if outside:
            raise InvalidSymbolSet(f"evidence character {outside[0]!r} is not in the model's alphabet")
        probs = self.backend.probs(context)
        mass = np.array([probs[ids].sum() if ids else 0.0 for ids in self._columns])
        mass *= (1.0 - self.backspace_prob) / mass.sum()
        pairs = [(sym, self.backspace_prob if sym == BACKSPACE_CHAR else float(p))
                 for sym, p in zip(self.symbol_set, mass, strict=True)]
        if self.learn:
            self._learn(context)
        order = sorted(range(len(pairs)), key=lambda i: -pairs[i][1])  # stable: ties keep the symbol-set order
        return [pairs[i] for i in order]

    def _learn(self, text: str) -> None:
        old = self._learned
        common = 0
        while common < min(len(old), len(text)) and old[common] == text[common]:
            common += 1
        if common == 0 and old:
            self.backend.new_message()  # evidence started afresh: a new message, not a deletion
        elif common < len(old):
            self.backend.delete(len(old) - common)
        if len(text) > common:
            self.backend.commit(text[common:])
        self._learned = text

    def close(self) -> None:
        """End the session (saving its profile) and the connection or predictor."""
        self.backend.close()

    def __enter__(self) -> DasherRNNLanguageModel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
