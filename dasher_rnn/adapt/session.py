"""A writing session: what the user commits, deletes and resets, learned off the UI thread.

The UI (or API) calls ``commit``, ``delete`` and ``new_message`` from its own thread; they only
enqueue. A worker applies them in order to the ``DynamicEvaluator`` and, after every update or
rollback, hands a snapshot of the weights to the predictor service, so boxes created afterwards
use them and distributions already shown never change. Profiles load at start and save on request.
"""

from __future__ import annotations

import logging
import queue
import threading
from concurrent.futures import Future
from pathlib import Path

import torch

from dasher_rnn.adapt.dynamic_eval import AdaptConfig, DynamicEvaluator
from dasher_rnn.adapt.profiles import ProfileError, ProfileStore
from dasher_rnn.lm.model_io import WEIGHTS_FILE, load_model, load_msg

log = logging.getLogger(__name__)


class WritingSession:
    def __init__(self, model_dir: str | Path, config: AdaptConfig | None = None, profile: str | None = None,
                 store: ProfileStore | None = None, service=None, adapt: bool = True):
        model_dir = Path(model_dir)
        model, self.alphabet, model_config = load_model(model_dir)
        self.base_hash = model_config["files"][WEIGHTS_FILE]
        self.config = config or AdaptConfig()
        msg = load_msg(model_dir, model) if self.config.rule != "sgd" else None
        self.evaluator = DynamicEvaluator(model, self.config, self.alphabet.index("\n"), msg)
        self.service, self.profile, self.store = service, profile, store
        self.adapting = adapt  # the worker's view, in order with the queued commits
        self.paused = not adapt  # the caller's view, at once (the hybrid's PPM follows it)
        self.notice: str | None = None  # a message for the user (e.g. a profile that could not be used)
        self.characters_adapted = 0
        self._unlearned = 0  # characters committed while paused and not deleted since (the worker's count)
        if profile is not None:
            self.store = store or ProfileStore()
            self._load_profile()
        self._queue: queue.Queue = queue.Queue()
        self._worker = threading.Thread(target=self._run, name="adaptation", daemon=True)
        self._worker.start()
        if self.characters_adapted:
            self._publish()

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

    def save_profile(self) -> Future:
        future: Future = Future()
        self._queue.put(("save", future))
        return future

    def flush(self, timeout: float | None = 30.0) -> None:
        """Wait until everything queued so far has been applied."""
        done = threading.Event()
        self._queue.put(("flush", done))
        if not done.wait(timeout):
            raise TimeoutError("adaptation worker did not catch up")

    def stats(self) -> dict:
        s = self.evaluator.stats
        return {"adapting": self.adapting, "profile": self.profile, "updates": s.updates, "rollbacks": s.rollbacks,
                "guard_events": s.guard_events, "committed": len(self.evaluator.committed),
                "characters_adapted": self.characters_adapted, "events": list(s.events[-20:]), "notice": self.notice}

    def close(self, save: bool = True) -> None:
        if save and self.profile is not None:
            self.save_profile().result(60)
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
        ev = self.evaluator
        if kind == "commit":
            if not self.adapting:
                self._unlearned = 0 if arg is None else self._unlearned + 1
                return
            if arg is None:
                ev.end_message()
                return
            updates, rollbacks = ev.stats.updates, ev.stats.guard_events
            ev.commit(arg)
            self.characters_adapted += 1
            if ev.stats.updates != updates or ev.stats.guard_events != rollbacks:
                self._publish()
        elif kind == "delete":
            unlearned = min(arg, self._unlearned)  # committed while paused: nothing to take back
            self._unlearned -= unlearned
            arg -= unlearned
            if not arg:
                return
            rollbacks = ev.stats.rollbacks
            ev.delete_to(max(0, len(ev.committed) - arg))
            self.characters_adapted = max(0, self.characters_adapted - arg)
            if ev.stats.rollbacks != rollbacks:
                self._publish()
        elif kind == "new_message":
            self._unlearned = 0
            if self.adapting:
                ev.end_message()
        elif kind == "adapt":
            self.adapting = arg
        elif kind == "save":
            arg.set_result(self._save())
        elif kind == "flush":
            arg.set()

    def _publish(self) -> None:
        if self.service is not None:
            self.service.set_weights({k: v.detach().clone() for k, v in self.evaluator.model.state_dict().items()},
                                     self.config.adapter_spec)

    # -- profiles ----------------------------------------------------------------
    def _adapted_weights(self) -> dict[str, torch.Tensor]:
        return {n: p.detach().clone() for n, p in zip(self.evaluator.names, self.evaluator.params, strict=True)}

    def _save(self) -> Path | None:
        if self.profile is None or self.store is None:
            return None
        return self.store.save(self.profile, self._adapted_weights(), self.base_hash, {
            "characters_adapted": self.characters_adapted,
            "adaptation": self.evaluator.settings(),
            "step_scale": self.evaluator.scale,
        })

    def _load_profile(self) -> None:
        try:
            info = self.store.load_into(self.profile, self.evaluator.model, self.base_hash)
        except ProfileError as exc:
            moved = self.store.set_aside(self.profile)
            self.notice = f"profile {self.profile!r} could not be used ({exc}); moved to {moved}; using the base model"
            log.warning(self.notice)
            return
        if info is None:
            return
        self.evaluator.scale = float(info.get("step_scale", 1.0))
        self.characters_adapted = int(info.get("characters_adapted", 0))
        # deletions cannot reach back into earlier sessions: the loaded weights are the oldest checkpoint
        self.evaluator.ring.clear()
