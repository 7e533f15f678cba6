"""Outcomes applied to lesson values (LessonValue) and the per-task reward statistics
(TaskRewardStat); the projections that the report path and `values rebuild` both iterate
(`values.projections`) call these, and `value_stats` reads the values back.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from tunemem.ingest.records import is_feasible
from tunemem.memory_service.core.sql.tables import Lesson, LessonValue, Outcome, TaskRewardStat
from tunemem.retrieval.rewards import RewardStats, stage_reward
from tunemem.retrieval.values import ScopeStats, update_stats


def compute_reward(
    session: Session,
    tenant: str,
    stage: str,
    task_key: str,
    compiled: bool,
    correct: bool | None,
    error: str | None,
    latency_ms: float | None,
    best_before_ms: float | None,
    min_count: int,
) -> float:
    """The stage reward; refine rewards update the task's running statistics in the session."""
    # FOR UPDATE serialises concurrent reports of one task across API workers (PostgreSQL).
    row = session.get(TaskRewardStat, (tenant, task_key), with_for_update=True)
    stats = RewardStats(row.n, row.mean, row.m2) if row else RewardStats()
    feasible = is_feasible(compiled, correct, error)
    if stage == "refine":
        from tunemem.retrieval.rewards import refine_reward

        reward, new_stats = refine_reward(
            feasible, latency_ms, best_before_ms, stats, min_count=min_count
        )
    else:
        reward, new_stats = stage_reward(stage, feasible, latency_ms, best_before_ms, stats)
    if new_stats != stats:
        row = row or TaskRewardStat(tenant=tenant, task_key=task_key)
        row.n, row.mean, row.m2 = new_stats.n, new_stats.mean, new_stats.m2
        session.add(row)
    return reward


def apply_reward(
    session: Session,
    rewards: Mapping[str, float],
    stage: str,
    scopes: list[str],
    alpha: float,
    q0: float,
    at: datetime,
) -> None:
    """Q <- Q + alpha (r - Q) for each credited lesson (with its own reward r) in every scope
    of the chain."""
    # A fixed lock order (sorted) keeps concurrent workers from deadlocking; the existing rows
    # are read (and locked, on PostgreSQL) in that order by one statement, not one per row.
    ids, chain = sorted(rewards), sorted(scopes)
    if not ids or not chain:
        return
    existing = {
        (row.lesson_id, row.scope): row
        for row in session.exec(
            select(LessonValue)
            .where(
                col(LessonValue.lesson_id).in_(ids),
                LessonValue.stage == stage,
                col(LessonValue.scope).in_(chain),
            )
            .order_by(col(LessonValue.lesson_id), col(LessonValue.scope))
            .with_for_update()
        )
    }
    for lesson_id in ids:
        for scope in chain:
            row = existing.get((lesson_id, scope))
            current = ScopeStats(row.n, row.q, row.sumsq) if row else None
            updated = update_stats(current, rewards[lesson_id], alpha, q0)
            row = row or LessonValue(lesson_id=lesson_id, stage=stage, scope=scope)
            row.n, row.q, row.sumsq, row.updated_at = updated.n, updated.q, updated.sumsq, at
            session.add(row)


class OwnLessons:
    """Which of an outcome's credited lessons belong to the outcome's tenant. Rebuilds replay
    only those, so no outcome row, whatever wrote it, can move another tenant's values."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.owner: dict[str, str | None] = {}

    def of(self, outcome: Outcome) -> list[str]:
        missing = [lid for lid in outcome.lessons if lid not in self.owner]
        if missing:
            for lid, tenant in self.session.exec(
                select(Lesson.id, Lesson.tenant).where(col(Lesson.id).in_(missing))
            ):
                self.owner[lid] = tenant
            for lid in missing:
                self.owner.setdefault(lid, None)
        return [lid for lid in outcome.lessons if self.owner[lid] == outcome.tenant]


def value_stats(
    session: Session, lesson_ids: list[str], stage: str, chain: list[str]
) -> dict[str, dict[str, ScopeStats]]:
    """LessonValue statistics per lesson and scope of the chain (a lesson without rows: {})."""
    stats: dict[str, dict[str, ScopeStats]] = {lid: {} for lid in lesson_ids}
    if lesson_ids:
        value = LessonValue.__table__  # type: ignore[attr-defined]
        statement = sa_select(
            value.c.lesson_id, value.c.scope, value.c.n, value.c.q, value.c.sumsq
        ).where(
            value.c.lesson_id.in_(lesson_ids),
            value.c.stage == stage,
            value.c.scope.in_(chain),
        )
        for lesson_id, scope, n, q, sumsq in session.connection().execute(statement):
            stats[lesson_id][scope] = ScopeStats(n, q, sumsq)
    return stats
