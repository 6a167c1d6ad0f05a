"""The server's sessions: opening them (one per profile, at most ``max_sessions``), finding them by id,
closing them (on request, after the idle timeout, at shutdown), and the shared stateless predictor.

Called from the event loop's thread (the tables are not locked); loading a model and closing a session
(saving its profile) run on worker threads. When sessions expire is ``lifetime.Lifetime``'s; what one
session does is ``sessions.ApiSession``'s.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dasher_rnn.adapt.compose import (
    DASHER_PPM_ORDER,
    HYBRID_PPM_ORDER,
    WriterConfig,
    build_ppm,
    build_writer,
    language_profile,
)
from dasher_rnn.adapt.evaluation import AdaptConfig
from dasher_rnn.adapt.profile_files import ProfileError
from dasher_rnn.adapt.profiles import ProfileInUse, check_name
from dasher_rnn.adapt.writer import AUTOSAVE_S, Writer
from dasher_rnn.alphabet import AlphabetError
from dasher_rnn.api.lifetime import Lifetime
from dasher_rnn.api.limits import ApiError, Limits, check_count, check_text
from dasher_rnn.api.sessions import ApiSession, release_when_done, wait
from dasher_rnn.api.sockets import SocketTable
from dasher_rnn.languages import language_alphabet
from dasher_rnn.lm.model_io import read_checked_config
from dasher_rnn.predictor.service import Distribution

log = logging.getLogger(__name__)


class Registry:
    """The server's sessions, the shared stateless predictor and the limits."""

    def __init__(self, model_dir: str | Path, limits: Limits | None = None, profiles_dir: str | Path | None = None,
                 backend: str = "auto", threads: int | None = None, budget: int = 3000,
                 adapt_config: AdaptConfig | None = None,
                 ppm_train: list[str] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.model_dir = Path(model_dir)
        self.config, self.alphabet = read_checked_config(self.model_dir)
        self.limits = limits or Limits()
        self.profiles_dir, self.backend, self.threads, self.budget = profiles_dir, backend, threads, budget
        self.adapt_config = adapt_config
        self.ppm_train = tuple(ppm_train or ())
        self._ppm: dict[str, object] = {}  # model -> PPM trained on ppm_train, built once and forked per session
        self._ppm_lock = threading.Lock()
        self.sessions: dict[str, ApiSession] = {}
        self.sockets = SocketTable(self.limits.max_session_websockets, self.limits.max_client_websockets, clock)
        self.lifetime: Lifetime[ApiSession] = Lifetime(self.limits.idle_timeout_s, clock)  # expired, being closed
        self._opening: dict[str, str] = {}  # profile -> placeholder while its session loads
        self.base: Writer | None = None
        self.started = time.time()
        self.clock = clock  # seconds, for idle timeouts (``time.monotonic``; tests pass their own)

    def _config(self, **values: object) -> WriterConfig:
        # a session's profile is saved in the background as the app's is, so a killed server loses at most the last
        # AUTOSAVE_S of learning
        defaults: dict[str, object] = {"model_dir": self.model_dir, "ppm_train": self.ppm_train,
                                       "autosave_s": AUTOSAVE_S}
        if self.adapt_config is not None:
            defaults["adaptation"] = self.adapt_config
        return WriterConfig(profiles_dir=self.profiles_dir, backend=self.backend, threads=self.threads,
                            budget=self.budget, **{**defaults, **values})

    # -- lifetime --------------------------------------------------------------------
    def load(self) -> None:
        """Build the stateless predictor now (blocking): ``serve`` does this before it listens, so a broken model is
        an error on the command line."""
        if self.base is None:
            self.base = build_writer(self._config(model="rnn", adapt=False))

    async def start(self) -> None:
        if self.base is None:
            await asyncio.to_thread(self.load)
        self.lifetime.start(self.expire_idle)

    async def expire_idle(self, now: float | None = None) -> list[str]:
        """Close every session unused for the idle timeout (saving its profile, freeing its slot and its profile
        lock); the ids closed. ``now``: a reading of the registry's clock (by default, now)."""
        return await self.lifetime.expire_idle(lambda: self.sessions, now)

    async def close_all(self, save: bool = True) -> None:
        """Close every session (those being closed after the idle timeout too), saving their profiles when asked; a
        save that fails is logged, and the session let go without it (the server is stopping)."""
        sessions = [*self.sessions.values(), *self.lifetime.closing.values()]
        self.lifetime.stop()
        self.sessions = {}
        results = await asyncio.gather(*(s.end(save) for s in sessions), return_exceptions=True)
        for session, result in zip(sessions, results, strict=True):
            if isinstance(result, BaseException):  # the server is stopping: say what was not saved, then let go
                log.error("closing session %s (profile %s): %s; it is closed without saving", session.id[:4],
                          session.profile, result)
                await asyncio.to_thread(session.writer.close, False)
        if self.base is not None:
            self.base.close(save=False)

    # -- sessions --------------------------------------------------------------------
    def get(self, sid: str) -> ApiSession:
        session = self.sessions.get(sid)
        if session is None:
            raise self._missing(sid)
        return session

    def _missing(self, sid: str) -> ApiError:
        """Why ``sid`` is not an open session: being closed after the idle timeout (409), closed or expired (the 404
        remembered, saying whether its profile was saved), or unknown."""
        if sid in self.lifetime.closing:
            return ApiError(409, "session_closing", f"session {sid!r} was unused for the idle timeout and is being "
                                                    "saved and closed; if the save fails it stays open")
        return self.lifetime.ended.get(sid) or ApiError(404, "unknown_session", f"no session {sid!r} (never opened "
                                                                                 "on this server, or closed long ago)")

    @contextmanager
    def use(self, sid: str) -> Iterator[ApiSession]:
        """The session ``sid``, marked in use (not idle) for the duration."""
        with self.get(sid).in_use() as session:
            yield session

    def list(self) -> dict:
        """The open sessions as any client may see them: how many, and their profiles, but never their ids (an id
        is the capability to use, read and close a session, held by the client that opened it alone)."""
        now = self.clock()
        rows = [{"profile": s.profile, "model": s.model, "adapt": s.adapt, "idle_s": round(s.idle_for(now), 1)}
                for s in self.sessions.values()]
        return {"open": len(rows), "max_sessions": self.limits.max_sessions, "sessions": rows}

    async def open(self, profile: str | None, adapt: bool = True, model: str = "hybrid",
                   language: str | None = None) -> ApiSession:
        """A new session; with ``language``, in that language (its alphabet, RNN or PPM alone, its own profile)."""
        closing = self.lifetime.closing
        asked, code = profile, None
        if language is not None:
            try:
                code = language_alphabet(language).language or None
            except AlphabetError as exc:
                raise ApiError(422, "unknown_language", str(exc)) from None
        if profile is not None:
            try:
                check_name(profile)
                profile = check_name(language_profile(profile, code or ""))  # the profile it learns into
            except ProfileError as exc:
                raise ApiError(422, "invalid_profile", str(exc)) from None
            if any(s.profile == profile for s in self.sessions.values()):
                raise ApiError(409, "profile_in_use", self._in_use_message(profile))
            if any(s.profile == profile for s in closing.values()):
                raise ApiError(409, "profile_in_use", f"profile {profile!r} is being saved (its session was closed "
                                                      "after the idle timeout): try again in a moment")
            if profile in self._opening:
                raise ApiError(409, "profile_in_use", f"profile {profile!r} is being opened by another request")
        if len(self.sessions) + len(self._opening) + len(closing) >= self.limits.max_sessions:
            raise ApiError(429, "too_many_sessions", f"{self.limits.max_sessions} sessions are open, the limit: "
                                                     "close one first")
        key = profile if profile is not None else f"\x00{secrets.token_hex(8)}"
        self._opening[key] = key
        try:
            session = await asyncio.to_thread(self._load, asked, adapt, model, code)
        except ProfileInUse as exc:
            raise ApiError(409, "profile_in_use", str(exc)) from None
        finally:
            del self._opening[key]
        self.sessions[session.id] = session
        return session

    def _in_use_message(self, profile: str) -> str:
        timeout = self.limits.idle_timeout_s
        after = f"; it is closed after {timeout:g} s unused" if timeout > 0 else ""
        unsaved = [s.save_error for s in self.sessions.values() if s.profile == profile and s.save_error]
        if unsaved:
            after = (f"; its profile could not be saved ({unsaved[0]}), so it stays open until a save works or its "
                     "client closes it with save=false")
        return (f"profile {profile!r} is open in another session of this server: the client that opened it can use "
                f"or close it{after}")

    def _trained_ppm(self, model: str):
        with self._ppm_lock:
            if model not in self._ppm:
                order = HYBRID_PPM_ORDER if model == "hybrid" else DASHER_PPM_ORDER
                self._ppm[model] = build_ppm(self.ppm_train, self.alphabet.name, order)[0]
            return self._ppm[model]

    def _load(self, profile: str | None, adapt: bool, model: str = "hybrid", language: str | None = None) -> ApiSession:
        if language is not None and language != "en":  # the server's PPM text and RNN are English: the language's own
            try:
                writer = build_writer(self._config(model=model, profile=profile, adapt=adapt, language=language,
                                                   model_dir=None, ppm_train=()))
            except ValueError as exc:  # an RNN asked for where none writes the language
                raise ApiError(422, "no_model", str(exc)) from None
        else:
            trained = self._trained_ppm(model) if model in ("hybrid", "ppm") else None
            alphabet = {"alphabet": self.alphabet.name} if model == "uniform" else {}  # the server's symbols
            writer = build_writer(self._config(model=model, profile=profile, adapt=adapt, **alphabet),
                                  trained_ppm=trained)
        return ApiSession(secrets.token_hex(16), writer, self.limits, adapt, writer.status().profile, self.clock)

    async def close(self, sid: str, save: bool = True) -> dict:
        """Close the session ``sid`` (saving unless ``save`` is false) once the operation running on it is done. A
        DELETE while it is being closed (by another DELETE, or after the idle timeout) shares that close and its
        answer; after it, the 404 says what became of the profile. A failed save keeps the session open (507)."""
        session = self.sessions.get(sid) or self.lifetime.closing.get(sid)
        if session is None:
            raise self._missing(sid)  # the 404: closed (saved or not), expired, or unknown
        saved = await session.end(save)
        if self.sessions.get(sid) is session:
            del self.sessions[sid]
            self.lifetime.remember_closed(sid, session.profile, saved)
        return {"session": sid, "closed": True, "saved": saved}

    # -- stateless -------------------------------------------------------------------
    async def predict(self, texts: list[str], reject_unknown: bool = True) -> list[Distribution]:
        check_count(len(texts), self.limits.max_contexts, "contexts")
        texts = [check_text(t, self.alphabet, self.limits, "context text", reject_unknown) for t in texts]
        if self.base is None:
            raise ApiError(503, "starting", "the predictor is still loading")
        futures = [self.base.root_async(t) for t in texts]
        try:
            roots = [await wait(f) for f in futures]
            return await wait(self.base.request(roots))
        finally:
            release_when_done(futures, self.base.release)
