"""API models: the request and response shapes of DESIGN section 6 (fields may be added,
never renamed). Table objects never leave the service; these do. The glossary and toolchain
evidence models they hold live in `transfer_models`.

Inputs are bounded at the door, so nothing accepted can fail later: free JSON (`hint`,
`applicability.signature`, `provenance`, `task.signature`) is plain strict JSON of at most
`JSON_MAX_DEPTH` levels and `JSON_MAX_BYTES` bytes; numbers are finite (no NaN or Infinity)
and not booleans; latencies lie within what a measurement can be; every string of a request
is text that the store can keep and serve back (`Inbound`: no NUL, no lone surrogate).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from tunemem.ingest.validate import hint_problem, json_problem
from tunemem.memory_service.core.schemas.inbound import Inbound
from tunemem.memory_service.core.schemas.transfer import (
    EvidencePublic,
)
from tunemem.memory_service.core.schemas.values import ClaimsPublic, ContextValue
from tunemem.retrieval.toolchain import parse_toolchain

LessonKind = Literal["insight", "failure", "exemplar", "api"]
Stage = Literal["draft", "refine"]

JSON_MAX_DEPTH = 16
JSON_MAX_BYTES = 64 * 1024


def _bounded_json(value: dict[str, Any]) -> dict[str, Any]:
    problem = json_problem(value, "value", JSON_MAX_DEPTH)
    if problem is not None:
        raise ValueError(
            f"{problem}; free JSON must be plain and finite, at most {JSON_MAX_DEPTH} levels deep"
        )
    size = len(json.dumps(value, separators=(",", ":"), allow_nan=False))
    if size > JSON_MAX_BYTES:
        raise ValueError(f"{size:,} bytes of JSON; the limit is {JSON_MAX_BYTES:,}")
    return value


# A free JSON object, bounded in depth and size, strict (finite numbers only).
FreeJSON = Annotated[dict[str, Any], AfterValidator(_bounded_json)]


def _usable_hint(value: dict[str, Any]) -> dict[str, Any]:
    problem = hint_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


# A lesson hint as a client sends it: free JSON whose parts the suggester reads have its shapes
# (`ingest.validate.hint_problem`). Stored hints are read as FreeJSON and checked again by the
# suggester, which leaves out what it cannot use.
HintIn = Annotated[dict[str, Any], AfterValidator(_bounded_json), AfterValidator(_usable_hint)]
# A number a client sends: finite, and true/false are not numbers.
Number = Annotated[float, Field(strict=True, allow_inf_nan=False)]


class Applicability(Inbound):
    """Where a lesson applies; an empty list means any."""

    model_config = ConfigDict(extra="forbid")

    op: str | None = Field(None, max_length=128)
    kernel: str | None = Field(None, max_length=256)
    chips: list[str] = Field(default_factory=list, max_length=64)
    families: list[str] = Field(default_factory=list, max_length=32)
    backends: list[str] = Field(default_factory=list, max_length=8)
    models: list[str] = Field(default_factory=list, max_length=64)
    scenarios: list[str] = Field(default_factory=list, max_length=16)
    dtypes: list[str] = Field(default_factory=list, max_length=16)
    signature: FreeJSON = Field(default_factory=dict)


class LessonBase(BaseModel):
    kind: LessonKind
    text: str = Field(min_length=1, max_length=20_000)
    hint: FreeJSON | None = None
    code: str | None = Field(None, max_length=200_000)
    applicability: Applicability = Field(default_factory=Applicability)


class LessonCreate(Inbound, LessonBase):
    model_config = ConfigDict(extra="forbid")

    hint: HintIn | None = None
    provenance: FreeJSON = Field(default_factory=dict)


class LessonsCreate(Inbound):
    model_config = ConfigDict(extra="forbid")

    lessons: list[LessonCreate] = Field(min_length=1, max_length=1000)


class LessonsCreated(BaseModel):
    ids: list[str] = Field(description="one id per submitted lesson, in order")
    merged: list[str] = Field(description="ids that the submitted lessons merged into")
    created: list[str] = Field(default_factory=list, description="ids newly stored")


class LessonUpdate(Inbound):
    model_config = ConfigDict(extra="forbid")

    kind: LessonKind | None = None
    text: str | None = Field(None, min_length=1, max_length=20_000)
    hint: HintIn | None = None
    applicability: Applicability | None = None

    @model_validator(mode="after")
    def _no_null_required_fields(self) -> LessonUpdate:
        # Leaving a field out keeps it; null would erase a field every lesson must have.
        for name in ("kind", "text", "applicability"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} may be left out but not null")
        return self


class SourceRunPublic(BaseModel):
    """How the run a lesson was distilled from was measured (`ingest.provenance`)."""

    trajectory_id: str
    chip: str
    origin: str = Field(
        description="measured, recorded, replayed, simulated, shipped, hand-entered or unstated"
    )
    coverage: str = Field(description="complete (a whole recorded space), partial or unstated")
    device_reported: str | None = Field(
        None, description="the device the runtime reported, for a measured run"
    )


class LessonPublic(LessonBase):
    id: str
    provenance: dict[str, Any]
    status: str
    created_at: datetime
    updated_at: datetime
    evidence: list[EvidencePublic] | None = Field(
        None, description="in a stale listing: the toolchains behind the lesson's evidence"
    )
    value: ContextValue | None = Field(
        None, description="with sort=value: the lesson's value in the chip's context"
    )
    claims: ClaimsPublic | None = Field(None, description="with sort=unreproduced: its run's")


class ValuePublic(BaseModel):
    stage: Stage
    scope: str
    n: int
    q: float


class LessonDetail(LessonPublic):
    values: list[ValuePublic] = Field(description="the running value (Q) per stage and scope")
    source_run: SourceRunPublic | None = Field(
        None, description="how the run it was distilled from was measured; null: none stored"
    )
    in_context: list[ContextValue] = Field(
        default_factory=list,
        description="the one estimate that ranks the lesson, per stage, in the global context "
        "and in each chip's context where it has outcomes (the value retrieve, report and "
        "`sort=value` listings show there)",
    )


class LessonList(BaseModel):
    data: list[LessonPublic]
    count: int
    toolchain: dict[str, str] | None = Field(
        None, description="with stale: the toolchain the lessons were compared with"
    )


class LessonFilter(Inbound):
    """Which lessons to list, and the page: one query value shared by every door."""

    kind: LessonKind | None = Field(None, description="only this kind")
    backend: str | None = Field(None, description="lessons for this backend or for any")
    chip: str | None = Field(None, description="only lessons naming this chip")
    op: str | None = Field(None, description="only lessons for this operator")
    q: str | None = Field(None, description="text contains (case-insensitive)")
    status: Literal["active", "archived", "all"] = Field("active", description="lesson status")
    sort: Literal["created", "value", "-value", "unreproduced"] = Field(
        "created",
        description="created: oldest first; value / -value: highest / lowest learned value "
        "first, in the context of `chip` (then `chip` names where the lesson is applied, not "
        "a chip the lesson names) at `stage`, counting lessons with outcomes there; "
        "unreproduced: lessons of recorded runs whose claims outcomes contradicted, worst first",
    )
    stage: Stage = Field("draft", description="with sort=value: whose values")
    limit: int = Field(50, ge=1, le=500, description="page size")
    # Past 2^62 an offset is no row position and would overflow SQL's 64-bit integers.
    offset: int = Field(0, ge=0, le=2**62, description="page start")
    stale: bool = Field(
        False, description="only lessons whose evidence is all from superseded toolchains"
    )
    toolchain: list[str] = Field(
        default_factory=list,
        max_length=16,
        description="with stale: the toolchain to compare with, component=version "
        '("triton=3.6"); default the newest version of each component recorded',
    )

    @field_validator("toolchain")
    @classmethod
    def _pairs(cls, value: list[str]) -> list[str]:
        parse_toolchain(value)  # raises naming the bad pair
        return value
