"""The API server's faults, bounded and on loopback only. Prints JSON. Under a minute.

    python bench/api_faults.py [--model-dir models/english-lstm] [--slow 1100] [--nofile 1024]

- ``slow_clients``: ``dasher-rnn serve`` in its own process with ``--nofile`` file descriptors (the usual 1,024), and
  ``--slow`` connections that send half a request and stop (more than the descriptors). Meanwhile another client
  asks for ``/v1/health`` every 0.1 s for ``--seconds``: its answers by status (503 is the clear refusal), how
  many of the slow connections the server closed (the read timeout, ``--read-timeout``, or to make room), and the
  server's log: bytes, lines, tracebacks, "out of system resource" lines;
- ``failing_save``: a server in this process (so that its disk can be made to fail) with a 1 s idle timeout; a
  session learns, then every save fails while it is idle: is it kept (GET, its notice), how often the save was
  tried, whether its profile is refused to another session, the threads; then saves work again: is it closed
  saved (the 404 it leaves, the characters on disk), is its profile let go (opened again), the threads after;
- ``deletes``: two DELETEs of one session at once (their answers and seconds) and a third after them; a DELETE
  sent while a long commit runs (is the commit in the saved profile).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import platform
import resource
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from dasher_rnn.paths import DEFAULT_MODEL_DIR

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from api_bench import free_port, launch  # noqa: E402  (the API benchmark's own helpers)

from tests.helpers import wait_until  # noqa: E402  (the one polling helper, shared with the tests)

TEXT = "I would like a cup of tea and a short walk after dinner. "


# -- slow clients ----------------------------------------------------------------------------------------------
def start_serve(model_dir: str, profiles: str, nofile: int, read_timeout: float, log_path: Path):
    port = free_port()
    cmd = [sys.executable, "-m", "dasher_rnn", "serve", "--port", str(port), "--model-dir", model_dir,
           "--profiles-dir", profiles, "--read-timeout", str(read_timeout)]

    def few_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    log = open(log_path, "wb")  # noqa: SIM115  (the server writes it until it stops)
    proc, _ = launch(cmd, port, stderr=log, preexec_fn=few_descriptors)
    return proc, port, log


def closed_by_server(sockets: list[socket.socket], wait: float) -> int:
    """How many of ``sockets`` the server has closed (end of file, after any answer), waiting up to ``wait`` s."""
    selector = selectors.DefaultSelector()
    for sock in sockets:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    closed = 0
    deadline = time.monotonic() + wait
    while closed < len(sockets) and time.monotonic() < deadline:
        for key, _ in selector.select(0.2):
            try:
                while data := key.fileobj.recv(65536):  # an answer (408, 503), then the end
                    del data
            except BlockingIOError:
                continue
            except OSError:
                pass
            selector.unregister(key.fileobj)
            closed += 1
    selector.close()
    return closed


def slow_clients(args) -> dict:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.slow + 512)), hard))
    with tempfile.TemporaryDirectory() as tmp:
        log_path = Path(tmp) / "serve.log"
        proc, port, log = start_serve(args.model_dir, tmp, args.nofile, args.read_timeout, log_path)
        held, refused_at_connect = [], 0
        try:
            for _ in range(args.slow):
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=5)
                    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and nothing more
                    held.append(s)
                except OSError:
                    refused_at_connect += 1
            answers: dict[str, int] = {}
            served_s: list[float] = []
            deadline = time.monotonic() + args.seconds
            while time.monotonic() < deadline:
                start = time.perf_counter()
                try:
                    status = str(httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=3).status_code)
                    if status == "200":
                        served_s.append(time.perf_counter() - start)
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                answers[status] = answers.get(status, 0) + 1
                time.sleep(0.1)
            closed = closed_by_server(held, args.read_timeout + 2)
        finally:
            for s in held:
                s.close()
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()
        text = log_path.read_bytes()
    served_s.sort()
    return {"descriptor_limit": args.nofile, "slow_connections": args.slow, "refused_at_connect": refused_at_connect,
            "other_client": {"answers": answers, "p50_ms": round(served_s[len(served_s) // 2] * 1e3, 1)
                             if served_s else None},
            "slow_closed_by_server": closed, "read_timeout_s": args.read_timeout,
            "log": {"bytes": len(text), "lines": text.count(b"\n"), "tracebacks": text.count(b"Traceback"),
                    "out_of_system_resource": text.count(b"out of system resource")}}


# -- failing saves and racing DELETEs, on a server in this process ---------------------------------------------
class Disk:
    """``atomic_write`` of the profiles, failing while ``full`` (counting the tries)."""

    def __init__(self) -> None:
        from dasher_rnn.adapt import profiles

        self.module, self.original, self.full, self.tries = profiles, profiles.atomic_write, False, 0
        profiles.atomic_write = self.write

    def write(self, *args, **kwargs):
        if self.full:
            self.tries += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self.original(*args, **kwargs)

    def restore(self) -> None:
        self.module.atomic_write = self.original


def failing_save(http: httpx.Client, registry, disk: Disk, profiles: Path) -> dict:
    from dasher_rnn.adapt.profiles import ProfileStore

    threads_before = threading.active_count()
    sid = http.post("/v1/sessions", json={"profile": "unsaved", "model": "hybrid"}).json()["session"]
    http.post(f"/v1/sessions/{sid}/commit", json={"text": TEXT * 4, "wait": True})
    threads_open = threading.active_count()
    disk.full = True
    wait_until(lambda: disk.tries >= 2, 10)  # the idle timeout passes twice, the save failing each time
    kept = http.get(f"/v1/sessions/{sid}")
    other = http.post("/v1/sessions", json={"profile": "unsaved"})
    disk.full = False
    expired = wait_until(lambda: sid in registry.lifetime.ended, 10)  # (a GET of it would use it, and it would not expire)
    gone = http.get(f"/v1/sessions/{sid}").json()["error"]
    saved = ProfileStore(profiles).load("unsaved").info.get("characters_adapted")
    wait_until(lambda: threading.active_count() <= threads_before, 5)
    threads_closed = threading.active_count()
    again = http.post("/v1/sessions", json={"profile": "unsaved", "model": "hybrid"})
    if again.status_code == 201:
        http.delete(f"/v1/sessions/{again.json()['session']}", params={"save": "false"})
    return {"failed_tries": disk.tries, "kept_while_failing": kept.status_code == 200,
            "notice": kept.json().get("notice") if kept.status_code == 200 else None,
            "profile_to_another_session": other.status_code, "closed_once_saved": expired,
            "after": {"code": gone["code"], "message": gone["message"]}, "characters_on_disk": saved,
            "characters_learned": len(TEXT * 4), "opened_again": again.status_code,
            "threads": {"before": threads_before, "open": threads_open, "after_close": threads_closed}}


def deletes(http: httpx.Client, url: str, profiles: Path) -> dict:
    from dasher_rnn.adapt.profiles import ProfileStore

    def delete(sid: str, out: list, i: int) -> None:
        start = time.perf_counter()
        r = httpx.delete(f"{url}/v1/sessions/{sid}", timeout=600)
        out[i] = {"status": r.status_code, "seconds": round(time.perf_counter() - start, 3),
                  **({"code": r.json()["error"]["code"]} if r.is_error else {"saved": r.json()["saved"]})}

    sid = http.post("/v1/sessions", json={"profile": "twice", "model": "hybrid"}).json()["session"]
    http.post(f"/v1/sessions/{sid}/commit", json={"text": TEXT * 4, "wait": True})
    out: list = [None, None, None]
    both = [threading.Thread(target=delete, args=(sid, out, i)) for i in range(2)]
    for t in both:
        t.start()
    for t in both:
        t.join()
    delete(sid, out, 2)

    sid = http.post("/v1/sessions", json={"profile": "racer", "model": "hybrid"}).json()["session"]
    long = (TEXT * 50)[:2_000]
    commit: dict = {}

    def run_commit() -> None:
        r = httpx.post(f"{url}/v1/sessions/{sid}/commit", json={"text": long, "wait": True}, timeout=600)
        commit["status"] = r.status_code

    worker = threading.Thread(target=run_commit)
    worker.start()
    time.sleep(0.05)  # the commit is running
    race: list = [None]
    delete(sid, race, 0)
    worker.join()
    on_disk = ProfileStore(profiles).load("racer").info.get("characters_adapted")
    return {"two_at_once": out[:2], "third": out[2],
            "during_commit": {"delete": race[0], "commit_status": commit.get("status"),
                              "characters_committed": len(long), "characters_on_disk": on_disk}}


def in_process(args) -> dict:
    from dasher_rnn.api.limits import Limits
    from dasher_rnn.api.server import BackgroundServer, ServerConfig

    disk = Disk()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            config = ServerConfig(args.model_dir, port=0, profiles_dir=tmp, limits=Limits(idle_timeout_s=1.0))
            with BackgroundServer(config) as srv, httpx.Client(base_url=srv.url, timeout=600) as http:
                registry = srv.server.config.app.state.registry
                return {"failing_save": failing_save(http, registry, disk, Path(tmp)),
                        "deletes": deletes(http, srv.url, Path(tmp))}
    finally:
        disk.restore()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    ap.add_argument("--slow", type=int, default=1100, help="slow connections")
    ap.add_argument("--nofile", type=int, default=1024, help="the server's file-descriptor limit")
    ap.add_argument("--read-timeout", type=float, default=3.0, help="the server's --read-timeout")
    ap.add_argument("--seconds", type=float, default=8.0, help="how long the other client asks")
    args = ap.parse_args()
    start = time.monotonic()
    out = {"slow_clients": slow_clients(args), **in_process(args)}
    out["seconds"] = round(time.monotonic() - start, 1)
    out["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version()}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
