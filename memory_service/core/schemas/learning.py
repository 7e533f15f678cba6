"""API models of the learning loop: retrieve (task, context, options, the ranked lessons with
their breakdown) and a lesson's outcome history. Bounded at the door as `schemas.lessons` says."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory_service.core.schemas.inbound import Inbound
from memory_service.core.schemas.lessons import (
    Applicability,
    FreeJSON,
    LessonKind,
    Number,
    Stage,
    ValuePublic,
)
from memory_service.core.schemas.transfer import (
    GlossaryEntryPublic,
    ToolchainBreakdown,
)


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


class RetrieveOptions(Inbound):
    """Per-request overrides of the ranking settings."""

    model_config = ConfigDict(extra="forbid")

    lam: Number | None = Field(None, ge=0.0, le=1.0)
    backoff: bool | None = None
    k_recall: int | None = Field(None, ge=1, le=1000, strict=True)
    exploration_c: Number | None = Field(None, ge=0.0, le=10.0)
    similarity_floor: Number | None = Field(None, ge=-1.0, le=1.0)
    kappa: Number | None = Field(
        None,
        ge=0.0,
        le=1000.0,
        description="shrinkage strength down the scope chain (pseudo-observations)",
    )
    values: Literal["chain", "generalised"] | None = Field(
        None, description="value estimate: chain or generalised (see the settings)"
    )
    value_floor: Number | None = Field(
        None, ge=0.0, le=2.0, description="smallest spread z(value) standardises by"
    )
    affinity_floor: Number | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="generalised values: the least weight any other chip's evidence gets",
    )
    claim_power: Number | None = Field(
        None, ge=0.0, le=8.0, description="how sharply contradicted recorded claims lose weight"
    )


class RetrieveRequest(Inbound):
    model_config = ConfigDict(extra="forbid")

    query: str = Field("", max_length=10_000)
    task: TaskIn = Field(default_factory=TaskIn)
    context: ContextIn = Field(default_factory=ContextIn)
    stage: Stage
    k: int | None = Field(None, ge=1, le=100, strict=True)
    options: RetrieveOptions = Field(default_factory=RetrieveOptions)


class Breakdown(BaseModel):
    similarity: float
    value: float
    value_scope: str
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
    created_at: datetime


class LessonHistory(BaseModel):
    lesson_id: str
    outcomes: list[OutcomePublic]
    values: list[ValuePublic]
