"""The Writer: the predictor that learns one person's writing, under every front end.

One Writer serves one user and one stream of messages. It owns
- the RNN's predictor service (batched queries on a tree of contexts, ``predictor/``),
- the writing session that adapts the RNN to what is committed and rolls it back (``adapt/session.py``),
- the hybrid's PPM and its mixing weights (``lm/hybrid.py``), and
- the profile all of it is saved to, every part together (``adapt/profiles.py``).

The model kinds (``model``): ``rnn``, ``ppm`` (Dasher's), ``hybrid`` (the two mixed) and ``uniform``.
The zoom (``zoom/sources.py``), the API (``api/sessions.py``), the BciPy adapter, ``eval``,
``simulate`` and ``adapt`` all use this one interface, built by ``dasher_rnn.adapt.compose``:

- contexts: ``root(text)``, ``child(context, symbol)``, ``request(contexts)`` -> distributions, ``release``;
- learning: ``commit(text)`` / ``commit_symbol(symbol, context)``, ``delete(n)``, ``new_message()``,
  ``set_adapting(on)``; ``delete`` takes back what the RNN, PPM and the mixing weights learned, exactly;
- lifetime: ``save()``, ``close()``, and the read-only ``status()``; built with ``autosave_s`` (the app), the
  profile is also saved in the background while something new was learned: ``autosave()`` (a front end's timer, and
  every commit) saves once ``autosave_s`` passed since the last save, ``new_message()`` at once, so a crash loses
  at most the last ``autosave_s`` of learning.

A save captures every part on the caller's thread, in order with what was committed (PPM's bytes, and the
writing session's snapshot request, which the session answers once the commits queued before it are applied);
the waiting, encoding and writing run on the saving thread, one save at a time, in the order they were captured.

Every method is called from one thread (the UI's, or the API's event loop through a worker); the
predictor and the adaptation run on their own threads and never block it, except where a method
says it waits.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dasher_rnn.alphabet import Alphabet
from dasher_rnn.lm.protocol import DASHER_FLOOR, quantise
from dasher_rnn.predictor.service import Distribution

if TYPE_CHECKING:
    from dasher_rnn.lm.ppm import PPMContext
    from dasher_rnn.predictor.tree import Node

log = logging.getLogger(__name__)

MODELS = ("rnn", "ppm", "hybrid", "uniform")
MIXER_CONTEXT = 500  # characters of the message before a commit that the mixing weights' update conditions on
MIXER_CHUNK = 256  # committed characters scored per request for the mixing weights' update
SAVE_WAIT_S = 300  # how long a save waits for the adaptation to catch up with what was committed
AUTOSAVE_S = 30.0  # the app: how often the profile is saved in the background while learning
HISTORY_BATCH = 256  # messages of a history whose RNN probabilities ``learn_history`` asks for in one batched pass
# the longest message whose every committed character ``commit`` conditions on the whole message before it (the
# chunks it asks for start where at most MIXER_CONTEXT characters came before): ``learn_history`` reads such a message
# from its start in the batched pass, a longer one as ``commit`` does
HISTORY_WHOLE = MIXER_CHUNK * (MIXER_CONTEXT // MIXER_CHUNK + 1)


class WriterError(RuntimeError):
    """A request the Writer cannot carry out as it was built (e.g. adapting a model that cannot learn)."""


@dataclass(eq=False)
class Context:
    """A handle on one context: the RNN's tree node, PPM's context, and (once the RNN answered) its
    probabilities there, from which the mixing weights learn when a character is committed."""

    node: Node | None  # None for models without the RNN
    ppm: PPMContext | None  # None for models without PPM
    p_rnn: np.ndarray | None = field(default=None, repr=False)


@dataclass(frozen=True)
class WriterStatus:
    """What the Writer is doing, for a status bar or an API client (a snapshot; changing it changes nothing)."""

    model: str
    description: str
    profile: str | None
    adapting: bool  # learning what is committed now
    can_adapt: bool  # whether learning can be switched on at all
    learns: tuple[str, ...]  # what learns while adapting: "rnn", "ppm", "mixing weights"
    backend: str | None
    weights_version: int = 0
    updates: int = 0
    rollbacks: int = 0
    guard_events: int = 0
    committed: int = 0
    characters_adapted: int = 0
    events: tuple = ()
    notice: str | None = None

    def to_json(self) -> dict:
        return {"model": self.model, "profile": self.profile, "adapting": self.adapting, "can_adapt": self.can_adapt,
                "learns": list(self.learns), "backend": self.backend, "weights_version": self.weights_version,
                "updates": self.updates, "rollbacks": self.rollbacks, "guard_events": self.guard_events,
                "committed": self.committed, "characters_adapted": self.characters_adapted,
                "events": list(self.events), "notice": self.notice}


def _chain(outer: Future, inner: Future, convert: Callable) -> None:
    def done(f: Future) -> None:
        if not outer.set_running_or_notify_cancel():
            return
        try:
            outer.set_result(convert(f.result()))
        except Exception as exc:  # handed to whoever waits on ``outer``
            outer.set_exception(exc)

    inner.add_done_callback(done)
    outer.add_done_callback(lambda f: inner.cancel() if f.cancelled() else None)  # cancelling stops the work


def _done(value) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future


class Writer:
    """Built by ``dasher_rnn.adapt.compose.build_writer``; see the module's docstring."""

    def __init__(self, model: str, alphabet: Alphabet, *, service=None, session=None, mixer=None, store=None,
                 lock=None, profile: str | None = None, base_hash: str | None = None, adapt: bool = True,
                 floor: float = DASHER_FLOOR, description: str = "", notice: str | None = None,
                 autosave_s: float | None = None, clock: Callable[[], float] = time.monotonic):
        if model not in MODELS:
            raise ValueError(f"unknown model {model!r} (choose from {', '.join(MODELS)})")
        self.model, self.alphabet, self.floor = model, alphabet, floor
        self.service, self.session, self.mixer = service, session, mixer
        self.store, self.lock, self.profile, self.base_hash = store, lock, profile, base_hash
        self.description, self.notice = description, notice
        self.can_adapt = session is not None or (mixer is not None and model == "ppm")
        self._adapting = adapt and self.can_adapt
        self._uniform = quantise(np.ones(len(alphabet)), floor)
        self._uniform_log = np.full(len(alphabet), -np.log(len(alphabet)), np.float32)
        self._save_lock = threading.Lock()  # one write at a time
        self.autosave_s, self._clock = autosave_s, clock
        self._changes = 0  # calls that changed what is learned (the caller's count)
        self._saved_changes = 0  # of those, how many the last save that was written holds
        self._last_save = clock()  # when the last save was captured (or the Writer built)
        self._saver: ThreadPoolExecutor | None = None  # the saving thread, made at the first background save
        self._started: list[Future] = []  # background saves started and not yet written, in order (caller's list)
        self._save_notice: str | None = None  # why the last background save failed
        self.closed = False

    # -- contexts ------------------------------------------------------------------------
    def root(self, text: str = "") -> Context:
        """The context at a message start (``""``) or after ``text`` (waits for the RNN to read it)."""
        return self.root_async(text).result()

    def root_async(self, text: str = "") -> Future:
        ppm = self.mixer.context_after(text) if self.mixer is not None else None
        if self.service is None:
            return _done(Context(None, ppm))
        outer: Future = Future()
        _chain(outer, self.service.root_async(text), lambda node: Context(node, ppm))
        return outer

    def child(self, context: Context, symbol: int | str) -> Context:
        """The context one symbol further (cheap: nothing is computed until it is requested)."""
        sym = self.alphabet.index(symbol) if isinstance(symbol, str) else int(symbol)
        if not 0 <= sym < len(self.alphabet):
            raise ValueError(f"symbol {symbol!r} is not in alphabet {self.alphabet.name!r}")
        node = self.service.child(context.node, sym) if self.service is not None else None
        ppm = self.mixer.entered(context.ppm, sym) if self.mixer is not None else None
        return Context(node, ppm)

    def request(self, contexts: list[Context], priority: float = 0.0) -> Future:
        """The next-symbol distribution after each context, as a Future (larger priority served first)."""
        if self.model == "uniform":
            return _done([Distribution(self._uniform_log, self._uniform) for _ in contexts])
        if self.model == "ppm":
            ppm = self.mixer.ppm
            return _done([Distribution(np.log(ppm.probs_at(c.ppm)).astype(np.float32),
                                       ppm.dasher_distribution_at(c.ppm, self.floor)) for c in contexts])
        inner = self.service.request([c.node for c in contexts], priority)
        if self.model == "rnn":
            return inner
        # the hybrid: PPM's part and the weights now, on the caller's thread (PPM is never touched elsewhere)
        parts = [(self.mixer.ppm.probs_at(c.ppm), self.mixer.weight_at(c.ppm)) for c in contexts]

        def mix(dists: list[Distribution]) -> list[Distribution]:
            out = []
            for c, d, (p_ppm, w) in zip(contexts, dists, parts, strict=True):
                p_rnn = d.probs / d.probs.sum()
                c.p_rnn = p_rnn
                p = w * p_rnn + (1 - w) * p_ppm
                out.append(Distribution(np.log(p).astype(np.float32), quantise(p, self.floor)))
            return out

        outer: Future = Future()
        _chain(outer, inner, mix)
        return outer

    def release(self, context: Context) -> None:
        """``context`` and every context made below it are no longer needed."""
        if self.service is not None and context.node is not None:
            self.service.release(context.node)

    # -- learning ------------------------------------------------------------------------
    @property
    def adapting(self) -> bool:
        return self._adapting

    def set_adapting(self, on: bool) -> None:
        """Learn what is committed from now on, or stop learning (what is committed meanwhile is still kept,
        so deleting it takes back nothing that was learned)."""
        if on and not self.can_adapt:
            raise WriterError(f"this {self.model} writer was built without adaptation")
        self._adapting = bool(on)
        if self.session is not None:
            self.session.resume() if on else self.session.pause()

    def commit_symbol(self, symbol: int, context: Context | None = None) -> None:
        """One character became part of the text for good; ``context`` is the one it was predicted in,
        when still known (the mixing weights learn from the RNN's probability of it there)."""
        if self.mixer is not None:
            p_rnn = context.p_rnn if context is not None else None
            self.mixer.commit(symbol, None if p_rnn is None else float(p_rnn[symbol]), learn=self._adapting)
        if self.session is not None:
            self.session.commit(self.alphabet.symbols[symbol])
        self._changed()

    def commit(self, text: str) -> None:
        """Text that became part of the message for good. A character outside the alphabet ends the message.
        In the hybrid the mixing weights learn from the RNN's probability of each character after the
        message so far, asked for in batches (this waits for the predictor)."""
        if self.mixer is not None:
            run: list[int] = []
            for ch in text:
                if ch in self.alphabet:
                    run.append(self.alphabet.index(ch))
                    continue
                self._mixer_learn(run)
                run = []
                self.mixer.new_message()
            self._mixer_learn(run)
        if self.session is not None:
            self.session.commit(text)
        self._changed()

    def _mixer_learn(self, symbols: list[int]) -> None:
        mixer = self.mixer
        if not symbols:
            return
        if not self._adapting or self.service is None:  # no RNN probabilities needed (or nothing learns)
            for symbol in symbols:
                mixer.commit(symbol, learn=self._adapting)
            return
        for start in range(0, len(symbols), MIXER_CHUNK):  # a chunk's contexts fit in the tree's state budget
            chunk = symbols[start : start + MIXER_CHUNK]
            root = self.service.root(self.alphabet.decode(mixer.message[-MIXER_CONTEXT:]))
            try:
                nodes = [root]
                for symbol in chunk[:-1]:
                    nodes.append(self.service.child(nodes[-1], symbol))
                dists = self.service.distributions(nodes)
            finally:
                self.service.release(root)
            for symbol, dist in zip(chunk, dists, strict=True):
                mixer.commit(symbol, float(dist.probs[symbol] / dist.probs.sum()), learn=True)

    def learn_history(self, messages: list[str], progress: Callable[[int], None] | None = None,
                      batch: int = HISTORY_BATCH) -> int:
        """PPM and the mixing weights learn past messages as if they had been written here, without dynamic
        evaluation (``dasher-rnn adapt`` fine-tunes the RNN on them separately); returns the characters learned.
        The RNN's probabilities come for ``batch`` messages at a time in one batched pass
        (``PredictorService.message_probs``), the next batch's computed on the predictor's thread while PPM learns
        this one, and they are those ``commit`` would have asked for one message at a time: the same counts and
        weights, to float rounding. A message longer than the context a commit conditions on (``MIXER_CONTEXT``)
        is learned as ``commit`` learns it."""
        if self.mixer is None:
            return 0
        learned = 0
        was, self._adapting = self._adapting, True
        encoded = [[self.alphabet.index(ch) for ch in message if ch in self.alphabet] for message in messages]
        starts = list(range(0, len(messages), max(1, batch)))

        def probs(start: int) -> Future | None:
            if self.service is None:
                return None
            chunk = encoded[start : start + batch]
            return self.service.message_probs([s if len(s) <= HISTORY_WHOLE else [] for s in chunk])

        try:
            ahead = probs(starts[0]) if starts else None
            for k, start in enumerate(starts):
                current, ahead = ahead, probs(starts[k + 1]) if k + 1 < len(starts) else None
                rnn = current.result() if current is not None else None
                for j in range(start, min(start + batch, len(messages))):
                    self.mixer.new_message()
                    symbols = encoded[j]
                    if rnn is None or len(symbols) > HISTORY_WHOLE:
                        self._mixer_learn(symbols)
                    else:
                        for symbol, p in zip(symbols, rnn[j - start].tolist(), strict=True):
                            self.mixer.commit(symbol, p, learn=True)
                    learned += len(messages[j])
                    if progress is not None:
                        progress(1)
            self.mixer.new_message()
        finally:
            self._adapting = was
        self._changes += 1
        return learned

    def delete(self, count: int = 1) -> None:
        """The user backed out of the last ``count`` committed characters of this message."""
        if count < 1:
            return
        if self.mixer is not None:
            self.mixer.uncommit(count)
        if self.session is not None:
            self.session.delete(count)
        self._changed()

    def new_message(self) -> None:
        """What is committed next starts a new message (deletions never reach back past it)."""
        if self.mixer is not None:
            self.mixer.new_message()
        if self.session is not None:
            self.session.new_message()
        if self.autosave_s is not None and self._unsaved() and self._outstanding() < 2:  # one written, one waiting
            self.save_in_background()

    def flush(self, timeout: float | None = 30.0) -> None:
        """Wait until the RNN has learned everything committed so far (and the predictor uses its weights)."""
        if self.session is not None:
            self.session.flush(timeout)

    # -- lifetime ------------------------------------------------------------------------
    def _changed(self) -> None:
        self._changes += 1
        self.autosave()

    def _unsaved(self) -> bool:
        return self._changes != self._saved_changes and self.profile is not None and self.store is not None

    def autosave(self) -> Future | None:
        """Built with ``autosave_s``: when something was learned since the last save and ``autosave_s`` passed since
        it, start a background save (``save_in_background``); a front end calls this now and then (the app: a timer),
        and every commit does. None when nothing was started."""
        if self.autosave_s is None or not self._unsaved() or self._outstanding() \
                or self._clock() - self._last_save < self.autosave_s:
            return None
        return self.save_in_background()

    def save_in_background(self) -> Future | None:
        """Capture every part now, in order with what was committed, and write them on the saving thread after any
        save started before: a Future of the profile's folder (it raises what ``save`` would; the Writer's status
        says so until a save works). None without a profile, or once closed."""
        if self.profile is None or self.store is None or self.closed:
            return None
        try:
            captured = self._capture()
        except Exception as exc:  # never taken down with the commit that asked: said in the status instead
            self._save_notice = f"what was learned could not be saved ({exc}); it is tried again"
            self._last_save = self._clock()
            log.exception("capturing the profile %r for a background save failed", self.profile)
            return None
        if self._saver is None:
            self._saver = ThreadPoolExecutor(1, thread_name_prefix="profile-save")
        future = self._saver.submit(self._write_in_background, *captured)
        self._started.append(future)
        return future

    def _outstanding(self) -> int:
        self._started = [f for f in self._started if not f.done()]
        return len(self._started)

    def save(self) -> Path | None:
        """Save every part of the profile together (waits for the adaptation to catch up, and for a background
        save being written); None without one."""
        if self.profile is None or self.store is None:
            return None
        self._wait_for_background()
        captured = self._capture()
        with self._save_lock:
            path = self._write(*captured)
        self._save_notice = None
        return path

    def _capture(self) -> tuple[dict, dict, Future | None, int]:
        """On the caller's thread: PPM's bytes and the session's snapshot request, in order with what was committed."""
        parts, info = {}, {"model": self.model}
        if self.mixer is not None:
            parts["ppm"] = self.mixer.to_bytes()
        snapshot = self.session.snapshot() if self.session is not None else None
        self._last_save = self._clock()
        return parts, info, snapshot, self._changes

    def _write(self, parts: dict, info: dict, snapshot: Future | None, changes: int) -> Path:
        """Wait for the session's snapshot, encode the weights and write the version (with ``_save_lock`` held)."""
        from dasher_rnn.adapt.profile_files import ProfileError, read_info
        from dasher_rnn.adapt.profiles import encode_weights

        if snapshot is not None:
            try:
                weights, session_info = snapshot.result(SAVE_WAIT_S)
            except TimeoutError:
                raise ProfileError(f"could not save profile {self.profile!r}: the adaptation is more than "
                                   f"{SAVE_WAIT_S} s behind; nothing was written, try again") from None
            parts["rnn"] = encode_weights(weights)
            info.update(session_info)
        try:  # only profile.json is read, not the parts
            saved = read_info(self.store.path(self.profile)) or {}
        except ProfileError:
            saved = {}
        if snapshot is None:  # keep what the RNN part's last save recorded
            info.update({k: v for k, v in saved.items() if k in ("characters_adapted", "step_scale", "adaptation")})
        if "corpus_adaptation" in saved:  # what `adapt` measured stays with the profile
            info["corpus_adaptation"] = saved["corpus_adaptation"]
        path = self.store.save(self.profile, parts, info, self.base_hash)
        self._saved_changes = max(self._saved_changes, changes)
        return path

    def _write_in_background(self, parts: dict, info: dict, snapshot: Future | None, changes: int) -> Path:
        try:
            with self._save_lock:
                path = self._write(parts, info, snapshot, changes)
        except Exception as exc:  # a full disk, a read-only folder: said in the status; the next one tries again
            self._save_notice = f"what was learned could not be saved ({exc}); it is tried again"
            log.warning("background save of profile %r failed: %s", self.profile, exc)
            raise
        self._save_notice = None
        return path

    def _wait_for_background(self) -> None:
        for future in self._started:  # written in order: the last one done, all are
            try:
                future.result()
            except Exception:  # said in the status already; the save that waits writes everything anyway
                pass
        self._started = []

    def close(self, save: bool = True) -> None:
        """Save the profile (when asked and there is one), then stop the adaptation and the predictor and let
        the profile go. When the save fails (``ProfileError``: a full disk, a read-only folder), nothing is
        closed and nothing is lost: the caller may free space and try again, or close without saving. A background
        save being written is waited for either way, so nothing is written once the profile is let go."""
        if self.closed:
            return
        if save:
            self.save()
        self.closed = True
        if self.session is not None:
            self.session.close()
        self._wait_for_background()
        if self._saver is not None:
            self._saver.shutdown(wait=True)
        if self.service is not None:
            self.service.close()
        if self.lock is not None:
            self.lock.release()

    def status(self) -> WriterStatus:
        learns: tuple[str, ...] = ()
        if self.can_adapt:
            learns = {"rnn": ("rnn",), "ppm": ("ppm",), "hybrid": ("rnn", "ppm", "mixing weights")}[self.model]
            if self.session is None:
                learns = tuple(x for x in learns if x != "rnn")
        s = self.session.stats() if self.session is not None else {}
        notices = [self.notice, s.get("notice"), self._save_notice]
        return WriterStatus(
            model=self.model, description=self.description, profile=self.profile, adapting=self._adapting,
            can_adapt=self.can_adapt, learns=learns,
            backend=self.service.backend.name if self.service is not None else None,
            weights_version=self.service.weights_version if self.service is not None else 0,
            updates=s.get("updates", 0), rollbacks=s.get("rollbacks", 0), guard_events=s.get("guard_events", 0),
            committed=s.get("committed", len(self.mixer.message) if self.mixer is not None else 0),
            characters_adapted=s.get("characters_adapted", 0), events=tuple(s.get("events", ())),
            notice="; ".join(n for n in notices if n) or None)
