"""Request and response bodies of the predictor API (they give the OpenAPI schema).

Requests are strict: no type coercion ("3" is not a number, 1 is not true) and no unknown fields,
so a client's mistake is a 422 that names the field instead of a silent guess. A whole number may be written as
JSON writes any number (``6254.0``, ``6.254e3``): JSON Schema's ``integer`` is a number without a fraction, and
JavaScript has no other kind; ``6254.5`` is refused.

The published schema says what the server accepts, so that a request it allows is not refused for its shape:
what the models cannot say is added to it, statically (a context is a root or a child, a profile's name) and by
``narrow`` for the rest (the server's limits, a delete count from 1, the language codes). What it cannot
say is state (an unknown handle, a profile in use, a limit on what a session holds), the alphabet (characters
outside it are refused unless ``unknown`` is ``break``) and the body's size in bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from dasher_rnn.api.limits import Limits


def _whole(value: object) -> object:
    """A float without a fraction as the int it is (JSON's ``6254.0``); anything else as it came, for the strict check."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Int = Annotated[int, BeforeValidator(_whole)]  # a whole number, however JSON wrote it; still strict otherwise

Format = Literal["log_probs", "counts"]
Unknown = Literal["reject", "break"]
SessionModel = Literal["hybrid", "rnn", "ppm", "uniform"]

FORMAT_DOC = ("log_probs: natural-log probabilities (float32 values) in alphabet order; counts: Dasher's integers, "
              "summing exactly to 65536 with every symbol at least the floor")
UNKNOWN_DOC = ("characters outside the alphabet (after normalisation): reject with a 422 naming the character, "
               "or break the context there as Dasher does")


# A profile name ``adapt.profiles.check_name`` accepts: 1 to 64 letters, digits, . _ -, starting with a letter or
# digit, not ending with a dot, and not a name Windows keeps for a device (CON, nul.de). ECMA-262 and Python alike.
_DEVICE = "|".join("".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in name)
                   for name in ("con", "prn", "aux", "nul", "com[0-9]", "lpt[0-9]"))
PROFILE_PATTERN = rf"^(?!(?:{_DEVICE})(?:\.|$))[A-Za-z0-9](?:[A-Za-z0-9_.-]{{0,62}}[A-Za-z0-9_-])?$"


def on_string(**keywords: object) -> Callable[[dict], None]:
    """A field's ``json_schema_extra``: ``keywords`` added to its string schema (the string option of an optional
    field), for checks the server makes itself, with its own error code."""
    def extra(schema: dict) -> None:
        for option in schema.get("anyOf", [schema]):
            if option.get("type") == "string":
                option.update(keywords)
    return extra


class Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class SessionCreate(Strict):
    profile: str | None = Field(None, description="user profile to load and save (1 to 64 letters, digits, . _ -, "
                                                  "starting with a letter or digit, not ending with a dot, not a "
                                                  "device name such as CON); none: an anonymous session that saves "
                                                  "nothing", json_schema_extra=on_string(pattern=PROFILE_PATTERN))
    adapt: bool = Field(True, description="learn from committed text")
    model: SessionModel = Field(
        "hybrid", description="'hybrid': the RNN mixed with an adaptive PPM that remembers the user's words (kept with "
                           "the profile); 'rnn': the RNN alone; 'ppm': that PPM alone (Dasher's PPM, order 8); "
                           "'uniform': every symbol equally likely (a baseline, as BciPy's UniformLanguageModel)")
    language: str | None = Field(
        None, pattern=r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8}){0,3}$",
        description="the language written (a code `dasher-rnn languages` lists: de, fr, ar...): its alphabet, the RNN "
                    "that writes it where one ships, else PPM alone (the session's model and notice say so), and a "
                    "profile of its own (PROFILE.de); none: the server's model and alphabet")


