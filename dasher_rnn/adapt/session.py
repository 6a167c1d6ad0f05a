"""A writing session: the RNN's side of a Writer, learning what is committed off the caller's thread.

The Writer calls ``commit``, ``delete`` and ``new_message`` from its own thread; they only enqueue.
A worker applies them in order to the ``DynamicEvaluator`` and, after an update or rollback,
hands a snapshot of the weights to the predictor service (once the queue is drained, so a burst of
commits costs one hand-over), so boxes created afterwards use them and distributions already shown
never change; ``flush`` returns only after the hand-over. It starts from a profile's saved weights when given one,
and ``snapshot`` hands back what to save (the Writer saves every part of a profile together).

The evaluator is torch's (``adapt/dynamic_eval.py``) or, for a plain LSTM adapting every weight when asked for or
when PyTorch is not installed, numpy's (``adapt/numpy_eval.py``): ``evaluation.choose_engine`` decides. Both give
the same weights and save the same profile.
"""

from __future__ import annotations

import logging
import queue
import threading
from concurrent.futures import Future
from pathlib import Path

from dasher_rnn.adapt.evaluation import AdaptConfig, StreamEvaluator, choose_engine
from dasher_rnn.adapt.profile_files import ProfileError
from dasher_rnn.adapt.profiles import LoadedProfile, decode_weights
from dasher_rnn.lm.model_io import ModelFolder

log = logging.getLogger(__name__)


class WritingSession:
    def __init__(self, model: ModelFolder | str | Path, config: AdaptConfig | None = None, service=None,
                 adapt: bool = True, saved: LoadedProfile | None = None, engine: str = "auto"):
        """``saved``: a profile whose ``rnn`` part (adapted weights) to start from; ``ProfileError`` if it does
        not fit this model. ``engine``: auto, torch or numpy (``evaluation.choose_engine``)."""
        from dasher_rnn.lm.model_io import open_model

        folder = model if isinstance(model, ModelFolder) else open_model(model)
        self.alphabet, self.base_hash = folder.alphabet, folder.base_hash
        self.config = config or AdaptConfig()
        self.engine = choose_engine(folder.config["architecture"].get("cell", "lstm"), self.config, engine)
        self.evaluator = _evaluator(folder, self.config, self.engine)
        self.service = service
        self.adapting = adapt  # the worker's view, in order with the queued commits
        self.paused = not adapt  # the caller's view, at once
        self.notice: str | None = None  # a message for the user (e.g. an adaptation error)
        self.characters_adapted = 0
        self._unlearned = 0  # characters committed while paused and not deleted since (the worker's count)
        self._stale = False  # the predictor has not been handed the latest weights yet (the worker's flag)
        if saved is not None and self._restore(saved):  # the profile's weights, before the worker is asked anything
            self._publish()
        self._queue: queue.Queue = queue.Queue()
        self._worker = threading.Thread(target=self._run, name="adaptation", daemon=True)
        self._worker.start()

    # -- from the UI thread ----------------------------------------------------------
    def commit(self, text: str) -> None:
        """Characters whose boxes became the root's parent. Characters outside the alphabet end the context."""
        for ch in text:
            self._queue.put(("commit", self.alphabet.index(ch) if ch in self.alphabet else None))

    def delete(self, count: int = 1) -> None:
        """The user backed out of ``count`` committed characters."""
        self._queue.put(("delete", int(count)))

    def new_message(self) -> None:
        self._queue.put(("new_message", None))

    def pause(self) -> None:
        self.paused = True
        self._queue.put(("adapt", False))

    def resume(self) -> None:
        self.paused = False
        self._queue.put(("adapt", True))

    def snapshot(self) -> Future:
        """(adapted weights, profile info) as they are once everything queued so far is applied."""
        future: Future = Future()
        self._queue.put(("snapshot", future))
        return future

    def flush(self, timeout: float | None = 30.0) -> None:
        """Wait until everything queued so far has been applied."""
        done = threading.Event()
        self._queue.put(("flush", done))
        if not done.wait(timeout):
            raise TimeoutError("adaptation worker did not catch up")

    def stats(self) -> dict:
        s, scale = self.evaluator.stats, self.evaluator.scale
        notices = [self.notice]
        if scale < 1.0 and s.guard_events:  # a guard event here damped the step: said until it wears off
            notices.append(f"learning is slowed to 1/{round(1 / scale):g} of its pace after text it could not learn "
                           "from; it returns to full pace as normal writing goes on")
        return {"adapting": self.adapting, "updates": s.updates, "rollbacks": s.rollbacks,
                "guard_events": s.guard_events, "heldout_events": s.heldout_events, "step_scale": scale,
                "committed": len(self.evaluator.committed), "characters_adapted": self.characters_adapted,
                "events": list(s.events[-20:]), "notice": "; ".join(n for n in notices if n) or None}

    def close(self) -> None:
        """Stop the worker (what is queued is applied first)."""
        self._queue.put(("stop", None))
        self._worker.join(60)

    # -- worker ------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            kind, arg = self._queue.get()
            if kind == "stop":
                return
            try:
                self._apply(kind, arg)
            except Exception as exc:  # adaptation must never take the session down
                log.exception("adaptation step failed")
                self.notice = f"adaptation error: {exc}"
                if isinstance(arg, Future) and not arg.done():
                    arg.set_exception(exc)

    def _apply(self, kind: str, arg) -> None:
        if kind == "flush" and self._stale:  # whoever waits sees the predictor with the latest weights
            self._publish()
        self._apply_one(kind, arg)
        if self._stale and self._queue.empty():  # more queued: hand over only the weights after the last of it
            self._publish()

    def _apply_one(self, kind: str, arg) -> None:
        ev = self.evaluator
        if kind == "commit":
            if not self.adapting:
                self._unlearned = 0 if arg is None else self._unlearned + 1
                return
            if arg is None:
                ev.end_message()
                return
            updates, rollbacks, heldout = ev.stats.updates, ev.stats.guard_events, ev.stats.heldout_events
            ev.commit(arg)
            self.characters_adapted += 1
            self._stale |= ev.stats.updates != updates or ev.stats.guard_events != rollbacks
            if ev.stats.heldout_events != heldout:
                self._say_not_kept(ev.stats.events[-1])
        elif kind == "delete":
            unlearned = min(arg, self._unlearned)  # committed while paused: nothing to take back
            self._unlearned -= unlearned
            arg -= unlearned
            if not arg:
                return
            rollbacks = ev.stats.rollbacks
            ev.delete_to(max(0, len(ev.committed) - arg))
            self.characters_adapted = max(0, self.characters_adapted - arg)
            self._stale |= ev.stats.rollbacks != rollbacks
        elif kind == "new_message":
            self._unlearned = 0
            if self.adapting:
                ev.end_message()
        elif kind == "adapt":
            self.adapting = arg
        elif kind == "snapshot":
            arg.set_result((self._adapted_weights(), {
                "characters_adapted": self.characters_adapted,
                "adaptation": self.evaluator.settings(),
                "step_scale": self.evaluator.scale,
            }))
        elif kind == "flush":
            arg.set()

    def _say_not_kept(self, event: dict) -> None:
        """The status says what a check on held-out text did not keep, and why."""
        start, end = event["not_kept"]
        worse = event.get("worse_by")
        self.notice = (f"what was learned from the last {end - start:,} characters was not kept: it made your earlier "
                       f"writing {'harder' if worse is None else f'{worse:.2f} bits/char harder'} to predict "
                       "(random or unusual text?); learning goes on")
        log.warning("%s", self.notice)

    def _publish(self) -> None:
        self._stale = False
        if self.service is not None:
            self.service.set_weights(self.evaluator.state_dict(), self.config.adapter_spec)

    # -- profiles ----------------------------------------------------------------
    def _adapted_weights(self) -> dict:
        """The adapted parameters by name (tensors from torch's engine, float32 arrays from numpy's)."""
        return self.evaluator.adapted_weights()

    def _restore(self, saved: LoadedProfile) -> bool:
        """Start from the profile's ``rnn`` part; whether it had one this model can use. A part the model refuses
        is handed back (``LoadedProfile.reject``): a repairing load offers the part's previous version, else the RNN
        starts from the base weights; a strict one raises ``ProfileError``."""
        shapes = self.evaluator.shapes()
        while True:
            if "rnn" not in saved.parts:
                return False  # a profile of the PPM alone (or none of its RNN versions fits): the base weights
            try:
                weights = decode_weights(saved, shapes, self.base_hash)
                break
            except ProfileError as exc:
                saved.reject("rnn", str(exc))
        scale, adapted = saved.step_scale, saved.characters_adapted
        self.evaluator.load_weights(weights)
        self.evaluator.scale, self.characters_adapted = scale, adapted
        # deletions cannot reach back into earlier sessions: the loaded weights are the oldest checkpoint
        self.evaluator.ring.clear()
        return True


