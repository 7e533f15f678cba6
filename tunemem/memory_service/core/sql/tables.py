"""SQLModel tables: the source of truth (DESIGN section 3).

Lesson, Trajectory and Attempt hold knowledge and raw runs; Retrieval and the append-only
Outcome log hold what happened; LessonValue, LessonEvidence and TaskRewardStat are materialised
views of the outcome log that `values rebuild` recomputes from scratch.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from tunemem.memory_service.core.sql.stored_types import StoredFloat, StoredJSON


def utcnow() -> datetime:
    return datetime.now(UTC)


class Lesson(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("tenant", "content_hash"),)

    id: str = Field(primary_key=True, max_length=36)
    tenant: str = Field(default="default", index=True, max_length=64)
    kind: str = Field(index=True, max_length=16)
    text: str
    hint: dict[str, Any] | None = Field(
        default=None, sa_type=StoredJSON("lesson hint", nullable=True)
    )
    code: str | None = None
    content_hash: str = Field(max_length=64)
    applicability: dict[str, Any] = Field(
        default_factory=dict, sa_type=StoredJSON("lesson applicability")
    )
    # Denormalised filter columns: ",a100,h100," style lists so LIKE '%,x,%' matches one item.
    op: str = Field(default="", index=True, max_length=128)
    chips: str = Field(default=",", max_length=2048)
    backends: str = Field(default=",", max_length=256)
    provenance: dict[str, Any] = Field(
        default_factory=dict, sa_type=StoredJSON("lesson provenance")
    )
    status: str = Field(default="active", index=True, max_length=16)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class LessonRevision(SQLModel, table=True):
    """The previous text/applicability of a lesson before each edit or archive."""

    id: int | None = Field(default=None, primary_key=True)
    lesson_id: str = Field(index=True, max_length=36)
    text: str
    applicability: dict[str, Any] = Field(
        default_factory=dict, sa_type=StoredJSON("lesson revision applicability")
    )
    hint: dict[str, Any] | None = Field(
        default=None, sa_type=StoredJSON("lesson revision hint", nullable=True)
    )
    status: str = Field(max_length=16)
    changed_at: datetime = Field(default_factory=utcnow)
    change: str = Field(max_length=16)


class Trajectory(SQLModel, table=True):
    id: str = Field(primary_key=True, max_length=64)
    tenant: str = Field(default="default", index=True, max_length=64)
    source_format: str = Field(max_length=32)
    source: str
    op: str = Field(index=True, max_length=128)
    chip: str = Field(index=True, max_length=128)
    backend: str = Field(max_length=16)
    task: dict[str, Any] = Field(default_factory=dict, sa_type=StoredJSON("trajectory task"))
    context: dict[str, Any] = Field(default_factory=dict, sa_type=StoredJSON("trajectory context"))
    baseline_latency_ms: float | None = Field(
        default=None, sa_type=StoredFloat("trajectory baseline_latency_ms")
    )
    evidence: dict[str, Any] = Field(
        default_factory=dict, sa_type=StoredJSON("trajectory evidence")
    )
    synthetic: bool = False
    n_attempts: int = 0
    # Provenance (`ingest.provenance`): how the run's numbers were obtained.
    origin: str = Field(default="unstated", max_length=16)
    coverage: str = Field(default="unstated", max_length=16)
    device_reported: str | None = Field(default=None, max_length=256)
    created_at: datetime = Field(default_factory=utcnow)


class Attempt(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    trajectory_id: str = Field(index=True, max_length=64)
    index: int
    params: dict[str, Any] = Field(default_factory=dict, sa_type=StoredJSON("attempt params"))
    code: str | None = None
    compiled: bool = True
    correct: bool | None = None
    error_category: str | None = Field(default=None, max_length=32)
    error: str | None = None
    latency_ms: float | None = Field(default=None, sa_type=StoredFloat("attempt latency_ms"))
    latency_min_ms: float | None = Field(
        default=None, sa_type=StoredFloat("attempt latency_min_ms")
    )
    repetitions: int | None = None
    metrics: dict[str, Any] = Field(default_factory=dict, sa_type=StoredJSON("attempt metrics"))


class Retrieval(SQLModel, table=True):
    id: str = Field(primary_key=True, max_length=36)
    tenant: str = Field(default="default", index=True, max_length=64)
    query: str
    task: dict[str, Any] = Field(default_factory=dict, sa_type=StoredJSON("retrieval task"))
    context: dict[str, Any] = Field(default_factory=dict, sa_type=StoredJSON("retrieval context"))
    stage: str = Field(max_length=16)
    scope_chain: list[str] = Field(
        default_factory=list, sa_type=StoredJSON("retrieval scope_chain", list, items="text")
    )
    results: list[dict[str, Any]] = Field(
        default_factory=list, sa_type=StoredJSON("retrieval results", list)
    )
    settings: dict[str, Any] = Field(default_factory=dict, sa_type=StoredJSON("retrieval settings"))
    created_at: datetime = Field(default_factory=utcnow)


class Outcome(SQLModel, table=True):
    """Append-only: never updated or deleted. Values are a function of this log."""

    __table_args__ = (UniqueConstraint("tenant", "idempotency_key"),)

    id: int | None = Field(default=None, primary_key=True)
    tenant: str = Field(default="default", index=True, max_length=64)
    retrieval_id: str = Field(index=True, max_length=36)
    lessons: list[str] = Field(
        default_factory=list, sa_type=StoredJSON("outcome lessons", list, items="text")
    )
    stage: str = Field(max_length=16)
    task_key: str = Field(max_length=64)
    scope_chain: list[str] = Field(
        default_factory=list, sa_type=StoredJSON("outcome scope_chain", list, items="text")
    )
    compiled: bool
    correct: bool | None = None
    latency_ms: float | None = Field(default=None, sa_type=StoredFloat("outcome latency_ms"))
    best_before_ms: float | None = Field(
        default=None, sa_type=StoredFloat("outcome best_before_ms")
    )
    error: str | None = None
    # What the attempt was, where the client said (credit that follows the advice): its
    # configuration, and each used lesson's verdict against it (`retrieval.credit`), judged
    # once at report time so a rebuild credits as the report did.
    config: dict[str, Any] | None = Field(
        default=None, sa_type=StoredJSON("outcome config", nullable=True)
    )
    credit: dict[str, Any] = Field(default_factory=dict, sa_type=StoredJSON("outcome credit"))
    # Repeated timings of the attempt (or the spread of those behind latency_ms, and how many).
    timings_ms: list[float] | None = Field(
        default=None, sa_type=StoredJSON("outcome timings_ms", list, nullable=True, items="number")
    )
    latency_spread_ms: float | None = Field(
        default=None, sa_type=StoredFloat("outcome latency_spread_ms")
    )
    repetitions: int | None = None
    reward: float = Field(sa_type=StoredFloat("outcome reward", empty=0.0))
    reporter: str | None = Field(default=None, max_length=128)
    origin: str = Field(default="unstated", max_length=16)
    device_reported: str | None = Field(default=None, max_length=256)
    verified: bool = False
    idempotency_key: str | None = Field(default=None, max_length=128)
    response: dict[str, Any] = Field(default_factory=dict, sa_type=StoredJSON("outcome response"))
    created_at: datetime = Field(default_factory=utcnow)


class LessonValue(SQLModel, table=True):
    __table_args__ = (Index("ix_lessonvalue_lesson_stage", "lesson_id", "stage"),)

    lesson_id: str = Field(primary_key=True, max_length=36)
    stage: str = Field(primary_key=True, max_length=16)
    scope: str = Field(primary_key=True, max_length=160)
    n: int = 0
    q: float = 0.0
    sumsq: float = 0.0
    updated_at: datetime = Field(default_factory=utcnow)


class LessonEvidence(SQLModel, table=True):
    """Outcomes per (lesson, stage, scope) by the toolchain they were gathered under (from the
    retrieval's context): a materialised view of the outcome log like LessonValue, which
    `values rebuild` recomputes. Outcomes whose context named no toolchain have no row."""

    lesson_id: str = Field(primary_key=True, max_length=36)
    stage: str = Field(primary_key=True, max_length=16)
    scope: str = Field(primary_key=True, max_length=160)
    toolchain: str = Field(primary_key=True, max_length=1024)  # canonical JSON of `versions`
    versions: dict[str, Any] = Field(
        default_factory=dict, sa_type=StoredJSON("lesson evidence versions")
    )
    n: int = 0
    updated_at: datetime = Field(default_factory=utcnow)


class TaskRewardStat(SQLModel, table=True):
    """Running statistics of raw refine rewards per task (PopArt-style normalisation)."""

    tenant: str = Field(primary_key=True, max_length=64)
    task_key: str = Field(primary_key=True, max_length=64)
    n: int = 0
    mean: float = 0.0
    m2: float = 0.0


class IndexPointer(SQLModel, table=True):
    """Which generation of a tenant's vector-index collection readers use. A reindex builds
    the next generation beside the current one and then switches this row, so every worker
    (each reads it) moves to the new collection together and none queries a half-built one."""

    tenant: str = Field(primary_key=True, max_length=64)
    generation: int = 0
    updated_at: datetime = Field(default_factory=utcnow)


class VectorModel(SQLModel, table=True):
    """Which embedder made a tenant's vectors (its fingerprint: model, weights, runtime).
    Recorded by the first write of vectors and by every reindex; a service whose embedder
    has another fingerprint refuses to compare or write that tenant's vectors until a
    reindex with its own embedder replaces them."""

    tenant: str = Field(primary_key=True, max_length=64)
    model: str = Field(max_length=200)
    updated_at: datetime = Field(default_factory=utcnow)