class ContextSpec(Strict):
    # either a root (text, no parent, no symbols) or a child (parent, and symbols): the validator below, published
    model_config = ConfigDict(json_schema_extra={"anyOf": [
        {"required": ["text"], "properties": {"text": {"type": "string"}, "parent": {"type": "null"},
                                              "symbols": {"maxLength": 0}}},
        {"required": ["parent"], "properties": {"parent": {"type": "integer"}, "text": {"type": "null"}}},
    ]})

    text: str | None = Field(None, description="a new root: the context text ('' for a message start)")
    parent: Int | None = Field(None, description="a context handle of this session to extend")
    symbols: str = Field("", description="with parent: the symbols appended below it")
    unknown: Unknown = Field("reject", description=UNKNOWN_DOC + " (text only; symbols must be in the alphabet)")

    @model_validator(mode="after")
    def _one_kind(self) -> ContextSpec:
        if (self.text is None) == (self.parent is None):
            raise ValueError("give either text (a new root) or parent (and symbols), not both or neither")
        if self.text is not None and self.symbols:
            raise ValueError("symbols go with parent; put a root's whole context in text")
        return self


class ContextCreate(ContextSpec):
    format: Format | None = Field(None, description="also return the new context's distribution in this format")


class ContextBatch(Strict):
    contexts: list[ContextSpec]
    format: Format | None = Field(None, description="also return the new contexts' distributions in this format")


class DistributionsRequest(Strict):
    contexts: list[Int] = Field(description="context handles; distributions come back in this order")
    format: Format = Field("log_probs", description=FORMAT_DOC)
    priority: float = Field(0.0, allow_inf_nan=False, description="larger is served first when requests queue")


class CommitRequest(Strict):
    text: str = Field(description="characters the user has committed (written), in order")
    unknown: Unknown = Field("reject", description=UNKNOWN_DOC)
    wait: bool = Field(False, description="answer when the adaptation has caught up, so the next request is "
                                          "served by the updated weights, or after the wait limit (the request time "
                                          "limit) with 202 and caught_up false; a commit of \"\" with wait waits "
                                          "again")


class DeleteRequest(Strict):
    count: Int = Field(description="committed characters the user has deleted (backed out of)")
    wait: bool = False


class WaitRequest(Strict):
    wait: bool = False


class AdaptRequest(Strict):
    enabled: bool


class ReleaseRequest(Strict):
    """The WebSocket's ``release`` (over HTTP the handle is in the path)."""

    context: Int = Field(description="the context handle to release, with every context below it")


class NoFields(Strict):
    """The WebSocket's ``info`` and ``save``: nothing but ``op`` and ``id``."""


class PredictRequest(Strict):
    contexts: list[str] = Field(description="context texts; one distribution each, in order")
    format: Format = Field("log_probs", description=FORMAT_DOC)
    unknown: Unknown = Field("reject", description=UNKNOWN_DOC)


def narrow(components: dict, limits: Limits, languages: list[str], rnn_languages: list[str]) -> None:
    """The request schemas of ``components`` (an OpenAPI document's) narrowed to what this server accepts: texts,
    symbols and lists within ``limits``, a delete count up to ``max_text``, a language of ``languages``, and model
    ``rnn`` only without a language or with one of ``rnn_languages``."""
    def field(model: str, name: str) -> dict:
        return components[model]["properties"][name]

    def string(schema: dict) -> dict:
        return next(o for o in schema.get("anyOf", [schema]) if o.get("type") == "string")

    field("PredictRequest", "contexts")["maxItems"] = limits.max_contexts
    field("PredictRequest", "contexts")["items"]["maxLength"] = limits.max_text
    for model in ("ContextSpec", "ContextCreate"):
        string(field(model, "text"))["maxLength"] = limits.max_text
        field(model, "symbols")["maxLength"] = limits.max_symbols
    for model in ("ContextBatch", "DistributionsRequest"):
        field(model, "contexts")["maxItems"] = limits.max_contexts
    field("CommitRequest", "text")["maxLength"] = limits.max_text
    field("DeleteRequest", "count").update(minimum=1, maximum=limits.max_text)
    language = string(field("SessionCreate", "language"))
    language.pop("pattern", None)
    language["enum"] = sorted(languages)
    components["SessionCreate"]["anyOf"] = [
        {"properties": {"model": {"enum": ["hybrid", "ppm"]}}},
        {"properties": {"language": {"anyOf": [{"enum": sorted(rnn_languages)}, {"type": "null"}]}}},
    ]


