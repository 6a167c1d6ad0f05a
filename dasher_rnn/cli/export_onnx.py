"""`dasher-rnn export-onnx`: a model's one-step function in ONNX (and int8), checked against torch."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export-onnx", help="export a model's one-step function to ONNX and verify it against torch")
    # no default: the export rewrites the folder's model.onnx and config.json, and the shipped model's folder is
    # part of the package (tracked in git, installed in site-packages); it changes only when named
    p.add_argument("model_dir", help="model folder (e.g. a `train` run's OUT/model); model.onnx is written into it "
                   "and its config.json records the export")
    p.add_argument("--int8", action="store_true",
                   help="also write model.int8.onnx, int8 weights (onnxruntime serves it when present, adapting too "
                        "for a plain LSTM)")
    p.add_argument("--check", nargs="*", default=None, metavar="FILE",
                   help="--int8: phrase files on which it may lose at most 0.005 bits/char "
                        "(default: ../shared/corpora/eval/*.txt when present)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from dasher_rnn.extras import require_torch

    require_torch("ONNX export")
    from dasher_rnn.lm.onnx_export import export_int8, export_onnx

    diff = export_onnx(args.model_dir)
    print(f"wrote {Path(args.model_dir) / 'model.onnx'}: max abs difference vs torch {diff:.2e}")
    if args.int8:
        check = args.check if args.check is not None else sorted(Path("../shared/corpora/eval").glob("*.txt"))
        report = export_int8(args.model_dir, check_files=check)
        print(f"wrote {Path(args.model_dir) / report['file']}:")
        print(json.dumps(report, indent=1))
    return 0
