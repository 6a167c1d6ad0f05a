"""The predictor as a local service for other frontends: ``dasher-rnn serve`` (HTTP JSON + WebSocket),
a Python client, and a BciPy-compatible language-model adapter. See docs/API.md.

Modules: ``sessions`` (sessions, context handles, limits; no web framework), ``schemas`` (request and
response bodies), ``ops`` (operations shared by HTTP and WebSocket), ``guard`` (host, origin, token,
body size), ``app`` (FastAPI app), ``server`` (uvicorn runner), ``client``, ``bcipy``.
"""
