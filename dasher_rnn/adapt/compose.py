"""The composition root: a Writer from plain values. The app, ``simulate``, ``eval``, ``adapt``, the API's
sessions and the BciPy adapter all build their predictor here, and nowhere else.

The model folder is read and verified once (``lm.model_io.open_model``) and everything that serves or
adapts the RNN is built from what was read; a static RNN on onnxruntime reads only what it needs.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from dasher_rnn.adapt.evaluation import AdaptConfig
from dasher_rnn.adapt.writer import MODELS, Writer
from dasher_rnn.alphabet import load_alphabet
from dasher_rnn.extras import require_torch
from dasher_rnn.lm.protocol import DASHER_FLOOR
from dasher_rnn.textio import expand_paths, read_text

if TYPE_CHECKING:
    from dasher_rnn.predictor.backends import Backend

log = logging.getLogger(__name__)

DASHER_PPM_ORDER = 5  # Dasher's own PPM, the "ppm" model
HYBRID_PPM_ORDER = 8  # see lm/hybrid.py


@dataclass(frozen=True)
class WriterConfig:
    """Everything a Writer is built from (the front ends fill it from their options or preferences)."""

    model: str = "hybrid"  # rnn | ppm | hybrid | uniform
    model_dir: str | Path | None = None  # the RNN's folder (default: the shipped model)
    profile: str | None = None  # the user's profile, loaded at start and saved by ``Writer.save``
    profiles_dir: str | Path | None = None
    adapt: bool = True  # learn what is committed
    adaptation: AdaptConfig = field(default_factory=AdaptConfig)  # how the RNN learns
    adapt_engine: str = "auto"  # auto | torch | numpy: what computes it (``adapt/evaluation.py::choose_engine``)
    ppm_train: tuple[str, ...] = ()  # text PPM starts from (files or folders)
    ppm_words: str | None = None  # a word list PPM starts from (``start_words.py``); None: the default, a language
    # without an RNN starts from its shipped list; "": none (PPM starts empty, as before issue 47)
    alphabet: str | None = None  # ppm and uniform (the RNN predicts its own)
    language: str | None = None  # a language code: its alphabet, and the RNN that writes it (``for_language``)
    backend: str = "auto"  # auto | onnx | torch | cuda (an adapting RNN: onnx only with the fused int8 export)
    threads: int | None = None
    budget: int = 3000  # cached context states
    zero_state: bool = False  # RNN messages start from the zero state, not the learned one (research)
    floor: float = DASHER_FLOOR
    replace_errors: bool = False  # read PPM training text with invalid UTF-8 replaced
    read_only: bool = False  # never save the profile (and so never hold it): ``eval``
    autosave_s: float | None = None  # save the profile in the background this often while learning (the app); None:
    # only when asked (``Writer.save``, ``close``)


def build_ppm(train: list[str] | tuple[str, ...], alphabet: str | None = None, max_order: int = DASHER_PPM_ORDER,
              replace_errors: bool = False, words: str | Path | None = None):
    """PPM (Dasher's order 5 unless told; never above what the alphabet's size allows, 6 beyond 127 symbols) trained
    on ``train`` and on the lines made from the word list ``words`` (``start_words.words_text``); (model, the files
    read)."""
    from dasher_rnn.lm.ppm import PPMModel, max_order_for
    from dasher_rnn.normalise import normalise

    symbols = load_alphabet(alphabet or "english")
    model = PPMModel(symbols, max_order=min(max_order, max_order_for(symbols)))
    files = expand_paths(list(train))
    texts = [normalise(read_text(f, replace_errors=replace_errors), model.alphabet) for f in files]
    if words:  # each line its own segment, as a message is
        from dasher_rnn.start_words import read_words, words_text

        texts += [normalise(line, model.alphabet) for line in words_text(read_words(words))]
    # files are separate segments: a context never spans two files
    model.train_text("\x00".join(texts) if texts else "")
    return model, files


def language_profile(profile: str, language: str) -> str:
    """The profile that keeps what ``profile``'s person writes in ``language`` (a code): ``anna.de``; English (or no
    language) keeps the plain name."""
    return profile if language in ("", "en") else f"{profile}.{language}"


def profile_person(name: str) -> tuple[str, str]:
    """(the person, the language) a profile's name stands for: ``anna.de`` is anna's German, ``anna`` her English
    (``""``); a dot not followed by a language code is part of the person's name (``anna.b``)."""
    from dasher_rnn.cldr import find_language

    person, dot, code = name.rpartition(".")
    if dot and person and code != "en" and find_language(code) == code:
        return person, code
    return name, ""


