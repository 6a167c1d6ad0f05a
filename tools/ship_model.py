"""Make a training run's finished model folder a shipped one, as the shipped models are kept (their model cards):
weights in float16, the mean squared gradients (MS_g, for the RMS dynamic-evaluation rules) in bfloat16, the
per-language initial states as they are, no float32 ONNX export; then the int8 export the app serves, checked.

    python tools/ship_model.py runs/lang-aac-ft/model models/de-fr-es-lstm \\
        --check ../shared/corpora/languages/dev/de_Latn.txt ../shared/corpora/languages/dev/fr_Latn.txt

Whatever else the destination holds (its MODEL_CARD.md) stays; the model files in it are replaced. The card is the
shipper's to update: it names the data, the training and the figures.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from dasher_rnn.lm.model_io import (
    INT8_ONNX_FILE,
    LANGUAGES_FILE,
    MSG_FILE,
    ONNX_FILE,
    load_model,
    load_tensors,
    read_config,
    save_model,
    save_tensors,
    write_config,
)


def ship(source: Path, destination: Path) -> None:
    """Write ``source``'s model into ``destination`` in the shipped form (no ONNX export yet)."""
    model, alphabet, config = load_model(source)
    destination.mkdir(parents=True, exist_ok=True)
    for name in (ONNX_FILE, INT8_ONNX_FILE, LANGUAGES_FILE, MSG_FILE):
        (destination / name).unlink(missing_ok=True)
    info = {k: v for k, v in config.items() if k not in ("files", "onnx", "onnx_int8", "weights_dtype")}
    save_model(destination, model, alphabet, info=info, half=True)
    msg = {k: v.bfloat16() for k, v in load_tensors(source / MSG_FILE).items()}
    save_tensors(destination / MSG_FILE, msg, metadata={k: str(v) for k, v in config.get("msg", {}).items()})
    if (source / LANGUAGES_FILE).is_file():
        shutil.copyfile(source / LANGUAGES_FILE, destination / LANGUAGES_FILE)
    write_config(destination, read_config(destination))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("source", type=Path, help="a finished run's model folder (OUT/model)")
    p.add_argument("destination", type=Path, help="the shipped model's folder")
    p.add_argument("--check", nargs="+", default=None, help="phrase files the int8 export is checked on")
    args = p.parse_args(argv)
    ship(args.source, args.destination)
    export = [sys.executable, "-m", "dasher_rnn", "export-onnx", str(args.destination), "--int8"]
    if args.check:
        export += ["--check", *args.check]
    return subprocess.run(export, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
