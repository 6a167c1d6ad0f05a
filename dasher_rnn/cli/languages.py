"""`dasher-rnn languages`: every language that can be written, and what each one has."""

from __future__ import annotations

import argparse
import json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("languages", help="every language that can be written: its code (for --language), script, "
                                         "direction, symbols, and whether a PPM text and an RNN ship for it")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dasher_rnn.languages import languages

    found = languages()
    if args.json:
        print(json.dumps([language.to_json() for language in found], ensure_ascii=False, indent=1))
        return 0
    print(f"{'code':<10}{'language':<28}{'script':<8}{'dir':<5}{'symbols':>8}  {'PPM text':<26}RNN")
    for language in found:
        symbols = f"{language.symbols}" + ("*" if language.kept < language.letters else "")
        ppm = language.ppm_text or "none (learns from empty)"
        rnn = ", ".join(language.rnn) or "none"
        print(f"{language.code:<10}{language.name[:27]:<28}{language.script:<8}{language.orientation:<5}{symbols:>8}  "
              f"{ppm:<26}{rnn}")
    cut = [language.code for language in found if language.kept < language.letters]
    print(f"{len(found)} languages; every one has an alphabet (dasher-rnn app, eval, simulate --language CODE).")
    if cut:
        print(f"* more letters than an alphabet holds: the most frequent kept ({', '.join(cut)}).")
    return 0
