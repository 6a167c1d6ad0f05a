"""The app's default (the hybrid, learning, its PPM starting empty) against the static RNN, on a new user's first
messages (issue 47, part 2): before and after PPM's share had to be earned (``HybridMixer.EARNED_AT``).

    python bench/hybrid_day_one.py                         # first 50 lines of each set; prints JSON
    python bench/hybrid_day_one.py --lines 0               # whole files (long on 2 cores: about 10 minutes a set)
    python bench/hybrid_day_one.py --results bench/results/hybrid.json --beside "..."   # also the results table

Each set is scored as ``dasher-rnn eval`` scores it (a fresh writer per file, 5% floor): the RNN static
(``--model rnn --static``), the RNN adapting (``--model rnn --adaptive``), and the hybrid (``--model hybrid``, the
app's default) with PPM's share as before (``EARNED_AT = 0``: the gate's share from the first message) and as now.
English is the five ``eval/`` files; German, French and Spanish their ``languages/dev/`` file.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import tempfile
from pathlib import Path

from dasher_rnn.cli import main as cli
from dasher_rnn.lm.hybrid import HybridMixer

CORPORA = Path(__file__).resolve().parent.parent.parent / "shared" / "corpora"
SETS = {"en": sorted((CORPORA / "eval").glob("*.txt")),
        **{lang: [CORPORA / "languages" / "dev" / f"{lang}_Latn.txt"] for lang in ("de", "fr", "es")}}
RUNS = {"static": ["--model", "rnn", "--static"], "adaptive": ["--model", "rnn", "--adaptive"],
        "before": ["--model", "hybrid"], "after": ["--model", "hybrid"]}


def bits(lang: str, files: list[Path], run: str) -> dict:
    """``dasher-rnn eval --json`` of one run on one set."""
    earned_at = HybridMixer.EARNED_AT
    HybridMixer.EARNED_AT = 0 if run == "before" else earned_at
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            code = cli(["eval", "--no-progress", "--json", "--language", lang, *RUNS[run], *map(str, files)])
    finally:
        HybridMixer.EARNED_AT = earned_at
    if code:
        raise SystemExit(f"eval failed on {lang} ({run})")
    overall = json.loads(out.getvalue())["overall"]
    return {"bits_per_char": overall["bits_per_char"], "chars": overall["chars"]}


def measure(lines: int) -> dict:
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for lang, files in SETS.items():
            if lines:  # each file's first lines, under its own name (a fresh writer per file, as eval scores)
                cut = []
                for f in files:
                    (Path(tmp) / lang).mkdir(exist_ok=True)
                    head = Path(tmp) / lang / f.name
                    head.write_text("\n".join(f.read_text(encoding="utf-8").split("\n")[:lines]) + "\n",
                                    encoding="utf-8")
                    cut.append(head)
                files = cut
            results[lang] = {run: bits(lang, files, run) for run in RUNS}
    return {"lines": lines, "earned_at": HybridMixer.EARNED_AT, "sets": results}


def table(result: dict, beside: str, machine: str) -> dict:
    first = f"first {result['lines']} lines" if result["lines"] else "whole files"
    rows = []
    for lang, runs in result["sets"].items():
        static = runs["static"]["bits_per_char"]
        rows.append({"key": lang, "set": f"{lang}: {'the five eval/ files' if lang == 'en' else 'dev/'}, {first}",
                     "chars": runs["static"]["chars"], "static": static,
                     "adaptive": runs["adaptive"]["bits_per_char"], "before": runs["before"]["bits_per_char"],
                     "after": runs["after"]["bits_per_char"],
                     "gain": round(static - runs["after"]["bits_per_char"], 4)})
    fmt = {"align": "right", "format": ".4f"}
    return {"id": "hybrid-day-one", "columns": [
        {"key": "set", "label": "set"}, {"key": "chars", "label": "characters", "align": "right", "format": ","},
        {"key": "static", "label": "RNN, static", **fmt}, {"key": "adaptive", "label": "RNN, adapting", **fmt},
        {"key": "before", "label": "hybrid before (PPM's share at once)", **fmt},
        {"key": "after", "label": "hybrid now (PPM's share earned)", **fmt},
        {"key": "gain", "label": "static - hybrid now", **fmt}],
        "rows": rows, "commands": ["python bench/hybrid_day_one.py" + ("" if result["lines"] == 50 else
                                                                         f" --lines {result['lines']}")],
        "date": datetime.date.today().isoformat(), "machine": machine, "beside": beside,
        "model": f"english-lstm (en) and de-fr-es-lstm, int8 on onnxruntime; hybrid PPM order 8 starting empty, "
                 f"EARNED_AT {result['earned_at']:,}",
        "source": "bench/hybrid_day_one.py's printed JSON (issue 47, part 2)"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=50, help="first lines of each file (0: whole files)")
    parser.add_argument("--results", type=Path, default=None, help="also write the table to this results file")
    parser.add_argument("--beside", default="not recorded", help="what ran beside it, for the table")
    parser.add_argument("--machine", default="an AMD EPYC VM (2 cores, no GPU)", help="the machine, for the table")
    parser.add_argument("--from-output", type=Path, default=None, help="write --results from a run's printed JSON")
    args = parser.parse_args()
    result = json.loads(args.from_output.read_text()) if args.from_output else measure(args.lines)
    if not args.from_output:
        print(json.dumps(result, indent=1))
    if args.results is not None:
        area = {"area": "hybrid", "tables": [table(result, args.beside, args.machine)]}
        args.results.write_text(json.dumps(area, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
