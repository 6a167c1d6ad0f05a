"""Every language on day one (issue 47): what a new user gets by default against Dasher's PPM started from its own
text.

For every language with a Dasher 5 training text (``../shared/corpora/languages/dasher5/``) and a dev set
(``languages/dev/``): the app's default for a new user (``dasher-rnn eval --language XX``: the same
``WriterConfig``, built in-process through ``adapt/compose.py``, learning as it goes, nothing given), against
Dasher's PPM (order 5, the language's alphabet, the 5% floor) started from that text and learning as it goes
(``dasher-rnn eval --model ppm --language XX --train training_<language>.txt``), on the first 50 lines of the dev
set and on the whole of it. Bits per character, the ratio default / Dasher per language, and the medians.

    python bench/languages_day_one.py --as before     # the figures of the default as it is, into the column "before"
    python bench/languages_day_one.py --as after      # ... into "after"; the other columns are kept

The results go into ``bench/results/languages_day_one.json`` (``bench/report.py`` renders its table); ``--out -``
prints the JSON instead. Languages an RNN writes are skipped unless ``--rnn`` (their default is the hybrid, minutes
on a CPU). Dasher's Finnish text has two NUL bytes that ``--train`` refuses: the bench drops them (Dasher does too).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT.parent / "shared" / "corpora" / "languages"
RESULTS = ROOT / "bench" / "results" / "languages_day_one.json"
FIRST_LINES = 50

# Dasher 5's training files by language code (hiragana60_JP is kana, our Japanese dev set is kanji: not comparable;
# Hungarian has no dev set)
DASHER5 = {"sq": "albanian_SQ", "eu": "basque_ES", "bn": "bengali_BD", "cs": "czech_CS", "da": "danish_DK",
           "nl": "dutch_NL", "fi": "finnish_FI", "fr": "french_FR", "de": "german_DE", "el": "greek_GR",
           "he": "hebrew_IL", "hu": "hungarian_HU", "it": "italian_IT", "mn": "mongolian_MN", "fa": "persian_IR",
           "pl": "polish_PL", "pt": "portuguese_BR", "ru": "russian_RU", "es": "spanish_ES", "sw": "swahili_KE",
           "sv": "swedish_SE", "tr": "turkish_TR", "cy": "welsh_GB", "ja": "hiragana60_JP"}


def dev_file(code: str) -> Path | None:
    found = sorted((CORPORA / "dev").glob(f"{code}_*.txt"))
    return found[0] if found and code != "ja" else None


def bits(config, paths: list[Path]) -> float:
    """Bits per character of what ``config`` builds, learning as it goes (as ``dasher-rnn eval`` scores it)."""
    from dasher_rnn.adapt.compose import build_writer
    from dasher_rnn.evaluate import evaluate_files

    report = evaluate_files(lambda: build_writer(config), [str(p) for p in paths], adaptive=True, floor=config.floor,
                            progress=False)
    return report["overall"]["bits_per_char"]


def measure(code: str, work: Path, known: dict | None = None, parts: tuple[str, ...] = ("first", "whole"),
            before: bool = False) -> dict:
    from dasher_rnn.adapt.compose import WriterConfig, build_writer

    dev = dev_file(code)
    assert dev is not None
    first = work / f"{code}_first{FIRST_LINES}.txt"
    first.write_text("\n".join(dev.read_text(encoding="utf-8").split("\n")[:FIRST_LINES]) + "\n", encoding="utf-8")
    dasher_text = CORPORA / "dasher5" / f"training_{DASHER5[code]}.txt"
    raw = dasher_text.read_bytes()
    if b"\0" in raw:  # Finnish: two NUL bytes, which Dasher reads past
        dasher_text = work / dasher_text.name
        dasher_text.write_bytes(raw.replace(b"\0", b""))
    # `dasher-rnn eval --language XX`; before: as it was before issue 47 (no word list: PPM starts empty)
    default = WriterConfig(language=code, adapt=True, read_only=True, threads=1, ppm_words="" if before else None)
    dasher = WriterConfig(model="ppm", language=code, ppm_train=(str(dasher_text),), adapt=True, read_only=True)
    writer = build_writer(default)
    described = writer.description
    writer.close(save=False)
    row = {"key": code, "language": code, "default": described}
    for part, paths in (("first", [first]), ("whole", [dev])):
        if part not in parts:
            continue
        d = known[f"dasher_{part}"] if known and f"dasher_{part}" in known else bits(dasher, paths)
        x = bits(default, paths)
        row[f"dasher_{part}"] = round(d, 4)
        row[f"default_{part}"] = round(x, 4)
        row[f"ratio_{part}"] = round(x / d, 3)
    return row


def render(table: dict) -> None:
    """The table's columns and rows from its per-language figures (``table["languages"]``): a column per language
    and the median, three rows (short enough for docs/BENCHMARKS.md)."""
    langs = table["languages"]
    codes = sorted(langs)
    table["columns"] = [{"key": "measure", "label": "measure"}] + [
        {"key": c, "label": c, "align": "right"} for c in codes] + [{"key": "median", "label": "median", "align": "right"}]

    def median(key: str) -> float | None:
        values = [langs[c][key] for c in codes if key in langs[c]]
        return statistics.median(values) if values else None

    def pair(a: float | None, b: float | None, sep: str) -> str:
        return sep.join("-" if v is None else f"{v:.2f}" for v in (a, b))

    rows = [{"key": "dasher", "measure": f"Dasher's PPM from its text, bits/char: first {FIRST_LINES} lines / whole dev",
             "median": pair(median("dasher_first"), median("dasher_whole"), " / "),
             **{c: pair(langs[c].get("dasher_first"), langs[c].get("dasher_whole"), " / ") for c in codes}}]
    for part, said in (("first", f"first {FIRST_LINES} lines"), ("whole", "whole dev")):
        rows.append({"key": part, "measure": f"default / Dasher, {said}: before → after",
                     "median": pair(median(f"ratio_{part}_before"), median(f"ratio_{part}_after"), " → "),
                     **{c: pair(langs[c].get(f"ratio_{part}_before"), langs[c].get(f"ratio_{part}_after"), " → ")
                        for c in codes}})
    table["rows"] = rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--as", dest="label", default="after", help="the column the default's figures go into")
    parser.add_argument("--languages", nargs="*", default=None, help="codes (default: every comparable one)")
    parser.add_argument("--rnn", action="store_true", help="also the languages an RNN writes (slow on a CPU)")
    parser.add_argument("--parts", nargs="+", default=["first", "whole"], choices=["first", "whole"],
                        help="the first 50 lines, the whole dev set, or both")
    parser.add_argument("--reuse-dasher", action="store_true", help="keep Dasher's figures already in the results")
    parser.add_argument("--merge", nargs="*", default=[], help="results files of other runs to fold in first")
    parser.add_argument("--out", default=str(RESULTS), help="results file, or - to print the JSON")
    args = parser.parse_args(argv)
    from dasher_rnn.languages import shipped_rnn

    codes = args.languages if args.languages is not None else [
        c for c in sorted(DASHER5) if dev_file(c) and (args.rnn or shipped_rnn(c) is None)]
    out = Path(args.out)
    old = json.loads(out.read_text()) if args.out != "-" and out.is_file() else None
    table = old["tables"][0] if old else {"id": "languages-day-one", "languages": {}}
    rows = table["languages"]
    for other in args.merge:  # per-language figures measured by other runs
        for code, figures in json.loads(Path(other).read_text())["tables"][0]["languages"].items():
            rows.setdefault(code, {}).update(figures)
    label = args.label
    with tempfile.TemporaryDirectory() as tmp:
        for code in codes:
            if (CORPORA / "dasher5" / f"training_{DASHER5[code]}.txt").is_file() is False:
                continue
            row = rows.setdefault(code, {})
            got = measure(code, Path(tmp), row if args.reuse_dasher else None, tuple(args.parts), label == "before")
            for part in args.parts:
                row[f"dasher_{part}"] = got[f"dasher_{part}"]
                row[f"default_{part}_{label}"] = got[f"default_{part}"]
                row[f"ratio_{part}_{label}"] = got[f"ratio_{part}"]
            row[f"default_{label}"] = got["default"]
            said = "; ".join(f"{part}: Dasher {got[f'dasher_{part}']:.3f}, default {got[f'default_{part}']:.3f}, "
                             f"ratio {got[f'ratio_{part}']:.3f}" for part in args.parts)
            print(f"{code}: {said}  ({got['default']})", file=sys.stderr, flush=True)
    render(table)
    table.update({
        "commands": ["python bench/languages_day_one.py --as before --parts first; python bench/languages_day_one.py "
                     "--as after --parts first",
                     "python bench/languages_day_one.py --as before|after --parts whole --languages bn cs cy it mn nl pl"],
        "date": table.get("date") or datetime.date.today().isoformat(),
        "machine": table.get("machine") or "an AMD EPYC VM (2 cores, no GPU)",
        "beside": table.get("beside") or "other sessions' tests at nice 10",
        "model": "PPM order 5 both, learning as they go; the CLDR alphabet, 5% floor",
        "source": "bench/languages_day_one.py (issue 47). before: PPM started empty; after: PPM started from the "
                  "language's shipped word list (assets/words/, SOURCES.md)",
    })
    table["date_" + label] = datetime.date.today().isoformat()
    result = {"area": "languages_day_one", "tables": [table]}
    text = json.dumps(result, indent=1, ensure_ascii=False) + "\n"
    if args.out == "-":
        print(text)
    else:
        out.write_text(text, encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
