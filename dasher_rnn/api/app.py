"""The FastAPI application: routes, the WebSocket, uniform JSON errors, startup and graceful shutdown.

Every error a client can cause is a 4xx with ``{"error": {"code": ..., "message": ...}}``; anything
else is logged and answered with a 500 of the same shape, and the server goes on.

Every success answer, over HTTP or the WebSocket, is checked against its model in ``schemas.py``
(the schema published in ``/openapi.json``) before it is sent: a body that does not match is a
logged 500, not a silent change to the contract. The published request schemas carry this server's limits
(``schemas.narrow``). A 405 says in ``Allow`` which methods the path has. While the app runs, its log writes a
repeated record once and then counts it (``logs.RepeatFilter``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

import numpy as np
from fastapi import Body, FastAPI, Request, Response, WebSocket, WebSocketDisconnect
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from dasher_rnn import __version__
from dasher_rnn.api import ops
from dasher_rnn.api import schemas as s
from dasher_rnn.api.guard import LOOPBACK_ORIGIN, Guard
from dasher_rnn.api.limits import ApiError
from dasher_rnn.api.logs import RepeatFilter, SecretFilter
from dasher_rnn.api.registry import Registry
from dasher_rnn.api.sockets import CLOSE_CODE

log = logging.getLogger(__name__)

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": s.ErrorResponse} for code in (400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 503, 507)}
ERRORS[413]["description"] = ("Too large: a body or WebSocket message over max_body_bytes (body_too_large), a text "
                              "over max_text once normalised (text_too_long), more contexts or symbols than the "
                              "limits (too_many_contexts, too_many_symbols), or a request beyond the state budget "
                              "(budget_exceeded)")
STATUS_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
                405: "method_not_allowed", 409: "conflict", 413: "too_large", 415: "unsupported_media_type",
                422: "invalid_request", 429: "limit_reached", 503: "unavailable"}


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    return str(obj)


class JSONBytes(JSONResponse):
    """Plain ``json.dumps`` (ASCII-escaped, so even lone surrogates in an echoed input encode; no NaN or
    infinity, which JSON lacks). A ``JSONResponse``, so the OpenAPI schema shows each route's model."""

    def render(self, content: object) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":"), allow_nan=False,
                          default=_json_default).encode()


