"""`dasher-rnn export-onnx`: a model's one-step function in ONNX, int8 (what onnxruntime serves) and, when asked,
float32, checked against torch."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export-onnx", help="export a model's one-step function to ONNX (int8; float32 with --fp32) and "
                                           "verify it against torch")
    # no default: the export rewrites the folder's ONNX exports and config.json, and the shipped model's folder is
    # part of the package (tracked in git, installed in site-packages); it changes only when named
    p.add_argument("model_dir", help="model folder (e.g. a `train` run's OUT/model); the exports are written into it "
                   "and its config.json records them")
    p.add_argument("--int8", action="store_true",
                   help="write model.int8.onnx, int8 weights, which onnxruntime serves (adapting too for a plain "
                        "LSTM); the default when --fp32 is not given. The float32 export it is checked against is "
                        "made in a temporary folder unless the model folder has one")
    p.add_argument("--fp32", action="store_true",
                   help="write model.onnx, the float32 export, and keep it in the folder (for research: served "
                        "where the int8 export is missing or turned off); with --int8 as well, both. The shipped "
                        "models leave it out")
    p.add_argument("--check", nargs="*", default=None, metavar="FILE",
                   help="int8: phrase files on which it may lose at most 0.005 bits/char "
                        "(default: ../shared/corpora/eval/*.txt when present)")
    p.add_argument("--json", action="store_true", help="int8: also print the full check report as JSON (it is kept "
                                                       "in the folder's config.json either way)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json

    from dasher_rnn.extras import require_torch

    require_torch("ONNX export")
    from dasher_rnn.lm.model_io import ONNX_FILE
    from dasher_rnn.lm.onnx_export import export_int8, export_onnx

    folder = Path(args.model_dir)
    if args.fp32:
        diff = export_onnx(folder)
        print(f"wrote {folder / ONNX_FILE}: max abs difference vs torch {diff:.2e}")
    if args.int8 or not args.fp32:
        check = args.check if args.check is not None else sorted(Path("../shared/corpora/eval").glob("*.txt"))
        report = export_int8(folder, check_files=check)
        checked = (f"; on {len(report['check_files'])} phrase files ({report['check_chars']:,} characters) it loses "
                   f"{report['bits_lost_floor']:.4f} bits/char" if "check_files" in report else "; no phrase file to "
                   "check it on")
        print(f"wrote {folder / report['file']}: max abs log-prob difference vs torch "
              f"{report['max_abs_log_prob_diff_vs_torch']:.2e}{checked} (the report: config.json, onnx_int8)")
        if args.json:
            print(json.dumps(report, indent=1))
        if not args.fp32 and (folder / ONNX_FILE).is_file():
            print(f"{folder / ONNX_FILE}, the float32 export already there, was left as it was (and checked against): "
                  "a folder to ship goes without it (delete it, then `dasher-rnn export-onnx` again to update "
                  "config.json)")
    return 0
