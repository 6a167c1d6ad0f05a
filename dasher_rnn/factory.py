"""Build a language model by name, as the command line and the API ask for one."""

from __future__ import annotations

from pathlib import Path

from dasher_rnn.adapt.dynamic_eval import AdaptConfig
from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.lm.hybrid import HYBRID_PPM_ORDER
from dasher_rnn.lm.protocol import LanguageModel
from dasher_rnn.textio import expand_paths, read_text

MODEL_NAMES = ("rnn", "ppm", "hybrid")


def build_ppm(train: list[str], alphabet: str | None = None, replace_errors: bool = False, max_order: int = 5):
    """Dasher's PPM (order 5 unless told), trained on ``train``."""
    from dasher_rnn.lm.ppm import PPMModel
    from dasher_rnn.normalise import normalise

    model = PPMModel(load_alphabet(alphabet or "english"), max_order=max_order)
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
    if name == "hybrid":
        from dasher_rnn.lm.hybrid import HybridLanguageModel

        rnn, rnn_description = build_language_model(
            "rnn", model_dir=model_dir, alphabet=alphabet, zero_state=zero_state, adapt=adapt, profile=profile,
            profiles_dir=profiles_dir)
        ppm, files = build_ppm(train or [], rnn.alphabet.name, replace_errors, HYBRID_PPM_ORDER)
        trained = ", ".join(f.name for f in files) or "nothing (learns the user's text)"
        return HybridLanguageModel(rnn, ppm), f"hybrid of {rnn_description} and PPM trained on {trained}"
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
        method = "" if adapt.method == "full" else f" ({adapt.method}{'' if adapt.feed else ', head only'})"
        learning = f", dynamic evaluation{method} {adapt.rule} eta {adapt.eta} lam {adapt.lam} n {adapt.segment}"
    else:
        model, learning = RNNLanguageModel(net, model_alphabet, zero_state), ""
    state = "zero" if zero_state else "learned"
    return model, f"RNN {model.describe()} from {model_dir}{origin}, {state} initial state{learning}"


SOURCE_NAMES = ("rnn", "ppm", "hybrid", "uniform")
HYBRID_STATE_FILE = "ppm.safetensors"  # the hybrid's PPM counts and mixing weights, in the profile's folder


def build_source(name: str, *, model_dir: str | Path | None = None, ppm_train: list[str] | None = None,
                 alphabet: str | None = None, adapt: bool = True, profile: str | None = None,
                 profiles_dir: str | None = None, backend: str = "auto", threads: int | None = None):
    """The prediction source behind the zoom: the RNN predictor service (adapting to committed text through
    a writing session when ``adapt``), PPM (learning committed text, as Dasher), the two mixed, or uniform."""
    from dasher_rnn.zoom.sources import HybridSource, PPMSource, ServiceSource, UniformSource

    if name == "hybrid":
        rnn = build_source("rnn", model_dir=model_dir, alphabet=alphabet, adapt=adapt, profile=profile,
                           profiles_dir=profiles_dir, backend=backend, threads=threads)
        state_file = None
        if profile is not None:
            from dasher_rnn.adapt.profiles import ProfileStore

            state_file = ProfileStore(profiles_dir).path(profile) / HYBRID_STATE_FILE
        ppm = build_ppm(ppm_train or [], rnn.alphabet.name, max_order=HYBRID_PPM_ORDER)[0]
        return HybridSource(rnn, ppm, state_file=state_file)
    if name == "ppm":
        model, _ = build_ppm(ppm_train or [], alphabet)
        return PPMSource(model)
    if name == "uniform":
        return UniformSource(load_alphabet(alphabet or "english"))
    if name != "rnn":
        raise ValueError(f"unknown model {name!r} (choose from {', '.join(SOURCE_NAMES)})")
    from dasher_rnn.adapt.profiles import ProfileStore
    from dasher_rnn.adapt.session import WritingSession
    from dasher_rnn.lm.model_io import read_checked_config
    from dasher_rnn.paths import DEFAULT_MODEL_DIR
    from dasher_rnn.predictor.backends import cuda_available
    from dasher_rnn.predictor.service import PredictorService

    model_dir = Path(model_dir or DEFAULT_MODEL_DIR)
    _, model_alphabet = read_checked_config(model_dir)
    if alphabet and alphabet != model_alphabet.name:
        raise ValueError(f"the RNN model predicts alphabet {model_alphabet.name!r}, not {alphabet!r}")
    if adapt and backend == "auto":
        # adapted weights are swapped into the predictor, which onnxruntime cannot do
        backend = "cuda" if cuda_available() else "torch"
    service = PredictorService.from_dir(model_dir, backend, threads)
    session = None
    if adapt:
        store = ProfileStore(profiles_dir) if profile is not None else None
        session = WritingSession(model_dir, profile=profile, store=store, service=service)
    return ServiceSource(service, session)
