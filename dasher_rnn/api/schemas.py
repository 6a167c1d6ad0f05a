"""Request and response bodies of the predictor API (they give the OpenAPI schema).

Requests are strict: no type coercion ("3" is not a number, 1 is not true) and no unknown fields,
so a client's mistake is a 422 that names the field instead of a silent guess.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Format = Literal["log_probs", "counts"]
Unknown = Literal["reject", "break"]

FORMAT_DOC = ("log_probs: natural-log probabilities (float32 values) in alphabet order; counts: Dasher's integers, "
              "summing exactly to 65536 with every symbol at least the floor")
UNKNOWN_DOC = ("characters outside the alphabet (after normalisation): reject with a 422 naming the character, "
               "or break the context there as Dasher does")


class Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class SessionCreate(Strict):
    profile: str | None = Field(None, description="user profile to load and save (letters, digits, . _ -); "
                                                  "none: an anonymous session that saves nothing")
    adapt: bool = Field(True, description="learn from committed text")
    model: Literal["hybrid", "rnn", "ppm"] = Field(
        "hybrid", description="'hybrid': the RNN mixed with an adaptive PPM that remembers the user's words (kept with "
                           "the profile); 'ppm': that PPM alone (Dasher's PPM, order 8)")


class ContextSpec(Strict):
    text: str | None = Field(None, description="a new root: the context text ('' for a message start)")
    parent: int | None = Field(None, description="a context handle of this session to extend")
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
    contexts: list[int] = Field(description="context handles; distributions come back in this order")
    format: Format = Field("log_probs", description=FORMAT_DOC)
    priority: float = Field(0.0, allow_inf_nan=False, description="larger is served first when requests queue")


class CommitRequest(Strict):
    text: str = Field(description="characters the user has committed (written), in order")
    unknown: Unknown = Field("reject", description=UNKNOWN_DOC)
    wait: bool = Field(False, description="answer only when the adaptation has caught up, so the next request "
                                          "is served by the updated weights")


class DeleteRequest(Strict):
    count: int = Field(description="committed characters the user has deleted (backed out of)")
    wait: bool = False


class WaitRequest(Strict):
    wait: bool = False


class AdaptRequest(Strict):
    enabled: bool


class PredictRequest(Strict):
    contexts: list[str] = Field(description="context texts; one distribution each, in order")
    format: Format = Field("log_probs", description=FORMAT_DOC)
    unknown: Unknown = Field("reject", description=UNKNOWN_DOC)


# -- responses (documentation: the server writes its JSON directly) ---------------------------
class ErrorBody(BaseModel):
    code: str = Field(description="stable, machine-readable")
    message: str = Field(description="what is wrong, for a person")


class ErrorResponse(BaseModel):
    error: ErrorBody


class SessionInfo(BaseModel):
    session: str
    profile: str | None
    adapt: bool
    contexts: int = 0
    backend: str | None = None
    weights_version: int | None = None
    notice: str | None = Field(None, description="e.g. a broken profile that was set aside")
    adaptation: dict | None = None


class ContextInfo(BaseModel):
    handle: int
    distribution: list[float] | list[int] | None = None


class ContextBatchInfo(BaseModel):
    handles: list[int]
    distributions: list[list[float]] | list[list[int]] | None = None


class Distributions(BaseModel):
    format: Format
    distributions: list[list[float]] | list[list[int]]


class Done(BaseModel):
    ok: bool = True
    committed: int | None = None
    weights_version: int | None = None


class ModelInfo(BaseModel):
    model: str
    alphabet: dict
    architecture: dict
    total: int = Field(description="what counts sum to")
    floor: float
    backend: str | None
    limits: dict
    api_version: str


class Health(BaseModel):
    status: str
    sessions: int
    uptime_s: float
