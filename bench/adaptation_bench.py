"""Online adaptation: user streams adaptive vs static, the adversarial suite, update and rollback
times, checkpoint memory, and (with --tune) the tuning grid. Prints JSON.

    python bench/adaptation_bench.py [--model-dir models/english-lstm]
    python bench/adaptation_bench.py --tune [--tune-etas 0.03,0.06,0.1]
    python bench/adaptation_bench.py --methods   # full vs sparse vs LHUC, each tuned, then measured

Streams are scored message by message as in docs/ARCHITECTURE.md (Measuring): each message is predicted with
the current weights, then committed (learned). Static = the shipped weights throughout. Each user
stream is measured twice: cold (the user's first messages ever: only the held-out text) and after
history (the user first wrote their history file through the app, learned online message by
message but not scored, then the held-out text is scored), as the corpora README pairs them.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

import numpy as np
import torch

from dasher_rnn.adapt.adaptive_lm import AdaptiveRNNLanguageModel
from dasher_rnn.adapt.dynamic_eval import AdaptConfig, default_eta
from dasher_rnn.evaluate import score_language_model
from dasher_rnn.lm.messages import read_messages
from dasher_rnn.lm.model_io import load_model, load_msg
from dasher_rnn.lm.rnn_lm import RNNLanguageModel
from dasher_rnn.paths import ASSETS_DIR, DEFAULT_MODEL_DIR

CORPORA = Path("../shared/corpora")
STREAMS = {"sms_user_future": CORPORA / "adapt/sms_user_future.txt",
           "aac_imagined_test": CORPORA / "eval/aac_imagined_test.txt"}
HISTORIES = {"sms_user_future": CORPORA / "adapt/sms_user_history.txt",
             "aac_imagined_test": CORPORA / "adapt/aac_user_history.txt"}
TUNE_STREAMS = {"aac_imagined_dev": CORPORA / "eval/aac_imagined_dev.txt",
                "sms_user_history_head": CORPORA / "adapt/sms_user_history.txt"}


def worst_window_ratio(adapted: list[float], static: list[float], width: int = 200) -> float:
    a, s = np.cumsum([0.0, *adapted]), np.cumsum([0.0, *static])
    if len(adapted) <= width:
        return float(a[-1] / s[-1])
    return float(np.max((a[width:] - a[:-width]) / (s[width:] - s[:-width])))


def run_stream(model, alphabet, msg, lines: list[str], config: AdaptConfig, history: list[str] = ()) -> dict:
    """Score ``lines`` static and adaptive; the adaptive model first learns ``history`` (unscored)."""
    static = score_language_model(RNNLanguageModel(model, alphabet), lines, floor=0)
    lm = AdaptiveRNNLanguageModel(copy.deepcopy(model), alphabet, config, msg)
    start = time.perf_counter()
    score_language_model(lm, list(history), floor=0, adaptive=True)
    adaptive = score_language_model(lm, lines, floor=0, adaptive=True)
    stats = lm.adapter.stats
    return {"chars": static.chars, "static_bpc": round(static.bits_per_char, 4),
            "adaptive_bpc": round(adaptive.bits_per_char, 4),
            "ratio": round(adaptive.bits_per_char / static.bits_per_char, 4),
            "worst_200_char_window_ratio": round(worst_window_ratio(adaptive.char_bits, static.char_bits), 3),
            "updates": stats.updates, "guard_events": stats.guard_events, "seconds": round(time.perf_counter() - start, 1)}


def timings(model, alphabet, msg, config: AdaptConfig, lines: list[str]) -> dict:
    """Update time per segment, rollback time, checkpoint bytes."""
    lm = AdaptiveRNNLanguageModel(copy.deepcopy(model), alphabet, config, msg)
    ev = lm.adapter
    symbols = [alphabet.index(c) for c in "\n".join(lines) if c in alphabet][:6000]
    update_ms = []
    for s in symbols:
        t0 = time.perf_counter()
        if ev.commit(s):
            update_ms.append((time.perf_counter() - t0) * 1e3)
    rollback_ms = []
    for _ in range(50):
        length = len(ev.committed)
        t0 = time.perf_counter()
        ev.delete_to(length - config.segment - 3)
        rollback_ms.append((time.perf_counter() - t0) * 1e3)
        for s in symbols[length - config.segment - 3 : length]:
            ev.commit(s)
    flat_bytes = ev.ring[-1].weights.numel() * 4
    return {"update_ms_p50": round(float(np.median(update_ms)), 2),
            "update_ms_p99": round(float(np.percentile(update_ms, 99)), 2),
            "rollback_ms_p50": round(float(np.median(rollback_ms)), 2),
            "rollback_ms_p99": round(float(np.percentile(rollback_ms, 99)), 2),
            "checkpoint_bytes": flat_bytes, "ring_checkpoints": ev.ring_size,
            "ring_covers_chars": ev.ring_size * config.segment}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    parser.add_argument("--rule", default="sgd")
    parser.add_argument("--eta", type=float, default=None)
    parser.add_argument("--lam", type=float, default=0.0)
    parser.add_argument("--segment", type=int, default=20)
    parser.add_argument("--tune", action="store_true", help="run the tuning grid on the dev streams instead")
    parser.add_argument("--tune-etas", default=None,
                        help="the tuning grid with only SGD (n 20) at these comma-separated steps, e.g. 0.03,0.06,0.1")
    parser.add_argument("--tune-chars", type=int, default=15000, help="characters of each dev stream used for tuning")
    parser.add_argument("--streams-only", action="store_true", help="skip the adversarial suite and timings")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (adaptation runs on one thread in the app)")
    parser.add_argument("--methods", action="store_true",
                        help="compare adaptation methods: tune each state adapter's step on the dev streams, then measure")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, alphabet, _ = load_model(args.model_dir)
    msg = load_msg(args.model_dir, model)
    if args.tune or args.tune_etas:
        grid = [("sgd", 0.03, 0.0, 20), ("sgd", 0.1, 0.0, 20), ("sgd", 0.3, 0.0, 20), ("sgd", 0.1, 0.0, 10),
                ("rms", 1e-4, 0.0, 20), ("rms", 3e-4, 0.0, 20), ("rms", 1e-3, 0.0, 20), ("rms", 3e-4, 0.0, 10),
                ("rms", 3e-4, 0.01, 20), ("rms-rms", 3e-4, 0.01, 20), ("rms-rms", 1e-3, 0.01, 20)]
        if args.tune_etas:
            grid = [("sgd", float(eta), 0.0, 20) for eta in args.tune_etas.split(",")]
        configs = [AdaptConfig(rule=rule, eta=eta, lam=lam, segment=n) for rule, eta, lam, n in grid]
        rows = tune(model, alphabet, msg, configs, dev_streams(args.tune_chars))
        print(json.dumps({"tuning": rows, "best": min(rows, key=lambda r: r["mean_ratio"])}, indent=1))
        return
    if args.methods:
        compare_methods(model, alphabet, msg, dev_streams(args.tune_chars))
        return
    eta = args.eta if args.eta is not None else default_eta(args.rule)
    config = AdaptConfig(rule=args.rule, eta=eta, lam=args.lam, segment=args.segment)
    print(json.dumps({"threads": args.threads, **measure(model, alphabet, msg, config, args.streams_only)}, indent=1))


def dev_streams(chars: int) -> dict[str, list[str]]:
    """The first ``chars`` characters of each tuning stream, whole messages."""
    dev = {}
    for name, path in TUNE_STREAMS.items():
        lines, total = [], 0
        for line in read_messages(path):
            if total >= chars:
                break
            lines.append(line)
            total += len(line)
        dev[name] = lines
    return dev


def tune(model, alphabet, msg, configs: list[AdaptConfig], dev: dict[str, list[str]]) -> list[dict]:
    """Adaptive / static on each dev stream for each config (printed as it goes)."""
    rows = []
    for cfg in configs:
        row = {"method": cfg.method, "feed": cfg.feed, "rule": cfg.rule, "eta": cfg.eta, "lam": cfg.lam,
               "segment": cfg.segment}
        for name, lines in dev.items():
            row[name] = run_stream(model, alphabet, msg, lines, cfg)["ratio"]
        row["mean_ratio"] = round(float(np.mean([row[k] for k in dev])), 4)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


ADAPTER_ETAS = {"sparse": (0.03, 0.1, 0.3), "lhuc": (0.3, 1.0, 3.0)}


def compare_methods(model, alphabet, msg, dev: dict[str, list[str]]) -> None:
    """Full dynamic evaluation (its tuned default) against sparse and LHUC, with and without feeding the
    recurrence, each at its best step on the dev streams; then every method measured in full."""
    chosen = {"full": AdaptConfig()}
    for method, etas in ADAPTER_ETAS.items():
        for feed in (True, False):
            rows = tune(model, alphabet, msg, [AdaptConfig(method=method, feed=feed, eta=eta) for eta in etas], dev)
            best = min(rows, key=lambda r: r["mean_ratio"])
            chosen[f"{method}{'' if feed else ' (head only)'}"] = AdaptConfig(method=method, feed=feed, eta=best["eta"])
    for name, config in chosen.items():
        print(json.dumps({"method": name, **measure(model, alphabet, msg, config, streams_only=False)}), flush=True)


def measure(model, alphabet, msg, config: AdaptConfig, streams_only: bool) -> dict:
    """The user streams (cold and after history), then the adversarial suite and timings."""
    report = {"config": config.__dict__, "streams": {}}
    for name, path in STREAMS.items():
        lines = read_messages(path)
        report["streams"][name] = run_stream(model, alphabet, msg, lines, config)
        report["streams"][name + "_after_history"] = run_stream(model, alphabet, msg, lines, config,
                                                                read_messages(HISTORIES[name]))
        print(name, report["streams"][name], report["streams"][name + "_after_history"], flush=True)
    if streams_only:
        return report
    adversarial = read_messages(ASSETS_DIR / "samples/adversarial.txt")
    report["adversarial"] = run_stream(model, alphabet, msg, adversarial, config)
    unguarded = AdaptConfig(**{**config.__dict__, "margin": float("inf"), "spike": float("inf")})
    report["adversarial_without_guard"] = run_stream(model, alphabet, msg, adversarial, unguarded)
    report["timings"] = timings(model, alphabet, msg, config, read_messages(STREAMS["aac_imagined_test"]))
    return report


if __name__ == "__main__":
    main()
