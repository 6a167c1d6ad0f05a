"""CUDA figures: the predictor's 1-, 64- and 512-node expansions on torch CUDA against torch and onnxruntime (int8)
on the CPU, and a dynamic-evaluation update with its rollbacks on the CPU and on CUDA. Prints one JSON object (and
writes it to ``--out``, also after each part, so that a run cut short leaves what it measured).

    python3 bench/cuda_bench.py [--out cuda.json] [--repeats 50] [--threads 1,4] [--device auto|cpu|cuda]

Runs from the source tree without dasher_rnn installed (the repository root goes on sys.path) and imports nothing
beyond torch, numpy, safetensors, onnxruntime and the standard library. Without a GPU (or with ``--device cpu``) it
measures the CPU parts and says ``"cuda": "not available"`` (or ``"skipped"``).

Predictor (``predictor``): ``PredictorService.distributions`` of N fresh nodes (children not yet expanded, spread
over the root "Hello, how are you" and 8 of its children: depths 1 and 2, one batched step per depth), request ->
result, exactly as bench/predictor_bench.py measures it (its ``measure``: 5 warm-ups, then ``--repeats``). Backends:
``cuda`` (torch on the GPU: the written-out LSTM step, float32), ``torch`` (the same on the CPU) and ``onnx``
(onnxruntime on the CPU over the model's int8 export); the CPU ones at each of ``--threads``.

Adaptation (``adaptation``): the torch engine (``adapt/dynamic_eval.py``, rule ``--rule``, segment 20, the guard
never firing by itself) on each device. ``update_ms``: the commit that completes a segment, as the writing session
runs it (checkpoint, the segment under the base weights for the guard, forward and backward under the adapted
weights, the step). ``rollback_ms``: deleting the segment's last character straight after (``delete_to``, the
writing session's undo), which restores the checkpoint from before that update; the character is then committed
again, which repeats the update. ``guard_rollback_ms``: the explosion guard's rollback alone (``_guard``, what an
update runs when the guard fires) after ``window`` + 1 clean updates: the checkpoint from before the window is
restored and the state carried over the ``window`` segments not learned from. Medians and 99th percentiles of
``--repeats`` after 3 warm-ups; on CUDA every timing is bracketed by ``torch.cuda.synchronize()``.
``agreement``: both devices see the same symbols; the adapted weights after all those updates, CUDA against the CPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from the source tree: dasher_rnn need not be installed
    sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402  (after the path, which dasher_rnn's imports need)
import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from types import ModuleType  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from dasher_rnn.adapt.dynamic_eval import DynamicEvaluator  # noqa: E402
from dasher_rnn.adapt.evaluation import AdaptConfig, default_eta  # noqa: E402
from dasher_rnn.lm.model_io import ModelFolder, open_model  # noqa: E402
from dasher_rnn.normalise import normalise  # noqa: E402
from dasher_rnn.paths import DEFAULT_MODEL_DIR  # noqa: E402
from dasher_rnn.predictor import PredictorService  # noqa: E402

BATCHES = (1, 64, 512)
WARMUP = 3  # adaptation rounds left out of the figures
TOLERANCE = 1e-3  # CUDA's adapted weights against the CPU's


def _bench(name: str) -> ModuleType:
    """Another script of bench/, loaded by its path (bench/ is no package): predictor_bench for its ``measure``,
    adaptation_update_time for its ``TEXT``."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stats(seconds: list[float]) -> dict[str, float]:
    t = np.array(seconds) * 1e3
    return {"p50_ms": round(float(np.median(t)), 3), "p99_ms": round(float(np.percentile(t, 99)), 3),
            "min_ms": round(float(t.min()), 3)}


def _max_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """The largest absolute difference between two sets of weights of the same names (on the CPU)."""
    return max(float((a[n] - w).abs().max()) for n, w in b.items())


def _error(exc: BaseException) -> dict[str, str]:
    return {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=6)}


