"""The predictor API on a real server on loopback: results equal the in-process predictor and a local
writing session, bad requests get 4xx JSON errors, limits hold, profiles are saved, the BciPy adapter."""

import asyncio
import json

import httpx
import numpy as np
import pytest

from dasher_rnn.adapt.profiles import ProfileStore
from dasher_rnn.adapt.session import WritingSession
from dasher_rnn.api.bcipy import DasherRNNLanguageModel, InvalidSymbolSet, sentence_case, typed_text
from dasher_rnn.api.client import ClientError, DasherClient
from dasher_rnn.api.limits import ApiError, Limits
from dasher_rnn.api.registry import Registry
from dasher_rnn.api.schemas import ErrorResponse
from dasher_rnn.api.server import BackgroundServer, ServerConfig
from dasher_rnn.predictor import PredictorService

TEXT = "Grandma Zofia brings kefir on Thursday. "
TOKEN = "s3cret-token-for-tests"


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    return tmp_path_factory.mktemp("profiles")


@pytest.fixture(scope="module")
def server(tiny_model_dir, profiles):
    limits = Limits(max_body_bytes=64 * 1024, max_contexts=64, max_text=2000, max_symbols=16)
    with BackgroundServer(ServerConfig(tiny_model_dir, port=0, profiles_dir=profiles, limits=limits)) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server):
    with DasherClient(server.url) as c:
        yield c


@pytest.fixture
def session(client):
    s = client.open_session(adapt=True, model="rnn")
    yield s
    try:
        s.close(save=False)
    except ClientError:
        pass


# -- results ---------------------------------------------------------------------------------
def test_distributions_match_the_in_process_predictor(client, tiny_model_dir):
    texts = ["", "I want some", "My sister would love a cup of t"]
    with PredictorService.from_dir(tiny_model_dir, "auto") as local:
        expected = local.predict_texts(texts)
        for fmt in ("log_probs", "counts"):
            got = client.predict(texts, format=fmt)
            for g, e in zip(got, expected, strict=True):
                assert np.array_equal(g, e.log_probs if fmt == "log_probs" else e.counts)
        # a tree of contexts in a session that does not adapt (same backend as the stateless predictor)
        s = client.open_session(adapt=False, model="rnn")
        root = s.root("Tom can hear")
        kids, dists = s.contexts([{"parent": root, "symbols": " "}, {"parent": root, "symbols": " th"}], format="counts")
        node = local.root("Tom can hear")
        a = local.child(node, " ")
        want = local.distributions([node, a, local.child(local.child(a, "t"), "h")])
        assert np.array_equal(s.distributions([root] + kids), np.stack([d.log_probs for d in want]))
        assert np.array_equal(dists, np.stack([d.counts for d in want[1:]]))
        assert (dists.sum(axis=1) == 65536).all()
        s.close()


def test_adaptation_through_the_api_matches_a_local_session(client, session, tiny_model_dir):
    def drive(commit, delete, reset):
        commit(TEXT * 3)
        delete(8)
        commit("ursday! I need tea. ")
        reset()
        commit("Grandma Zofia")

    drive(lambda t: session.commit(t, wait=True), lambda n: session.delete(n, wait=True),
          lambda: session.reset(wait=True))
    root = session.root("Grandma Zof")
    got = session.distributions([root, session.child(root, "i")])
    stats = session.stats()["adaptation"]

    with PredictorService.from_dir(tiny_model_dir, "torch") as service:
        local = WritingSession(tiny_model_dir, service=service)
        drive(local.commit, local.delete, local.new_message)
        local.flush()
        node = service.root("Grandma Zof")
        want = service.distributions([node, service.child(node, "i")])
        expected_stats = local.stats()
        local.close()
    assert stats["updates"] == expected_stats["updates"] > 0 and stats["rollbacks"] == expected_stats["rollbacks"] == 1
    assert np.allclose(got, np.stack([d.log_probs for d in want]), atol=1e-6)
    assert not np.allclose(got[0], client.predict(["Grandma Zof"])[0], atol=1e-2)  # it did learn


