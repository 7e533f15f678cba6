"""Maintenance, a part of the service: rebuild values from the outcome log, rebuild the vector
index from SQL, and the store's counts and value table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from tunemem.memory_service.core.embedding.factory import Embedder
from tunemem.memory_service.core.maintenance import reindex as index_upkeep
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.tables import (
    Attempt,
    Lesson,
    LessonValue,
    Outcome,
    Retrieval,
    Trajectory,
)
from tunemem.memory_service.core.values.projections import projections, replay
from tunemem.memory_service.core.vectors.base import VectorIndex

ProgressFn = Callable[[int, int], None]


class Maintenance:
    """Derived state (values, the vector index) rebuilt from the SQL source of truth."""

    def __init__(self, store: Store, index: VectorIndex, embedder: Embedder, settings: Settings):
        self.store = store
        self.index = index
        self.embedder = embedder
        self.settings = settings

    def rebuild_values(self, tenant: str | None = None) -> int:
        """Recompute the LessonValue and LessonEvidence rows (of one tenant, or all) from the
        outcome log."""
        with self.store.write_lock, self.store.session() as session:
            count = self.rebuild_in(session, tenant)
            session.commit()
            return count

    def rebuild_in(self, session: Session, tenant: str | None) -> int:
        """`rebuild_values` inside the caller's transaction (an import's), not committed."""
        settings = self.settings
        projected = projections(settings.alpha, settings.q0, settings.reward_min_count)
        return replay(session, projected, tenant)

    def value_table(self) -> list[tuple[str, str, str, int, float, float]]:
        with self.store.session() as session:
            rows = session.exec(
                select(LessonValue).order_by(
                    col(LessonValue.lesson_id), col(LessonValue.stage), col(LessonValue.scope)
                )
            ).all()
            return [(r.lesson_id, r.stage, r.scope, r.n, r.q, r.sumsq) for r in rows]

    def reindex(
        self,
        batch_size: int = 512,
        progress: ProgressFn | None = None,
        tenant: str | None = None,
    ) -> int:
        """Rebuild the vector index (of one tenant, or all) from the active lessons in SQL;
        readers keep the old entries until the new ones are complete."""
        with self.store.write_lock:
            return index_upkeep.rebuild(
                self.store, self.index, self.embedder, tenant, batch_size, progress
            )

    def repair_index(self, tenant: str | None = None) -> dict[str, int]:
        """Add to the index the active lessons it lacks and drop entries SQL does not have."""
        with self.store.write_lock:
            return index_upkeep.repair(self.store, self.index, self.embedder, tenant)

    def counts(self, tenant: str | None = None) -> dict[str, int]:
        """Rows per table (of one tenant's data, or of the whole store)."""
        own_lessons = select(Lesson.id).where(Lesson.tenant == tenant)
        own_runs = select(Trajectory.id).where(Trajectory.tenant == tenant)
        tables: list[tuple[str, Any, list[Any]]] = [
            ("lessons", Lesson, [Lesson.tenant == tenant]),
            ("trajectories", Trajectory, [Trajectory.tenant == tenant]),
            ("attempts", Attempt, [col(Attempt.trajectory_id).in_(own_runs)]),
            ("retrievals", Retrieval, [Retrieval.tenant == tenant]),
            ("outcomes", Outcome, [Outcome.tenant == tenant]),
            ("values", LessonValue, [col(LessonValue.lesson_id).in_(own_lessons)]),
        ]
        with self.store.session() as session:
            return {
                name: int(
                    session.exec(
                        select(func.count())
                        .select_from(table)
                        .where(*(where if tenant is not None else []))
                    ).one()
                )
                for name, table, where in tables
            }

    def health(self, tenant: str | None = None) -> dict[str, Any]:
        """Whether the vector index answers, and the active lessons in SQL beside the index
        entries (of one tenant, or all): the two counts that drift apart if writes were lost."""
        scope = [Lesson.status == "active"]
        if tenant is not None:
            scope.append(Lesson.tenant == tenant)
        with self.store.session() as session:
            active = int(session.exec(select(func.count()).select_from(Lesson).where(*scope)).one())
        try:
            entries: int | None = self.index.count(tenant)
            index = "ok"
        except Exception as exc:  # any failure of the index client means it is unusable
            entries, index = None, f"unusable: {type(exc).__name__}: {str(exc)[:200]}"
        return {
            "status": "ok" if index == "ok" else "degraded",
            "index": index,
            "active_lessons": active,
            "index_entries": entries,
        }
