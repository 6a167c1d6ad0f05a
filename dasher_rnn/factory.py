"""Build a language model by name, as the command line and the API ask for one."""

from __future__ import annotations

from pathlib import Path

from dasher_rnn.adapt.dynamic_eval import AdaptConfig
from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.lm.protocol import LanguageModel
from dasher_rnn.textio import expand_paths, read_text

MODEL_NAMES = ("rnn", "ppm")


def build_ppm(train: list[str], alphabet: str | None = None, replace_errors: bool = False):
    from dasher_rnn.lm.ppm import PPMModel
    from dasher_rnn.normalise import normalise

    model = PPMModel(load_alphabet(alphabet or "english"))
    files = expand_paths(train)
    texts = [normalise(read_text(f, replace_errors=replace_errors)) for f in files]
    # files are separate segments: a context never spans two files
    model.train_text("\x00".join(texts) if texts else "")
    return model, files


def build_language_model(name: str, *, model_dir: str | Path | None = None, train: list[str] | None = None,
                         alphabet: str | None = None, replace_errors: bool = False,
                         zero_state: bool = False, adapt: AdaptConfig | None = None) -> tuple[LanguageModel, str]:
    """(model, one-line description) for ``rnn`` (adaptive when ``adapt`` is given) or ``ppm``."""
    if name == "ppm":
        model, files = build_ppm(train or [], alphabet, replace_errors)
        trained = ", ".join(f.name for f in files) or "nothing"
        return model, f"PPM order {model.max_order} ({model.alphabet.name}), trained on {trained}"
    if name == "rnn":
        from dasher_rnn.lm.rnn_lm import RNNLanguageModel

        if adapt is not None:
            from dasher_rnn.adapt.adaptive_lm import AdaptiveRNNLanguageModel

            model = AdaptiveRNNLanguageModel.from_dir(model_dir, zero_state=zero_state, config=adapt)
        else:
            model = RNNLanguageModel.from_dir(model_dir, zero_state=zero_state)
        if alphabet and alphabet != model.alphabet.name:
            raise ValueError(f"the RNN model predicts alphabet {model.alphabet.name!r}, not {alphabet!r}")
        state = "zero" if zero_state else "learned"
        learning = f", dynamic evaluation {adapt.rule} eta {adapt.eta} lam {adapt.lam} n {adapt.segment}" if adapt else ""
        return model, f"RNN {model.describe()} from {model_dir}, {state} initial state{learning}"
    raise ValueError(f"unknown model {name!r} (choose from {', '.join(MODEL_NAMES)})")
