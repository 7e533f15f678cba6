"""API models of the learning loop: retrieve (task, context, options, the ranked lessons with
their breakdown) and a lesson's outcome history. Bounded at the door as `schemas.lessons` says."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from tunemem.memory_service.core.schemas.inbound import Inbound
from tunemem.memory_service.core.schemas.knob_fields import option_fields, request_field
from tunemem.memory_service.core.schemas.lessons import (
    Applicability,
    FreeJSON,
    LessonKind,
    SourceRunPublic,
    Stage,
    ValuePublic,
)
from tunemem.memory_service.core.schemas.transfer import (
    GlossaryEntryPublic,
    ToolchainBreakdown,
)
from tunemem.memory_service.core.schemas.values import Estimator
from tunemem.retrieval.ranking import RankedLesson


class TaskIn(Inbound):
    model_config = ConfigDict(extra="forbid")

    op: str | None = Field(None, max_length=128)
    kernel: str | None = Field(None, max_length=256)
    signature: FreeJSON = Field(default_factory=dict)
    dtype: str | None = Field(None, max_length=32)


class ContextIn(Inbound):
    model_config = ConfigDict(extra="forbid")

    chip: str | None = Field(None, max_length=128)
    backend: str | None = Field(None, max_length=16)
    model: str | None = Field(None, max_length=128)
    scenario: str | None = Field(None, max_length=128)
    toolchain: dict[str, Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=dict,
        max_length=16,
        description='versions the attempt runs under, e.g. {"triton": "3.6.0", "torch": "2.11"}',
    )

    @field_validator("toolchain")
    @classmethod
    def _lower_components(cls, value: dict[str, str]) -> dict[str, str]:
        if any(len(k) > 64 for k in value):
            raise ValueError("a toolchain component name has at most 64 characters")
        return {k.strip().lower(): v.strip() for k, v in value.items() if k.strip()}


if TYPE_CHECKING:
    _Options = Inbound
else:
    _Options = create_model("_Options", __base__=Inbound, **option_fields())


class RetrieveOptions(_Options):
    """Per-request overrides of the ranking knobs: one optional field per knob of
    `retrieval.knobs` that a request may set (None: the service's setting)."""

    model_config = ConfigDict(extra="forbid")


_K, _K_FIELD = request_field("k")  # a request sets k at its own level


class RetrieveRequest(Inbound):
    model_config = ConfigDict(extra="forbid")

    query: str = Field("", max_length=10_000)
    task: TaskIn = Field(default_factory=TaskIn)
    context: ContextIn = Field(default_factory=ContextIn)
    stage: Stage
    k: _K = _K_FIELD  # type: ignore[valid-type]  # from the knob table: int | None
    options: RetrieveOptions = Field(default_factory=RetrieveOptions)


class Breakdown(BaseModel):
    similarity: float
    value: float
    value_scope: str
    estimator: Estimator = Field(
        description="which estimate `value` is (generalised or chain), named as reports name it"
    )
    n: int
    exploration: float
    z_sim: float
    z_value: float
    ci_low: float
    ci_high: float
    value_terms: dict[str, float] = Field(
        default_factory=dict, description="share of the value's weight per term it came from"
    )
    claim_trust: dict[str, float] = Field(
        default_factory=dict, description="recorded terms discounted by failed reproductions"
    )
    toolchain: ToolchainBreakdown | None = Field(
        None, description="present when the query's context names its toolchain"
    )
    source_run: SourceRunPublic | None = Field(
        None,
        description="how the run the lesson was distilled from was measured (origin, coverage, "
        "the device the runtime reported); null: no stored run",
    )

    @classmethod
    def of(cls, ranked: RankedLesson, estimator: Estimator) -> Breakdown:
        """The breakdown of one ranked lesson: every field of the ranking's record, by the same
        name (a test holds the two together), and which estimate its value is."""
        shown = {
            f.name: getattr(ranked, f.name) for f in fields(ranked) if f.name in cls.model_fields
        }
        return cls(**shown, estimator=estimator)


class RetrievedLesson(BaseModel):
    id: str
    kind: LessonKind
    text: str
    hint: dict[str, Any] | None
    code: str | None
    applicability: Applicability
    score: float
    transferred: bool
    source_scope: str | None
    rendered_text: str | None
    warning: bool
    breakdown: Breakdown
    caveat: str | None = Field(
        None,
        description="why a failure from a resource limit of its chip does (or does not) warn "
        "on this chip; when it does not, warning is false and no search excludes its settings",
    )
    glossary: list[GlossaryEntryPublic] = Field(
        default_factory=list, description="for a transferred lesson: its terms on the target"
    )
    stale: bool = Field(False, description="all its evidence is from superseded toolchain versions")


class RetrieveResponse(BaseModel):
    retrieval_id: str
    stage: Stage
    chip: str | None
    scope_chain: list[str]
    lessons: list[RetrievedLesson]
    settings: dict[str, Any]
    # What the caller should know about its request: a chip name the registry does not know.
    warnings: list[str] = []


class OutcomePublic(BaseModel):
    id: int
    retrieval_id: str
    stage: Stage
    scope_chain: list[str]
    compiled: bool
    correct: bool | None
    latency_ms: float | None
    best_before_ms: float | None
    error: str | None
    reward: float
    reporter: str | None
    origin: str = Field("unstated", description="how the numbers were obtained")
    device_reported: str | None = None
    created_at: datetime
    config: dict[str, Any] | None = None
    credit: dict[str, str] = Field(default_factory=dict)
    timings_ms: list[float] | None = None
    latency_spread_ms: float | None = None
    repetitions: int | None = None


class LessonHistory(BaseModel):
    lesson_id: str
    outcomes: list[OutcomePublic]
    values: list[ValuePublic]