def machine(cuda: bool) -> dict[str, Any]:
    import onnxruntime

    info: dict[str, Any] = {
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
        "torch": torch.__version__, "torch_cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if cuda else None,
        "onnxruntime": onnxruntime.__version__, "numpy": np.__version__, "python": platform.python_version(),
        "cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(), "platform": platform.platform(),
    }
    if cuda:
        props = torch.cuda.get_device_properties(0)
        info.update(gpu_memory_gib=round(props.total_memory / 2**30, 1), gpu_capability=f"{props.major}.{props.minor}",
                    matmul_allow_tf32=torch.backends.cuda.matmul.allow_tf32,
                    cudnn_allow_tf32=torch.backends.cudnn.allow_tf32)
    return info


# -- the predictor ----------------------------------------------------------------------------------------------
def predictor_run(model_dir: Path, backend: str, threads: int, repeats: int, measure: Callable) -> dict[str, Any]:
    """``measure`` (predictor_bench's) for each of BATCHES on one backend; a fresh service and the same seed."""
    torch.set_num_threads(threads)  # torch's own (the torch backends set it too); onnxruntime takes its own
    rng = np.random.default_rng(0)
    with PredictorService.from_dir(model_dir, backend=backend, threads=threads, budget=4096) as svc:
        if len(svc.alphabet) * 9 - 8 < max(BATCHES) * 3 // 2:  # room among the children of measure's 9 parents
            raise ValueError(f"alphabet of {len(svc.alphabet)} symbols: too few children for {max(BATCHES)} nodes")
        served_by = svc.tree.backend.name
        rows = [measure(svc, b, repeats, rng) for b in BATCHES]
    return {"backend": backend, "served_by": served_by, "threads": threads, "batches": rows}


def predictor(out: dict[str, Any], model_dir: Path, cuda: bool | str, threads: list[int], repeats: int,
              save: Callable[[], None]) -> None:
    """Fills ``out`` (saved after each run)."""
    measure = _bench("predictor_bench").measure
    out.update(batches=list(BATCHES), runs={})
    plan = ([("cuda", threads[0])] if cuda is True else []) + \
        [(b, t) for t in threads for b in ("torch", "onnx")]
    if cuda is not True:
        out["runs"]["cuda"] = cuda  # "not available" or "skipped"
    for backend, t in plan:
        key = backend if backend == "cuda" else f"{backend}@{t}"
        start = time.perf_counter()
        try:
            out["runs"][key] = predictor_run(model_dir, backend, t, repeats, measure)
        except Exception as exc:  # keep going: one failing backend must not cost the others' figures
            out["runs"][key] = _error(exc)
        if isinstance(out["runs"][key], dict):
            out["runs"][key]["seconds"] = round(time.perf_counter() - start, 1)
        save()
    out["cuda_speedup"] = speedups(out["runs"])


def speedups(runs: dict[str, Any]) -> dict[str, dict[str, float]]:
    """nodes/s on CUDA over each CPU run's, per batch."""
    cuda = runs.get("cuda")
    if not isinstance(cuda, dict) or "batches" not in cuda:
        return {}
    gpu = {r["batch"]: r["nodes_per_s"] for r in cuda["batches"]}
    return {f"over_{key}": {str(r["batch"]): round(gpu[r["batch"]] / r["nodes_per_s"], 2) for r in run["batches"]}
            for key, run in runs.items() if key != "cuda" and isinstance(run, dict) and "batches" in run}


# -- adaptation -------------------------------------------------------------------------------------------------
def _evaluator(folder: ModelFolder, device: str, config: AdaptConfig) -> DynamicEvaluator:
    net = folder.network(device)
    return DynamicEvaluator(net, config, folder.alphabet.index("\n"), folder.msg(net) if config.rule != "sgd" else None)


