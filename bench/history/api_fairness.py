"""Does one big stateless request hold up everyone else? Prints JSON.

    python bench/history/api_fairness.py [--model-dir models/english-lstm] [--contexts 25] [--chars 9999]
    PYTHONPATH=/path/to/other/checkout python bench/history/api_fairness.py   # the same against other code

Starts `dasher-rnn serve` (the code on PYTHONPATH) in its own process on a free loopback port, with the
default backend (onnxruntime for the shipped model on a machine without a GPU), then:
- ``small_alone``: a 1-context ``/v1/predict`` on an idle server (median of 5, after a warm-up);
- ``big``: one ``/v1/predict`` of ``--contexts`` contexts of ``--chars`` characters each (text cut from
  the eval phrases, within every default limit: 25 x 9,999 characters is about 250 KB);
- ``small_behind_big``: a 1-context ``/v1/predict`` sent ``--delay`` seconds after the big one, while it runs.
Each reports its status and seconds. Extra arguments after ``--`` go to ``serve`` (e.g. ``-- --request-timeout 5``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from dasher_rnn.paths import DEFAULT_MODEL_DIR

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/
from api_bench import free_port, launch  # noqa: E402  (the API benchmark's own server start)

PHRASES = [root / "shared" / "corpora" / "eval" / "mackenzie_phrases.txt" for root in (Path(__file__).resolve().parents[2],
                                                                                       Path(__file__).resolve().parents[3])]


def start_server(model_dir: str, extra: list[str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [sys.executable, "-m", "dasher_rnn", "serve", "--port", str(port), "--model-dir", model_dir, *extra]
    return launch(cmd, port)


def texts(path: Path, count: int, chars: int) -> list[str]:
    lines = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    stream = " ".join(lines * (1 + count * chars // max(1, len(" ".join(lines)))))
    return [stream[i * 997 : i * 997 + chars] for i in range(count)]


def timed(url: str, contexts: list[str], out: dict, key: str) -> None:
    start = time.perf_counter()
    try:
        r = httpx.post(url + "/v1/predict", json={"contexts": contexts}, timeout=600)
        out[key] = {"status": r.status_code, "seconds": round(time.perf_counter() - start, 3),
                    **({"error": r.json()["error"]["code"]} if r.is_error else {})}
    except httpx.HTTPError as exc:
        out[key] = {"status": None, "seconds": round(time.perf_counter() - start, 3), "error": type(exc).__name__}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    ap.add_argument("--phrases", default=str(next((p for p in PHRASES if p.is_file()), PHRASES[0])))
    ap.add_argument("--contexts", type=int, default=25)
    ap.add_argument("--chars", type=int, default=9999)
    ap.add_argument("--delay", type=float, default=1.0)
    ap.add_argument("serve_args", nargs="*", help="after --: options of serve")
    args = ap.parse_args()
    big = texts(Path(args.phrases), args.contexts, args.chars)
    small = ["Hello, how are yo"]
    proc, url = start_server(args.model_dir, args.serve_args)
    result: dict = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                    "code": os.environ.get("PYTHONPATH", "this checkout"), "serve_args": args.serve_args,
                    "big_request": {"contexts": args.contexts, "chars_each": args.chars,
                                    "body_bytes": len(json.dumps({"contexts": big}))}}
    try:
        model = httpx.get(url + "/v1/model").json()
        result["backend"] = model["backend"]
        out: dict = {}
        timed(url, small, out, "warm_up")
        alone = []
        for _ in range(5):
            timed(url, small, out, "small")
            alone.append(out["small"]["seconds"])
        result["small_alone_s"] = sorted(alone)[2]
        worker = threading.Thread(target=timed, args=(url, big, out, "big"))
        worker.start()
        time.sleep(args.delay)
        timed(url, small, out, "small_behind_big")
        worker.join()
        result["big"], result["small_behind_big"] = out["big"], out["small_behind_big"]
        timed(url, small, out, "small_after")
        result["small_after"] = out["small_after"]
    finally:
        proc.terminate()
        proc.wait(30)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
