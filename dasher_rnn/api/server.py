"""Running the API with uvicorn: in the foreground (``dasher-rnn serve``) or on a background thread
(tests, benchmarks, an application embedding the predictor).

Binding anywhere but loopback needs a token. SIGINT/SIGTERM stop the server gracefully: requests in
flight finish, then every session closes, saving its profile.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import math
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dasher_rnn.api.limits import Limits
from dasher_rnn.api.registry import Registry

log = logging.getLogger(__name__)

TOKEN_ENV = "DASHER_RNN_TOKEN"
DEFAULT_PORT = 8765


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class ServerConfig:
    model_dir: str | Path
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str | None = None
    profiles_dir: str | Path | None = None
    backend: str = "auto"  # of the stateless predictor and sessions without adaptation or profile
    threads: int | None = None
    budget: int = 3000  # cached states per session (see PredictorService)
    limits: Limits = field(default_factory=Limits)
    allow_origins: list[str] = field(default_factory=list)
    log_level: str = "warning"
    ppm_train: list[str] = field(default_factory=list)  # the hybrid's PPM training text (files or folders)

    def checked(self) -> ServerConfig:
        """Refuses a port outside 0-65535, a negative or infinite time limit, and a non-loopback address without a
        token (``--token`` or ``$DASHER_RNN_TOKEN``): a ``ValueError`` saying which."""
        if not 0 <= self.port <= 65535:
            raise ValueError(f"the port must be 0-65535, not {self.port}")
        for name in ("idle_timeout_s", "request_timeout_s", "read_timeout_s"):
            value = getattr(self.limits, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name.removesuffix('_s').replace('_', '-')} must be a number of seconds >= 0 "
                                 f"(0: never), not {value}")
        for name in ("max_connections", "max_session_websockets", "max_client_websockets"):
            if getattr(self.limits, name) < 1:
                raise ValueError(f"{name.replace('_', '-')} must be at least 1, not {getattr(self.limits, name)}")
        if self.token is None:
            self.token = os.environ.get(TOKEN_ENV) or None
        if not is_loopback(self.host) and not self.token:
            raise ValueError(f"binding to {self.host} exposes the predictor beyond this machine: give a token "
                             f"(--token or ${TOKEN_ENV}) that clients send as 'Authorization: Bearer TOKEN'")
        if self.token is not None and len(self.token) < 16:
            raise ValueError("the token must have at least 16 characters")
        return self


def build_app(config: ServerConfig):
    from dasher_rnn.api.app import create_app

    registry = Registry(config.model_dir, config.limits, config.profiles_dir, config.backend, config.threads,
                        config.budget, ppm_train=config.ppm_train)
    return create_app(registry, token=config.token, loopback=is_loopback(config.host),
                      allow_origins=config.allow_origins)


def _uvicorn_config(config: ServerConfig):
    """Uvicorn's settings: our HTTP protocol (the connection limit, below the descriptor limit, and the read
    timeout; ``connections.py``), a short accept backlog, the WebSocket message limit."""
    import uvicorn

    from dasher_rnn.api.connections import GuardedH11Protocol, accept_backlog, connection_limit, descriptor_limit

    limits = config.limits
    most = connection_limit(limits.max_connections)
    if most < limits.max_connections:
        log.warning("at most %d connections at once, not %d: the file-descriptor limit (ulimit -n) is %s", most,
                    limits.max_connections, descriptor_limit())
    app = build_app(config)
    protocol = GuardedH11Protocol.configured(most, limits.read_timeout_s, app.state.registry.sockets.close_idle)
    return uvicorn.Config(app, host=config.host, port=config.port, log_level=config.log_level,
                          http=protocol, backlog=accept_backlog(), ws="websockets-sansio",
                          ws_max_size=limits.max_body_bytes,
                          lifespan="on", timeout_graceful_shutdown=10, server_header=False)


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``; an ``OSError`` saying so in one line when the port is busy or the address
    cannot be used.

    The socket is made with protocol ``IPPROTO_TCP``, not 0: asyncio sets TCP_NODELAY on an accepted connection
    only when its socket says so, and without it Nagle's algorithm holds every small response until the
    client's delayed ACK (about 40 ms a call)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a closed server's port is free
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise OSError(f"port {port} on {host} is busy (another server, or another dasher-rnn serve, is "
                          "listening there): stop it or choose another with --port") from None
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def run_server(config: ServerConfig, ready: Callable[[str], None] | None = None) -> None:
    """Serve in the foreground until SIGINT/SIGTERM. The port is bound and the model loaded before anything is
    served, so a busy port or a broken model is an exception here (``OSError``, ``ModelFileError``), not a
    traceback in the server's log; ``ready(url)`` is called once both are done."""
    import uvicorn

    from dasher_rnn.lm.model_io import ModelFileError

    config = config.checked()
    sock = bind(config.host, config.port)
    try:
        uv_config = _uvicorn_config(config)
        registry = uv_config.app.state.registry
        try:
            registry.load()
        except (ModelFileError, OSError, ValueError):
            raise
        except Exception as exc:  # whatever else a broken model file raises (torch, safetensors, onnxruntime)
            raise ModelFileError(f"{config.model_dir}: the model cannot be loaded ({type(exc).__name__}: {exc})") \
                from None
        host = f"[{config.host}]" if ":" in config.host else config.host
        if ready is not None:
            ready(f"http://{host}:{sock.getsockname()[1]}")
        uvicorn.Server(uv_config).run(sockets=[sock])
    finally:
        sock.close()


class BackgroundServer:
    """A server on a thread of this process; ``port=0`` picks a free port. A context manager. It listens on a
    socket from ``bind``, as ``dasher-rnn serve`` does."""

    def __init__(self, config: ServerConfig):
        import uvicorn

        self.config = config.checked()
        self.server = uvicorn.Server(_uvicorn_config(self.config))
        self.server.install_signal_handlers = lambda: None  # not the main thread
        self.socket = bind(self.config.host, self.config.port)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, name="api-server",
                                       daemon=True)
        self.port: int = self.socket.getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.port}"

    def start(self, timeout: float = 60.0) -> BackgroundServer:
        import time

        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the API server did not start")
            time.sleep(0.02)
        return self

    def stop(self, timeout: float = 60.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout)
        self.socket.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