def adaptation_run(folder: ModelFolder, device: str, config: AdaptConfig, symbols: list[int],
                   repeats: int) -> tuple[dict[str, Any], dict[str, torch.Tensor], float]:
    """Update, undo rollback and guard rollback timings on ``device``; also the adapted weights at the end (on the
    CPU) and the bits of every adapted segment before its update."""
    cuda = device == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
        sync()
        start = time.perf_counter()
        result = fn()
        sync()
        return time.perf_counter() - start, result

    if cuda:
        torch.cuda.reset_peak_memory_stats()
    segment = config.segment

    def chunk_at(i: int) -> list[int]:  # the text's i-th segment, round and round
        return symbols[(i * segment) % (len(symbols) - segment):][:segment]

    ev = _evaluator(folder, device, config)
    update, rollback, exact = [], [], True
    for i in range(repeats + WARMUP):
        chunk = chunk_at(i)
        for s in chunk[:-1]:
            if ev.commit(s):
                raise AssertionError("an update before the segment was complete")
        before = ev.adapted_weights()
        seconds, ran = timed(lambda s=chunk[-1]: ev.commit(s))
        if not ran:
            raise AssertionError("the segment's last character ran no update")
        undo, _ = timed(lambda: ev.delete_to(len(ev.committed) - 1))
        after = ev.adapted_weights()
        exact = exact and all(torch.equal(before[n], after[n]) for n in before)
        if not ev.commit(chunk[-1]):  # entered again: the same update again
            raise AssertionError("committing the character again ran no update")
        if i >= WARMUP:
            update.append(seconds)
            rollback.append(undo)
    weights = {n: w.cpu() for n, w in ev.adapted_weights().items()}
    result: dict[str, Any] = {"torch_threads": torch.get_num_threads(), "update_ms": _stats(update),
                              "rollback_ms": _stats(rollback), "rollback_restores_exactly": exact,
                              "updates": ev.stats.updates, "rollbacks": ev.stats.rollbacks,
                              "guard_events": ev.stats.guard_events}  # 0 unless a gradient spiked

    guard = _evaluator(folder, device, config)
    guard_times, at, to_base = [], 0, 0
    for i in range(repeats + WARMUP):
        for _ in range(config.window + 1):  # clean updates: the window is full, the checkpoints there
            for s in chunk_at(at):
                guard.commit(s)
            at += 1
        seconds, _ = timed(lambda: guard._guard("cuda_bench: a forced rollback"))
        to_base += not isinstance(guard.stats.events[-1]["rolled_back_to"], int)
        if i >= WARMUP:
            guard_times.append(seconds)
    result["guard_rollback_ms"] = _stats(guard_times)
    result["guard_rollbacks"] = guard.stats.guard_events
    result["guard_fell_back_to_base"] = to_base  # 0 unless a gradient spiked: every rollback restored a checkpoint
    result["guard_carried_symbols"] = config.window * segment
    if cuda:
        result["peak_gpu_memory_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return result, weights, ev.stats.adapted_bits


def fp32_agreement(folder: ModelFolder, config: AdaptConfig, symbols: list[int], segments: int) -> dict[str, Any]:
    """The adapted weights after ``segments`` updates on CUDA without TF32 (cuDNN's RNNs may use it by default on
    Ampere and later) against the CPU's."""
    flags = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        weights, bits = {}, {}
        for device in ("cpu", "cuda"):
            ev = _evaluator(folder, device, config)
            for s in symbols[: segments * config.segment]:
                ev.commit(s)
            weights[device] = {n: w.cpu() for n, w in ev.adapted_weights().items()}
            bits[device] = ev.stats.adapted_bits
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags
    diff = _max_difference(weights["cuda"], weights["cpu"])
    return {"updates": segments, "max_weight_difference": diff, "agree": diff < TOLERANCE,
            "adapted_bits_difference": abs(bits["cuda"] - bits["cpu"])}


def adaptation(out: dict[str, Any], folder: ModelFolder, cuda: bool | str, threads: int, rule: str, repeats: int,
               save: Callable[[], None]) -> None:
    """Fills ``out`` (saved after each device)."""
    config = AdaptConfig(rule=rule, eta=default_eta(rule), margin=1e9)  # the guard never fires by itself
    symbols = [folder.alphabet.index(ch) for ch in normalise(_bench("adaptation_update_time").TEXT * 20, folder.alphabet)]
    out.update(rule=rule, eta=config.eta, segment=config.segment, window=config.window, parameters=None, devices={})
    weights: dict[str, dict[str, torch.Tensor]] = {}
    bits: dict[str, float] = {}
    devices = ["cpu"] + (["cuda"] if cuda is True else [])
    if cuda is not True:
        out["devices"]["cuda"] = cuda
    torch.set_num_threads(threads)
    for device in devices:
        start = time.perf_counter()
        try:
            out["devices"][device], weights[device], bits[device] = adaptation_run(folder, device, config, symbols,
                                                                                   repeats)
            out["devices"][device]["seconds"] = round(time.perf_counter() - start, 1)
        except Exception as exc:
            out["devices"][device] = _error(exc)
        save()
    if "cpu" in weights:
        out["parameters"] = sum(w.numel() for w in weights["cpu"].values())
    if "cpu" in weights and "cuda" in weights:
        diff = _max_difference(weights["cuda"], weights["cpu"])
        moved = max(float((w - b.detach()).abs().max()) for w, b in zip(weights["cpu"].values(),
                    folder.network().network_parameters().values(), strict=True))
        out["agreement"] = {"max_weight_difference": diff, "max_weight_change_cpu": moved,
                            "adapted_bits_difference": abs(bits["cuda"] - bits["cpu"]),
                            "updates": out["devices"]["cpu"]["updates"], "tolerance": TOLERANCE,
                            "agree": diff < TOLERANCE, "tf32": "as the machine's defaults (see machine)"}
        try:
            out["agreement_fp32"] = fp32_agreement(folder, config, symbols, 20)
        except Exception as exc:
            out["agreement_fp32"] = _error(exc)
    else:
        out["agreement"] = "needs both devices"


# -- the run ----------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", type=Path, default=DEFAULT_MODEL_DIR)
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    parser.add_argument("--repeats", type=int, default=50, help="timed repeats per figure (after warm-ups)")
    parser.add_argument("--threads", default="1,4", help="CPU threads, a comma-separated list (default 1,4)")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                        help="auto: CUDA when present; cpu: skip CUDA; cuda: fail without it")
    parser.add_argument("--rule", default="sgd", choices=("sgd", "rms", "rms-rms"))
    parser.add_argument("--skip", nargs="*", default=[], choices=("predictor", "adaptation"))
    args = parser.parse_args(argv)
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    if not threads or min(threads) < 1:
        parser.error("--threads needs one or more counts >= 1")
    available = torch.cuda.is_available()
    if args.device == "cuda" and not available:
        parser.error("--device cuda: torch sees no CUDA device")
    cuda: bool | str = True if available and args.device != "cpu" else "skipped" if available else "not available"
    start = time.perf_counter()
    folder = open_model(args.model_dir)
    arch = folder.config["architecture"]
    report: dict[str, Any] = {
        "bench": "bench/cuda_bench.py",
        "about": __doc__.split("\n\n")[0].replace("\n", " "),
        "complete": False,
        "argv": sys.argv[1:] if argv is None else list(argv),
        "cuda": "available" if cuda is True else cuda,
        "machine": machine(cuda is True),
        "model": {"dir": str(args.model_dir), "architecture": arch,
                  "summary": f"{arch.get('cell', 'lstm')} {arch['layers']}x{arch['hidden_size']}",
                  "alphabet": len(folder.alphabet)},
        "settings": {"repeats": args.repeats, "threads": threads, "device": args.device,
                     "predictor_warmups": 5, "adaptation_warmups": WARMUP},
        "units": {"p50_ms": "median milliseconds", "p99_ms": "99th percentile, milliseconds",
                  "min_ms": "fastest, milliseconds", "nodes_per_s": "batch / median seconds",
                  "cuda_speedup": "nodes/s on CUDA over the CPU run named, per batch",
                  "torch@N / onnx@N": "CPU run at N threads (torch intra-op / onnxruntime intra_op_num_threads)"},
    }

    def save() -> None:
        report["seconds"] = round(time.perf_counter() - start, 1)
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(report, indent=1) + "\n")

    save()
    for part, run in (("predictor", lambda out: predictor(out, args.model_dir, cuda, threads, args.repeats, save)),
                      ("adaptation", lambda out: adaptation(out, folder, cuda, threads[0], args.rule, args.repeats,
                                                            save))):
        if part in args.skip:
            continue
        report[part] = {}
        try:
            run(report[part])
        except Exception as exc:  # keep what the other part measured
            report[part].update(_error(exc))
        save()
    report["complete"] = True
    save()
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
