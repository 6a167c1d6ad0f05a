"""bench/cuda_bench.py on the CPU: a tiny run writes the self-describing JSON the GPU run will (no timing claims)."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_bench():
    spec = importlib.util.spec_from_file_location("cuda_bench", ROOT / "bench" / "cuda_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cpu_run_writes_the_figures(tmp_path, capsys):
    out = tmp_path / "cuda.json"
    report = load_bench().main(["--repeats", "2", "--threads", "1", "--device", "cpu", "--out", str(out)])
    printed = json.loads(capsys.readouterr().out)
    assert json.loads(out.read_text()) == printed == json.loads(json.dumps(report))
    assert printed["complete"] is True
    assert printed["cuda"] in ("not available", "skipped")
    assert {"gpu", "torch", "cudnn", "cpus", "processor", "onnxruntime"} <= set(printed["machine"])
    assert printed["model"]["summary"] == "lstm 1x768" and printed["model"]["architecture"]["hidden_size"] == 768
    assert printed["settings"]["threads"] == [1] and printed["settings"]["repeats"] == 2

    runs = printed["predictor"]["runs"]
    assert runs["cuda"] == printed["cuda"]
    assert printed["predictor"]["batches"] == [1, 64, 512]
    for key, served_by in (("torch@1", "torch-cpu"), ("onnx@1", "onnxruntime-cpu-int8")):
        assert runs[key]["served_by"] == served_by and runs[key]["threads"] == 1
        assert [row["batch"] for row in runs[key]["batches"]] == [1, 64, 512]
        for row in runs[key]["batches"]:
            assert {"p50_ms", "p99_ms", "nodes_per_s"} <= set(row) and row["p50_ms"] > 0
    assert printed["predictor"]["cuda_speedup"] == {}

    adaptation = printed["adaptation"]
    assert adaptation["devices"]["cuda"] == printed["cuda"]
    cpu = adaptation["devices"]["cpu"]
    for figure in ("update_ms", "rollback_ms", "guard_rollback_ms"):
        assert {"p50_ms", "p99_ms", "min_ms"} <= set(cpu[figure])
    assert cpu["rollback_restores_exactly"] is True
    assert cpu["updates"] == 2 * (2 + 3) and cpu["rollbacks"] == 2 + 3 and cpu["guard_events"] == 0
    assert cpu["guard_rollbacks"] == 2 + 3 and cpu["guard_fell_back_to_base"] == 0
    assert adaptation["agreement"] == "needs both devices"
    assert adaptation["parameters"] > 0