def test_profiles_are_saved_and_loaded_once_per_session(client, profiles):
    s = client.open_session(profile="alice")
    with pytest.raises(ClientError) as busy:
        client.open_session(profile="alice")
    assert busy.value.status == 409 and busy.value.code == "profile_in_use"
    assert s.id not in json.dumps(busy.value.body)  # the holder's id is a capability nobody else is shown
    s.commit(TEXT * 2, wait=True)
    assert s.save_profile()["characters_adapted"] == len(TEXT * 2)
    assert (profiles / "alice" / "profile.json").is_file()
    before = s.distributions([s.root("Grandma Z")])
    assert s.close()["saved"]
    again = client.open_session(profile="alice")
    assert again.stats()["adaptation"]["characters_adapted"] == len(TEXT * 2)
    assert np.allclose(again.distributions([again.root("Grandma Z")]), before, atol=1e-6)
    again.close(save=False)


def test_hybrid_sessions_mix_ppm_learn_words_forget_deleted_ones_and_keep_them_in_the_profile(client, profiles,
                                                                                               tiny_model_dir,
                                                                                               monkeypatch):
    from dasher_rnn.lm.hybrid import HYBRID_PPM_ORDER, HybridMixer
    from dasher_rnn.lm.model_io import read_checked_config
    from dasher_rnn.lm.ppm import PPMModel

    alphabet = read_checked_config(tiny_model_dir)[1]
    monkeypatch.setattr(HybridMixer, "EARNED_AT", 0)  # a PPM that has earned its share (an empty one has not)
    s = client.open_session(profile="hybrid-user", model="hybrid")
    assert s.info["model"] == "hybrid"
    rnn_only = client.predict(["I met Zb"])[0]
    root = s.root("I met Zb")
    before = s.distributions([root])[0]
    # a fresh PPM knows nothing: the mixture is 0.9 x RNN + 0.1 x PPM's uniform guess
    mixer = HybridMixer(PPMModel(alphabet, max_order=HYBRID_PPM_ORDER))
    expected = mixer.mix(np.exp(rnn_only.astype(np.float64)), mixer.context_after("I met Zb"))
    assert np.allclose(np.exp(before), expected, atol=1e-5) and np.isclose(np.exp(before).sum(), 1, atol=1e-5)
    y = alphabet.index("y")
    s.commit("I met Zbyszek. Zbyszek", wait=True)
    after = s.distributions([s.root("I met Zb")])[0]
    assert after[y] > before[y] + 1  # PPM remembers the name the first time
    s.delete(len("I met Zbyszek. Zbyszek"), wait=True)
    assert np.array_equal(s.distributions([s.root("I met Zb")])[0], before)  # counts and weights taken back exactly
    s.commit("Zbyszek. ", wait=True)
    learned = s.distributions([s.root("I met Zb")])[0]
    assert s.close()["saved"] and ProfileStore(profiles).load("hybrid-user").parts.keys() == {"rnn", "ppm"}
    again = client.open_session(profile="hybrid-user", model="hybrid")
    assert np.allclose(again.distributions([again.root("I met Zb")])[0], learned, atol=1e-6)
    again.close(save=False)


def test_ppm_sessions_serve_dashers_model_alone_and_learn_committed_text(client, tiny_model_dir):
    from dasher_rnn.adapt.compose import DASHER_PPM_ORDER
    from dasher_rnn.lm.model_io import read_checked_config
    from dasher_rnn.lm.ppm import PPMModel

    local = PPMModel(read_checked_config(tiny_model_dir)[1], max_order=DASHER_PPM_ORDER)
    s = client.open_session(model="ppm")
    for text in ["Zbyszek ", "I met Zbyszek. "]:
        got = np.exp(s.distributions([s.root("I met Zb")])[0].astype(np.float64))
        assert np.allclose(got, local.probs_at(local.context_after("I met Zb")), atol=1e-6)
        s.commit(text, wait=True)
        s.reset()
        for ch in text:
            local.learn(local.alphabet.index(ch))
        local.reset()
    assert s.info["model"] == "ppm" and s.info["adaptation"]["learns"] == ["ppm"]
    s.close(save=False)