# -- responses ------------------------------------------------------------------------------
# Each route and WebSocket op answers one of these, checked before it is sent (``extra="forbid"``,
# strict types, finite floats): a body that drifts from its schema is a logged 500, never a silent
# change to the contract published in /openapi.json. A field with a default of None is left out of
# the answer when it does not apply (it is never sent as null unless its type says so).
class Reply(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, ser_json_inf_nan="constants")


Distribution = list[float] | list[int]
DistributionList = list[list[float]] | list[list[int]]


class ErrorDetail(BaseModel):
    loc: list[str] = Field(description="where in the request (field names and list positions)")
    msg: str
    type: str


class ErrorBody(BaseModel):
    model_config = ConfigDict(extra="allow")

    code: str = Field(description="stable, machine-readable")
    message: str = Field(description="what is wrong, for a person")
    details: list[ErrorDetail] | None = Field(None, description="invalid_request: one entry per problem")
    character: str | None = Field(None, description="unknown_character: the character")
    position: int | None = Field(None, description="unknown_character: its position in the (normalised) text")
    alphabet: str | None = Field(None, description="unknown_character: the alphabet's name")
    symbols: str | None = Field(None, description="unknown_character: the alphabet's symbols")


class ErrorResponse(BaseModel):
    error: ErrorBody


class Health(Reply):
    status: Literal["ok", "starting"]
    sessions: int = Field(description="open sessions")
    uptime_s: float


class SymbolGroupInfo(Reply):
    name: str
    symbols: str


class AlphabetInfo(Reply):
    name: str
    symbols: str = Field(description="every symbol, in the order of every distribution")
    size: int
    groups: list[SymbolGroupInfo]


class LimitsInfo(Reply):
    """What one client may ask for (the options of ``dasher-rnn serve``)."""

    max_body_bytes: int = Field(description="one HTTP body or WebSocket message")
    max_contexts: int = Field(description="contexts in one request (distributions, batch creation, predict)")
    max_sessions: int = Field(description="open sessions")
    max_handles: int = Field(description="context handles one session holds")
    max_nodes: int = Field(description="context-tree nodes under one session's roots")
    max_text: int = Field(description="characters of one text (a context's root, a commit, a delete count)")
    max_symbols: int = Field(description="symbols appended below a parent in one context")
    idle_timeout_s: float = Field(description="a session unused this long (no request, no open WebSocket) is closed, "
                                              "its profile saved; 0: never")
    request_timeout_s: float = Field(description="a prediction request (predict, contexts, distributions) running "
                                                 "longer is stopped and answered 503 timeout; 0: never")
    max_connections: int = Field(description="connections the server holds at once (below its file-descriptor limit); "
                                             "at the limit, the one waiting longest for its request is closed to make "
                                             "room, or the new one is answered 503 too_many_connections")
    read_timeout_s: float = Field(description="a client sends a whole request (headers and body) within this many "
                                              "seconds of connecting or of its previous answer, or the connection is "
                                              "closed (408 request_timeout); 0: never")
    max_session_websockets: int = Field(description="WebSockets open on one session; at the limit the one idle "
                                                    "longest is closed (code 4429) to make room for a new one")
    max_client_websockets: int = Field(description="WebSockets open from one client address (on loopback, every "
                                                   "local program together); at the limit, as above")


class ModelInfo(Reply):
    model: str = Field(description="the model folder's name")
    alphabet: AlphabetInfo
    architecture: dict[str, Any] = Field(description="the network's shape, as in the model's config.json")
    validation_bpc: dict[str, float] | None = Field(description="bits/char on each validation source, when known")
    total: int = Field(description="what counts sum to")
    floor: float | None = Field(description="the uniform share every symbol gets in counts (null while starting)")
    backend: str | None = Field(description="the stateless predictor's backend (null while starting)")
    limits: LimitsInfo
    api_version: str
    program_version: str


