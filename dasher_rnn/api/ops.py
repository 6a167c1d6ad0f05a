"""The API's operations on validated requests, shared by the HTTP routes and the WebSocket.

Each takes the registry (or a session) and a request model and returns a JSON-ready dict.
"""

from __future__ import annotations

import numpy as np

from dasher_rnn import __version__
from dasher_rnn.alphabet import Alphabet
from dasher_rnn.api import schemas as s
from dasher_rnn.api.lifetime import within
from dasher_rnn.api.limits import check_count, check_text
from dasher_rnn.api.registry import Registry
from dasher_rnn.api.sessions import ApiSession
from dasher_rnn.lm.protocol import DASHER_TOTAL
from dasher_rnn.predictor.service import Distribution

API_VERSION = "1"


def encode(distributions: list[Distribution], fmt: str) -> list[list]:
    if fmt == "counts":
        return [d.counts.tolist() for d in distributions]
    out = []
    for d in distributions:
        lp = d.log_probs
        if not np.isfinite(lp).all():  # JSON has no infinities
            lp = np.nan_to_num(lp, nan=-1e30, neginf=-1e30, posinf=0.0)
        out.append(lp.tolist())
    return out


def health(registry: Registry) -> dict:
    import time

    return {"status": "ok" if registry.base is not None else "starting", "sessions": len(registry.sessions),
            "uptime_s": round(time.time() - registry.started, 3)}


def alphabet_info(alphabet: Alphabet) -> dict:
    return {"name": alphabet.name, "symbols": alphabet.symbols, "size": len(alphabet),
            "groups": [{"name": g.name, "symbols": g.symbols} for g in alphabet.groups]}


def model_info(registry: Registry) -> dict:
    config, alphabet = registry.config, registry.alphabet
    base = registry.base
    return {
        "model": registry.model_dir.name,
        "alphabet": alphabet_info(alphabet),
        "architecture": config.get("architecture", {}),
        "validation_bpc": config.get("validation_bpc"),
        "total": DASHER_TOTAL,
        "floor": base.floor if base is not None else None,
        "backend": base.status().backend if base is not None else None,
        "limits": registry.limits.to_json(),
        "api_version": API_VERSION,
        "program_version": __version__,
    }


async def predict(registry: Registry, req: s.PredictRequest) -> dict:
    dists = await within(registry.limits, registry.predict(req.contexts, req.unknown == "reject"))
    return {"format": req.format, "distributions": encode(dists, req.format)}


async def open_session(registry: Registry, req: s.SessionCreate) -> dict:
    return session_info(await registry.open(req.profile, req.adapt, req.model, req.language))


def session_info(session: ApiSession) -> dict:
    """The session's state, its language and alphabet, and what its user should know (``notice``)."""
    alphabet = session.alphabet
    return {**session.info(), "language": alphabet.language, "alphabet": alphabet_info(alphabet),
            "notice": session.notice}


async def create_context(session: ApiSession, req: s.ContextCreate) -> dict:
    spec = s.ContextSpec.model_construct(**req.model_dump(exclude={"format"}))
    out = await within(session.limits, _create_contexts(session, s.ContextBatch.model_construct(contexts=[spec],
                                                                                                format=req.format)))
    single = {"handle": out["handles"][0]}
    if "distributions" in out:
        single["distribution"] = out["distributions"][0]
    return single


async def create_contexts(session: ApiSession, req: s.ContextBatch) -> dict:
    return await within(session.limits, _create_contexts(session, req))


async def _create_contexts(session: ApiSession, req: s.ContextBatch) -> dict:
    check_count(len(req.contexts), session.limits.max_contexts, "contexts")
    handles: list[int | None] = [None] * len(req.contexts)
    roots = [(i, c) for i, c in enumerate(req.contexts) if c.text is not None]
    children = [(i, c) for i, c in enumerate(req.contexts) if c.parent is not None]
    # check everything before creating anything, so a bad request leaves no handles behind
    for _, c in children:
        session.node(c.parent)
    for _, c in roots:
        check_text(c.text, session.alphabet, session.limits, "context text", c.unknown == "reject")
    before = set(session.handles)
    try:
        for (i, _), h in zip(children, await session.create_children([(c.parent, c.symbols) for _, c in children]),
                             strict=True):
            handles[i] = h
        for reject in (True, False):  # the roots of each kind in one call, read together
            group = [(i, c.text) for i, c in roots if (c.unknown == "reject") == reject]
            if group:
                for (i, _), h in zip(group, await session.create_roots([text for _, text in group], reject),
                                     strict=True):
                    handles[i] = h
        out: dict = {"handles": handles}
        if req.format is not None:
            out["distributions"] = encode(await session.distributions(handles), req.format)
        return out
    except BaseException:  # stopped by the time limit, or failed: the client never learns these handles
        session.forget([h for h in handles if h is not None and h not in before])
        raise


async def distributions(session: ApiSession, req: s.DistributionsRequest) -> dict:
    dists = await within(session.limits, session.distributions(req.contexts, req.priority))
    return {"format": req.format, "distributions": encode(dists, req.format)}


def release(session: ApiSession, handle: int) -> dict:
    session.release(handle)
    return {"ok": True}


async def commit(session: ApiSession, req: s.CommitRequest) -> dict:
    return done(session, await session.commit(req.text, req.wait, req.unknown == "reject"))


async def delete(session: ApiSession, req: s.DeleteRequest) -> dict:
    return done(session, await session.delete(req.count, req.wait))


async def reset(session: ApiSession, req: s.WaitRequest) -> dict:
    return done(session, await session.reset(req.wait))


async def adapt(session: ApiSession, req: s.AdaptRequest) -> dict:
    return {**done(session, await session.set_adapting(req.enabled)), "adapting": req.enabled}


async def save_profile(session: ApiSession) -> dict:
    return {"ok": True, **await session.save_profile()}


def done(session: ApiSession, caught_up: bool | None = None) -> dict:
    """The answer to a commit, delete, reset or adapt; ``caught_up``: with ``wait``, whether learning caught up
    within the wait limit (false: answered 202 over HTTP; send a commit of "" with wait to wait again)."""
    status = session.writer.status()
    out = {"ok": True, "committed": status.committed if "rnn" in status.learns else None,
           "weights_version": status.weights_version}
    if caught_up is not None:
        out["caught_up"] = caught_up
    return out


def accepted(answer: dict, response: object) -> dict:
    """``answer``, with the HTTP ``response``'s status made 202 when learning has not caught up yet."""
    if answer.get("caught_up") is False:
        response.status_code = 202  # type: ignore[attr-defined]
    return answer
