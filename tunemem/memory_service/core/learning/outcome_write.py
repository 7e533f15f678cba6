"""Outcome reports, the write and the answer (`LearningLoop.report` composes them).

The write (the outcome row, the task's reward statistics, the value and evidence rows) is one
transaction under the store's write lock. The answer, the credited lessons' value estimates
(generalised values read evidence beyond the lessons' own rows), is computed after the commit
in a read session, outside the lock, so a report never holds up another writer while it
estimates.

What a duplicate report (the same idempotency key) replays is the outcome as written: its id,
its reward and the lessons it credited. Its values are estimated anew, like the first answer's,
so they are the lessons' values at the time of the answer (the first answer's, unless another
outcome has credited those lessons since).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlmodel import Session, col, select

from tunemem.ingest.provenance import device_contradiction
from tunemem.ingest.records import stable_hash
from tunemem.memory_service.core import ids
from tunemem.memory_service.core.errors import InvalidInput
from tunemem.memory_service.core.learning import candidates_sql as candidates
from tunemem.memory_service.core.schemas.learning import TaskIn
from tunemem.memory_service.core.schemas.outcomes import ReportRequest, ReportResponse
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.tables import Lesson, Outcome, Retrieval, utcnow
from tunemem.memory_service.core.values.estimates import (
    context_value,
    estimator_of,
    ranking_of,
    value_estimates,
)
from tunemem.memory_service.core.values.generalised_inputs import Evidence
from tunemem.memory_service.core.values.projections import OutcomeFacts, projections
from tunemem.memory_service.core.values.toolchain_evidence import QueryToolchains
from tunemem.retrieval.credit import Verdict, verdict
from tunemem.retrieval.ranking import RankingSettings
from tunemem.retrieval.timings import summarise


def task_key(task: TaskIn) -> str:
    """The key a task's outcomes (and its refine reward statistics) are counted under."""
    return stable_hash(
        {"op": task.op, "kernel": task.kernel, "signature": task.signature, "dtype": task.dtype}
    )


@dataclass(frozen=True)
class Recorded:
    """An outcome as written (or found again), with what its answer's estimates need."""

    outcome_id: int
    reward: float
    rewards: dict[str, float]
    credit: dict[str, Any]
    timing_weight: float
    used: list[str]
    stage: str
    scope_chain: list[str]
    context: dict[str, Any]
    ranking: RankingSettings
    duplicate: bool

    @classmethod
    def of(
        cls, row: Outcome, retrieval: Retrieval, settings: Settings, *, duplicate: bool
    ) -> Recorded:
        response = row.response or {}
        return cls(
            outcome_id=row.id or 0,
            reward=row.reward,
            rewards=dict(response.get("rewards") or {lid: row.reward for lid in row.lessons}),
            credit=dict(row.credit or {}),
            timing_weight=float(response.get("timing_weight", 1.0)),
            used=list(row.lessons),
            stage=row.stage,
            scope_chain=list(row.scope_chain),
            context=dict(retrieval.context or {}),
            ranking=ranking_of(settings, retrieval),
            duplicate=duplicate,
        )


def judge(
    session: Session, used: list[str], config: dict[str, Any] | None, facts: OutcomeFacts
) -> dict[str, Verdict]:
    """Each used lesson's verdict against the attempt's configuration (`retrieval.credit`);
    {} when the report gave none, so every used lesson is credited with the stage reward."""
    if config is None or not used:
        return {}
    fast = (
        facts.latency_ms <= facts.best_before_ms
        if facts.feasible and facts.latency_ms is not None and facts.best_before_ms is not None
        else None
    )
    rows = session.exec(select(Lesson.id, Lesson.kind, Lesson.hint).where(col(Lesson.id).in_(used)))
    return {lid: verdict(kind, hint, config, facts.feasible, fast) for lid, kind, hint in rows}


