"""What a bundle record must be before an import writes anything (issue #22).

Every record is validated with a model built from the API's own (the lesson fields of
`LessonBase`, `TaskIn`, `ContextIn`, `Applicability`, the `Latency` and free-JSON bounds, and
`Inbound`'s storable text), with aware timestamps and exact types. Then every reference is
resolved inside the importing tenant's rows or the bundle itself: a retrieval's ranked lessons,
an outcome's retrieval and credited lessons (which its retrieval must have returned, at that
retrieval's stage, scope chain and task), an attempt's run. The first record that fails is
named by its line; the caller writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
)
from sqlmodel import Session, col, select

from tunemem.ingest.provenance import COVERAGES, MAX_DEVICE_CHARS, ORIGINS
from tunemem.ingest.records import ERROR_CATEGORIES, stable_hash
from tunemem.memory_service.core.errors import Conflict, InvalidInput
from tunemem.memory_service.core.schemas.inbound import Inbound
from tunemem.memory_service.core.schemas.learning import ContextIn, TaskIn
from tunemem.memory_service.core.schemas.lessons import FreeJSON, HintIn, LessonBase, Stage
from tunemem.memory_service.core.schemas.outcomes import MAX_TIMINGS, Latency, ParamName, ParamValue
from tunemem.memory_service.core.sql.tables import Lesson, Retrieval, Trajectory
from tunemem.retrieval.credit import Verdict

Id = Annotated[str, Field(min_length=1, max_length=36)]
RunId = Annotated[str, Field(min_length=1, max_length=64)]
Scope = Annotated[str, Field(min_length=1, max_length=160)]
Measured = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0.0, le=1e9)]
Count = Annotated[int, Field(strict=True, ge=0, le=2**31)]
Origin = Literal[ORIGINS]  # type: ignore[valid-type]
Coverage = Literal[COVERAGES]  # type: ignore[valid-type]
Device = Annotated[str, Field(min_length=1, max_length=MAX_DEVICE_CHARS)]


class _Record(Inbound):
    # The store's own bookkeeping (tenant, row ids, denormalised filter columns) may be present
    # and is ignored: the importing tenant and the derived columns are set by the import.
    model_config = ConfigDict(extra="forbid")
    _what: ClassVar[str] = "record"

    tenant: str | None = None


class LessonRow(_Record, LessonBase):
    id: Id
    hint: HintIn | None = None  # the shapes every other door holds a hint to
    content_hash: str = Field(pattern=r"^[0-9a-f]{16,64}$")
    provenance: FreeJSON = Field(default_factory=dict)
    status: Literal["active", "archived"]
    created_at: AwareDatetime
    updated_at: AwareDatetime
    op: str | None = None
    chips: str | None = None
    backends: str | None = None


class TrajectoryRow(_Record):
    id: RunId
    source_format: str = Field(min_length=1, max_length=32)
    source: str = Field(max_length=10_000)
    op: str = Field(min_length=1, max_length=128)
    chip: str = Field(min_length=1, max_length=128)
    backend: str = Field(min_length=1, max_length=16)
    task: FreeJSON = Field(default_factory=dict)
    context: FreeJSON = Field(default_factory=dict)
    baseline_latency_ms: Measured | None = None
    evidence: FreeJSON = Field(default_factory=dict)
    synthetic: StrictBool = False
    n_attempts: Count = 0
    origin: Origin = "unstated"  # a bundle from before provenance was kept says none
    coverage: Coverage = "unstated"
    device_reported: Device | None = None
    created_at: AwareDatetime


class AttemptRow(_Record):
    id: int | None = None
    trajectory_id: RunId
    index: Count
    params: FreeJSON = Field(default_factory=dict)
    code: str | None = Field(None, max_length=200_000)
    compiled: StrictBool = True
    correct: StrictBool | None = None
    error_category: Literal[ERROR_CATEGORIES] | None = None  # type: ignore[valid-type]
    error: str | None = Field(None, max_length=10_000)
    latency_ms: Measured | None = None
    latency_min_ms: Measured | None = None
    repetitions: Count | None = None
    metrics: FreeJSON = Field(default_factory=dict)


class RetrievalContext(ContextIn):
    chip_id: str | None = Field(None, max_length=128)


class RankedRow(BaseModel):
    """One ranked lesson of a retrieval: its id, and the score breakdown beside it."""

    model_config = ConfigDict(extra="allow")

    id: Id


class RetrievalRow(_Record):
    id: Id
    query: str = Field(max_length=10_000)
    task: TaskIn
    context: RetrievalContext
    stage: Stage
    scope_chain: list[Scope] = Field(min_length=1, max_length=16)
    results: list[RankedRow] = Field(max_length=1000)
    settings: FreeJSON = Field(default_factory=dict)
    created_at: AwareDatetime


class OutcomeRow(_Record):
    id: int | None = None
    retrieval_id: Id
    lessons: list[Id] = Field(max_length=100)
    stage: Stage
    task_key: str = Field(min_length=1, max_length=64)
    scope_chain: list[Scope] = Field(min_length=1, max_length=16)
    compiled: StrictBool
    correct: StrictBool | None = None
    latency_ms: Latency | None = None
    best_before_ms: Latency | None = None
    error: str | None = Field(None, max_length=10_000)
    config: dict[ParamName, ParamValue] | None = Field(None, max_length=256)
    credit: dict[Id, Verdict] = Field(default_factory=dict, max_length=100)
    timings_ms: list[Latency] | None = Field(None, min_length=1, max_length=MAX_TIMINGS)
    latency_spread_ms: Annotated[float, Field(allow_inf_nan=False, ge=0.0)] | None = None
    repetitions: int | None = Field(None, ge=1, le=10_000_000)
    reward: Annotated[float, Field(strict=True, allow_inf_nan=False, ge=-1.0, le=1.0)]
    reporter: str | None = Field(None, max_length=128)
    origin: Origin = "unstated"
    device_reported: Device | None = None
    verified: StrictBool = False
    idempotency_key: str | None = Field(None, min_length=1, max_length=128)
    response: FreeJSON = Field(default_factory=dict)
    created_at: AwareDatetime


MODELS: dict[str, type[_Record]] = {
    "lesson": LessonRow,
    "trajectory": TrajectoryRow,
    "attempt": AttemptRow,
    "retrieval": RetrievalRow,
    "outcome": OutcomeRow,
}


def task_key(task: dict[str, Any]) -> str:
    """The key outcomes of a retrieval's task are counted under (as the live report sets it)."""
    parsed = TaskIn(**task)
    return stable_hash(
        {
            "op": parsed.op,
            "kernel": parsed.kernel,
            "signature": parsed.signature,
            "dtype": parsed.dtype,
        }
    )


