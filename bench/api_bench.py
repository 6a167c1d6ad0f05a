"""Predictor API speed on loopback. Prints JSON.

    python bench/api_bench.py [--model-dir models/english-lstm] [--clients 50] [--requests 200]
    python bench/api_bench.py --model hybrid --ppm-train ../shared/corpora/dasher/training_english_GB.txt

Starts `dasher-rnn serve` in its own process on a free loopback port, then:
- predict (one client on a kept-alive connection, after a warm-up): the stateless `/v1/predict` of one
  context text (a 50-character sentence with 2 fresh letters at its end, read from the start each time),
  and, in this process, a Writer of the same model and backend answering the same texts (root, request,
  release): the difference is what HTTP costs;
- latency (one client, one request at a time, after a warm-up): a distributions request for 1 fresh
  context and for 64 fresh contexts (children not yet expanded, so each needs the model), over HTTP
  and for 1 context over the WebSocket; creating and releasing the contexts is not timed;
- load: ``--clients`` concurrent clients (own connection each, spread over ``--sessions`` sessions)
  each make ``--requests`` requests, cycling: create a fresh child with its distribution, ask for its
  distribution again, release it. Any non-2xx answer or failure counts as an error.
Sessions adapt (torch backend), as a frontend's would; nothing is committed, so weights stay fixed.

    python bench/api_bench.py --model hybrid --bursts 4 --ws-clients 20

runs instead what issue 48 asked of ``serve`` (nothing of the above):
- memory: the server's resident memory (VmRSS) once started, then after each of ``--bursts`` bursts of
  ``--burst-sessions`` sessions (each: a root, 10 children with distributions, a commit of 171 characters with
  wait, a WebSocket with 3 calls, then closed), every session closed;
- WebSockets beside HTTP: ``--ws-clients`` WebSocket clients and as many HTTP clients at once for
  ``--ws-seconds``, spread over ``--sessions`` sessions, each cycling as ``load`` does; the p50/p99 of each, their
  errors, the server's memory before, at the end and once those sessions closed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from dasher_rnn.api.client import DasherClient
from dasher_rnn.paths import DEFAULT_MODEL_DIR

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(args, profiles: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    most = max(args.sessions, getattr(args, "burst_sessions", 0) if getattr(args, "bursts", 0) else 0)
    cmd = [sys.executable, "-m", "dasher_rnn", "serve", "--port", str(port), "--model-dir", args.model_dir,
           "--profiles-dir", profiles, "--threads", str(args.threads), "--max-sessions", str(most + 1)]
    for path in args.ppm_train:
        cmd += ["--ppm-train", path]
    return launch(cmd, port)


def launch(cmd: list[str], port: int, **popen) -> tuple[subprocess.Popen, str]:
    """Start ``dasher-rnn serve`` (``cmd``, with ``popen``'s further Popen arguments) and wait until it answers on
    ``port``; (process, base URL)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, **popen)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            if httpx.get(url + "/v1/health", timeout=1).json()["status"] == "ok":
                return proc, url
        except (httpx.HTTPError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    proc.terminate()
    raise SystemExit("the server did not start")


def stats(seconds: list[float]) -> dict:
    t = np.array(seconds) * 1e3
    return {"n": len(t), "p50_ms": round(float(np.percentile(t, 50)), 2), "p99_ms": round(float(np.percentile(t, 99)), 2),
            "mean_ms": round(float(t.mean()), 2)}


def fresh_symbols(rng: np.random.Generator) -> str:
    return "".join(rng.choice(list(LETTERS), 2))


PREDICT_TEXT = "Hello, how are you today? I was wondering whether"


def predict_latency(url: str, model_dir: str, threads: int, repeats: int, rng: np.random.Generator) -> dict:
    """One-context ``/v1/predict`` over a kept-alive connection, and the in-process Writer for the same texts."""
    from dasher_rnn.adapt.compose import WriterConfig, build_writer

    texts = [PREDICT_TEXT + fresh_symbols(rng) for _ in range(repeats + 10)]
    http, local = [], []
    with DasherClient(url) as client:
        for i, text in enumerate(texts):
            start = time.perf_counter()
            client.predict([text])
            if i >= 10:
                http.append(time.perf_counter() - start)
    writer = build_writer(WriterConfig(model="rnn", model_dir=model_dir, adapt=False, threads=threads))
    try:
        for i, text in enumerate(texts):
            start = time.perf_counter()
            root = writer.root(text)
            writer.request([root]).result()
            writer.release(root)
            if i >= 10:
                local.append(time.perf_counter() - start)
    finally:
        writer.close(save=False)
    return {"in_process_predict": stats(local), "http_predict_1_context": stats(http)}


def latency(url: str, repeats: int, big_repeats: int, rng: np.random.Generator, model: str) -> dict:
    """Each timed request asks for children (one model step each) of a parent whose state is ready."""
    with DasherClient(url) as client:
        symbols = client.symbols
        session = client.open_session(adapt=True, model=model)
        root = session.root("Hello, how are you today? I was wondering whether")

        def parent() -> int:
            handle, _ = session.contexts([{"parent": root, "symbols": fresh_symbols(rng)}], format="counts")
            return handle[0]

        single, big, ws_single = [], [], []
        for i in range(repeats + 10):
            p = parent()
            h = session.child(p, symbols[int(rng.integers(len(symbols)))])
            start = time.perf_counter()
            session.distributions([h])
            if i >= 10:
                single.append(time.perf_counter() - start)
            session.release(p)
        for i in range(big_repeats + 3):
            p = parent()
            handles, _ = session.contexts([{"parent": p, "symbols": ch} for ch in symbols[:64]])
            start = time.perf_counter()
            session.distributions(handles)
            if i >= 3:
                big.append(time.perf_counter() - start)
            session.release(p)
        with session.websocket() as ws:
            for i in range(repeats + 10):
                p = ws.call("context", parent=root, symbols=fresh_symbols(rng), format="counts")["handle"]
                h = ws.call("context", parent=p, symbols=symbols[int(rng.integers(len(symbols)))])["handle"]
                start = time.perf_counter()
                ws.call("distributions", contexts=[h])
                if i >= 10:
                    ws_single.append(time.perf_counter() - start)
                ws.call("release", context=p)
        session.close(save=False)
    return {"http_1_context": stats(single), "http_64_contexts": stats(big), "websocket_1_context": stats(ws_single)}


async def load(url: str, clients: int, requests: int, sessions: int, model: str) -> dict:
    async with httpx.AsyncClient(base_url=url, timeout=120) as setup:
        sids = []
        for _ in range(sessions):
            r = await setup.post("/v1/sessions", json={"adapt": True, "model": model})
            r.raise_for_status()
            sids.append(r.json()["session"])
    errors: list[str] = []
    times: list[float] = []

    async def one_client(k: int) -> None:
        rng = np.random.default_rng(k)
        sid = sids[k % len(sids)]
        base = f"/v1/sessions/{sid}"
        async with httpx.AsyncClient(base_url=url, timeout=120) as http:
            r = await http.post(base + "/contexts", json={"text": f"Client {k} says: I"})
            root = r.json()["handle"]
            handle = None
            for i in range(requests):
                start = time.perf_counter()
                try:
                    step = i % 3
                    if step == 0:
                        r = await http.post(base + "/contexts", json={"parent": root, "symbols": fresh_symbols(rng),
                                                                      "format": "counts"})
                        if r.status_code == 201:
                            handle = r.json()["handle"]
                    elif step == 1:
                        r = await http.post(base + "/distributions", json={"contexts": [handle]})
                    else:
                        r = await http.delete(f"{base}/contexts/{handle}")
                    if not r.is_success:
                        errors.append(f"{r.status_code} {r.text[:200]}")
                except httpx.HTTPError as exc:
                    errors.append(repr(exc))
                times.append(time.perf_counter() - start)

    start = time.perf_counter()
    await asyncio.gather(*(one_client(k) for k in range(clients)))
    wall = time.perf_counter() - start
    async with httpx.AsyncClient(base_url=url, timeout=120) as setup:
        for sid in sids:
            await setup.delete(f"/v1/sessions/{sid}", params={"save": "false"})
    return {"clients": clients, "requests_per_client": requests, "sessions": sessions, "requests": len(times),
            "errors": len(errors), "first_errors": errors[:5], "wall_s": round(wall, 2),
            "requests_per_s": round(len(times) / wall, 1), "latency_under_load": stats(times)}


def rss_mb(pid: int) -> float:
    """The resident memory of process ``pid`` in MB (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


BURST_TEXT = "I would like a cup of tea and a short walk after dinner. " * 3  # 171 characters


async def burst(url: str, sessions: int, model: str) -> float:
    """Open ``sessions`` sessions, use each (contexts, a commit with wait, a WebSocket), close them; seconds taken."""
    from websockets.asyncio.client import connect

    start = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=600) as http:
        sids = []
        for _ in range(sessions):
            r = await http.post("/v1/sessions", json={"adapt": True, "model": model})
            r.raise_for_status()
            sids.append(r.json()["session"])

        async def use(sid: str) -> None:
            base = f"/v1/sessions/{sid}"
            root = (await http.post(base + "/contexts", json={"text": "Hello there, "})).json()["handle"]
            for i in range(10):
                await http.post(base + "/contexts", json={"parent": root, "symbols": LETTERS[i], "format": "counts"})
            (await http.post(base + "/commit", json={"text": BURST_TEXT, "wait": True})).raise_for_status()
            async with connect(url.replace("http://", "ws://") + base + "/ws", max_size=None) as ws:
                for i, op in enumerate(({"op": "context", "parent": root, "symbols": "xy", "format": "counts"},
                                        {"op": "info"}, {"op": "release", "context": root})):
                    await ws.send(json.dumps({"id": i, **op}))
                    await ws.recv()

        await asyncio.gather(*(use(sid) for sid in sids))
        for sid in sids:
            await http.delete(f"/v1/sessions/{sid}", params={"save": "false"})
    return time.perf_counter() - start


async def websockets_beside_http(url: str, clients: int, seconds: float, sessions: int, model: str) -> dict:
    """``clients`` WebSocket clients and ``clients`` HTTP clients at once for ``seconds``, cycling as ``load`` does."""
    from websockets.asyncio.client import connect

    async with httpx.AsyncClient(base_url=url, timeout=120) as setup:
        sids = []
        for _ in range(sessions):
            r = await setup.post("/v1/sessions", json={"adapt": True, "model": model})
            r.raise_for_status()
            sids.append(r.json()["session"])
    times: dict[str, list[float]] = {"websocket": [], "http": []}
    errors: dict[str, list[str]] = {"websocket": [], "http": []}
    deadline = time.monotonic() + seconds

    async def ws_client(k: int) -> None:
        rng = np.random.default_rng(1000 + k)
        sid = sids[k % len(sids)]
        try:
            async with connect(url.replace("http://", "ws://") + f"/v1/sessions/{sid}/ws", max_size=None) as ws:
                async def call(rid: int, **fields) -> dict:
                    await ws.send(json.dumps({"id": rid, **fields}))
                    return json.loads(await ws.recv())

                root = (await call(0, op="context", text=f"Client {k} says: I"))["result"]["handle"]
                i, handle = 0, None
                while time.monotonic() < deadline:
                    step = i % 3
                    start = time.perf_counter()
                    if step == 0:
                        reply = await call(i, op="context", parent=root, symbols=fresh_symbols(rng), format="counts")
                        handle = reply.get("result", {}).get("handle")
                    elif step == 1:
                        reply = await call(i, op="distributions", contexts=[handle])
                    else:
                        reply = await call(i, op="release", context=handle)
                    times["websocket"].append(time.perf_counter() - start)
                    if "error" in reply:
                        errors["websocket"].append(json.dumps(reply)[:200])
                    i += 1
        except Exception as exc:  # a closed or refused WebSocket: counted
            errors["websocket"].append(repr(exc)[:200])

    async def http_client(k: int) -> None:
        rng = np.random.default_rng(2000 + k)
        base = f"/v1/sessions/{sids[k % len(sids)]}"
        async with httpx.AsyncClient(base_url=url, timeout=120) as http:
            root = (await http.post(base + "/contexts", json={"text": f"Client {k} says: I"})).json()["handle"]
            i, handle = 0, None
            while time.monotonic() < deadline:
                step = i % 3
                start = time.perf_counter()
                try:
                    if step == 0:
                        r = await http.post(base + "/contexts", json={"parent": root, "symbols": fresh_symbols(rng),
                                                                      "format": "counts"})
                        handle = r.json().get("handle") if r.status_code == 201 else None
                    elif step == 1:
                        r = await http.post(base + "/distributions", json={"contexts": [handle]})
                    else:
                        r = await http.delete(f"{base}/contexts/{handle}")
                    if not r.is_success:
                        errors["http"].append(f"{r.status_code} {r.text[:200]}")
                except httpx.HTTPError as exc:
                    errors["http"].append(repr(exc)[:200])
                times["http"].append(time.perf_counter() - start)
                i += 1

    await asyncio.gather(*(ws_client(k) for k in range(clients)), *(http_client(k) for k in range(clients)))
    async with httpx.AsyncClient(base_url=url, timeout=120) as setup:
        for sid in sids:
            await setup.delete(f"/v1/sessions/{sid}", params={"save": "false"})
    return {kind: {**stats(times[kind]), "errors": len(errors[kind]), "first_errors": errors[kind][:3],
                   "requests_per_s": round(len(times[kind]) / seconds, 1)} for kind in times}


def serve_checks(args) -> dict:
    """Issue 48's ``serve`` figures: memory over bursts of sessions, and WebSockets beside HTTP (the module's
    docstring)."""
    with tempfile.TemporaryDirectory() as profiles:
        proc, url = start_server(args, profiles)
        try:
            time.sleep(2)
            memory = {"start_mb": rss_mb(proc.pid), "after_bursts_mb": [], "burst_s": []}
            for _ in range(args.bursts):
                memory["burst_s"].append(round(asyncio.run(burst(url, args.burst_sessions, args.model)), 1))
                time.sleep(2)  # the closes' trims
                memory["after_bursts_mb"].append(rss_mb(proc.pid))
            memory["last_over_start"] = round(memory["after_bursts_mb"][-1] / memory["start_mb"], 2) \
                if memory["after_bursts_mb"] else None
            before = rss_mb(proc.pid)
            beside = asyncio.run(websockets_beside_http(url, args.ws_clients, args.ws_seconds, args.sessions,
                                                        args.model))
            at_end = rss_mb(proc.pid)
            time.sleep(2)
            beside["memory_mb"] = {"before": before, "at_end": at_end, "sessions_closed": rss_mb(proc.pid)}
        finally:
            proc.terminate()
            proc.wait(60)
    return {"bursts": args.bursts, "burst_sessions": args.burst_sessions, "memory": memory,
            "ws_clients": args.ws_clients, "http_clients": args.ws_clients, "ws_seconds": args.ws_seconds,
            "sessions": args.sessions, "beside": beside}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=4, help="sessions the concurrent clients share")
    parser.add_argument("--repeats", type=int, default=300, help="timed 1-context requests")
    parser.add_argument("--big-repeats", type=int, default=100, help="timed 64-context requests")
    parser.add_argument("--threads", type=int, default=1, help="the server's predictor threads")
    parser.add_argument("--model", default="rnn", choices=["rnn", "hybrid"], help="the sessions' model")
    parser.add_argument("--ppm-train", action="append", default=[], help="the hybrid's PPM training text")
    parser.add_argument("--bursts", type=int, default=0, help="issue 48's serve checks instead: bursts of sessions")
    parser.add_argument("--burst-sessions", type=int, default=20, help="sessions in each burst")
    parser.add_argument("--ws-clients", type=int, default=20, help="WebSocket clients (and as many HTTP clients)")
    parser.add_argument("--ws-seconds", type=float, default=60.0, help="how long they run")
    args = parser.parse_args()
    if not Path(args.model_dir).is_dir():
        raise SystemExit(f"no model at {args.model_dir}")
    if args.bursts:
        report = {"machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                              "python": platform.python_version()},
                  "load_average_before": [round(x, 2) for x in os.getloadavg()],
                  "model_dir": args.model_dir, "model": args.model, **serve_checks(args)}
        print(json.dumps(report, indent=1))
        return
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as profiles:
        proc, url = start_server(args, profiles)
        try:
            report = {
                "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                            "python": platform.python_version()},
                "model_dir": args.model_dir, "model": args.model, "ppm_train": args.ppm_train,
                "server_threads": args.threads,
                "latency": {**predict_latency(url, args.model_dir, args.threads, args.repeats, rng),
                            **latency(url, args.repeats, args.big_repeats, rng, args.model)},
                "load": asyncio.run(load(url, args.clients, args.requests, args.sessions, args.model)),
            }
        finally:
            proc.terminate()  # SIGTERM: a graceful shutdown
            proc.wait(60)
    lat = report["latency"]
    report["single_context_p99_ok"] = lat["http_1_context"]["p99_ms"] <= 50.0
    report["predict_over_in_process_p50"] = round(lat["http_predict_1_context"]["p50_ms"]
                                                  / lat["in_process_predict"]["p50_ms"], 2)
    report["load_without_errors"] = report["load"]["errors"] == 0
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