def for_language(config: WriterConfig) -> tuple[WriterConfig, str | None]:
    """``config`` with its language resolved: the language's alphabet for PPM and uniform, the shipped RNN that writes
    it, and where none does, PPM alone in place of the hybrid (an RNN asked for by name is an error); with a notice
    saying so, or None. An unknown language raises AlphabetError.

    Each language keeps its own profile, named after the person's with the language's code (``anna.de``; English
    keeps the plain name): what a model learned is tied to its alphabet and its weights, so one language's learning
    cannot be another's, and a person who writes in two languages switches without losing either."""
    code = config.language
    if not code:
        return config, None
    from dasher_rnn.languages import language_alphabet, shipped_rnn

    alphabet = language_alphabet(code)
    if config.profile is not None:
        config = replace(config, profile=language_profile(config.profile, alphabet.language))
    if config.model not in ("rnn", "hybrid") or config.model_dir is not None:
        return replace(config, alphabet=config.alphabet or alphabet.name), None
    folder = shipped_rnn(alphabet.language or code)
    if folder is not None:
        return replace(config, model_dir=folder), None
    if config.model == "rnn":
        raise ValueError(f"no RNN writes {code!r} yet (`dasher-rnn languages` lists those that do): "
                         "--model ppm writes it, learning as you write")
    from dasher_rnn.start_words import word_list

    words = word_list(alphabet.language or code) if not config.ppm_train and config.ppm_words is None else None
    notice = f"no RNN writes {code!r} yet: PPM alone predicts, learning as you write" + (
        f", started from the {words.stem} word list" if words is not None else "")
    return replace(config, model="ppm", alphabet=alphabet.name,
                   ppm_words=str(words) if words is not None else config.ppm_words), notice


def _stateful(config: WriterConfig) -> bool:
    """Whether the RNN needs a writing session (it learns, or may: a profile can be resumed later)."""
    return config.model in ("rnn", "hybrid") and (config.adapt or config.profile is not None)


def build_writer(config: WriterConfig, trained_ppm=None) -> Writer:
    """A Writer for ``config``. ``trained_ppm``: PPM already trained on ``config.ppm_train`` (forked here),
    for callers that build many writers (the API)."""
    from dasher_rnn.adapt.profiles import ProfileStore

    if config.model not in MODELS:
        raise ValueError(f"unknown model {config.model!r} (choose from {', '.join(MODELS)})")
    config, notice = for_language(config)
    store, lock = None, None
    if config.profile is not None:
        store = ProfileStore(config.profiles_dir)
        lock = store.lock(config.profile) if not config.read_only else None
    try:
        return _build(config, store, lock, trained_ppm, notice)
    except BaseException:
        if lock is not None:
            lock.release()
        raise