def _why(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    message = str(first.get("msg", "invalid"))
    return f"{where}: {message}" if where else message


@dataclass
class _Ranked:
    """What an outcome must agree with: its retrieval's stage, chain, task and lessons."""

    stage: str
    scope_chain: list[str]
    task_key: str
    lessons: set[str]


@dataclass
class CheckedBundle:
    """The validated records, in bundle order, as (line, kind, row data)."""

    records: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)


def check(
    session: Session, items: list[tuple[int, str, dict[str, Any]]], tenant: str
) -> CheckedBundle:
    """Validate every record and resolve every reference; the first failure raises.

    Raises:
        InvalidInput: `invalid_bundle` (a record that is not what the API stores) or
            `bundle_reference` (a reference that resolves neither in the tenant nor in the
            bundle, or an outcome that disagrees with its retrieval); the message starts with
            the record's line.
        Conflict: `bundle_of_another_tenant` (ids held by another tenant of the store) or
            `lesson_conflict` (a lesson whose content the tenant holds under another id).
    """
    checked = CheckedBundle()
    seen: dict[str, dict[str, int]] = {kind: {} for kind in MODELS}
    hashes: dict[str, int] = {}
    attempt_keys: set[tuple[str, int]] = set()
    for line, kind, data in items:
        try:
            row = MODELS[kind].model_validate(data)
        except ValidationError as exc:
            raise InvalidInput(
                f"bundle line {line}: {kind}: {_why(exc)}", code="invalid_bundle"
            ) from None
        dumped = row.model_dump(mode="python")
        if kind in ("lesson", "trajectory", "retrieval"):
            if dumped["id"] in seen[kind]:
                raise InvalidInput(
                    f"bundle line {line}: {kind} {dumped['id']} is already on line "
                    f"{seen[kind][dumped['id']]}",
                    code="invalid_bundle",
                )
            seen[kind][dumped["id"]] = line
        if kind == "lesson":
            if dumped["content_hash"] in hashes:
                raise InvalidInput(
                    f"bundle line {line}: the lesson's content is already on line "
                    f"{hashes[dumped['content_hash']]}",
                    code="invalid_bundle",
                )
            hashes[dumped["content_hash"]] = line
        if kind == "attempt":
            key = (dumped["trajectory_id"], dumped["index"])
            if key in attempt_keys:
                raise InvalidInput(
                    f"bundle line {line}: attempt {key[1]} of run {key[0]} appears twice",
                    code="invalid_bundle",
                )
            attempt_keys.add(key)
        checked.records.append((line, kind, dumped))
    _resolve(session, checked, tenant, seen, hashes)
    return checked


def _owned(session: Session, table: Any, ids: set[str]) -> dict[str, str]:
    """Tenant of each stored row of `table` among `ids`."""
    found: dict[str, str] = {}
    wanted = sorted(ids)
    for start in range(0, len(wanted), 500):
        rows = session.exec(
            select(table.id, table.tenant).where(col(table.id).in_(wanted[start : start + 500]))
        )
        found.update({row_id: owner for row_id, owner in rows})
    return found


