"""One dynamic-evaluation update of 20 committed characters, numpy engine against torch engine, side by side
(interleaved) in one process on one thread. Prints JSON.

    python bench/adaptation_update_time.py [--model-dir models/english-lstm] [--repeats 50] [--rule sgd]

``update_ms``: the commit that completes a segment, as the writing session runs it (the checkpoint, the segment
under the base weights for the guard, the forward and backward under the adapted weights, the rule's step).
``gradients_ms``: the forward and backward of the segment alone. Medians of ``--repeats``, after 3 warm-ups.
Both engines on one thread: torch through ``torch.set_num_threads(1)``, numpy's BLAS through OPENBLAS_NUM_THREADS=1
(and its MKL and OpenMP equivalents), set here before numpy loads unless already set; ``blas_threads`` says what
was in effect. (Left to its own threads, OpenBLAS's matrix-vector products run 20x slower when another process
keeps the cores busy.)
"""

from __future__ import annotations

import os

for _name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402  (after the thread settings, which must precede numpy)
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from dasher_rnn.adapt.dynamic_eval import DynamicEvaluator  # noqa: E402
from dasher_rnn.adapt.evaluation import AdaptConfig, default_eta  # noqa: E402
from dasher_rnn.adapt.numpy_eval import NumpyEvaluator  # noqa: E402
from dasher_rnn.lm import numpy_lstm  # noqa: E402
from dasher_rnn.lm.model_io import open_model  # noqa: E402
from dasher_rnn.normalise import normalise  # noqa: E402
from dasher_rnn.paths import DEFAULT_MODEL_DIR  # noqa: E402

TEXT = ("I would like a cup of tea please. Could you open the window a little? My back hurts when I sit for long. "
        "Thank you for coming today, it means a lot to me. Please call my daughter and tell her I am fine. ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-dir", default=str(DEFAULT_MODEL_DIR))
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--rule", default="sgd", choices=("sgd", "rms", "rms-rms"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    folder = open_model(args.model_dir)
    config = AdaptConfig(rule=args.rule, eta=default_eta(args.rule), margin=1e9)  # the guard never rolls back here
    newline = folder.alphabet.index("\n")
    net = folder.network()
    engines = {
        "numpy": NumpyEvaluator(folder.weights, config, newline, folder.msg_arrays() if args.rule != "sgd" else None),
        "torch": DynamicEvaluator(net, config, newline, folder.msg(net) if args.rule != "sgd" else None),
    }
    symbols = [folder.alphabet.index(ch) for ch in normalise(TEXT * 20, folder.alphabet)]
    segment = config.segment
    update: dict[str, list[float]] = {name: [] for name in engines}
    for i in range(args.repeats + 3):
        chunk = symbols[(i * segment) % (len(symbols) - segment) :][:segment]
        for name, ev in engines.items():
            for s in chunk[:-1]:
                assert not ev.commit(s)
            t0 = time.perf_counter()
            assert ev.commit(chunk[-1])
            if i >= 3:
                update[name].append((time.perf_counter() - t0) * 1000)
    gradients: dict[str, list[float]] = {"numpy": [], "torch": []}
    weights = folder.weights
    net = folder.network()
    for i in range(args.repeats + 3):
        chunk = symbols[i * segment : (i + 1) * segment]
        t0 = time.perf_counter()
        numpy_lstm.segment_gradients(weights, chunk, numpy_lstm.initial_state(weights))
        t1 = time.perf_counter()
        net.zero_grad()
        ids = torch.tensor(chunk)
        logp, _ = net.score(ids[None, :], tuple(s.detach() for s in net.initial_state(1)))
        F.nll_loss(logp[0], ids).backward()
        t2 = time.perf_counter()
        if i >= 3:
            gradients["numpy"].append((t1 - t0) * 1000)
            gradients["torch"].append((t2 - t1) * 1000)
    drift = max(float(np.abs(p.detach().numpy() - q).max())
                for p, q in zip(engines["torch"].params, engines["numpy"].params, strict=True))
    arch = folder.config["architecture"]
    print(json.dumps({
        "model": f"{args.model_dir} ({arch.get('cell', 'lstm')} {arch['layers']}x{arch['hidden_size']})",
        "rule": args.rule, "segment": segment, "repeats": args.repeats, "torch_threads": torch.get_num_threads(),
        "blas_threads": os.environ["OPENBLAS_NUM_THREADS"],
        "update_ms": {name: round(statistics.median(t), 2) for name, t in update.items()},
        "gradients_ms": {name: round(statistics.median(t), 2) for name, t in gradients.items()},
        "numpy_over_torch": round(statistics.median(update["numpy"]) / statistics.median(update["torch"]), 3),
        "updates": engines["numpy"].stats.updates,
        "max_weight_difference": drift,
    }, indent=1))


if __name__ == "__main__":
    main()
