"""Issue 48's secrets: an input token never shown in the status bar or the log, and tokens given without the command
line (where every local user can read them in /proc/PID/cmdline): a file, or an environment variable."""

from __future__ import annotations

import logging
import socket

import pytest

from dasher_rnn.cli import main
from dasher_rnn.input.dasher_socket import DasherSocketSource
from dasher_rnn.input.gaze_udp import GazeUDPSource
from tests.helpers import wait_until

TOKEN = "Sup3r-s3cret.input"


@pytest.mark.parametrize("datagram", [
    b'{"token": "%s", "valid": true}' % TOKEN.encode(),  # a bridge's datagram without x/y: shown until now
    b'{"x": 0.5, "y": "high", "token": "%s"}' % TOKEN.encode(),
])
def test_a_bad_gaze_datagram_is_shown_without_its_input_token(datagram, caplog):
    source = GazeUDPSource(port=0, token=TOKEN)
    try:
        with caplog.at_level(logging.WARNING), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            sender.sendto(datagram, ("127.0.0.1", source.port))
            assert wait_until(lambda: source.rejected == 1)
        shown = [source.last_problem or "", source.problems(), caplog.text]
        assert source.last_problem and all(TOKEN not in text for text in shown), shown
        assert TOKEN[:6] not in source.last_problem  # not even its start
    finally:
        source.close()


def test_a_bad_socket_line_is_shown_without_the_input_token(caplog):
    source = DasherSocketSource(port=0, x_label="t", token=TOKEN)  # a label that a token line would start with
    try:
        with caplog.at_level(logging.WARNING), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            sender.sendto(b"token %s\ntx\n" % TOKEN.encode(), ("127.0.0.1", source.port))
            assert wait_until(lambda: source.rejected == 1)
        assert TOKEN not in (source.last_problem or "") + source.problems() + caplog.text
    finally:
        source.close()


def test_hide_tokens_hides_json_values_token_lines_and_the_token_set():
    from dasher_rnn.input.udp import hide_tokens

    assert hide_tokens('\'{"token": "abc", "x": 1}\'') == '\'{"token": "(hidden)", "x": 1}\''
    assert hide_tokens('{"TOKEN" : "ab\\"c') == '{"TOKEN" : "(hidden)'  # cut short, an escaped quote inside
    assert hide_tokens("'token abc'") == "'token (hidden)"
    assert hide_tokens("x=abc;", b"abc") == "x=(hidden);"
    assert hide_tokens("nothing here") == "nothing here"


# -- tokens from a file or the environment --------------------------------------------------------------------
@pytest.fixture
def served(monkeypatch):
    """``dasher-rnn serve``'s ServerConfig, captured instead of serving."""
    import dasher_rnn.api.server as server

    configs = []
    monkeypatch.setattr(server, "run_server", lambda config, ready=None: configs.append(config))
    monkeypatch.setattr("dasher_rnn.extras.set_torch_threads", lambda *args, **kwargs: None)
    monkeypatch.delenv("DASHER_RNN_TOKEN", raising=False)
    return configs


def test_serve_takes_its_token_from_a_file_or_the_environment_and_warns_of_one_on_the_command_line(
        served, tmp_path, monkeypatch, capsys):
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n", encoding="utf-8")
    secret.chmod(0o600)
    assert main(["serve", "--token-file", str(secret), "--port", "0"]) == 0
    assert served[-1].token == TOKEN and capsys.readouterr().err == ""
    monkeypatch.setenv("DASHER_RNN_TOKEN", TOKEN + "-env")
    assert main(["serve", "--port", "0"]) == 0 and served[-1].token == TOKEN + "-env"
    assert capsys.readouterr().err == ""
    assert main(["serve", "--token", TOKEN, "--port", "0"]) == 0 and served[-1].token == TOKEN
    assert "process list" in capsys.readouterr().err  # said, still taken
    secret.chmod(0o644)
    assert main(["serve", "--token-file", str(secret), "--port", "0"]) == 0
    assert "chmod 600" in capsys.readouterr().err
    for bad in ([str(tmp_path / "missing")], [str(tmp_path)], ["/dev/null"]):
        with pytest.raises(SystemExit):
            main(["serve", "--token-file", *bad])
        assert "token" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["serve", "--token-file", str(secret), "--token", TOKEN])


def test_the_app_takes_its_input_token_from_a_file_or_the_environment(monkeypatch, tmp_path, capsys):
    import dasher_rnn.ui.app as app

    calls = []
    monkeypatch.setattr(app, "run_app", lambda *args, **kwargs: calls.append(kwargs) or 0)
    monkeypatch.setattr("dasher_rnn.ui.preflight.app_problem", lambda: None)
    monkeypatch.delenv("DASHER_RNN_INPUT_TOKEN", raising=False)
    secret = tmp_path / "input-token"
    secret.write_text(TOKEN + "\n", encoding="utf-8")
    secret.chmod(0o600)
    assert main(["app", "--input-token-file", str(secret)]) == 0
    assert calls[-1]["prefs_overrides"] == {"input_token": TOKEN} and capsys.readouterr().err == ""
    monkeypatch.setenv("DASHER_RNN_INPUT_TOKEN", TOKEN + "-env")
    assert main(["app"]) == 0 and calls[-1]["prefs_overrides"] == {"input_token": TOKEN + "-env"}
    assert main(["app", "--input-token", "k3y"]) == 0 and calls[-1]["prefs_overrides"] == {"input_token": "k3y"}
    assert "process list" in capsys.readouterr().err
    secret.write_text("two words\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["app", "--input-token-file", str(secret)])
    assert "without spaces" in capsys.readouterr().err


def test_a_websockets_query_token_never_reaches_the_servers_log(tiny_model_dir, tmp_path):
    """uvicorn logs each WebSocket's path with its query at level info: ``?token=`` (a browser's way) is hidden."""
    from websockets.sync.client import connect

    from dasher_rnn.api.server import BackgroundServer, ServerConfig

    token = "a-serve-token-of-16-chars"
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())
    logger = logging.getLogger("uvicorn.error")
    config = ServerConfig(tiny_model_dir, port=0, profiles_dir=tmp_path, token=token, log_level="info")
    with BackgroundServer(config) as srv:
        logger.addHandler(handler)
        try:
            import httpx

            sid = httpx.post(srv.url + "/v1/sessions", json={"adapt": False, "model": "rnn"},
                             headers={"Authorization": f"Bearer {token}"}).json()["session"]
            url = srv.url.replace("http://", "ws://") + f"/v1/sessions/{sid}/ws?token={token}"
            with connect(url, open_timeout=20) as ws:
                ws.send('{"id": 1, "op": "info"}')
                assert '"id":1' in ws.recv(20)
        finally:
            logger.removeHandler(handler)
    assert any("WebSocket" in r and "token=(hidden)" in r for r in records), records
    assert not any(token in r for r in records), records