def test_a_session_in_another_language_writes_its_letters_into_its_own_profile(client, profiles):
    s = client.open_session(profile="anna", model="hybrid", language="pl")
    info = s.info
    assert info["language"] == "pl" and "ł" in info["alphabet"]["symbols"] and info["profile"] == "anna.pl"
    assert info["model"] == "ppm" and "no RNN writes 'pl'" in info["notice"]  # no Polish RNN ships: PPM alone
    (dist,) = s.distributions([s.root("Dzień dob")])
    assert len(dist) == info["alphabet"]["size"]
    s.commit("Dzień dobry\n", wait=True)
    s.close(save=True)
    assert (profiles / "anna.pl").is_dir() and not (profiles / "anna").exists()
    with pytest.raises(ClientError, match="unknown_language"):
        client.open_session(language="zz-nonsense")
    english = client.open_session(language="en")
    assert english.info["language"] == "en" and english.info["model"] == "hybrid"
    english.close(save=False)


def test_websocket_carries_the_same_operations(client, session):
    with session.websocket() as ws:
        root = ws.call("context", text="I need", format="log_probs")
        child = ws.call("contexts", contexts=[{"parent": root["handle"], "symbols": " "}])["handles"][0]
        dists = ws.call("distributions", contexts=[root["handle"], child], format="counts")["distributions"]
        assert np.array_equal(np.asarray(dists), session.distributions([root["handle"], child], "counts"))
        assert np.array_equal(np.float32(root["distribution"]), session.distributions([root["handle"]])[0])
        assert ws.call("commit", text="I need tea. ", wait=True)["ok"]
        for bad in ["{nope", "[1, 2]", json.dumps({"op": "fly"}), json.dumps({"id": 7, "op": "commit", "text": 1}),
                    json.dumps({"id": 8, "op": "distributions", "contexts": [999999]}), b"\x00binary"]:
            reply = ws.send_raw(bad)
            assert 400 <= reply["status"] < 500 and reply["error"]["code"] and reply["error"]["message"]
        assert ws.call("release", context=child)["ok"]
        with pytest.raises(ClientError) as gone:
            ws.call("distributions", contexts=[child])
        assert gone.value.status == 404 and gone.value.code == "unknown_context"
        assert ws.call("info")["session"] == session.id


def test_every_accepted_connection_has_tcp_nodelay(server, client, session):
    """Nagle's algorithm on a response waits for the client's delayed ACK (~40 ms a call): each connection the
    server accepted, HTTP or WebSocket, must have TCP_NODELAY set."""
    import socket

    client.health()  # the kept-alive HTTP connection
    with session.websocket() as ws:
        ws.call("info")
        connections = list(server.server.server_state.connections)
        kinds = {type(c).__name__ for c in connections}
        assert any("WebSocket" in k for k in kinds) and any("WebSocket" not in k for k in kinds), kinds
        for connection in connections:
            sock = connection.transport.get_extra_info("socket")
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), type(connection).__name__


def test_websocket_to_an_unknown_session_is_closed_with_an_error(server):
    from websockets.sync.client import connect

    with connect(server.url.replace("http", "ws") + "/v1/sessions/nope/ws") as ws:
        reply = json.loads(ws.recv(10))
        assert reply["status"] == 404 and reply["error"]["code"] == "unknown_session"