def _build(config: WriterConfig, store, lock, trained_ppm, notice: str | None = None) -> Writer:
    from dasher_rnn.adapt.profile_files import ProfileError

    saved = None
    if store is not None:  # repaired part by part (what was lost is in saved.notices), or read as it is: ``eval``
        saved = store.load(config.profile, repair=not config.read_only)

    service = session = mixer = folder = None
    parts, alphabet = [], None
    if config.model in ("rnn", "hybrid"):
        service, session, folder, about, notice = _build_rnn(config, saved, notice)
        alphabet = service.alphabet
        if config.alphabet and config.alphabet != alphabet.name:
            service.close()
            raise ValueError(f"the RNN model predicts alphabet {alphabet.name!r}, not {config.alphabet!r}")
        parts.append(f"RNN {about} on {service.backend.name}"
                     + (f", {_describe_adaptation(config.adaptation)}" if session is not None else ", static")
                     + (" in numpy" if session is not None and session.engine == "numpy" else "")
                     + (", zero initial state" if config.zero_state else ""))
    if config.model in ("ppm", "hybrid"):
        from dasher_rnn.lm.hybrid import HybridMixer

        order = HYBRID_PPM_ORDER if config.model == "hybrid" else DASHER_PPM_ORDER
        name = alphabet.name if alphabet is not None else config.alphabet
        if trained_ppm is not None:
            ppm, files = trained_ppm.fork(), []
        else:
            ppm, files = build_ppm(config.ppm_train, name, order, config.replace_errors, config.ppm_words)
        mixer = HybridMixer(ppm)
        alphabet = ppm.alphabet
        data = saved.parts.get("ppm") if saved is not None else None
        restored = False  # PPM's counts (its training text's and the user's) are the profile's
        while data is not None and saved is not None:
            try:
                mixer.restore(data)
                restored = True
                break
            except ValueError as exc:
                try:
                    data = saved.reject("ppm", str(exc))  # its previous version, or None: PPM starts afresh
                except ProfileError:  # read only: nothing is set aside, and PPM starts afresh
                    notice = _joined(notice, f"the PPM state of profile {config.profile!r} could not be used ({exc}); "
                                             "PPM starts afresh")
                    data = None
        trained = ", ".join([f.name for f in files] + ([f"the word list {Path(config.ppm_words).name}"]
                                                       if config.ppm_words and trained_ppm is None else [])
                            ) or ("its training text" if trained_ppm is not None else "nothing")
        parts.append(f"PPM order {order} with what profile {config.profile!r} learned" if restored
                     else f"PPM order {order} trained on {trained}")
    if config.model == "uniform":
        alphabet = load_alphabet(config.alphabet or "english")
        parts.append(f"uniform over {alphabet.name}")
    assert alphabet is not None  # every model in MODELS set it above
    if saved is not None:
        notice = _joined(notice, *saved.notices)
    description = (" mixed with ".join(parts)) + (f", profile {config.profile!r}" if config.profile else "")
    return Writer(config.model, alphabet, service=service, session=session, mixer=mixer,
                  store=None if config.read_only else store, lock=lock,
                  profile=config.profile, base_hash=folder.base_hash if folder is not None else None,
                  adapt=config.adapt, floor=config.floor, description=description, notice=notice,
                  autosave_s=None if config.read_only else config.autosave_s)


def _joined(*notices: str | None) -> str | None:
    return "; ".join(n for n in notices if n) or None


