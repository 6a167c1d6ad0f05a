"""RNNs beyond English at equal compute: one model per language against one multilingual model.

    python bench/history/language_models.py --out runs/languages --steps 100 --languages de fr es

Per language: ``dasher-rnn train`` on ``languages/aac/<lang>`` (and Dasher 5's text for it where there is one),
started from the shipped English model with the language's alphabet (the symbols both have keep their weights),
``--steps`` steps; then ``dasher-rnn eval`` (static, Dasher's 5% floor) on ``languages/dev/<lang>``.
Multilingual (its run folder is ``models/checkpoints/languages-<codes>``, whose checkpoint is committed): one model over
the union of the languages' alphabets, trained on all of them for
``--steps`` x the number of languages (the same compute as the per-language models together), then given each
language's own learned initial state (the start of that language's messages) and scored on its dev set.
Prints one JSON object: bits per character per language and way, and the same-data PPM baseline (Dasher's PPM,
order 5, trained on the same ``aac/`` text and learning as it goes). Runs resume where they stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = Path(os.path.relpath(ROOT.parent / "shared" / "corpora" / "languages"))  # relative: the runs' READMEs
# give a command that resumes on another machine with the same layout
DASHER5 = {"de": "german_DE", "fr": "french_FR", "es": "spanish_ES", "it": "italian_IT", "nl": "dutch_NL",
           "pl": "polish_PL", "pt": "portuguese_BR", "sv": "swedish_SE", "da": "danish_DK", "fi": "finnish_FI",
           "cs": "czech_CS", "tr": "turkish_TR", "ru": "russian_RU", "he": "hebrew_IL", "fa": "persian_IR",
           "el": "greek_GR", "cy": "welsh_GB", "eu": "basque_ES", "sq": "albanian_SQ", "sw": "swahili_KE",
           "mn": "mongolian_MN", "bn": "bengali_BD"}


def aac(code: str) -> Path:
    (path,) = sorted((LANGUAGES / "aac").glob(f"{code}_*.txt"))
    return path


def dev(code: str) -> Path:
    (path,) = sorted((LANGUAGES / "dev").glob(f"{code}_*.txt"))
    return path


def texts(code: str) -> list[str]:
    """The training text of a language: its AAC sentences, and Dasher 5's text where it has one."""
    paths = [str(aac(code))]
    if code in DASHER5 and (LANGUAGES / "dasher5" / f"training_{DASHER5[code]}.txt").is_file():
        paths.append(str(LANGUAGES / "dasher5" / f"training_{DASHER5[code]}.txt"))
    return paths


def run(*args: str, capture: bool = True) -> str:
    """A dasher-rnn command; its output when ``capture`` (a training run writes to this script's stderr instead, so
    that it outlives this script if this script is stopped)."""
    print("$", " ".join(args), file=sys.stderr, flush=True)
    done = subprocess.run([sys.executable, "-m", "dasher_rnn", *args], check=True, text=True,
                          stdout=subprocess.PIPE if capture else sys.stderr)
    return done.stdout or ""


def overall(report: str) -> float:
    return float(json.loads(report)["overall"]["bits_per_char"])


def train(out: Path, paths: list[str], alphabet: str, steps: int, args: argparse.Namespace) -> Path:
    from dasher_rnn.lm.model_io import read_config

    start = read_config(Path(args.init_from))["architecture"]
    if not (out / "model" / "config.json").is_file():
        run("train", *paths, "--out", str(out), "--alphabet", alphabet, "--init-from", args.init_from,
            "--embed", str(start["embed_size"]), "--hidden", str(start["hidden_size"]), "--layers", str(start["layers"]),
            "--steps", str(steps), "--lr", str(args.lr), "--warmup", "20", "--decay-frac", "0.3",
            "--eval-every", "50", "--checkpoint-every", "25", "--threads", str(args.threads), "--no-progress",
            capture=False)
    return out / "model"


def union_alphabet(codes: list[str], path: Path) -> Path:
    """The languages' union alphabet (``dasher_rnn.languages.union_alphabet``) written to ``path``."""
    from dasher_rnn.languages import union_alphabet as union

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(union(codes).to_json(), ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def for_language(model_dir: Path, code: str, out: Path, seed: int = 0) -> Path:
    """A copy of a multilingual model folder whose learned initial state is fitted to ``code``'s messages."""
    import torch

    from dasher_rnn.lm.corpus import SourceSpec, build_corpus
    from dasher_rnn.lm.init_state import learn_initial_state
    from dasher_rnn.lm.model_io import load_model, save_model

    if (out / "config.json").is_file():
        return out
    model, alphabet, config = load_model(model_dir)
    corpus = build_corpus([SourceSpec(code, texts(code))], alphabet, out.parent / f"corpus-{code}")
    with torch.enable_grad():
        info = learn_initial_state(model, corpus, seed=seed, log=lambda *_: None)
    save_model(out, model, alphabet, info={**config, "initial_state": info, "language": code})
    return out


def main() -> int:
    from dasher_rnn.paths import DEFAULT_MODEL_DIR

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder of the runs")
    parser.add_argument("--languages", nargs="+", default=["de", "fr", "es"])
    parser.add_argument("--steps", type=int, default=100, help="steps per language")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--init-from", default=str(DEFAULT_MODEL_DIR))
    parser.add_argument("--ways", nargs="+", default=["ppm", "single", "multilingual"])
    args = parser.parse_args()
    out = Path(args.out)
    results: dict[str, dict[str, float]] = {code: {} for code in args.languages}
    for code in args.languages:
        if "ppm" in args.ways:
            results[code]["ppm_same_data"] = overall(run("eval", "--model", "ppm", "--alphabet", code, "--train",
                                                         str(aac(code)), str(dev(code)), "--json"))
        if "single" in args.ways:
            model = train(out / code, texts(code), code, args.steps, args)
            results[code]["single"] = overall(run("eval", "--model-dir", str(model), "--static", str(dev(code)),
                                                  "--json"))
    if "multilingual" in args.ways:  # the run that may go on: its checkpoint is committed (models/checkpoints/)
        run_dir = Path("models") / "checkpoints" / ("languages-" + "-".join(args.languages))
        alphabet = run_dir / "alphabet.json"
        if not alphabet.is_file():
            union_alphabet(args.languages, alphabet)
        paths = [p for code in args.languages for p in texts(code)]
        model = train(run_dir, paths, str(alphabet), args.steps * len(args.languages), args)
        for code in args.languages:
            folder = for_language(model, code, out / f"multilingual-{code}")
            results[code]["multilingual"] = overall(run("eval", "--model-dir", str(folder), "--static",
                                                        str(dev(code)), "--json"))
    for figures in results.values():
        if "ppm_same_data" in figures:
            for way in ("single", "multilingual"):
                if way in figures:
                    figures[f"{way}_vs_ppm"] = round(figures[way] / figures["ppm_same_data"], 4)
    print(json.dumps({"steps_per_language": args.steps, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