# -- errors ------------------------------------------------------------------------------------
def bad_requests(sid: str, handle: int, released: int, under_released: int):
    s = f"/v1/sessions/{sid}"
    long_text = "a" * 2001
    return [
        ("POST", f"{s}/distributions", b"{not json", 400, "bad_json"),
        ("POST", f"{s}/distributions", b'{"contexts": [1,', 400, "bad_json"),
        ("POST", f"{s}/distributions", b"\xff\xfe", 400, None),
        ("POST", f"{s}/distributions", {"contexts": ["1"]}, 422, "invalid_request"),
        ("POST", f"{s}/distributions", {"contexts": [1.5]}, 422, "invalid_request"),  # 1.0 is handle 1
        ("POST", f"{s}/distributions", {"contexts": [True]}, 422, "invalid_request"),
        ("POST", f"{s}/distributions", {"contexts": 1}, 422, "invalid_request"),
        ("POST", f"{s}/distributions", {"contexts": [handle], "format": "bits"}, 422, "invalid_request"),
        ("POST", f"{s}/distributions", {"contexts": [handle], "extra": 1}, 422, "invalid_request"),
        ("POST", f"{s}/distributions", {}, 422, "invalid_request"),
        ("POST", f"{s}/distributions", [], 422, "invalid_request"),
        ("POST", f"{s}/distributions", {"contexts": [handle] * 65}, 413, "too_many_contexts"),
        ("POST", f"{s}/distributions", {"contexts": [123456]}, 404, "unknown_context"),
        ("POST", f"{s}/distributions", {"contexts": [released]}, 404, "unknown_context"),
        ("POST", f"{s}/distributions", {"contexts": [under_released]}, 404, "unknown_context"),
        ("POST", f"{s}/distributions", {"contexts": [2**80]}, 404, "unknown_context"),
        ("POST", "/v1/sessions/nope/distributions", {"contexts": [handle]}, 404, "unknown_session"),
        ("POST", f"{s}/contexts", {"text": "hi", "parent": handle}, 422, "invalid_request"),
        ("POST", f"{s}/contexts", {"text": "hi", "symbols": "x"}, 422, "invalid_request"),
        ("POST", f"{s}/contexts", {}, 422, "invalid_request"),
        ("POST", f"{s}/contexts", {"text": "caf\u00e9 \u20ac"}, 422, "unknown_character"),
        ("POST", f"{s}/contexts", b'{"text": "\\ud800"}', 422, "unknown_character"),
        ("POST", f"{s}/contexts", {"parent": handle, "symbols": "\u00e9"}, 422, "unknown_character"),
        ("POST", f"{s}/contexts", {"parent": handle, "symbols": "a" * 17}, 413, "too_many_symbols"),
        ("POST", f"{s}/contexts", {"parent": 99999, "symbols": "a"}, 404, "unknown_context"),
        ("POST", f"{s}/contexts", {"text": long_text}, 413, "text_too_long"),
        ("POST", f"{s}/contexts/batch", {"contexts": [{"text": "a"}] * 65}, 413, "too_many_contexts"),
        ("POST", f"{s}/commit", {"text": "tab\u20ac"}, 422, "unknown_character"),
        ("POST", f"{s}/commit", {"text": long_text}, 413, "text_too_long"),
        ("POST", f"{s}/commit", {"text": None}, 422, "invalid_request"),
        ("POST", f"{s}/delete", {"count": 0}, 422, "bad_count"),
        ("POST", f"{s}/delete", {"count": "2"}, 422, "invalid_request"),
        ("POST", f"{s}/adapt", {"enabled": "yes"}, 422, "invalid_request"),
        ("POST", f"{s}/profile/save", None, 409, "no_profile"),
        ("DELETE", f"{s}/contexts/abc", None, 422, "invalid_request"),
        ("DELETE", f"{s}/contexts/424242", None, 404, "unknown_context"),
        ("DELETE", "/v1/sessions/nope", None, 404, "unknown_session"),
        ("GET", "/v1/sessions/nope", None, 404, "unknown_session"),
        ("POST", "/v1/predict", {"contexts": ["x\u2603"]}, 422, "unknown_character"),
        ("POST", "/v1/predict", {"contexts": ["a"] * 65}, 413, "too_many_contexts"),
        ("POST", "/v1/predict", {"contexts": "abc"}, 422, "invalid_request"),
        ("POST", "/v1/predict", b"x" * (64 * 1024 + 1), 413, "body_too_large"),
        ("POST", "/v1/sessions", {"profile": "../etc"}, 422, "invalid_profile"),
        ("POST", "/v1/sessions", {"adapt": 1}, 422, "invalid_request"),
        ("GET", "/v1/nothing", None, 404, "not_found"),
        ("PUT", "/v1/model", None, 405, "method_not_allowed"),
    ]


