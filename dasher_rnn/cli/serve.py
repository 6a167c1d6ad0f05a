"""`dasher-rnn serve`: the predictor as a local HTTP JSON + WebSocket API."""

from __future__ import annotations

import argparse

from dasher_rnn.cli.options import LIMITS, SERVER, add_profiles_dir, config_default, secret_file, warn_secret_on_command_line
from dasher_rnn.paths import DEFAULT_MODEL_DIR


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="the predictor as a local HTTP JSON + WebSocket API for other frontends")
    p.add_argument("--host", default=config_default(SERVER, "host"), help="address to bind (anything but loopback needs a token)")
    p.add_argument("--port", type=int, default=config_default(SERVER, "port"), help="TCP port")
    secret = p.add_mutually_exclusive_group()
    secret.add_argument("--token-file", type=secret_file, default=None, metavar="PATH",
                        help="clients must send 'Authorization: Bearer TOKEN', TOKEN the first line of this file "
                             "(chmod 600 it; default: $DASHER_RNN_TOKEN; a token is required off loopback)")
    secret.add_argument("--token", default=None, help="the token itself (every local user can read it in the process "
                                                      "list: prefer --token-file or $DASHER_RNN_TOKEN)")
    p.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR), help="RNN model folder")
    add_profiles_dir(p)
    p.add_argument("--backend", default=config_default(SERVER, "backend"), help="predictor backend of stateless requests and "
                   "non-adapting sessions: auto, onnx, torch, cuda (adapting sessions: onnxruntime where the model has its fused "
                   "int8 export, else torch)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads of the predictors")
    p.add_argument("--budget", type=int, default=config_default(SERVER, "budget"), help="cached context states per session")
    p.add_argument("--ppm-train", action="append", default=[], metavar="PATH",
                   help="training text of hybrid sessions' PPM (repeatable; default: none, PPM learns the user's text)")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="a web origin (e.g. https://example.org) whose pages may use the API (repeatable); "
                        "loopback origins always may")
    p.add_argument("--max-body-bytes", type=int, default=config_default(LIMITS, "max_body_bytes"),
                   help="largest request body or WebSocket message")
    p.add_argument("--max-contexts", type=int, default=config_default(LIMITS, "max_contexts"), help="contexts in one request")
    p.add_argument("--max-sessions", type=int, default=config_default(LIMITS, "max_sessions"), help="sessions open at once")
    p.add_argument("--max-handles", type=int, default=config_default(LIMITS, "max_handles"),
                   help="context handles one session holds")
    p.add_argument("--max-nodes", type=int, default=config_default(LIMITS, "max_nodes"),
                   help="context-tree nodes one session holds")
    p.add_argument("--max-text", type=int, default=config_default(LIMITS, "max_text"),
                   help="characters of a context text or a commit")
    p.add_argument("--max-symbols", type=int, default=config_default(LIMITS, "max_symbols"),
                   help="symbols appended below a parent in one request")
    p.add_argument("--idle-timeout", dest="idle_timeout_s", type=float, default=config_default(LIMITS, "idle_timeout_s"),
                   metavar="SECONDS",
                   help="close a session unused this long (no request, no open WebSocket), saving its profile and "
                        "freeing its slot (0: never)")
    p.add_argument("--request-timeout", dest="request_timeout_s", type=float,
                   default=config_default(LIMITS, "request_timeout_s"), metavar="SECONDS",
                   help="stop a prediction request that runs longer, answering 503 timeout (0: never)")
    p.add_argument("--max-connections", type=int, default=config_default(LIMITS, "max_connections"),
                   help="connections open at once (kept below the file-descriptor limit, ulimit -n); at the limit, the "
                        "one waiting longest for its request makes room, or the new one is answered 503")
    p.add_argument("--read-timeout", dest="read_timeout_s", type=float, default=config_default(LIMITS, "read_timeout_s"),
                   metavar="SECONDS", help="close a connection whose client has not sent a whole request (headers and "
                                           "body) this long after connecting or after its previous answer (0: never)")
    p.add_argument("--max-session-websockets", type=int, default=config_default(LIMITS, "max_session_websockets"),
                   help="WebSockets open on one session; at the limit the one idle longest is closed to make room")
    p.add_argument("--max-client-websockets", type=int, default=config_default(LIMITS, "max_client_websockets"),
                   help="WebSockets open from one client address (on loopback: every local program together); at "
                        "the limit the one idle longest is closed to make room")
    p.add_argument("--log-level", default=config_default(SERVER, "log_level"),
                   choices=["critical", "error", "warning", "info", "debug"], help="server log level")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dasher_rnn.api.limits import Limits
    from dasher_rnn.api.server import ServerConfig, run_server

    limits = Limits(max_body_bytes=args.max_body_bytes, max_contexts=args.max_contexts, max_sessions=args.max_sessions,
                    max_handles=args.max_handles, max_nodes=args.max_nodes, max_text=args.max_text,
                    max_symbols=args.max_symbols, idle_timeout_s=args.idle_timeout_s,
                    request_timeout_s=args.request_timeout_s, max_connections=args.max_connections,
                    read_timeout_s=args.read_timeout_s, max_session_websockets=args.max_session_websockets,
                    max_client_websockets=args.max_client_websockets)
    if args.token:
        warn_secret_on_command_line("--token", "--token-file or $DASHER_RNN_TOKEN")
    config = ServerConfig(args.model_dir, host=args.host, port=args.port, token=args.token_file or args.token,
                          profiles_dir=args.profiles_dir, backend=args.backend, threads=args.threads,
                          budget=args.budget, limits=limits, allow_origins=args.allow_origin,
                          log_level=args.log_level, ppm_train=args.ppm_train).checked()
    from dasher_rnn.extras import set_torch_threads

    set_torch_threads(args.threads, load=True)  # where installed, torch adapts the sessions (the auto engine)

    def ready(url: str) -> None:  # the port is bound and the model loaded
        print(f"dasher-rnn serve: {url}/v1 (schema at /docs), model {args.model_dir}", flush=True)

    try:
        run_server(config, ready)
    except KeyboardInterrupt:  # Ctrl+C: uvicorn has stopped gracefully (sessions closed, profiles saved) and re-raised it
        print("dasher-rnn serve: stopped", flush=True)
    return 0