def _build_rnn(config: WriterConfig, saved, notice: str | None):
    from dasher_rnn.adapt.session import WritingSession
    from dasher_rnn.lm.model_io import onnx_exports, open_model, read_checked_config
    from dasher_rnn.paths import DEFAULT_MODEL_DIR
    from dasher_rnn.predictor.backends import OnnxBackend, cuda_available, make_backend, swaps_weights
    from dasher_rnn.predictor.service import PredictorService

    model_dir = Path(config.model_dir or DEFAULT_MODEL_DIR)
    backend = config.backend
    checked = read_checked_config(model_dir) if config.language else None  # (config, alphabet), read once
    language = _written_language(checked[0], config.language) if checked and config.language else None
    # the writing session adapts a copy of the weights; a multilingual model takes the language's initial state
    folder = open_model(model_dir) if _stateful(config) or language else None
    if folder is not None and language:
        folder = folder.for_language(language)
    if _stateful(config):
        assert folder is not None
        # adapted weights are swapped into the predictor: the torch backends can, and onnxruntime can when the
        # folder's int8 export is the fused LSTM step and no state adapter is adapting
        if backend == "cuda" or (backend == "auto" and cuda_available()):
            backend = "cuda"
        elif backend in ("auto", "onnx") and swaps_weights(folder.config) and not config.zero_state \
                and config.adaptation.adapter_spec is None:
            backend = "onnx"
        else:
            if backend != "torch":  # torch because nothing else can serve this: say why where torch is missing
                require_torch(_torch_reason(config, folder))
            backend = "torch"
    elif backend == "auto":
        backend = "cuda" if cuda_available() else "onnx" if onnx_exports(model_dir) and not config.zero_state \
            else "torch"
        if backend == "torch":
            require_torch(f"the zero initial state of {model_dir}" if config.zero_state
                          else f"serving {model_dir}, which has no ONNX export,")
    source: Backend
    if backend == "onnx" and folder is None:  # a static RNN on onnxruntime reads what it needs itself: no torch load
        model_config, alphabet = checked or read_checked_config(model_dir)
        source = OnnxBackend(model_dir, config.threads, config=model_config)
    else:
        folder = folder or open_model(model_dir)
        model_config, alphabet = folder.config, folder.alphabet
        source = make_backend(folder, backend, config.threads, config.zero_state)
    if language:  # the language's alphabet, a subset of the model's: the distributions renormalised over it
        from dasher_rnn.languages import language_alphabet
        from dasher_rnn.lm.model_io import ModelFileError
        from dasher_rnn.predictor.backends import LanguageView

        writing = language_alphabet(language)
        missing = "".join(ch for ch in writing.symbols if ch not in alphabet)
        if missing:
            raise ModelFileError(f"{model_dir}: the model's alphabet lacks {missing!r} of {language!r}")
        source = LanguageView(source, [alphabet.index(ch) for ch in writing.symbols])
        alphabet = writing
    service = PredictorService(source, alphabet, budget=config.budget, floor=config.floor)
    session = None
    if _stateful(config):
        assert folder is not None  # opened above for a stateful RNN
        try:  # an RNN part this model cannot use is set aside and its previous version tried (saved.notices)
            session = WritingSession(folder, config.adaptation, service, config.adapt, saved, config.adapt_engine)
        except BaseException:
            service.close()
            raise
    about = describe_model(model_dir, model_config) + (f" writing {language}" if language else "")
    return service, session, folder, about, notice


def _torch_reason(config: WriterConfig, folder) -> str:
    """Why an adapting (or profile-carrying) RNN must be served by torch: what ``TorchMissing`` names."""
    from dasher_rnn.lm.model_io import INT8_ONNX_FILE

    cell = folder.config["architecture"].get("cell", "lstm")
    if cell != "lstm":
        return f"the {cell} cell"
    if config.adaptation.adapter_spec is not None:
        return f"the {config.adaptation.method} state adapter"
    if config.zero_state:
        return "the zero initial state"
    return (f"adapting {folder.path} without its fused int8 ONNX export ({INT8_ONNX_FILE}, which `dasher-rnn "
            "export-onnx --int8` writes)")


def _written_language(model_config: dict, code: str) -> str | None:
    """The language ``code`` when the model (its ``model_config``) is a multilingual one that writes it, else None."""
    from dasher_rnn.languages import find_language

    found = find_language(code) or code
    return found if found in (model_config.get("languages") or {}) else None


def describe_model(model_dir: Path, model_config: dict) -> str:
    arch = model_config["architecture"]
    return f"{arch.get('cell', 'lstm')} {arch['layers']}x{arch['hidden_size']} from {model_dir}"


def _describe_adaptation(a: AdaptConfig) -> str:
    method = "" if a.method == "full" else f" ({a.method}{'' if a.feed else ', head only'})"
    return f"dynamic evaluation{method} {a.rule} eta {a.eta} lam {a.lam} n {a.segment}"