def test_bad_requests_get_4xx_json_errors_saying_what_is_wrong(server, session):
    handle = session.root("I see")
    released = session.child(handle, "x")
    under = session.child(released, "y")
    session.release(released)
    with httpx.Client(base_url=server.url) as http:
        for method, path, body, status, code in bad_requests(session.id, handle, released, under):
            if isinstance(body, bytes):
                r = http.request(method, path, content=body, headers={"content-type": "application/json"})
            else:
                r = http.request(method, path, json=body)
            assert r.status_code == status, (method, path, body, r.text)
            ErrorResponse.model_validate(r.json(), strict=True)  # the error shape /openapi.json declares
            error = r.json()["error"]
            assert error["message"] and (code is None or error["code"] == code), (path, body, error)
        r = http.post(f"/v1/sessions/{session.id}/commit", content=b'{"text": "a"}', headers={"content-type": "text/plain"})
        assert r.status_code == 415
        r = http.post(f"/v1/sessions/{session.id}/contexts", json={"text": "caf\u00e9 \u00a7"})
        assert r.json()["error"]["character"] == "\u00a7" and r.json()["error"]["alphabet"] == "english"
        assert session.distributions([handle]).shape == (1, 96)  # the session still works


def test_untrusted_hosts_and_origins_are_refused_and_loopback_origins_get_cors(server):
    with httpx.Client(base_url=server.url) as http:
        assert http.get("/v1/model", headers={"host": "attacker.example"}).status_code == 421
        assert http.post("/v1/sessions", headers={"origin": "https://attacker.example"}).status_code == 403
        r = http.options("/v1/predict", headers={"origin": "http://localhost:3000", "access-control-request-method": "POST",
                                                 "access-control-request-headers": "content-type"})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "http://localhost:3000"


# -- limits, tokens, shutdown ------------------------------------------------------------------------
def test_session_handle_and_node_limits(tiny_model_dir, tmp_path):
    async def run():
        registry = Registry(tiny_model_dir, Limits(max_sessions=2, max_handles=4, max_nodes=12, max_symbols=8),
                            tmp_path, backend="torch")
        await registry.start()
        try:
            a = await registry.open(None, adapt=False)
            await registry.open("p1", adapt=True)
            with pytest.raises(ApiError) as full:
                await registry.open(None)
            assert full.value.status == 429 and full.value.code == "too_many_sessions"
            root = (await a.create_roots(["I"]))[0]
            kids = await a.create_children([(root, "abcd"), (root, "abce")])  # 1 + 5 nodes
            await a.create_children([(kids[0], "x")])
            assert await a.create_children([(root, "abcd")]) == kids[:1]  # one handle per context
            with pytest.raises(ApiError) as handles:
                await a.create_children([(root, "z")])
            assert handles.value.code == "too_many_handles"
            a.release(kids[1])
            await a.distributions([root])  # the release has reached the tree
            with pytest.raises(ApiError) as nodes:
                await a.create_children([(root, "zzzzzzz")])
            assert nodes.value.status == 429 and nodes.value.code == "too_many_nodes"
            await a.create_children([(root, "zz")])  # fits once the released subtree is recounted
            await registry.close(a.id)
            with pytest.raises(ApiError):
                registry.get(a.id)
        finally:
            await registry.close_all(save=False)

    asyncio.run(run())


def test_a_request_beyond_the_state_budget_is_a_413_and_the_session_goes_on(tiny_model_dir, tmp_path):
    async def run():
        registry = Registry(tiny_model_dir, Limits(max_symbols=16), tmp_path, backend="torch", budget=8)
        await registry.start()
        try:
            a = await registry.open(None, adapt=False)
            root = (await a.create_roots(["I"]))[0]
            deep = await a.create_children([(root, "abcdefghij"), (root, "klmnopqrst")])
            with pytest.raises(ApiError) as full:
                await a.distributions(deep)
            assert full.value.status == 413 and full.value.code == "budget_exceeded"
            short = await a.create_children([(root, "ab")])
            assert len(await a.distributions([root] + short)) == 2
        finally:
            await registry.close_all(save=False)

    asyncio.run(run())


