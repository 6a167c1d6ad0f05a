"""`dasher-rnn languages`: every language that can be written, and what each one has."""

from __future__ import annotations

import argparse
import json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("languages", help="every language that can be written: its code (for --language), script, "
                                         "direction, symbols, and what a new user's prediction starts from (an RNN, a "
                                         "word list for PPM, or nothing)")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p.add_argument("--no-progress", action="store_true", help="--json: no progress on stderr while the alphabets "
                                                              "are built")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dasher_rnn.languages import each_language, language_count
    from dasher_rnn.progress_bar import progress_bar

    if args.json:  # the list at the end: progress on stderr meanwhile
        found = []
        with progress_bar(not args.no_progress, total=language_count(), unit="language", desc="languages",
                          leave=False) as bar:
            for language in each_language():
                found.append(language)
                bar.update()
        print(json.dumps([language.to_json() for language in found], ensure_ascii=False, indent=1))
        return 0
    # the table a row at a time, each as soon as its alphabet is built
    print(f"{language_count()} languages; every one has an alphabet (dasher-rnn app, eval, simulate --language CODE).")
    print(f"{'code':<10}{'language':<28}{'script':<8}{'dir':<5}{'symbols':>8}  starts from", flush=True)
    found = []
    for language in each_language():
        found.append(language)
        symbols = f"{language.symbols}" + ("*" if language.kept < language.letters else "")
        print(f"{language.code:<10}{language.name[:27]:<28}{language.script:<8}{language.orientation:<5}{symbols:>8}  "
              f"{language.starts_from}", flush=True)
    cut = [language.code for language in found if language.kept < language.letters]
    if cut:
        print(f"* more letters than an alphabet holds: the most frequent kept ({', '.join(cut)}).")
    return 0
