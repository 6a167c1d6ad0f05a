"""The API's contract: every route and every WebSocket op, called with a valid request against the app
in process, answers a body that matches the schema it declares in /openapi.json (checked here by a
small JSON-schema validator, independent of the pydantic models the server checks with); a body that
drifts from its schema is a 500, not a silent change; odd WebSocket messages get 4xx errors."""

from __future__ import annotations

import json
import logging
import re

import pytest
from fastapi.routing import APIRoute, APIWebSocketRoute
from fastapi.testclient import TestClient

from dasher_rnn.api import ops
from dasher_rnn.api.app import WS_RESULTS, create_app
from dasher_rnn.api.limits import Limits
from dasher_rnn.api.registry import Registry

BASE = "http://127.0.0.1"  # the guard answers loopback host names only
ANNOTATIONS = {"title", "description", "default", "examples"}
TYPES = {"object": dict, "array": list, "string": str, "integer": int, "number": (int, float), "boolean": bool,
         "null": type(None)}


# -- a JSON-schema validator for the keywords FastAPI's schemas use (an unknown keyword fails loudly) ---------
def schema_errors(value, schema: dict, components: dict, where: str = "$") -> list[str]:
    unknown = set(schema) - ANNOTATIONS - {"$ref", "type", "properties", "required", "additionalProperties", "items",
                                           "anyOf", "enum", "const", "maxLength", "maxItems", "minimum", "maximum",
                                           "pattern"}
    if unknown:
        return [f"{where}: the test's validator does not know {sorted(unknown)}"]
    if "$ref" in schema:
        return schema_errors(value, components[schema["$ref"].rsplit("/", 1)[1]], components, where)
    if "anyOf" in schema:
        options = [schema_errors(value, option, components, where) for option in schema["anyOf"]]
        if all(options):
            return [f"{where}: matches none of anyOf: " + " | ".join("; ".join(o) for o in options)]
    errors = []
    if "type" in schema:
        kind = TYPES[schema["type"]]
        if schema["type"] == "integer" and isinstance(value, float) and value.is_integer():
            kind = float  # JSON Schema's integer is any number without a fraction: 6254.0 is one
        if not isinstance(value, kind) or (isinstance(value, bool) and schema["type"] in ("integer", "number")):
            return [f"{where}: {value!r:.60} is not of type {schema['type']}"]
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r:.60} is not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: {value!r:.60} is not {schema['const']!r}")
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{where}: {len(value)} characters, over maxLength {schema['maxLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{where}: {value!r:.60} does not match {schema['pattern']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where}: {value} is under the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{where}: {value} is over the maximum {schema['maximum']}")
    if isinstance(value, list) and "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(f"{where}: {len(value)} items, over maxItems {schema['maxItems']}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        errors += [f"{where}: {name!r} is missing" for name in schema.get("required", []) if name not in value]
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in properties:
                errors += schema_errors(item, properties[name], components, f"{where}.{name}")
            elif extra is False:
                errors.append(f"{where}: {name!r} is not in the schema")
            elif isinstance(extra, dict):
                errors += schema_errors(item, extra, components, f"{where}.{name}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += schema_errors(item, schema["items"], components, f"{where}[{i}]")
    return errors


def test_the_validator_refuses_what_it_should():
    components = {"A": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                        "additionalProperties": False}}
    ref = {"$ref": "#/components/schemas/A"}
    assert not schema_errors({"n": 3}, ref, components)
    for bad in [{"n": True}, {"n": 1.5}, {}, {"n": 1, "x": 0}, [], "A"]:
        assert schema_errors(bad, ref, components), bad
    assert schema_errors([1, "a"], {"type": "array", "items": {"type": "number"}}, components)
    assert not schema_errors(None, {"anyOf": [{"type": "string"}, {"type": "null"}]}, components)
    assert schema_errors(1, {"anyOf": [{"type": "string"}, {"type": "null"}]}, components)
    assert schema_errors(1, {"type": "integer", "multipleOf": 2}, components)  # a keyword it cannot check
    assert schema_errors(0, {"type": "integer", "minimum": 1}, components)
    assert schema_errors("abc", {"type": "string", "maxLength": 2}, components)
    assert schema_errors("a/b", {"type": "string", "pattern": "^[a-z]+$"}, components)
    assert schema_errors([1, 2], {"type": "array", "maxItems": 1}, components)
    assert not schema_errors("ab", {"type": "string", "maxLength": 2, "pattern": "^[a-z]+$"}, components)


# -- the app in process --------------------------------------------------------------------------------
def make_app(model_dir, profiles_dir):
    limits = Limits(max_contexts=64, max_text=2000, max_symbols=16)
    return create_app(Registry(model_dir, limits, profiles_dir, backend="torch"))


@pytest.fixture(scope="module")
def api(tiny_model_dir, tmp_path_factory):
    app = make_app(tiny_model_dir, tmp_path_factory.mktemp("schema-profiles"))
    with TestClient(app, base_url=BASE) as client:
        yield app, client


@pytest.fixture(scope="module")
def spec(api) -> dict:
    r = api[1].get("/openapi.json")
    assert r.status_code == 200
    return r.json()


def success_schema(spec: dict, method: str, path: str, status: int) -> dict:
    responses = spec["paths"][path][method.lower()]["responses"]
    assert str(status) in responses, (method, path, status, sorted(responses))
    return responses[str(status)]["content"]["application/json"]["schema"]


def test_every_route_declares_a_json_object_model_for_success_and_the_error_shape_for_errors(api, spec):
    app, _ = api
    components = spec["components"]["schemas"]
    routes = [r for r in app.routes if isinstance(r, APIRoute)]
    assert len(routes) >= 16
    for route in routes:
        for method in route.methods:
            schema = success_schema(spec, method, route.path, route.status_code or 200)
            assert "$ref" in schema, (method, route.path, schema)  # a named model, not {"type": "string"}
            assert components[schema["$ref"].rsplit("/", 1)[1]]["type"] == "object"
            responses = spec["paths"][route.path][method.lower()]["responses"]
            assert "max_body_bytes" in responses["413"]["description"]  # declared on every route, saying why
            for status in ("400", "404", "413", "422", "500"):
                assert responses[status]["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/ErrorResponse"}, (method, route.path, status)


class Walk:
    """Calls each route with a valid request and checks each answer against the route's declared schema,
    remembering which routes (and WebSocket ops) it has been through."""

    def __init__(self, client: TestClient, spec: dict):
        self.client, self.spec, self.components = client, spec, spec["components"]["schemas"]
        self.routes: set[tuple[str, str]] = set()
        self.ops: set[str] = set()

    def call(self, method: str, template: str, body=None, status: int = 200, **params) -> dict:
        r = self.client.request(method, template.format(**params), json=body)
        assert r.status_code == status, (method, template, body, r.text)
        data = r.json()
        errors = schema_errors(data, success_schema(self.spec, method, template, status), self.components)
        assert not errors, (method, template, errors)
        self.routes.add((method, template))
        return data

    def ws(self, channel, op: str, **fields) -> dict:
        channel.send_text(json.dumps({"id": op, "op": op, **fields}))
        reply = json.loads(channel.receive_text())
        assert reply.get("id") == op and "result" in reply, (op, fields, reply)
        errors = schema_errors(reply["result"], {"$ref": f"#/components/schemas/{WS_RESULTS[op].__name__}"},
                               self.components)
        assert not errors, (op, errors)
        self.ops.add(op)
        return reply["result"]


def test_every_route_and_websocket_op_answers_what_its_schema_declares(api, spec):
    app, client = api
    walk = Walk(client, spec)
    health = walk.call("GET", "/v1/health")
    assert health["status"] == "ok"
    model = walk.call("GET", "/v1/model")
    size = model["alphabet"]["size"]
    for fmt in ("log_probs", "counts"):
        assert len(walk.call("POST", "/v1/predict", {"contexts": ["", "I want"], "format": fmt})["distributions"]) == 2

    s = "/v1/sessions/{sid}"
    opened = walk.call("POST", "/v1/sessions", {"profile": "walker", "model": "hybrid"}, status=201)
    ppm = walk.call("POST", "/v1/sessions", {"model": "ppm", "adapt": True}, status=201)
    static = walk.call("POST", "/v1/sessions", {"model": "rnn", "adapt": False}, status=201)
    assert "adaptation" in opened and ppm["adaptation"]["learns"] == ["ppm"] and ppm["backend"] is None
    assert "adaptation" not in static  # an optional field left out, not null
    walk.call("DELETE", "/v1/sessions/{sid}", sid=static["session"])
    listed = walk.call("GET", "/v1/sessions")
    assert listed["open"] == 2 and sorted(str(row["profile"]) for row in listed["sessions"]) == ["None", "walker"]
    assert opened["session"] not in json.dumps(listed) and ppm["session"] not in json.dumps(listed)
    for sid in (opened["session"], ppm["session"]):
        info = walk.call("GET", s, sid=sid)
        assert info["session"] == sid and "notice" in info
        root = walk.call("POST", s + "/contexts", {"text": "I want"}, status=201, sid=sid)
        assert set(root) == {"handle"}
        child = walk.call("POST", s + "/contexts", {"parent": root["handle"], "symbols": " a", "format": "counts"},
                          status=201, sid=sid)
        assert sum(child["distribution"]) == 65536
        batch = walk.call("POST", s + "/contexts/batch", {"contexts": [{"text": "We"}, {"parent": root["handle"],
                                                                                        "symbols": "s"}]},
                          status=201, sid=sid)
        walk.call("POST", s + "/contexts/batch", {"contexts": [{"text": "You"}], "format": "log_probs"}, status=201,
                  sid=sid)
        for fmt in ("log_probs", "counts"):
            dists = walk.call("POST", s + "/distributions", {"contexts": [root["handle"], *batch["handles"]],
                                                             "format": fmt}, sid=sid)
            assert [len(d) for d in dists["distributions"]] == [size] * 3
        done = walk.call("POST", s + "/commit", {"text": "I want tea. ", "wait": True}, sid=sid)
        assert done["committed"] == (12 if sid == opened["session"] else None)
        walk.call("POST", s + "/delete", {"count": 2, "wait": True}, sid=sid)
        walk.call("POST", s + "/reset", None, sid=sid)
        assert walk.call("POST", s + "/adapt", {"enabled": False}, sid=sid)["adapting"] is False
        walk.call("POST", s + "/adapt", {"enabled": True}, sid=sid)
        assert walk.call("DELETE", s + "/contexts/{handle}", sid=sid, handle=batch["handles"][1]) == {"ok": True}
    saved = walk.call("POST", s + "/profile/save", sid=opened["session"])
    assert saved["profile"] == "walker" and saved["characters_adapted"] == 10

    sid = opened["session"]
    with client.websocket_connect(f"{BASE.replace('http', 'ws')}/v1/sessions/{sid}/ws") as channel:
        root = walk.ws(channel, "context", text="I need", format="log_probs")
        kids = walk.ws(channel, "contexts", contexts=[{"parent": root["handle"], "symbols": " t"}], format="counts")
        walk.ws(channel, "distributions", contexts=[root["handle"], *kids["handles"]], format="counts")
        walk.ws(channel, "commit", text="I need tea. ", wait=True)
        walk.ws(channel, "delete", count=1)
        walk.ws(channel, "reset", wait=True)
        walk.ws(channel, "adapt", enabled=True)
        walk.ws(channel, "release", context=kids["handles"][0])
        assert walk.ws(channel, "info")["session"] == sid
        assert walk.ws(channel, "save")["profile"] == "walker"
    walk.routes.add(("WS", "/v1/sessions/{sid}/ws"))

    for sid, saved in ((opened["session"], True), (ppm["session"], False)):
        assert walk.call("DELETE", s, sid=sid) == {"session": sid, "closed": True, "saved": saved}

    # a new route or op without a call above fails here
    declared = {(m, r.path) for r in app.routes if isinstance(r, APIRoute) for m in r.methods}
    declared |= {("WS", r.path) for r in app.routes if isinstance(r, APIWebSocketRoute)}
    assert declared == walk.routes, declared ^ walk.routes
    assert walk.ops == set(WS_RESULTS)


# -- enforcement ------------------------------------------------------------------------------------------
def test_an_answer_that_drifts_from_its_schema_is_a_logged_500(tiny_model_dir, tmp_path, monkeypatch, caplog):
    app = make_app(tiny_model_dir, tmp_path)
    health = ops.health
    monkeypatch.setattr(ops, "health", lambda registry: {**health(registry), "surprise": 1})
    monkeypatch.setattr(ops, "release", lambda session, handle: {"ok": "yes"})
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as client, caplog.at_level(logging.ERROR):
        r = client.get("/v1/health")
        assert r.status_code == 500 and r.json()["error"]["code"] == "internal_error"
        sid = client.post("/v1/sessions", json={"model": "rnn", "adapt": False}).json()["session"]
        with client.websocket_connect(f"ws://127.0.0.1/v1/sessions/{sid}/ws") as channel:
            channel.send_text(json.dumps({"id": 1, "op": "context", "text": "I"}))
            handle = json.loads(channel.receive_text())["result"]["handle"]
            channel.send_text(json.dumps({"id": 2, "op": "release", "context": handle}))
            reply = json.loads(channel.receive_text())
            assert reply["status"] == 500 and reply["error"]["code"] == "internal_error" and reply["id"] == 2
            channel.send_text(json.dumps({"id": 3, "op": "info"}))  # the connection goes on
            assert json.loads(channel.receive_text())["result"]["session"] == sid
        assert client.delete(f"/v1/sessions/{sid}").status_code == 200
    logged = [rec for rec in caplog.records if rec.levelno >= logging.ERROR]
    assert any("surprise" in (rec.exc_text or "") for rec in logged), [rec.getMessage() for rec in logged]
    assert any("ok" in (rec.exc_text or "") and "WebSocket" in rec.getMessage() for rec in logged)


# -- odd WebSocket messages --------------------------------------------------------------------------------
def test_websocket_numbers_beyond_pythons_int_limit_are_a_400_and_the_connection_goes_on(api):
    _, client = api
    sid = client.post("/v1/sessions", json={"model": "rnn", "adapt": False}).json()["session"]
    digits = "7" * 4301  # over sys.get_int_max_str_digits(): json.loads raises ValueError, not JSONDecodeError
    try:
        with client.websocket_connect(f"ws://127.0.0.1/v1/sessions/{sid}/ws") as channel:
            for message in ['{"op": "info", "id": ' + digits + "}",
                            '{"op": "release", "context": ' + digits + "}",
                            '{"op": "distributions", "contexts": [1, -' + digits + "]}"]:
                channel.send_text(message)
                reply = json.loads(channel.receive_text())
                assert reply["status"] == 400 and reply["error"]["code"] == "bad_json", reply
                assert "digits" in reply["error"]["message"] and reply["id"] is None
            channel.send_text(json.dumps({"id": 1, "op": "info"}))
            assert json.loads(channel.receive_text())["result"]["session"] == sid
    finally:
        client.delete(f"/v1/sessions/{sid}")