def test_token_is_required_off_loopback_and_checked_when_given(tiny_model_dir, monkeypatch):
    monkeypatch.delenv("DASHER_RNN_TOKEN", raising=False)
    with pytest.raises(ValueError, match="token"):
        ServerConfig(tiny_model_dir, host="0.0.0.0").checked()
    from dasher_rnn.cli import main

    assert main(["serve", "--host", "0.0.0.0", "--model-dir", str(tiny_model_dir)]) == 2
    with BackgroundServer(ServerConfig(tiny_model_dir, port=0, token=TOKEN)) as srv:
        with httpx.Client(base_url=srv.url) as http:
            assert http.get("/v1/health").status_code == 200
            assert http.get("/v1/model").status_code == 401
            assert http.get("/v1/model", headers={"authorization": "Bearer wrong-token-wrong-token"}).status_code == 401
        with DasherClient(srv.url, token=TOKEN) as c:
            s = c.open_session(adapt=False)
            with s.websocket() as ws:
                assert ws.call("info")["session"] == s.id
            s.close()


def test_graceful_shutdown_saves_profiles(tiny_model_dir, tmp_path):
    with BackgroundServer(ServerConfig(tiny_model_dir, port=0, profiles_dir=tmp_path)) as srv:
        with DasherClient(srv.url) as c:
            c.open_session(profile="bob").commit(TEXT)
    info = json.loads((tmp_path / "bob" / "profile.json").read_text())
    assert info["characters_adapted"] == len(TEXT)
    assert "ppm" in ProfileStore(tmp_path).load("bob").parts  # the default (hybrid) session's PPM


# -- BciPy adapter -----------------------------------------------------------------------------
BCI_SYMBOLS = list("ABCDEFGHIJKLMNOPQRSTUVWXYZ") + ["<", "_"]


def test_bcipy_conventions():
    assert typed_text(["H", "E", "_", "X", "<", "Y"]) == "HE Y"
    assert typed_text("<<A<") == ""
    assert sentence_case("HELLO. HOW ARE YOU? WE.ARE (FINE)!\nOK") == "Hello. How are you? We.are (fine)!\nOk"


def test_bcipy_adapter_over_http_and_in_process_agree(server, tiny_model_dir):
    remote = DasherRNNLanguageModel.from_server(server.url)
    local = DasherRNNLanguageModel.in_process(tiny_model_dir)
    with pytest.raises(InvalidSymbolSet):
        remote.predict_character(["A"])
    for lm in (remote, local):
        lm.set_symbol_set(BCI_SYMBOLS)
    evidence = ["I", "_", "W", "A", "X", "<", "N"]
    got, want = remote.predict_character(evidence), local.predict_character(evidence)
    assert [s for s, _ in got] == [s for s, _ in want]
    assert np.allclose([p for _, p in got], [p for _, p in want], atol=1e-6)
    probs = [p for _, p in got]
    assert probs == sorted(probs, reverse=True) and abs(sum(probs) - 1) < 1e-9
    assert dict(got)["<"] == 0.0 and set(dict(got)) == set(BCI_SYMBOLS)
    assert got == remote.predict_character(["I", "_", "W", "A", "N"])
    with pytest.raises(InvalidSymbolSet):
        local.set_symbol_set(["A", "\u00e9"])
    remote.close()
    local.close()


