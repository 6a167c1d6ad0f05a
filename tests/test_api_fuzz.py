"""Property-based fuzzing of the predictor API on a real server: whatever a client sends, over HTTP or
the WebSocket, the answer is a success or a 4xx JSON error, never a 5xx, and the server keeps serving."""

import json

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dasher_rnn.api.client import DasherClient
from dasher_rnn.api.server import BackgroundServer, ServerConfig
from dasher_rnn.api.sessions import Limits

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# (method, path, fields of its body: "!" required, "@spec" a context spec, "name:kind" a field of a kind)
ENDPOINTS = [
    ("POST", "/v1/predict", ["!contexts:texts", "format", "unknown"]),
    ("POST", "/v1/sessions", ["profile", "adapt"]),
    ("POST", "/v1/sessions/{sid}/contexts", ["@spec", "format"]),
    ("POST", "/v1/sessions/{sid}/contexts/batch", ["!contexts:specs", "format"]),
    ("POST", "/v1/sessions/{sid}/distributions", ["!contexts:handles", "format", "priority"]),
    ("POST", "/v1/sessions/{sid}/commit", ["!text", "unknown", "wait"]),
    ("POST", "/v1/sessions/{sid}/delete", ["!count", "wait"]),
    ("POST", "/v1/sessions/{sid}/reset", ["wait"]),
    ("POST", "/v1/sessions/{sid}/adapt", ["!enabled"]),
    ("POST", "/v1/sessions/{sid}/profile/save", []),
    ("DELETE", "/v1/sessions/{sid}/contexts/{handle}", []),
    ("GET", "/v1/sessions/{sid}", []),
    ("DELETE", "/v1/sessions/{other}", []),
    ("GET", "/v1/model", []),
]
WS_OPS = {"context": ["@spec", "format"], "contexts": ["!contexts:specs", "format"],
          "distributions": ["!contexts:handles", "format", "priority"], "commit": ["!text", "unknown", "wait"],
          "delete": ["!count", "wait"], "reset": ["wait"], "adapt": ["!enabled"], "release": ["!context"], "info": [],
          "save": [], "fly": ["text"]}
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)
texts = st.integers(0, 3).flatmap(lambda i: st.text(alphabet=st.sampled_from("aZ .,!?\n_<'"), max_size=40) if i < 2
                                  else st.text(alphabet=st.sampled_from("aZ .\t\u00e9\u20ac\u2019\u2603"), max_size=20)
                                  if i == 2 else st.text(max_size=20))


@pytest.fixture(scope="module")
def fuzz_server(tiny_model_dir, tmp_path_factory):
    limits = Limits(max_body_bytes=16 * 1024, max_contexts=32, max_sessions=4, max_handles=200, max_nodes=2000,
                    max_text=500, max_symbols=8)
    config = ServerConfig(tiny_model_dir, port=0, profiles_dir=tmp_path_factory.mktemp("fuzz-profiles"), limits=limits)
    with BackgroundServer(config) as srv, DasherClient(srv.url) as client:
        session = client.open_session(adapt=True)
        root = session.root("I want")
        handles = [root] + session.contexts([{"parent": root, "symbols": s} for s in " ab"])[0]
        yield srv, session, handles


def handle_values(handles):
    return st.sampled_from(handles) | st.integers(min_value=-3, max_value=10**6) | st.integers()


def good_values(handles) -> dict:
    """Values of the right type (mostly) for each field."""
    handle = handle_values(handles)
    symbols = st.text(alphabet=st.sampled_from("ab .,\nZ"), max_size=10) | texts
    unknown = st.sampled_from(["reject", "break"])
    spec = st.one_of(st.fixed_dictionaries({"text": texts}, optional={"unknown": unknown}),
                     st.fixed_dictionaries({"parent": handle}, optional={"symbols": symbols}),
                     st.fixed_dictionaries({}, optional={"text": texts, "parent": handle, "symbols": symbols,
                                                         "unknown": st.sampled_from(["reject", "x"])}))
    return {"text": texts, "parent": handle, "symbols": symbols, "context": handle, "unknown": unknown,
            "format": st.sampled_from(["log_probs", "counts"]), "spec": spec,
            "contexts:texts": st.lists(texts, max_size=40), "contexts:handles": st.lists(handle, max_size=40),
            "contexts:specs": st.lists(spec, max_size=40), "priority": st.floats(-1e6, 1e6) | st.floats(),
            "wait": st.booleans(), "count": st.integers(min_value=-2, max_value=600), "enabled": st.booleans(),
            "adapt": st.booleans(), "profile": st.sampled_from(["fuzzer", "a.b", "../x", "", None]) | texts}


