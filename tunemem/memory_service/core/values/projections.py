"""The projections of the outcome log: the tables derived from outcomes, as one list.

An outcome report applies every projection of `projections(...)` in order to the new outcome;
`values rebuild` resets them all and replays the log through the same list, in log order, so a
rebuild reproduces the derived tables exactly (tested). Adding a table derived from outcomes is
one `OutcomeProjection` in that list.

- `RewardStatistics` (TaskRewardStat): the per-task reward statistics that normalise refine
  rewards; it computes the outcome's reward, which the projections after it read.
- `LessonValues` (LessonValue): each credited lesson's statistics in every scope of the chain.
- `ToolchainEvidence` (LessonEvidence): outcomes counted per toolchain their context named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from sqlmodel import Session, col, delete, select

from tunemem.ingest.records import is_feasible
from tunemem.memory_service.core.sql.tables import (
    Lesson,
    LessonEvidence,
    LessonValue,
    Outcome,
    TaskRewardStat,
)
from tunemem.memory_service.core.values.lesson_values import (
    OwnLessons,
    apply_reward,
    compute_reward,
)
from tunemem.memory_service.core.values.toolchain_evidence import (
    record_evidence,
    retrieval_contexts,
)
from tunemem.retrieval.credit import lesson_rewards
from tunemem.retrieval.timings import TimingSummary, summarise, update_weight


@dataclass
class OutcomeFacts:
    """One outcome as the projections see it; `reward` is set by `RewardStatistics`."""

    tenant: str
    stage: str
    task_key: str
    scope_chain: list[str]
    lessons: list[str]  # the credited lessons (of the outcome's tenant)
    compiled: bool
    correct: bool | None
    error: str | None
    latency_ms: float | None
    best_before_ms: float | None
    at: datetime
    reward: float = 0.0
    # lesson -> its verdict against the attempt's configuration (absent: "unknown")
    credit: Mapping[str, str] = field(default_factory=dict)
    timing: TimingSummary | None = None

    @classmethod
    def of(cls, outcome: Outcome, lessons: list[str]) -> OutcomeFacts:
        return cls(
            outcome.tenant,
            outcome.stage,
            outcome.task_key,
            outcome.scope_chain,
            lessons,
            outcome.compiled,
            outcome.correct,
            outcome.error,
            outcome.latency_ms,
            outcome.best_before_ms,
            outcome.created_at,
            credit=dict(outcome.credit or {}),
            timing=summarise(
                outcome.timings_ms,
                outcome.latency_ms,
                outcome.latency_spread_ms,
                outcome.repetitions,
            ),
        )

    @property
    def feasible(self) -> bool:
        return is_feasible(self.compiled, self.correct, self.error)

    @property
    def weight(self) -> float:
        """The share of the learning rate this outcome's update takes: a refine reward of a
        feasible attempt rests on its timing, so the timing's spread tempers it."""
        return update_weight(self.stage, self.feasible, self.timing)

    def lesson_rewards(self) -> dict[str, float]:
        """Each credited lesson's reward under its verdict; lessons without an update left out."""
        return lesson_rewards(self.lessons, self.credit, self.reward)


class OutcomeProjection(Protocol):
    """A table derived from the outcome log."""

    def reset(self, session: Session, tenant: str | None) -> None:
        """Delete the rows of one tenant (None: all), before a replay of its outcomes."""

    def apply(
        self, session: Session, outcome: OutcomeFacts, context: Mapping[str, Any] | None
    ) -> None:
        """Apply one outcome; `context` is its retrieval's stored context."""


def _own(tenant: str) -> Any:
    return select(Lesson.id).where(Lesson.tenant == tenant)


class RewardStatistics:
    def __init__(self, min_count: int) -> None:
        self.min_count = min_count

    def reset(self, session: Session, tenant: str | None) -> None:
        rows = delete(TaskRewardStat)
        if tenant is not None:
            rows = rows.where(col(TaskRewardStat.tenant) == tenant)
        session.exec(rows)  # type: ignore[call-overload]

    def apply(
        self, session: Session, outcome: OutcomeFacts, context: Mapping[str, Any] | None
    ) -> None:
        outcome.reward = compute_reward(
            session,
            outcome.tenant,
            outcome.stage,
            outcome.task_key,
            outcome.compiled,
            outcome.correct,
            outcome.error,
            outcome.latency_ms,
            outcome.best_before_ms,
            self.min_count,
        )


class LessonValues:
    def __init__(self, alpha: float, q0: float) -> None:
        self.alpha, self.q0 = alpha, q0

    def reset(self, session: Session, tenant: str | None) -> None:
        rows = delete(LessonValue)
        if tenant is not None:
            rows = rows.where(col(LessonValue.lesson_id).in_(_own(tenant)))
        session.exec(rows)  # type: ignore[call-overload]

    def apply(
        self, session: Session, outcome: OutcomeFacts, context: Mapping[str, Any] | None
    ) -> None:
        apply_reward(
            session,
            outcome.lesson_rewards(),
            outcome.stage,
            outcome.scope_chain,
            self.alpha * outcome.weight,
            self.q0,
            outcome.at,
        )


class ToolchainEvidence:
    def reset(self, session: Session, tenant: str | None) -> None:
        rows = delete(LessonEvidence)
        if tenant is not None:
            rows = rows.where(col(LessonEvidence.lesson_id).in_(_own(tenant)))
        session.exec(rows)  # type: ignore[call-overload]

    def apply(
        self, session: Session, outcome: OutcomeFacts, context: Mapping[str, Any] | None
    ) -> None:
        record_evidence(
            session, outcome.lessons, outcome.stage, outcome.scope_chain, context, outcome.at
        )


def projections(alpha: float, q0: float, min_count: int) -> list[OutcomeProjection]:
    """Every projection of the outcome log, in the order an outcome is applied to them."""
    return [RewardStatistics(min_count), LessonValues(alpha, q0), ToolchainEvidence()]


def replay(
    session: Session, projected: Sequence[OutcomeProjection], tenant: str | None = None
) -> int:
    """Reset the projections (of one tenant, or all) and replay the outcome log through them in
    log order; returns the outcomes replayed. Rewards are recomputed from the raw outcome
    fields, so a changed reward definition is picked up; a tenant's outcomes credit only its
    own lessons (`OwnLessons`)."""
    for projection in projected:
        projection.reset(session, tenant)
    session.flush()
    query = select(Outcome).order_by(col(Outcome.id))
    if tenant is not None:
        query = query.where(Outcome.tenant == tenant)
    outcomes = session.exec(query).all()
    contexts = retrieval_contexts(session, (o.retrieval_id for o in outcomes))
    owned = OwnLessons(session)
    for outcome in outcomes:
        facts = OutcomeFacts.of(outcome, owned.of(outcome))
        for projection in projected:
            projection.apply(session, facts, contexts.get(outcome.retrieval_id))
        session.flush()
    return len(outcomes)
