"""Schema-driven fuzzing of the predictor API, against the app in process: every route in the app and every
WebSocket op in ``WS_OPS`` gets requests generated from its own schema (the request bodies and parameters
published in /openapi.json, the ops' pydantic request models), valid ones and broken ones (a field missing,
one unknown, a value of any JSON type, garbage instead of JSON). Whatever is sent:

- no answer is a 5xx;
- every 4xx is ``{"error": {"code", "message", ...}}`` as ``ErrorResponse`` declares, with a status the route
  declares;
- every 2xx matches the schema its route (or op) declares for it.

The routes and ops are read from the app, so a new one is fuzzed without touching this file."""

from __future__ import annotations

import json

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dasher_rnn.api.app import WS_OPS, WS_RESULTS, create_app
from dasher_rnn.api.limits import Limits
from dasher_rnn.api.registry import Registry
from tests.test_api_schema import schema_errors

BASE = "http://127.0.0.1"
LIMITS = Limits(max_body_bytes=16 * 1024, max_contexts=32, max_sessions=4, max_handles=200, max_nodes=2000,
                max_text=500, max_symbols=8)
FUZZ = settings(max_examples=25, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def app_routes() -> list[tuple[str, str]]:
    """(method, path) of every route of the app, read from an app built without a model."""
    registry = Registry.__new__(Registry)
    registry.limits = LIMITS
    app = create_app(registry)
    return sorted((m, r.path) for r in app.routes if isinstance(r, APIRoute) for m in r.methods)


ROUTES = app_routes()

# -- values ------------------------------------------------------------------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)
texts = st.integers(0, 3).flatmap(lambda i: st.text(alphabet=st.sampled_from("aZ .,!?\n_<'"), max_size=40) if i < 2
                                  else st.text(alphabet=st.sampled_from("aZ .\t\u00e9\u20ac\u2019\u2603"), max_size=20)
                                  if i == 2 else st.text(max_size=20))


EDGES = [0, -1, 1, 2**31 - 1, 2**31, 2**53 + 1, 2**63, -(2**63) - 1, 2**64, 10**30]  # where integer handling breaks


def weighted(usual, *rare):
    """``usual`` six times in eight, else one of ``rare``."""
    return st.integers(0, 7).flatmap(lambda i: usual if i < 6 else st.one_of(*rare))


class Gen:
    """Strategies for values of a JSON schema (the keywords FastAPI writes), given the live handles to aim at."""

    def __init__(self, components: dict, handles: list[int]):
        self.components, self.handles = components, handles

    def handle(self):
        return st.sampled_from(self.handles) | st.integers(min_value=-3, max_value=10**6) | st.sampled_from(EDGES)

    def value(self, schema: dict, name: str = ""):
        """Mostly what the schema allows, now and then any JSON value."""
        return weighted(self.valid(schema, name, noisy=True), json_values)

    def valid(self, schema: dict, name: str = "", noisy: bool = False):
        """What ``schema`` allows; ``noisy``: with any JSON value now and then in place of a field's."""
        if "$ref" in schema:
            return self.valid(self.components[schema["$ref"].rsplit("/", 1)[1]], name, noisy)
        if "anyOf" in schema:
            return st.one_of([self.valid(option, name, noisy) for option in schema["anyOf"]])
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        if "const" in schema:
            return st.just(schema["const"])
        kind = schema.get("type")
        if kind == "object":
            properties = schema.get("properties", {})
            required = set(schema.get("required", []))
            field = self.value if noisy else self.valid
            return st.fixed_dictionaries({k: field(v, k) for k, v in properties.items() if k in required},
                                         optional={k: field(v, k) for k, v in properties.items() if k not in required})
        if kind == "array":
            item = self.value if noisy else self.valid
            return st.lists(item(schema.get("items", {}), name), max_size=40)
        if kind == "string":
            return texts if name != "profile" else st.sampled_from(["fuzzer", "a.b", "../x", "", "x\n"]) | texts
        if kind == "integer":
            return self.handle() if name in ("parent", "context", "contexts", "handle") else \
                st.integers(min_value=-2, max_value=600) | st.sampled_from(EDGES) | st.integers()
        if kind == "number":
            return st.floats(-1e6, 1e6) | st.floats()
        if kind == "boolean":
            return st.booleans()
        if kind == "null":
            return st.none()
        return json_values

    def body(self, schema: dict | None, extra: dict | None = None):
        """A JSON text for a body of ``schema``: near-valid mostly (an unknown field now and then, a required one
        missing when the generator leaves it out of a wrong-typed value), any JSON or garbage sometimes."""
        if schema is None:
            near = st.just(None) if extra is None else st.just({})
        else:
            near = st.one_of(self.valid(schema), self.valid(schema), self.valid(schema, noisy=True))
        if extra is not None:
            near = st.builds(lambda d, e: {**d, **e} if isinstance(d, dict) else d, near, st.fixed_dictionaries(extra))
        odd = st.builds(lambda d, k, v: {**d, k: v} if isinstance(d, dict) else {k: v}, near,
                        st.sampled_from(["x", "contexts", "op", "text"]), json_values)
        dropped = near.map(lambda d: dict(list(d.items())[1:]) if isinstance(d, dict) else d)
        as_text = st.one_of(near, near, near, odd, dropped).map(lambda d: "" if d is None else json.dumps(d))
        return weighted(as_text, json_values.map(json.dumps), garbage())


def garbage():
    return st.one_of(st.binary(max_size=40), st.just(""), st.just("{" * 5000), st.just("[" * 5000 + "]" * 5000),
                     st.just('{"contexts": [' + "1," * 5000 + "1]}"), st.just('{"text": "\\ud800"}'))


# -- the app in process ------------------------------------------------------------------------------------
class World:
    """The app, a session with a profile and a few handles in it; reopened when a fuzzed request closes it."""

    def __init__(self, client: TestClient, spec: dict):
        self.client, self.spec = client, spec
        self.components = spec["components"]["schemas"]
        self.sid = ""
        self.handles: list[int] = []
        self.ensure()

    def ensure(self) -> None:
        if self.sid and self.client.get(f"/v1/sessions/{self.sid}").status_code == 200:
            return
        registry = self.client.app.state.registry
        for sid in list(registry.sessions):  # what the fuzzing opened: close it, so that opening can succeed
            self.client.delete(f"/v1/sessions/{sid}", params={"save": "false"})
        r = self.client.post("/v1/sessions", json={"profile": "fuzzer", "model": "rnn"})
        assert r.status_code == 201, r.text
        self.sid = r.json()["session"]
        root = self.client.post(f"/v1/sessions/{self.sid}/contexts", json={"text": "I want"}).json()["handle"]
        kids = self.client.post(f"/v1/sessions/{self.sid}/contexts/batch",
                                json={"contexts": [{"parent": root, "symbols": c} for c in " ab"]}).json()["handles"]
        self.handles = [root, *kids]

    def tidy(self) -> None:
        """Close the sessions a fuzzed request opened, so that the limit on sessions is not always reached."""
        registry = self.client.app.state.registry
        for sid in [sid for sid in registry.sessions if sid != self.sid]:
            self.client.delete(f"/v1/sessions/{sid}", params={"save": "false"})

    def check(self, method: str, path: str, status: int, body: bytes) -> None:
        declared = self.spec["paths"][path][method.lower()]["responses"]
        assert status < 500, (method, path, status, body[:300])
        assert str(status) in declared, (method, path, status, sorted(declared), body[:300])
        data = json.loads(body)
        if status >= 400:
            assert not schema_errors(data, {"$ref": "#/components/schemas/ErrorResponse"}, self.components), data
            assert data["error"]["code"] and data["error"]["message"], data
        else:
            schema = declared[str(status)]["content"]["application/json"]["schema"]
            errors = schema_errors(data, schema, self.components)
            assert not errors, (method, path, errors)


@pytest.fixture(scope="module")
def world(tiny_model_dir, tmp_path_factory):
    app = create_app(Registry(tiny_model_dir, LIMITS, tmp_path_factory.mktemp("fuzz-profiles")))
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as client:
        yield World(client, client.get("/openapi.json").json())


def test_every_route_of_the_app_is_in_the_schema_and_fuzzed(world):
    published = {(m.upper(), p) for p, ops in world.spec["paths"].items() for m in ops}
    assert set(ROUTES) == published and len(ROUTES) >= 16
    assert set(WS_OPS) == set(WS_RESULTS)  # every op has a request model to fuzz and a result model to check


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
@FUZZ
@given(data=st.data())
def test_no_request_to_a_route_gets_a_5xx_and_every_answer_matches_its_schema(world, method, path, data):
    world.ensure()
    operation = world.spec["paths"][path][method.lower()]
    gen = Gen(world.components, world.handles)
    values, query = {}, {}
    for param in operation.get("parameters", []):
        if param["in"] == "path" and param["name"] == "sid":
            value = data.draw(weighted(st.just(world.sid), st.sampled_from(["nope", "%00", "a" * 300, "0" * 32])))
        elif param["schema"].get("type") == "integer":
            value = data.draw(weighted(st.sampled_from(world.handles).map(str),
                                       st.sampled_from(["x", "1e3", "%20", *map(str, EDGES)])))
        else:
            value = data.draw(weighted(gen.valid(param["schema"], param["name"]).map(
                lambda v: json.dumps(v) if not isinstance(v, str) else v), texts))
        (values if param["in"] == "path" else query)[param["name"]] = value
        if param["in"] == "query" and data.draw(st.booleans()):
            del query[param["name"]]  # optional: left out
    if path == "/v1/sessions/{sid}" and method == "DELETE" and values.get("sid") == world.sid:
        query["save"] = "false"
    schema = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    body = data.draw(gen.body(schema))
    ctype = data.draw(weighted(st.just("application/json"), st.sampled_from(["application/json; charset=utf-8",
                                                                             "text/plain"])))
    r = world.client.request(method, path.format(**values), content=body or None, params=query,
                             headers={"content-type": ctype} if body else {})
    event(f"{r.status_code} {r.json()['error']['code'] if r.status_code >= 400 else 'ok'}")
    world.check(method, path, r.status_code, r.content)
    world.tidy()


@pytest.mark.parametrize("op", sorted(WS_OPS))
@FUZZ
@given(data=st.data())
def test_no_websocket_message_gets_a_5xx_and_every_result_matches_its_schema(world, op, data):
    world.ensure()
    gen = Gen(world.components, world.handles)
    model = WS_OPS[op][0]
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    components = {**world.components, **schema.pop("$defs", {})}
    gen.components = components
    message = data.draw(gen.body(schema, {"op": st.just(op), "id": json_values}))
    with world.client.websocket_connect(f"ws://127.0.0.1/v1/sessions/{world.sid}/ws") as channel:
        channel.send_text(message)
        reply = json.loads(channel.receive_text())
    event(str(reply.get("status", 200)))
    assert reply.get("status", 200) < 500, (op, message[:200], reply)
    if "error" in reply:
        assert 400 <= reply["status"] < 500
        assert not schema_errors({"error": reply["error"]}, {"$ref": "#/components/schemas/ErrorResponse"},
                                 components), reply
        assert reply["error"]["code"] and reply["error"]["message"]
    else:
        errors = schema_errors(reply["result"], {"$ref": f"#/components/schemas/{WS_RESULTS[op].__name__}"},
                               components)
        assert not errors, (op, errors)


def test_oversized_and_odd_http_requests_get_4xx(world):
    world.ensure()
    path = f"/v1/sessions/{world.sid}/commit"
    chunked = (b"x" * 6000 for _ in range(4))  # no content-length: counted as it arrives
    for body in [b"x" * 20000, b'{"text": "' + b"a" * 17000 + b'"}', chunked, b'{"text": "\\ud800\\udfff"}',
                 b'{"text": "' + b"a" * 501 + b'"}']:
        r = world.client.post(path, content=body, headers={"content-type": "application/json"})
        assert 400 <= r.status_code < 500, r.text
        world.check("POST", "/v1/sessions/{sid}/commit", r.status_code, r.content)


def test_the_app_still_answers_after_fuzzing(world):
    world.ensure()
    assert world.client.get("/v1/health").json()["status"] == "ok"
    r = world.client.post("/v1/predict", json={"contexts": ["I want"]})
    assert r.status_code == 200 and len(r.json()["distributions"][0]) == 96
