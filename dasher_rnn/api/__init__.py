"""The predictor as a local service for other frontends: ``dasher-rnn serve`` (HTTP JSON + WebSocket),
a Python client, and a BciPy-compatible language-model adapter. See docs/API.md.

Modules, without a web framework: ``limits`` (limits, text checks, ``ApiError``), ``handles`` (a session's
integer handles on Writer contexts), ``lifetime`` (idle timeout, request deadline), ``sessions`` (a session
and its Writer calls), ``registry`` (the server's sessions, the stateless predictor). With FastAPI or for
it: ``schemas`` (request and response bodies), ``ops`` (operations shared by HTTP and WebSocket), ``guard``
(host, origin, token, body size), ``app`` (FastAPI app), ``logs`` (a log that counts repeats), ``connections``
(the connection limit and read timeout), ``server`` (uvicorn runner); ``client``, ``bcipy``.
"""
