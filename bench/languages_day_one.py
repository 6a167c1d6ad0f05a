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


def measure(code: str, work: Path, known: dict | None = None) -> dict:
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
    default = WriterConfig(language=code, adapt=True, read_only=True, threads=1)  # `dasher-rnn eval --language XX`
    dasher = WriterConfig(model="ppm", language=code, ppm_train=(str(dasher_text),), adapt=True, read_only=True)
    writer = build_writer(default)
    described = writer.description
    writer.close(save=False)
    row = {"key": code, "language": code, "default": described}
    for part, paths in (("first", [first]), ("whole", [dev])):
        d = known[f"dasher_{part}"] if known and f"dasher_{part}" in known else bits(dasher, paths)
        x = bits(default, paths)
        row[f"dasher_{part}"] = round(d, 4)
        row[f"default_{part}"] = round(x, 4)
        row[f"ratio_{part}"] = round(x / d, 3)
    return row


def columns(labels: list[str]) -> list[dict]:
    cols = [{"key": "language", "label": "language"},
            {"key": "dasher_first", "label": f"Dasher, first {FIRST_LINES} lines", "align": "right", "format": ".3f"}]
    for label in labels:
        cols.append({"key": f"ratio_first_{label}", "label": f"{label}: / Dasher", "align": "right", "format": ".3f"})
    cols.append({"key": "dasher_whole", "label": "Dasher, whole dev", "align": "right", "format": ".3f"})
    for label in labels:
        cols.append({"key": f"ratio_whole_{label}", "label": f"{label}: / Dasher", "align": "right", "format": ".3f"})
    return cols


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--as", dest="label", default="after", help="the column the default's figures go into")
    parser.add_argument("--languages", nargs="*", default=None, help="codes (default: every comparable one)")
    parser.add_argument("--rnn", action="store_true", help="also the languages an RNN writes (slow on a CPU)")
    parser.add_argument("--reuse-dasher", action="store_true", help="keep Dasher's figures already in the results")
    parser.add_argument("--out", default=str(RESULTS), help="results file, or - to print the JSON")
    args = parser.parse_args(argv)
    from dasher_rnn.languages import shipped_rnn

    codes = args.languages or [c for c in sorted(DASHER5) if dev_file(c) and (args.rnn or shipped_rnn(c) is None)]
    out = Path(args.out)
    old = json.loads(out.read_text()) if args.out != "-" and out.is_file() else None
    table = old["tables"][0] if old else {"id": "languages-day-one", "rows": []}
    rows = {row["key"]: row for row in table["rows"] if row["key"] != "median"}
    label = args.label
    with tempfile.TemporaryDirectory() as tmp:
        for code in codes:
            if (CORPORA / "dasher5" / f"training_{DASHER5[code]}.txt").is_file() is False:
                continue
            row = rows.setdefault(code, {"key": code, "language": code})
            got = measure(code, Path(tmp), row if args.reuse_dasher else None)
            row["dasher_first"], row["dasher_whole"] = got["dasher_first"], got["dasher_whole"]
            for part in ("first", "whole"):
                row[f"default_{part}_{label}"] = got[f"default_{part}"]
                row[f"ratio_{part}_{label}"] = got[f"ratio_{part}"]
            row[f"default_{label}"] = got["default"]
            print(f"{code}: Dasher {got['dasher_first']:.3f} / {got['dasher_whole']:.3f}; default "
                  f"{got['default_first']:.3f} / {got['default_whole']:.3f}; ratio {got['ratio_first']:.3f} / "
                  f"{got['ratio_whole']:.3f}  ({got['default']})", file=sys.stderr, flush=True)
    labels = [lab for lab in ("before", "after") if any(f"ratio_first_{lab}" in r for r in rows.values())]
    labels += sorted({k[len("ratio_first_"):] for r in rows.values() for k in r
                      if k.startswith("ratio_first_")} - set(labels))
    ordered = [rows[k] for k in sorted(rows)]
    median = {"key": "median", "language": "**median**"}
    for key in ("dasher_first", "dasher_whole", *(f"ratio_{p}_{lab}" for p in ("first", "whole") for lab in labels)):
        values = [r[key] for r in ordered if key in r]
        if values:
            median[key] = round(statistics.median(values), 3)
    for lab in labels:
        worse = sum(r.get(f"ratio_first_{lab}", 0) > 1 for r in ordered)
        median[f"worse_{lab}"] = worse
    table.update({
        "columns": columns(labels), "rows": [*ordered, median],
        "commands": ["python bench/languages_day_one.py --as before   # (before the word lists)",
                     "python bench/languages_day_one.py --as after",
                     "# each language: dasher-rnn eval --language XX FILE  against",
                     "#   dasher-rnn eval --model ppm --language XX --train languages/dasher5/training_<language>.txt FILE"],
        "date": table.get("date") or datetime.date.today().isoformat(),
        "machine": table.get("machine") or "an AMD EPYC VM (2 cores, no GPU)",
        "beside": table.get("beside") or "other sessions' tests at nice 10",
        "model": "the app's default for a language without an RNN (PPM order 5, learning as it goes); Dasher's PPM "
                 "order 5 from Dasher 5's text, learning as it goes; the CLDR alphabet, 5% floor",
        "source": "bench/languages_day_one.py (issue 47). before: PPM started empty; after: PPM started from the "
                  "language's shipped word list (assets/training/, SOURCES.md)",
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