class Distributions(Reply):
    format: Format
    distributions: DistributionList = Field(description="one per context, in request order; " + FORMAT_DOC)


class SessionSummary(Reply):
    """An open session as any client may see it: never its id, which only the client that opened it holds."""

    profile: str | None
    model: SessionModel
    adapt: bool
    idle_s: float = Field(description="seconds since it was last used (0 while a request runs or a WebSocket is "
                                      "open); it is closed when this reaches the idle timeout")


class SessionList(Reply):
    open: int = Field(description="sessions open")
    max_sessions: int = Field(description="the limit")
    sessions: list[SessionSummary] = Field(description="the open sessions, without their ids")


class AdaptationEvent(Reply):
    model_config = ConfigDict(extra="allow")

    event: str = Field(description="e.g. guard (an update undone) or rollback-beyond-ring; more fields by event")
    offset: int = Field(description="committed characters when it happened")


class AdaptationStats(Reply):
    """The session's Writer status (``WriterStatus``): what learns and what the learning has done."""

    adapting: bool = Field(description="learning now (false when paused)")
    can_adapt: bool = Field(description="whether learning can be switched on in this session")
    learns: list[Literal["rnn", "ppm", "mixing weights"]] = Field(description="what learns while adapting")
    profile: str | None
    updates: int = Field(description="weight updates applied")
    rollbacks: int = Field(description="updates undone because their characters were deleted")
    guard_events: int = Field(description="updates undone because they made predictions worse")
    committed: int = Field(description="characters of the current stream the learner has applied")
    characters_adapted: int = Field(description="characters the profile has learned from, over its life")
    events: list[AdaptationEvent] = Field(description="the latest events (up to 20)")
    notice: str | None = Field(description="e.g. a broken profile set aside, an adaptation error")


class SessionInfo(Reply):
    session: str
    profile: str | None
    model: SessionModel
    language: str = Field(description="the language the session writes ('' where its alphabet names none)")
    alphabet: AlphabetInfo = Field(description="the session's alphabet: its distributions are in this symbol order")
    adapt: bool
    contexts: int = Field(description="context handles held")
    backend: str | None = Field(description="the session's RNN predictor backend (null for ppm sessions: no RNN)")
    weights_version: int = Field(description="weight updates the session's predictor has applied")
    notice: str | None = Field(description="what the user should know, e.g. a broken profile that was set aside")
    adaptation: AdaptationStats | None = Field(None, description="the session's learning; absent when nothing can "
                                                                 "learn (no adaptation and no profile)")


class Closed(Reply):
    session: str
    closed: bool
    saved: bool = Field(description="the profile was saved (false without a profile or with save=false)")


class ContextInfo(Reply):
    handle: int
    distribution: Distribution | None = Field(None, description="when format was given")


class ContextBatchInfo(Reply):
    handles: list[int] = Field(description="in request order")
    distributions: DistributionList | None = Field(None, description="when format was given")


class Ok(Reply):
    ok: bool


class Done(Reply):
    ok: bool
    committed: int | None = Field(description="characters the learner has applied in this message stream (all of "
                                              "them after wait); null when the RNN does not learn (ppm sessions)")
    weights_version: int = Field(description="weight updates applied (the last may still be on its way)")
    caught_up: bool | None = Field(None, description="with wait: whether learning caught up within the wait limit "
                                                     "(the request time limit). False (HTTP 202): it goes on; send "
                                                     "a commit of \"\" with wait to wait again. Absent without wait")


class AdaptDone(Done):
    adapting: bool = Field(description="learning now")


class Saved(Reply):
    ok: bool
    profile: str
    characters_adapted: int | None = Field(description="characters the profile's RNN has learned from; "
                                                       "null for ppm sessions")