def _evaluator(folder: ModelFolder, config: AdaptConfig, engine: str) -> StreamEvaluator:
    """The evaluator of ``engine`` ("torch" or "numpy") over a fresh copy of the folder's weights."""
    newline = folder.alphabet.index("\n")
    if engine == "numpy":
        from dasher_rnn.adapt.numpy_eval import NumpyEvaluator

        msg = folder.msg_arrays() if config.rule != "sgd" else None
        return NumpyEvaluator(folder.weights, config, newline, msg)
    from dasher_rnn.adapt.dynamic_eval import DynamicEvaluator

    net = folder.network()
    return DynamicEvaluator(net, config, newline, folder.msg(net) if config.rule != "sgd" else None)


def expected_shapes(folder: ModelFolder, adaptation: object = None) -> dict[str, tuple[int, ...]]:
    """The names and shapes a profile's ``rnn`` part may hold for the model in ``folder``, adapted with the settings
    ``adaptation`` (a profile's ``adaptation`` record; the defaults when it is not one); ValueError when they are
    not settings this model can adapt with."""
    fields = set(AdaptConfig.__dataclass_fields__)
    config = AdaptConfig(**{k: v for k, v in adaptation.items() if k in fields}) if isinstance(adaptation, dict) \
        else AdaptConfig()
    engine = choose_engine(folder.config["architecture"].get("cell", "lstm"), config, "auto")
    if config.method == "full":  # every weight: numpy's engine names them as torch's does, without building a network
        engine = "numpy" if folder.config["architecture"].get("cell", "lstm") == "lstm" else engine
    return _evaluator(folder, config, engine).shapes()
