"""The front door: host, origin and token checks and the body-size limit, before any route runs.

- Bound to loopback without a token, the Host header must name loopback (a web page that rebinds
  its own domain to 127.0.0.1 is turned away).
- A request carrying an ``Origin`` header (every browser POST and WebSocket, cross-site or not)
  must come from a loopback origin or one allowed with ``--allow-origin``: other web pages the user
  visits cannot drive or read the predictor.
- With a token, every request but health and the schema needs ``Authorization: Bearer TOKEN``
  (WebSockets may pass ``?token=TOKEN``, since browsers cannot set headers on them).
- A body must be JSON and at most ``max_body_bytes``; it is read here, so a route never sees more.
"""

from __future__ import annotations

import hmac
import json
import re
from urllib.parse import parse_qs

LOOPBACK_ORIGIN = re.compile(r"^https?://(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$")
LOOPBACK_HOST = re.compile(r"^(localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])(:\d{1,5})?$")
OPEN_PATHS = {"/v1/health", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}


def error_bytes(code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=True).encode()


class Guard:
    def __init__(self, app, *, token: str | None, max_body_bytes: int, loopback: bool, origins: set[str]):
        self.app, self.token, self.max_body, self.loopback, self.origins = app, token, max_body_bytes, loopback, origins

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers: dict[str, str] = {}
        for k, v in scope.get("headers", []):
            headers[k.decode("latin-1").lower()] = v.decode("latin-1")
        refusal = self._check(scope, headers)
        if refusal is not None:
            status, code, message = refusal
            if scope["type"] == "websocket":
                # closing before accepting refuses the handshake (HTTP 403); the reason says why
                await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
                return
            return await _respond(send, status, code, message)
        if scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH", "DELETE"):
            body = await self._read_body(scope, headers, receive, send)
            if body is None:
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    def _check(self, scope, headers) -> tuple[int, str, str] | None:
        if self.loopback and not self.token and not LOOPBACK_HOST.match(headers.get("host", "127.0.0.1")):
            return 421, "bad_host", "this server answers only to loopback host names (localhost, 127.0.0.1, [::1])"
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins and not LOOPBACK_ORIGIN.match(origin):
            return 403, "forbidden_origin", f"origin {origin!r} is not allowed (start the server with --allow-origin)"
        if self.token and scope["path"] not in OPEN_PATHS:
            given = headers.get("authorization", "")
            given = given[7:] if given[:7].lower() == "bearer " else ""
            if not given and scope["type"] == "websocket":
                given = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token") or [""])[0]
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return 401, "unauthorized", "missing or wrong token (send Authorization: Bearer TOKEN)"
        return None

    async def _read_body(self, scope, headers, receive, send) -> bytes | None:
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await _respond(send, 413, "body_too_large", f"request body over {self.max_body} bytes")
            return None
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await _respond(send, 413, "body_too_large", f"request body over {self.max_body} bytes")
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body:
            ctype = headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype != "application/json":
                await _respond(send, 415, "unsupported_media_type",
                               f"send the body as Content-Type: application/json, not {ctype or 'nothing'!r}")
                return None
        return body


def _replay(body: bytes, receive):
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _respond(send, status: int, code: str, message: str) -> None:
    body = error_bytes(code, message)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
