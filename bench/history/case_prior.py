"""What a lower-case prior at message starts costs, in bits per character, on phrase files.

    python bench/history/case_prior.py ../shared/corpora/eval/*.txt [--model rnn|hybrid|ppm] [--floor 0.05]

At a message start the models favour capitals, so the lower-case letters' boxes are slivers. The zoom's
source (``zoom/sources.py::WriterSource``) can move a share of each capital's probability to its lower-case
letter before the boxes are laid out. Only the first character of each message is scored differently, so
the cost is exact from the message-start distribution alone: the change in the first character's bits (from
Dasher's integers, the 5% floor included, as ``dasher-rnn eval`` scores) over all characters. The lower-case
letters' share of the message-start boxes is reported as what the user sees. Static model, as ``eval``.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.lm.messages import read_messages
from dasher_rnn.lm.protocol import DASHER_TOTAL, quantise
from dasher_rnn.normalise import normalise
from dasher_rnn.zoom.sources import case_pairs, lower_case_prior

SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--model", default="rnn", help="rnn, hybrid or ppm (default rnn)")
    parser.add_argument("--floor", type=float, default=0.05, help="Dasher's floor (default 0.05)")
    parser.add_argument("--shares", type=float, nargs="+", default=list(SHARES),
                        help=f"shares of the capitals' probability moved (default {' '.join(map(str, SHARES))})")
    args = parser.parse_args()
    shares = sorted({0.0, *args.shares})
    writer = build_writer(WriterConfig(model=args.model, adapt=False))
    try:
        alphabet = writer.alphabet
        root = writer.root("")
        dist = writer.request([root]).result()[0]
        writer.release(root)
        probs = dist.probs
    finally:
        writer.close()
    pairs = case_pairs(alphabet)
    lower = [alphabet.index(ch) for ch in "abcdefghijklmnopqrstuvwxyz"]
    upper = [alphabet.index(ch) for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"]
    counts = {s: quantise(lower_case_prior(probs, pairs, s), args.floor) for s in shares}
    rows = []
    totals = {s: 0.0 for s in shares}
    chars_all = 0
    first_lower = first_all = 0
    for path in args.files:
        lines = [normalise(line) for line in read_messages(path)]
        lines = [line for line in lines if line]
        chars = sum(len(line) for line in lines)
        firsts = [alphabet.index(line[0]) for line in lines if line[0] in alphabet]
        first_lower += sum(line[0].islower() for line in lines)
        first_all += len(lines)
        chars_all += chars
        row = {"file": Path(path).stem, "messages": len(lines), "chars": chars,
               "lower_case_starts": round(sum(line[0].islower() for line in lines) / len(lines), 3)}
        base = sum(math.log2(DASHER_TOTAL / counts[0.0][f]) for f in firsts)
        for s in shares:
            bits = sum(math.log2(DASHER_TOTAL / counts[s][f]) for f in firsts)
            totals[s] += bits - base
            row[f"delta_bpc_{s}"] = round((bits - base) / chars, 4)
        rows.append(row)
    summary = {
        "model": args.model, "floor": args.floor, "files": rows,
        "overall_delta_bpc": {str(s): round(totals[s] / chars_all, 4) for s in shares},
        "lower_case_starts": round(first_lower / first_all, 3),
        "lower_case_box_share": {str(s): round(float(counts[s][lower].sum()) / DASHER_TOTAL, 3) for s in shares},
        "capital_box_share": {str(s): round(float(counts[s][upper].sum()) / DASHER_TOTAL, 3) for s in shares},
        "median_lower_to_capital_height": {
            str(s): round(float(np.median(counts[s][pairs[1]] / counts[s][pairs[0]])), 3) for s in shares},
    }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