def test_bcipy_adapter_keeps_within_the_servers_limits_and_backs_out_of_fresh_evidence(server, tiny_model_dir):
    """This server takes 16 symbols below a parent: fresh evidence longer than that, a backspace after it and a
    symbol, each as an adapter reading it afresh answers."""
    remote = DasherRNNLanguageModel.from_server(server.url)
    remote.set_symbol_set(BCI_SYMBOLS)
    evidence = list("I_WOULD_LIKE_SOME_TEA_WITH_MILK_AND_NO_SUGAR_PLEASE")
    for step in (evidence, evidence + ["<"], evidence + ["<", "S"]):
        local = DasherRNNLanguageModel.in_process(tiny_model_dir)
        local.set_symbol_set(BCI_SYMBOLS)
        got, want = dict(remote.predict_character(step)), dict(local.predict_character(step))
        assert max(abs(got[s] - want[s]) for s in BCI_SYMBOLS) < 1e-5
        local.close()
    assert len(remote._path.marks) == 16 + 1  # a handle at each of the last 16 positions, below the read text's
    remote.close()


def test_a_uniform_session_is_bcipys_uniform_model(server):
    """The model test_uniform.py expects of the class it constructs: every symbol but backspace equally likely (each
    symbol as it is: folding a letter's two cases would give it twice a space's share)."""
    uniform = DasherRNNLanguageModel.from_server(server.url, model="uniform", case="exact")
    uniform.set_symbol_set(BCI_SYMBOLS)
    probs = [p for s, p in uniform.predict_character(list("THE_")) if s != "<"]
    assert max(probs) - min(probs) < 1e-6 and abs(sum(probs) - 1) < 1e-6
    uniform.close()


def test_bcipy_adapter_learns_through_a_session(server, client):
    lm = DasherRNNLanguageModel.from_server(server.url, learn=True, backspace_prob=0.05)
    lm.set_symbol_set(BCI_SYMBOLS)
    for evidence in ["I_NEED", "I_NEED_TEQ<A", ""]:
        result = lm.predict_character(list(evidence))
        assert dict(result)["<"] == 0.05 and abs(sum(p for _, p in result) - 1) < 1e-9
    session = lm.backend.session
    session.commit("", wait=True)  # let the adaptation catch up
    stats = session.stats()["adaptation"]
    assert stats["committed"] == len("I need tea\n") and stats["rollbacks"] == 0  # the newline ends the message
    assert session.stats()["session"] == session.id
    lm.close()
    with pytest.raises(ClientError) as closed:
        client.call("GET", f"/v1/sessions/{session.id}")
    assert closed.value.status == 404


# -- the shipped model ---------------------------------------------------------------------------
def test_the_shipped_model_through_the_server_and_the_adapter(tmp_path):
    from dasher_rnn.paths import DEFAULT_MODEL_DIR

    with BackgroundServer(ServerConfig(DEFAULT_MODEL_DIR, port=0, profiles_dir=tmp_path)) as srv:
        with DasherClient(srv.url) as c:
            shipped = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text())["architecture"]
            assert c.model()["alphabet"]["size"] == 96 and c.model()["architecture"] == shipped
            probs = np.exp(c.predict(["Hello, how are yo"])[0])
            assert c.symbols[int(probs.argmax())] == "u"
        lm = DasherRNNLanguageModel.from_server(srv.url)
        lm.set_symbol_set(BCI_SYMBOLS)
        assert lm.predict_character(list("HOW_ARE_YO"))[0][0] == "U"
        lm.close()


def test_a_profile_save_that_cannot_be_written_is_a_507_and_the_session_goes_on(tiny_model_dir, tmp_path, monkeypatch):
    import errno
    import os

    from dasher_rnn.adapt import profiles as profiles_module

    async def run():
        registry = Registry(tiny_model_dir, Limits(), tmp_path, backend="torch")
        await registry.start()
        try:
            s = await registry.open("full-disk", adapt=True)
            await s.commit(TEXT, wait_=True)

            def full(*args, **kwargs):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

            monkeypatch.setattr(profiles_module, "atomic_write", full)
            for attempt in (s.save_profile(), registry.close(s.id)):
                with pytest.raises(ApiError) as failed:
                    await attempt
                assert failed.value.status == 507 and "No space left" in failed.value.message
            assert registry.get(s.id) is s  # still open: nothing it learned is lost
            await s.commit(TEXT, wait_=True)
            monkeypatch.undo()
            assert (await registry.close(s.id))["saved"]
        finally:
            await registry.close_all(save=False)

    asyncio.run(run())
