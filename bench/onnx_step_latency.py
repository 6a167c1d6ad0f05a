"""One batched step of a model's ONNX exports, fp32 (model.onnx) against int8 (model.int8.onnx), timed
side by side (interleaved) in one process. Prints JSON.

    python bench/onnx_step_latency.py MODEL_DIR... [--batch 64] [--repeats 2000] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from dasher_rnn.lm.model_io import INT8_ONNX_FILE, ONNX_FILE, read_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dirs", nargs="+")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    rng = np.random.default_rng(0)
    out = {}
    for model_dir in map(Path, args.model_dirs):
        arch = read_config(model_dir)["architecture"]
        L, H, V = arch["layers"], arch["hidden_size"], arch["vocab_size"]
        sessions = {name: ort.InferenceSession(str(model_dir / f), options, providers=["CPUExecutionProvider"])
                    for name, f in (("fp32", ONNX_FILE), ("int8", INT8_ONNX_FILE)) if (model_dir / f).is_file()}
        feeds = {"symbols": rng.integers(0, V, args.batch).astype(np.int64),
                 "h": rng.standard_normal((L, args.batch, H)).astype(np.float32) * 0.1,
                 "c": rng.standard_normal((L, args.batch, H)).astype(np.float32) * 0.1}
        times: dict[str, list[float]] = {name: [] for name in sessions}
        for i in range(args.repeats + 50):
            for name, session in sessions.items():
                t0 = time.perf_counter()
                session.run(None, feeds)
                if i >= 50:
                    times[name].append((time.perf_counter() - t0) * 1000)
        out[f"{model_dir} ({arch['cell']} {L}x{H})"] = {
            name: {"p50_ms": round(float(np.percentile(t, 50)), 3), "p99_ms": round(float(np.percentile(t, 99)), 3)}
            for name, t in times.items()}
    print(json.dumps({"batch": args.batch, "repeats": args.repeats, "threads": args.threads, "steps": out}, indent=1))


if __name__ == "__main__":
    main()
