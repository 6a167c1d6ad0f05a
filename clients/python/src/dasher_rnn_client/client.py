"""A Python client of the predictor API (httpx; the WebSocket through ``websockets``' sync client).

    with DasherClient("http://127.0.0.1:8765") as client:
        session = client.open_session(profile="alice")
        root = session.root("Hello, how are ")
        log_probs = session.distributions([root, session.child(root, "y")])  # (2, V) float32
        session.commit("Hello, how are you? ")
        session.close()  # saves alice's profile

Errors from the server raise ``ClientError`` with its status, code and message. Distributions come back as numpy
arrays where numpy is installed (``pip install 'dasher-rnn-client[numpy]'``), otherwise as lists of rows.
"""

from __future__ import annotations

import json
from typing import Any, Union

import httpx

try:
    import numpy as np
except ImportError:  # the client needs httpx alone
    np = None  # type: ignore[assignment]

Rows = Union["np.ndarray", list[list]]


class ClientError(Exception):
    def __init__(self, status: int, code: str, message: str, body: dict | None = None):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.body = status, code, message, body or {}


def to_array(rows: list[list], fmt: str) -> Rows:
    """The server's rows as a numpy array (int64 counts, float32 log-probs), or as they came without numpy."""
    if np is None:
        return rows
    return np.asarray(rows, dtype=np.int64 if fmt == "counts" else np.float32)


class DasherClient:
    def __init__(self, url: str = "http://127.0.0.1:8765", token: str | None = None, timeout: float = 60.0,
                 transport: httpx.BaseTransport | None = None):
        self.url, self.token = url.rstrip("/"), token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout, transport=transport)
        self._model: dict | None = None

    def call(self, method: str, path: str, body: Any = None, **params) -> dict:
        response = self.http.request(method, path, json=body, params=params or None)
        try:
            data = response.json()
        except ValueError:
            data = {}
        if response.is_error:
            error = data.get("error", {}) if isinstance(data, dict) else {}
            raise ClientError(response.status_code, error.get("code", "error"), error.get("message", response.text),
                              data if isinstance(data, dict) else None)
        return data

    # -- server ----------------------------------------------------------------------
    def health(self) -> dict:
        return self.call("GET", "/v1/health")

    def model(self) -> dict:
        if self._model is None:
            self._model = self.call("GET", "/v1/model")
        return self._model

    @property
    def symbols(self) -> str:
        """The alphabet in distribution order."""
        return self.model()["alphabet"]["symbols"]

    def predict(self, texts: list[str], format: str = "log_probs", unknown: str = "reject") -> Rows:
        """Stateless: (len(texts), V) log-probs (or counts) after each context text."""
        data = self.call("POST", "/v1/predict", {"contexts": list(texts), "format": format, "unknown": unknown})
        return to_array(data["distributions"], format)

    # -- sessions --------------------------------------------------------------------
    def sessions(self) -> dict:
        """``{"open", "max_sessions", "sessions": [{"profile", "model", "adapt", "idle_s"}, ...]}``: what any client
        may see of the open sessions (never their ids: a session's id is known only to the client that opened it)."""
        return self.call("GET", "/v1/sessions")

    def open_session(self, profile: str | None = None, adapt: bool = True, model: str = "hybrid",
                     language: str | None = None) -> ClientSession:
        """A session; ``language`` (a code: de, fr...) writes that language (``info["alphabet"]`` is its symbols)."""
        body: dict[str, object] = {"profile": profile, "adapt": adapt, "model": model}
        if language is not None:
            body["language"] = language
        info = self.call("POST", "/v1/sessions", body)
        return ClientSession(self, info)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> DasherClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ClientSession:
    def __init__(self, client: DasherClient, info: dict):
        self.client, self.info, self.id = client, info, info["session"]
        self.path = f"/v1/sessions/{self.id}"

    def _post(self, path: str, body: Any = None) -> dict:
        return self.client.call("POST", self.path + path, body)

    # -- contexts --------------------------------------------------------------------
    def root(self, text: str = "", unknown: str = "reject") -> int:
        return self._post("/contexts", {"text": text, "unknown": unknown})["handle"]

    def child(self, parent: int, symbols: str) -> int:
        return self._post("/contexts", {"parent": parent, "symbols": symbols})["handle"]

    def contexts(self, specs: list[dict], format: str | None = None) -> tuple[list[int], Rows | None]:
        """Several contexts in one request (``{"text": ...}`` or ``{"parent": h, "symbols": ...}`` each), and
        their distributions when ``format`` is given."""
        data = self._post("/contexts/batch", {"contexts": specs, "format": format})
        dists = data.get("distributions")
        return data["handles"], None if dists is None else to_array(dists, format)

    def distributions(self, handles: list[int], format: str = "log_probs", priority: float = 0.0) -> Rows:
        data = self._post("/distributions", {"contexts": list(handles), "format": format, "priority": priority})
        return to_array(data["distributions"], format)

    def release(self, handle: int) -> None:
        self.client.call("DELETE", f"{self.path}/contexts/{handle}")

    # -- adaptation ------------------------------------------------------------------
    def commit(self, text: str, wait: bool = False, unknown: str = "reject") -> dict:
        return self._post("/commit", {"text": text, "wait": wait, "unknown": unknown})

    def delete(self, count: int = 1, wait: bool = False) -> dict:
        return self._post("/delete", {"count": count, "wait": wait})

    def reset(self, wait: bool = False) -> dict:
        return self._post("/reset", {"wait": wait})

    def adapt(self, enabled: bool) -> dict:
        return self._post("/adapt", {"enabled": enabled})

    def save_profile(self) -> dict:
        return self._post("/profile/save")

    def stats(self) -> dict:
        return self.client.call("GET", self.path)

    def close(self, save: bool = True) -> dict:
        return self.client.call("DELETE", self.path, save=str(save).lower())

    def websocket(self, timeout: float = 60.0) -> WebSocketChannel:
        return WebSocketChannel(self.client, self.id, timeout)


class WebSocketChannel:
    """The session's WebSocket: ``call(op, **fields)`` sends one message and waits for its reply."""

    def __init__(self, client: DasherClient, sid: str, timeout: float = 60.0):
        try:
            from websockets.sync.client import connect
        except ImportError:
            raise ImportError("a session's WebSocket needs the websockets package (12 or newer): "
                              "pip install 'dasher-rnn-client[websocket]'") from None

        url = client.url.replace("http://", "ws://", 1).replace("https://", "wss://", 1) + f"/v1/sessions/{sid}/ws"
        headers = {"Authorization": f"Bearer {client.token}"} if client.token else None
        # entered as a context manager (newer websockets warn otherwise); ``close`` ends it
        self.ws = connect(url, additional_headers=headers, open_timeout=timeout, max_size=None).__enter__()
        self.timeout = timeout
        self._ids = 0

    def send_raw(self, text: str | bytes) -> dict:
        """Send anything and return the reply (for tests and tools)."""
        self.ws.send(text)
        return json.loads(self.ws.recv(self.timeout))

    def call(self, op: str, **fields) -> dict:
        self._ids += 1
        reply = self.send_raw(json.dumps({"id": self._ids, "op": op, **fields}))
        if "error" in reply:
            error = reply["error"]
            raise ClientError(reply.get("status", 400), error.get("code", "error"), error.get("message", ""), reply)
        if reply.get("id") != self._ids:
            raise ClientError(0, "protocol", f"reply to {reply.get('id')!r}, expected {self._ids}", reply)
        return reply["result"]

    def close(self) -> None:
        self.ws.close()

    def __enter__(self) -> WebSocketChannel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