def body_for(fields: list[str], handles, extra: dict | None = None):
    """A body of ``fields``: right-typed values mostly, any JSON sometimes, now and then an unknown field."""
    good = good_values(handles)

    def value(kind):
        return weighted(good[kind], json_values)

    required = {f[1:].split(":")[0]: value(f[1:]) for f in fields if f.startswith("!")}
    optional = {f.split(":")[0]: value(f) for f in fields if f[0] not in "!@"}
    near = st.fixed_dictionaries({**(extra or {}), **required}, optional=optional)
    if "@spec" in fields:
        near = st.builds(lambda spec, rest: {**spec, **rest}, good["spec"], near)
    odd = st.builds(lambda d, k, v: {**d, k: v}, near, st.sampled_from(["x", "contexts", "op"]), json_values)
    return weighted(near.map(json.dumps), odd.map(json.dumps), garbage())


def weighted(usual, *rare):
    """``usual`` six times in eight, else one of ``rare``."""
    return st.integers(0, 7).flatmap(lambda i: usual if i < 6 else st.one_of(*rare))


def garbage():
    return st.one_of(json_values.map(json.dumps), st.binary(max_size=40), st.just(""), st.just("{" * 5000),
                     st.just("[" * 5000 + "]" * 5000), st.just('{"contexts": [' + "1," * 5000 + "1]}"))


def check(status: int, body: bytes) -> None:
    assert status < 500, body[:300]
    data = json.loads(body) if body else None
    if status >= 400:
        assert data["error"]["code"] and data["error"]["message"], data


@pytest.fixture(scope="module")
def http(fuzz_server):
    with httpx.Client(base_url=fuzz_server[0].url, timeout=60) as c:
        yield c


@FUZZ
@given(data=st.data())
def test_no_http_request_gets_a_5xx(fuzz_server, http, data):
    srv, session, handles = fuzz_server
    method, template, fields = data.draw(st.sampled_from(ENDPOINTS))
    path = template.format(sid=data.draw(weighted(st.just(session.id), st.sampled_from(["nope", "%00", "a" * 300]))),
                           handle=data.draw(st.sampled_from([*map(str, handles), "-1", "x", "1e3", str(2**70)])),
                           other=data.draw(st.sampled_from(["nope", "0" * 16, "%2e%2e"])))
    body = data.draw(body_for(fields, handles))
    ctype = data.draw(weighted(st.just("application/json"), st.sampled_from(["application/json; charset=utf-8",
                                                                             "text/plain"])))
    r = http.request(method, path, content=body, headers={"content-type": ctype})
    event(f"{r.status_code} {r.json()['error']['code'] if r.status_code >= 400 else template}")
    check(r.status_code, r.content)


def test_oversized_and_odd_http_requests(fuzz_server, http):
    srv, session, _ = fuzz_server
    path = f"/v1/sessions/{session.id}/commit"
    chunked = (b"x" * 6000 for _ in range(4))  # no content-length: counted as it arrives
    for body in [b"x" * 20000, b'{"text": "' + b"a" * 17000 + b'"}', chunked, b'{"text": "\\ud800\\udfff"}',
                 b'{"text": "' + b"a" * 501 + b'"}']:
        r = http.post(path, content=body, headers={"content-type": "application/json"})
        check(r.status_code, r.content)
        assert 400 <= r.status_code < 500


@pytest.fixture(scope="module")
def ws(fuzz_server):
    with fuzz_server[1].websocket() as channel:
        yield channel


@FUZZ
@given(data=st.data())
def test_no_websocket_message_gets_a_5xx_or_closes_the_connection(fuzz_server, ws, data):
    srv, session, handles = fuzz_server
    op = data.draw(st.sampled_from(sorted(WS_OPS)))
    message = data.draw(body_for(WS_OPS[op], handles, {"op": st.just(op), "id": json_values}))
    reply = ws.send_raw(message)
    event(str(reply.get("status", 200)))
    assert reply.get("status", 200) < 500, reply
    if "error" in reply:
        assert reply["error"]["code"] and reply["error"]["message"]


def test_the_server_still_answers_after_fuzzing(fuzz_server):
    srv, session, handles = fuzz_server
    with DasherClient(srv.url) as client:
        assert client.health()["status"] == "ok"
        assert client.predict(["I want"]).shape == (1, 96)
