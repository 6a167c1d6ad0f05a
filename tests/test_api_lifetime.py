"""Session lifetime and isolation in the API: idle sessions are closed (profile saved, slot and profile lock
freed), a client is never shown another's session id, and `serve` fails with one line, not a traceback."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import threading
import time

import httpx
from fastapi.testclient import TestClient

from dasher_rnn.adapt.profiles import ProfileStore
from dasher_rnn.api.app import create_app
from dasher_rnn.api.client import DasherClient
from dasher_rnn.api.limits import Limits
from dasher_rnn.api.registry import Registry
from dasher_rnn.api.server import BackgroundServer, ServerConfig
from tests.helpers import wait_until

BASE = "http://127.0.0.1"
WS = "ws://127.0.0.1"


# -- idle timeout --------------------------------------------------------------------------------------------
def test_an_idle_session_is_closed_its_profile_saved_and_its_slot_and_profile_freed(tiny_model_dir, tmp_path):
    limits = Limits(max_sessions=1, idle_timeout_s=0.4)  # the server looks for idle sessions every 0.1 s
    clock = [0.0]  # the registry's clock: it moves only when the test says
    registry = Registry(tiny_model_dir, limits, tmp_path, backend="torch", clock=lambda: clock[0])
    app = create_app(registry)
    with TestClient(app, base_url=BASE) as client:
        assert client.get("/v1/model").json()["limits"]["idle_timeout_s"] == 0.4
        opened = client.post("/v1/sessions", json={"profile": "idler", "model": "rnn"})
        assert opened.status_code == 201
        sid = opened.json()["session"]
        assert client.post(f"/v1/sessions/{sid}/commit", json={"text": "I want tea. " * 3, "wait": True}).status_code == 200
        full = client.post("/v1/sessions", json={"model": "ppm"})
        assert full.status_code == 429 and full.json()["error"]["code"] == "too_many_sessions"
        assert client.get("/v1/sessions").json()["sessions"][0]["idle_s"] == 0.0
        clock[0] += 0.3
        assert client.get("/v1/sessions").json()["sessions"][0]["idle_s"] == 0.3
        time.sleep(0.3)  # the server looks (3 times) and finds nothing idle long enough
        assert client.get("/v1/health").json()["sessions"] == 1
        # abandoned: the server closes it by itself
        clock[0] += 0.2
        assert wait_until(lambda: client.get("/v1/health").json()["sessions"] == 0)
        assert wait_until(lambda: not registry.lifetime.closing)  # saved and closed
        gone = client.get(f"/v1/sessions/{sid}")
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "session_expired"
        assert "saved" in gone.json()["error"]["message"]
        saved = ProfileStore(tmp_path).load("idler")
        assert saved.info["characters_adapted"] == 36
        # the slot and the profile (its lock) are free again
        again = client.post("/v1/sessions", json={"profile": "idler", "model": "rnn"})
        assert again.status_code == 201, again.text
        assert again.json()["adaptation"]["characters_adapted"] == 36
        client.delete(f"/v1/sessions/{again.json()['session']}")


def test_requests_and_open_websockets_keep_a_session_alive(tiny_model_dir, tmp_path):
    registry = Registry(tiny_model_dir, Limits(idle_timeout_s=60), tmp_path, backend="torch")
    app = create_app(registry)
    later = 1e9  # a clock reading far past every timeout
    with TestClient(app, base_url=BASE) as client:
        sid = client.post("/v1/sessions", json={"model": "rnn", "adapt": False}).json()["session"]
        session = registry.sessions[sid]
        assert asyncio.run(registry.expire_idle(time.monotonic())) == []  # used just now
        with session.in_use():  # a request in progress
            assert asyncio.run(registry.expire_idle(later)) == []
        with client.websocket_connect(f"{WS}/v1/sessions/{sid}/ws") as channel:
            assert wait_until(lambda: session.connections == 1)
            assert asyncio.run(registry.expire_idle(later)) == []
            channel.send_text(json.dumps({"id": 1, "op": "info"}))
            assert json.loads(channel.receive_text())["result"]["session"] == sid
        assert wait_until(lambda: session.connections == 0)
        assert session.idle_for(time.monotonic() + 61) >= 60
        # closing an expired session in a thread of its own loop, as the reaper does
        assert client.portal.call(registry.expire_idle, later) == [sid]
        assert session.closed and sid not in registry.sessions
        r = client.get(f"/v1/sessions/{sid}")
        assert r.status_code == 404 and r.json()["error"]["code"] == "session_expired"


def test_idle_timeout_zero_never_closes(tiny_model_dir, tmp_path):
    registry = Registry(tiny_model_dir, Limits(idle_timeout_s=0), tmp_path, backend="torch")
    with TestClient(create_app(registry), base_url=BASE) as client:
        sid = client.post("/v1/sessions", json={"model": "ppm"}).json()["session"]
        assert client.portal.call(registry.expire_idle, 1e9) == []
        assert client.get(f"/v1/sessions/{sid}").status_code == 200


# -- isolation -----------------------------------------------------------------------------------------------
def test_no_client_is_shown_another_clients_session_id(tiny_model_dir, tmp_path):
    """A session id is the capability to read, poison or close a session: the listing and a 409 never show it."""
    app = create_app(Registry(tiny_model_dir, Limits(max_sessions=4), tmp_path, backend="torch"))
    with TestClient(app, base_url=BASE) as alice, TestClient(app, base_url=BASE) as mallory:
        mine = alice.post("/v1/sessions", json={"profile": "alice", "model": "rnn"}).json()["session"]
        anon = alice.post("/v1/sessions", json={"model": "ppm"}).json()["session"]
        assert len(mine) == 32  # 128 bits
        listed = mallory.get("/v1/sessions")
        assert listed.status_code == 200
        assert mine not in listed.text and anon not in listed.text
        body = listed.json()
        assert body["open"] == 2 and body["max_sessions"] == 4
        assert sorted(str(row["profile"]) for row in body["sessions"]) == ["None", "alice"]
        assert all("session" not in row for row in body["sessions"])
        busy = mallory.post("/v1/sessions", json={"profile": "alice"})
        assert busy.status_code == 409 and busy.json()["error"]["code"] == "profile_in_use"
        assert mine not in busy.text and "session" not in busy.json()["error"]
        assert alice.delete(f"/v1/sessions/{mine}").json()["saved"] is True


# -- time limits and fairness --------------------------------------------------------------------------------
class Permits:
    """Wraps a predictor backend: every batched step (several long roots read together) waits for a permit."""

    def __init__(self, backend):
        self.inner, self.permits = backend, threading.Semaphore(0)
        for name in ("name", "layers", "hidden", "cell_size", "vocab"):
            setattr(self, name, getattr(backend, name))

    def initial(self):
        return self.inner.initial()

    def step(self, symbols, h, c):
        if len(symbols) > 1:
            assert self.permits.acquire(timeout=60)
        return self.inner.step(symbols, h, c)

    def run(self, symbols, h, c):
        return self.inner.run(symbols, h, c)

    def release(self, n: int) -> None:
        for _ in range(n):
            self.permits.release()


def gated_server(model_dir, profiles, **limits):
    srv = BackgroundServer(ServerConfig(model_dir, port=0, profiles_dir=profiles, limits=Limits(**limits))).start()
    service = srv.server.config.app.state.registry.base.service
    gate = Permits(service.backend)
    service.backend = service.tree.backend = gate
    return srv, service, gate


def post_in_thread(url: str, body: dict, out: dict, key: str) -> threading.Thread:
    def run():
        out[key] = httpx.post(url + "/v1/predict", json=body, timeout=120)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


BIG = {"contexts": [("I want tea. " * 200)[: 1990 + i] for i in range(4)]}  # 4 long roots, read together


def test_a_small_request_is_answered_while_a_big_one_is_still_being_read(tiny_model_dir, tmp_path):
    srv, service, gate = gated_server(tiny_model_dir, tmp_path)
    try:
        out: dict = {}
        big = post_in_thread(srv.url, BIG, out, "big")
        assert wait_until(lambda: len(service._reads) == 4)  # the big request's roots are being read, a chunk at a time
        small = post_in_thread(srv.url, {"contexts": ["Hello"]}, out, "small")
        chunks = 0  # the big request needs 31 chunks; the small one waits for a chunk or two to end
        while small.is_alive() and chunks < 10:
            wait_until(lambda: service._commands.qsize() or not small.is_alive(), 10)
            if small.is_alive():
                gate.release(service.root_chunk)  # one chunk of the big request, no more
                chunks += 1
                wait_until(lambda: gate.permits._value == 0, 10)
        small.join(60)
        assert out["small"].status_code == 200 and len(out["small"].json()["distributions"]) == 1
        assert big.is_alive() and "big" not in out  # still waiting for permits: the small one did not wait for it
        assert chunks < 10
        gate.release(10**5)
        big.join(60)
        assert out["big"].status_code == 200 and len(out["big"].json()["distributions"]) == 4
    finally:
        srv.stop()


def test_a_request_over_the_time_limit_is_a_503_and_its_work_is_dropped(tiny_model_dir, tmp_path):
    srv, service, gate = gated_server(tiny_model_dir, tmp_path, request_timeout_s=0.5)
    try:
        assert httpx.get(srv.url + "/v1/model").json()["limits"]["request_timeout_s"] == 0.5
        r = httpx.post(srv.url + "/v1/predict", json=BIG, timeout=60)  # no permits: it cannot finish in time
        assert r.status_code == 503 and r.json()["error"]["code"] == "timeout", r.text
        assert "0.5 s" in r.json()["error"]["message"]
        gate.release(10**5)
        assert wait_until(lambda: not service._reads)  # the cancelled reads are dropped at their next chunk
        assert httpx.post(srv.url + "/v1/predict", json={"contexts": ["Hi"]}).status_code == 200
        assert wait_until(lambda: service.tree.cached_nodes == 0)  # no root of the stopped request is left pinned
        # in a session too: the contexts of a stopped request keep no handles, and its roots are released
        with DasherClient(srv.url) as client:
            session = client.open_session(model="rnn", adapt=False)
            own = srv.server.config.app.state.registry.sessions[session.id].writer.service
            session_gate = Permits(own.backend)
            own.backend = own.tree.backend = session_gate
            root = session.root("I want")
            with session.websocket() as ws:
                specs = [{"parent": root, "symbols": "ab"}, {"text": "We"}, *({"text": t} for t in BIG["contexts"])]
                reply = ws.send_raw(json.dumps({"id": 1, "op": "contexts", "contexts": specs}))
                assert reply["status"] == 503 and reply["error"]["code"] == "timeout", reply
                session_gate.release(10**5)
                assert wait_until(lambda: not own._reads)
                assert ws.call("info")["contexts"] == 1  # only the root made before
                assert wait_until(lambda: own.tree.cached_nodes == 1)  # and no other root is left pinned
                assert ws.call("contexts", contexts=[{"parent": root, "symbols": "ab"}])["handles"][0] > root
            session.close()
    finally:
        srv.stop()


# -- serve's faults: one line and exit status 2, never a traceback ---------------------------------------------
def serve(capsys, *args: str) -> tuple[int, str, str]:
    from dasher_rnn.cli import main

    status = main(["serve", *args])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_serve_with_a_port_out_of_range_is_a_one_line_error(capsys, tiny_model_dir):
    status, out, err = serve(capsys, "--port", "99999", "--model-dir", str(tiny_model_dir))
    assert status == 2 and out == ""
    assert err == "dasher-rnn serve: error: the port must be 0-65535, not 99999\n"
    status, _, err = serve(capsys, "--port", "0", "--request-timeout", "nan", "--model-dir", str(tiny_model_dir))
    assert status == 2 and err.count("\n") == 1 and "request-timeout" in err


def test_serve_with_a_broken_weights_file_is_a_one_line_error(capsys, tiny_model_dir, tmp_path):
    broken = tmp_path / "model"
    shutil.copytree(tiny_model_dir, broken)
    weights = broken / "weights.safetensors"
    weights.write_bytes(weights.read_bytes()[:500])
    status, out, err = serve(capsys, "--port", "0", "--model-dir", str(broken))
    assert status == 2 and out == ""  # no URL: nothing is served
    assert err.count("\n") == 1 and "Traceback" not in err and "weights.safetensors" in err, err


def test_serve_on_a_busy_port_says_so_and_prints_no_url(capsys, tiny_model_dir):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status, out, err = serve(capsys, "--port", str(port), "--model-dir", str(tiny_model_dir))
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and f"port {port} on 127.0.0.1 is busy" in err, err