class CheckedRoute(APIRoute):
    """A route whose answer is its operation's dict checked against ``response_model`` (FastAPI validates
    it and raises ``ResponseValidationError`` on a mismatch, answered as a logged 500) and written with
    exactly the fields the operation gave: an optional field it left out stays out, not ``null``."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        kwargs["response_model_exclude_unset"] = True
        super().__init__(path, endpoint, **kwargs)


def checked(model: type[BaseModel], content: dict) -> dict:
    """``content`` checked against ``model`` and written as a route's answer would be (for WebSocket
    results); raises ``ValidationError`` when it does not match."""
    return model.model_validate(content).model_dump(mode="json", exclude_unset=True)


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None,
                   **extra: object) -> JSONBytes:
    return JSONBytes({"error": {"code": code, "message": message, **extra}}, status_code=status, headers=headers)


def allowed_methods(app: FastAPI, scope: dict) -> list[str]:
    """The methods the routes of ``scope``'s path answer (for a 405's ``Allow``): a route counts only if the path's
    parameters are of its types (``/contexts/batch`` is not ``DELETE /contexts/{handle}``, whose handle is a number)."""
    methods: set[str] = set()
    for route in app.routes:
        if not isinstance(route, APIRoute):
            continue
        match, child = route.matches(scope)
        params = child.get("path_params", {})
        if match is not Match.NONE and all(not field.validate(params.get(field.alias))[1]
                                           for field in route.dependant.path_params):
            methods |= route.methods
    return sorted(methods)


def published_languages() -> tuple[list[str], list[str]]:
    """The language codes a session may name, and those an ``rnn`` session may name (``en``: the server's model)."""
    from dasher_rnn.cldr import entries
    from dasher_rnn.languages import shipped_rnn

    codes = list(entries())
    return codes, ["en", *(code for code in codes if code != "en" and shipped_rnn(code) is not None)]


def _describe(errors: list[dict]) -> tuple[str, list[dict]]:
    details = [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
               for e in errors]
    first = details[0] if details else {"loc": [], "msg": "invalid request"}
    where = ".".join(p for p in first["loc"] if p != "body") or "body"
    return f"{where}: {first['msg']}", details


def create_app(registry: Registry, *, token: str | None = None, loopback: bool = True,
               allow_origins: list[str] | None = None) -> FastAPI:
    """The API over ``registry``; its predictor loads on startup and its sessions close (saving) on shutdown."""

    repeats, secrets = RepeatFilter(), SecretFilter()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        secrets.install()  # before anything is logged: a WebSocket's ?token= never reaches the log
        await registry.start()
        repeats.install()
        try:
            yield
        finally:
            try:
                await registry.close_all(save=True)
            finally:
                repeats.uninstall()
                secrets.uninstall()

    app = FastAPI(title="dasher-rnn predictor API", version=__version__, lifespan=lifespan,
                  default_response_class=JSONBytes, responses=ERRORS,
                  description="Next-character distributions from an adaptive character LSTM, for Dasher-style, "
                              "AAC and BCI frontends. See docs/API.md.")
    app.router.route_class = CheckedRoute
    app.state.registry = registry
    app.state.repeats = repeats

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = FastAPI.openapi(app)
            s.narrow(schema["components"]["schemas"], registry.limits, *published_languages())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    origins = set(allow_origins or [])

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError):
        return JSONBytes(exc.body(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError):
        errors = list(exc.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            ctx = errors[0].get("ctx") or {}
            return error_response(400, "bad_json", f"body is not valid JSON: {ctx.get('error', 'decode error')}")
        message, details = _describe(errors)
        return error_response(422, "invalid_request", message, details=details)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        code = STATUS_CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        headers = dict(exc.headers or {})
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such endpoint: {request.method} {request.url.path}"
        if exc.status_code == 405:
            allowed = allowed_methods(app, request.scope)
            headers["Allow"] = ", ".join(allowed)
            message = f"{request.url.path} answers {', '.join(allowed)}, not {request.method}"
        return error_response(exc.status_code, code, message, headers=headers or None)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception):
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error_response(500, "internal_error", f"internal error ({type(exc).__name__}); the server goes on")

    use = registry.use  # the session, marked in use (not idle) while the request runs

    # -- server ----------------------------------------------------------------------
    @app.get("/v1/health", response_model=s.Health, tags=["server"])
    async def health():
        return ops.health(registry)

    @app.get("/v1/model", response_model=s.ModelInfo, tags=["server"])
    async def model():
        """The model, its alphabet (distributions are in this symbol order), the floor and the limits."""
        return ops.model_info(registry)

    @app.post("/v1/predict", response_model=s.Distributions, tags=["stateless"])
    async def predict(req: s.PredictRequest):
        """Stateless: the next-character distribution after each context text (the base model, no adaptation)."""
        return await ops.predict(registry, req)

    # -- sessions --------------------------------------------------------------------
    @app.get("/v1/sessions", response_model=s.SessionList, tags=["sessions"])
    async def list_sessions():
        """How many sessions are open and their profiles; never their ids (only the client that opened a session
        is given its id)."""
        return registry.list()

    @app.post("/v1/sessions", response_model=s.SessionInfo, status_code=201, tags=["sessions"])
    async def open_session(req: Annotated[s.SessionCreate | None, Body()] = None):
        """Open a session (one per profile): its own predictor, learning from what is committed when ``adapt``."""
        return await ops.open_session(registry, req or s.SessionCreate())

    @app.get("/v1/sessions/{sid}", response_model=s.SessionInfo, tags=["sessions"])
    async def session_info(sid: str):
        with use(sid) as session:
            return ops.session_info(session)

    @app.delete("/v1/sessions/{sid}", response_model=s.Closed, tags=["sessions"])
    async def close_session(sid: str, save: bool = True):
        """Close a session, saving its profile unless ``save=false``."""
        return await registry.close(sid, save)

    @app.post("/v1/sessions/{sid}/contexts", response_model=s.ContextInfo, status_code=201, tags=["contexts"])
    async def create_context(sid: str, req: s.ContextCreate):
        """A context handle: a new root (``text``) or ``symbols`` below a ``parent`` handle."""
        with use(sid) as session:
            return await ops.create_context(session, req)

    @app.post("/v1/sessions/{sid}/contexts/batch", response_model=s.ContextBatchInfo, status_code=201,
              tags=["contexts"])
    async def create_contexts(sid: str, req: s.ContextBatch):
        with use(sid) as session:
            return await ops.create_contexts(session, req)

    @app.delete("/v1/sessions/{sid}/contexts/{handle}", response_model=s.Ok, tags=["contexts"])
    async def release_context(sid: str, handle: int):
        """Release a context and every context below it."""
        with use(sid) as session:
            return ops.release(session, handle)

    @app.post("/v1/sessions/{sid}/distributions", response_model=s.Distributions, tags=["contexts"])
    async def distributions(sid: str, req: s.DistributionsRequest):
        """Next-symbol distributions of context handles, computed in one batch."""
        with use(sid) as session:
            return await ops.distributions(session, req)

    waiting = {202: {"model": s.Done, "description": "with wait: learning has not caught up within the wait limit (the "
                                                      "request time limit) and goes on; caught_up is false. A commit "
                                                      "of \"\" with wait waits again"}}

    @app.post("/v1/sessions/{sid}/commit", response_model=s.Done, tags=["adaptation"], responses=waiting)
    async def commit(sid: str, req: s.CommitRequest, response: Response):
        """The user wrote ``text``: learn from it (contexts created afterwards use the updated weights)."""
        with use(sid) as session:
            return ops.accepted(await ops.commit(session, req), response)

    @app.post("/v1/sessions/{sid}/delete", response_model=s.Done, tags=["adaptation"], responses=waiting)
    async def delete(sid: str, req: s.DeleteRequest, response: Response):
        """The user deleted ``count`` committed characters: learning on them is rolled back."""
        with use(sid) as session:
            return ops.accepted(await ops.delete(session, req), response)

    @app.post("/v1/sessions/{sid}/reset", response_model=s.Done, tags=["adaptation"], responses=waiting)
    async def reset(sid: str, response: Response, req: Annotated[s.WaitRequest | None, Body()] = None):
        """A message boundary: what is committed next starts a new message."""
        with use(sid) as session:
            return ops.accepted(await ops.reset(session, req or s.WaitRequest()), response)

    @app.post("/v1/sessions/{sid}/adapt", response_model=s.AdaptDone, tags=["adaptation"],
              responses={202: {**waiting[202], "model": s.AdaptDone}})
    async def adapt(sid: str, req: s.AdaptRequest, response: Response):
        """Pause (``enabled: false``) or resume learning."""
        with use(sid) as session:
            return ops.accepted(await ops.adapt(session, req), response)

    @app.post("/v1/sessions/{sid}/profile/save", response_model=s.Saved, tags=["adaptation"])
    async def save_profile(sid: str):
        """Save the session's profile now (closing the session or the server also saves it)."""
        with use(sid) as session:
            return await ops.save_profile(session)

    @app.websocket("/v1/sessions/{sid}/ws")
    async def websocket(ws: WebSocket, sid: str):
        await ws.accept()
        try:
            session = registry.get(sid)
        except ApiError as exc:
            await ws.send_text(json.dumps({"id": None, "status": exc.status, **exc.body()}, ensure_ascii=True))
            await ws.close(code=4404, reason="unknown session")
            return
        try:
            socket = registry.sockets.admit(sid, ws.client.host if ws.client else "", _closer(ws))
        except ApiError as exc:  # at a limit, and every WebSocket there busy
            await ws.send_text(json.dumps({"id": None, "status": exc.status, **exc.body()}, ensure_ascii=True))
            await ws.close(code=CLOSE_CODE, reason="too many WebSockets")
            return
        session.connections += 1  # an open WebSocket keeps its session from expiring
        try:
            while True:
                message = await ws.receive()
                if message["type"] == "websocket.disconnect" or socket.closing:
                    return
                with registry.sockets.answering(socket):
                    reply = await ws_message(registry, sid, message)
                if socket.closing:  # closed to make room meanwhile (it was not busy then: a race at most)
                    return
                await ws.send_text(reply)
        except WebSocketDisconnect:
            return
        finally:
            registry.sockets.remove(socket)
            session.connections -= 1
            session.touch()

    app.add_middleware(Guard, token=token, max_body_bytes=registry.limits.max_body_bytes, loopback=loopback,
                       origins=origins)
    app.add_middleware(CORSMiddleware, allow_origins=sorted(origins), allow_origin_regex=LOOPBACK_ORIGIN.pattern,
                       allow_methods=["GET", "POST", "DELETE"], allow_headers=["Authorization", "Content-Type"])
    return app


# -- WebSocket messages ----------------------------------------------------------------
def _closer(ws: WebSocket) -> Callable[[int, str], None]:
    """How the socket table closes ``ws`` from the event loop: a task, kept until it is done."""
    def close(code: int, reason: str) -> None:
        task = asyncio.get_running_loop().create_task(_close_quietly(ws, code, reason))
        _CLOSING.add(task)
        task.add_done_callback(_CLOSING.discard)
    return close


_CLOSING: set[asyncio.Task] = set()


async def _close_quietly(ws: WebSocket, code: int, reason: str) -> None:
    try:
        await ws.close(code=code, reason=reason)
    except (RuntimeError, OSError, WebSocketDisconnect):  # already closing or gone
        pass


async def _release(session, req: s.ReleaseRequest) -> dict:
    return ops.release(session, req.context)


async def _info(session, req: s.NoFields) -> dict:
    return ops.session_info(session)


async def _save(session, req: s.NoFields) -> dict:
    return await ops.save_profile(session)


WS_OPS = {
    # op: (request model, function(session, request)); the fuzzing tests send each op what its model allows and more
    "context": (s.ContextCreate, ops.create_context),
    "contexts": (s.ContextBatch, ops.create_contexts),
    "distributions": (s.DistributionsRequest, ops.distributions),
    "commit": (s.CommitRequest, ops.commit),
    "delete": (s.DeleteRequest, ops.delete),
    "reset": (s.WaitRequest, ops.reset),
    "adapt": (s.AdaptRequest, ops.adapt),
    "release": (s.ReleaseRequest, _release),
    "info": (s.NoFields, _info),
    "save": (s.NoFields, _save),
}
WS_RESULTS: dict[str, type[BaseModel]] = {
    # op: the model its result is checked against (that of the matching HTTP route)
    "context": s.ContextInfo, "contexts": s.ContextBatchInfo, "distributions": s.Distributions, "commit": s.Done,
    "delete": s.Done, "reset": s.Done, "adapt": s.AdaptDone, "release": s.Ok, "info": s.SessionInfo, "save": s.Saved,
}


async def ws_message(registry: Registry, sid: str, message: dict) -> str:
    """One WebSocket message in, its JSON reply out (``{"id", "result"}`` or ``{"id", "error"}``); never raises
    for anything the client sent."""
    rid = None
    try:
        text = message.get("text")
        if text is None:
            raise ApiError(400, "bad_message", "send JSON text messages, not binary")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:  # ValueError: bad JSON, or an integer over Python's 4300 digits
            raise ApiError(400, "bad_json", f"message is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ApiError(400, "bad_message", "a message is a JSON object with 'op' (and 'id' to match the reply)")
        rid = data.pop("id", None)
        op = data.pop("op", None)
        if not isinstance(op, str):
            raise ApiError(400, "bad_message", "a message needs 'op', a string")
        session = registry.get(sid)
        if op in WS_OPS:
            model, fn = WS_OPS[op]
            try:
                req = model.model_validate(data)
            except ValidationError as exc:
                message_, details = _describe(exc.errors(include_url=False, include_input=False))
                raise ApiError(422, "invalid_request", message_, details=details) from None
            result = await fn(session, req)
        else:
            raise ApiError(400, "unknown_op", f"unknown op {op!r}; the ops are {', '.join(sorted(WS_RESULTS))}")
        return _dumps({"id": rid, "result": checked(WS_RESULTS[op], result)})
    except ApiError as exc:
        return _dumps({"id": rid, "status": exc.status, **exc.body()})
    except Exception as exc:  # the connection and the server go on
        log.exception("unexpected error on a WebSocket message")
        error = {"code": "internal_error", "message": f"internal error ({type(exc).__name__})"}
        return _dumps({"id": rid, "status": 500, "error": error})


def _dumps(obj) -> str:
    try:
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False, default=_json_default)
    except (ValueError, TypeError, RecursionError):  # an echoed id that cannot be written back
        return json.dumps({"id": None, **{k: v for k, v in obj.items() if k != "id"}}, ensure_ascii=True,
                          default=_json_default)