def _resolve(
    session: Session,
    checked: CheckedBundle,
    tenant: str,
    seen: dict[str, dict[str, int]],
    hashes: dict[str, int],
) -> None:
    records = checked.records
    for kind, table in (("lesson", Lesson), ("trajectory", Trajectory), ("retrieval", Retrieval)):
        owners = _owned(session, table, set(seen[kind]))
        foreign = sorted((seen[kind][i], i) for i, owner in owners.items() if owner != tenant)
        if foreign:
            line, row_id = foreign[0]
            raise Conflict(
                f"bundle line {line}: {kind} {row_id} belongs to another tenant of this store "
                f"({len(foreign)} such {kind}s); import the bundle into the tenant it came "
                "from, or into another store",
                code="bundle_of_another_tenant",
            )
    _check_hashes(session, records, tenant, hashes)
    referenced = {lid for _, kind, d in records if kind == "retrieval" for lid in _ids(d)}
    referenced |= {lid for _, kind, d in records if kind == "outcome" for lid in d["lessons"]}
    lessons = set(seen["lesson"]) | {
        i
        for i, owner in _owned(session, Lesson, referenced - set(seen["lesson"])).items()
        if owner == tenant
    }
    wanted = {d["retrieval_id"] for _, kind, d in records if kind == "outcome"}
    retrievals: dict[str, _Ranked] = {}
    stored = wanted - set(seen["retrieval"])
    for start in range(0, len(stored), 500):
        chunk = sorted(stored)[start : start + 500]
        for row in session.exec(
            select(Retrieval).where(col(Retrieval.id).in_(chunk), Retrieval.tenant == tenant)
        ):
            retrievals[row.id] = _Ranked(
                row.stage,
                list(row.scope_chain),
                task_key(row.task),
                {str(r.get("id")) for r in row.results},
            )
    for line, kind, data in records:
        if kind == "retrieval":
            missing = [lid for lid in _ids(data) if lid not in lessons]
            if missing:
                raise InvalidInput(
                    f"bundle line {line}: retrieval {data['id']} ranks lesson {missing[0]}, "
                    "which is neither this tenant's nor in the bundle",
                    code="bundle_reference",
                )
            retrievals.setdefault(
                data["id"],
                _Ranked(
                    data["stage"], data["scope_chain"], task_key(data["task"]), set(_ids(data))
                ),
            )
        elif kind == "attempt" and data["trajectory_id"] not in seen["trajectory"]:
            raise InvalidInput(
                f"bundle line {line}: attempt of run {data['trajectory_id']}, which is not in "
                "the bundle",
                code="bundle_reference",
            )
        elif kind == "outcome":
            _check_outcome(line, data, retrievals.get(data["retrieval_id"]))


def _ids(retrieval: dict[str, Any]) -> list[str]:
    return [str(r["id"]) for r in retrieval["results"]]


def _check_outcome(line: int, data: dict[str, Any], ranked: _Ranked | None) -> None:
    def refuse(why: str) -> InvalidInput:
        return InvalidInput(f"bundle line {line}: outcome {why}", code="bundle_reference")

    if ranked is None:
        raise refuse(
            f"of retrieval {data['retrieval_id']}, which is neither this tenant's nor in the bundle"
        )
    unranked = [lid for lid in data["lessons"] if lid not in ranked.lessons]
    if unranked:
        raise refuse(f"credits lesson {unranked[0]}, which its retrieval did not return")
    if data["stage"] != ranked.stage:
        raise refuse(f"at stage {data['stage']} of a {ranked.stage} retrieval")
    if data["scope_chain"] != ranked.scope_chain:
        raise refuse("with a scope chain other than its retrieval's")
    if data["task_key"] != ranked.task_key:
        raise refuse("with a task key other than its retrieval's task")


def _check_hashes(
    session: Session,
    records: list[tuple[int, str, dict[str, Any]]],
    tenant: str,
    hashes: dict[str, int],
) -> None:
    """A lesson whose content the tenant already holds under another id cannot be added."""
    ids = {d["content_hash"]: d["id"] for _, kind, d in records if kind == "lesson"}
    wanted = sorted(hashes)
    for start in range(0, len(wanted), 500):
        for row_id, digest in session.exec(
            select(Lesson.id, Lesson.content_hash).where(
                Lesson.tenant == tenant, col(Lesson.content_hash).in_(wanted[start : start + 500])
            )
        ):
            if ids[digest] != row_id:
                raise Conflict(
                    f"bundle line {hashes[digest]}: lesson {ids[digest]} has the content of "
                    f"this tenant's lesson {row_id}",
                    code="lesson_conflict",
                )
