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
                         alphabet: str | None = None, replace_errors: bool = False, zero_state: bool = False,
                         adapt: AdaptConfig | None = None, profile: str | None = None,
                         profiles_dir: str | None = None) -> tuple[LanguageModel, str]:
    """(model, one-line description) for ``ppm`` or ``rnn`` (from a profile's weights when given,
    learning what is committed when ``adapt`` is given)."""
    if name == "ppm":
        model, files = build_ppm(train or [], alphabet, replace_errors)
        trained = ", ".join(f.name for f in files) or "nothing"
        return model, f"PPM order {model.max_order} ({model.alphabet.name}), trained on {trained}"
    if name != "rnn":
        raise ValueError(f"unknown model {name!r} (choose from {', '.join(MODEL_NAMES)})")
    from dasher_rnn.adapt.adaptive_lm import AdaptiveRNNLanguageModel
    from dasher_rnn.adapt.profiles import ProfileStore
    from dasher_rnn.lm.model_io import WEIGHTS_FILE, load_model, load_msg
    from dasher_rnn.lm.rnn_lm import RNNLanguageModel
    from dasher_rnn.paths import DEFAULT_MODEL_DIR

    model_dir = Path(model_dir or DEFAULT_MODEL_DIR)
    net, model_alphabet, config = load_model(model_dir)
    if alphabet and alphabet != model_alphabet.name:
        raise ValueError(f"the RNN model predicts alphabet {model_alphabet.name!r}, not {alphabet!r}")
    origin = ""
    if profile is not None:
        if ProfileStore(profiles_dir).load_into(profile, net, config["files"][WEIGHTS_FILE]) is None:
            raise ValueError(f"no profile named {profile!r}")
        origin = f", profile {profile!r}"
    if adapt is not None:
        msg = load_msg(model_dir, net) if adapt.rule != "sgd" else None
        model: RNNLanguageModel = AdaptiveRNNLanguageModel(net, model_alphabet, adapt, msg, zero_state)
        learning = f", dynamic evaluation {adapt.rule} eta {adapt.eta} lam {adapt.lam} n {adapt.segment}"
    else:
        model, learning = RNNLanguageModel(net, model_alphabet, zero_state), ""
    state = "zero" if zero_state else "learned"
    return model, f"RNN {model.describe()} from {model_dir}{origin}, {state} initial state{learning}"