def record_outcome(
    store: Store,
    settings: Settings,
    request: ReportRequest,
    idempotency_key: str | None,
    tenant: str,
) -> Recorded:
    """Write the outcome and its value updates in one transaction under the write lock, or
    find the earlier outcome with the same idempotency key."""
    with store.write_lock, store.session() as session:
        retrieval = ids.find(
            session,
            Retrieval,
            request.retrieval_id,
            tenant,
            what="retrieval",
            code="retrieval_not_found",
        )
        if idempotency_key:
            previous = session.exec(
                select(Outcome).where(
                    Outcome.tenant == tenant, Outcome.idempotency_key == idempotency_key
                )
            ).first()
            if previous is not None:
                if previous.retrieval_id != retrieval.id:
                    raise InvalidInput(
                        "idempotency key already used for another retrieval",
                        code="idempotency_key_reused",
                    )
                return Recorded.of(previous, retrieval, settings, duplicate=True)
        returned = [r["id"] for r in retrieval.results]
        used = list(dict.fromkeys(request.used)) if request.used is not None else returned
        own = candidates.own_lessons(session, used, tenant)  # whatever a retrieval row says
        unknown = [lid for lid in used if lid not in returned or lid not in own]
        if unknown:
            raise InvalidInput(
                f"lessons not returned by retrieval {retrieval.id}: {', '.join(unknown)}",
                code="lesson_not_in_retrieval",
            )
        outcome = request.outcome
        if outcome.provenance is not None and outcome.provenance.origin == "measured":
            # The retrieval names the chip the outcome is credited to; a runtime that reported
            # another device measured something else.
            claimed = retrieval.context.get("chip_id") or retrieval.context.get("chip") or ""
            problem = device_contradiction(str(claimed), outcome.provenance.device_reported)
            if problem:
                raise InvalidInput(problem, code="device_contradicted")
        key = task_key(TaskIn(**retrieval.task))
        now = utcnow()
        facts = OutcomeFacts(
            tenant,
            retrieval.stage,
            key,
            retrieval.scope_chain,
            used,
            outcome.compiled,
            outcome.correct,
            outcome.error,
            outcome.latency_ms,
            outcome.best_before_ms,
            now,
            timing=summarise(
                outcome.timings_ms,
                outcome.latency_ms,
                outcome.latency_spread_ms,
                outcome.repetitions,
            ),
        )
        facts.credit = judge(session, used, outcome.config, facts)
        for projection in projections(settings.alpha, settings.q0, settings.reward_min_count):
            projection.apply(session, facts, retrieval.context)
        reward = facts.reward
        row = Outcome(
            tenant=tenant,
            retrieval_id=retrieval.id,
            lessons=used,
            stage=retrieval.stage,
            task_key=key,
            scope_chain=retrieval.scope_chain,
            compiled=outcome.compiled,
            correct=outcome.correct,
            latency_ms=outcome.latency_ms,
            best_before_ms=outcome.best_before_ms,
            error=outcome.error,
            config=outcome.config,
            credit=dict(facts.credit),
            timings_ms=outcome.timings_ms,
            latency_spread_ms=outcome.latency_spread_ms,
            repetitions=outcome.repetitions,
            reward=reward,
            reporter=request.reporter,
            origin=outcome.provenance.origin if outcome.provenance else "unstated",
            device_reported=outcome.provenance.device_reported if outcome.provenance else None,
            idempotency_key=idempotency_key,
            # What a duplicate replays (the outcome id is the row's own); values are
            # estimated anew for every answer.
            response={
                "reward": reward,
                "rewards": facts.lesson_rewards(),
                "credit": dict(facts.credit),
                "timing_weight": facts.weight,
            },
            created_at=now,
        )
        session.add(row)
        session.flush()
        recorded = Recorded.of(row, retrieval, settings, duplicate=False)
        session.commit()
        return recorded


def answer(
    store: Store, evidence: Evidence, settings: Settings, recorded: Recorded, tenant: str
) -> ReportResponse:
    """The report's answer: the credited lessons' values now, estimated without the lock."""
    context = recorded.context
    with store.session() as session:
        toolchains = (
            QueryToolchains(
                session,
                recorded.used,
                recorded.stage,
                recorded.scope_chain,
                context["toolchain"],
                context.get("backend"),
                settings.toolchain_policy(),
            )
            if context.get("toolchain")
            else None
        )
        estimates = value_estimates(
            evidence,
            session,
            tenant,
            recorded.used,
            recorded.stage,
            context.get("chip_id"),
            recorded.scope_chain,
            recorded.ranking,
            toolchains,
        ).ranking
    which = estimator_of(recorded.ranking, context.get("chip_id"))
    return ReportResponse(
        outcome_id=recorded.outcome_id,
        reward=recorded.reward,
        rewards=recorded.rewards,
        credit=recorded.credit,
        timing_weight=recorded.timing_weight,
        values={
            lid: context_value(est, recorded.stage, context.get("chip_id"), which)
            for lid, est in estimates.items()
        },
        duplicate=recorded.duplicate,
    )
