"""Maintenance, a part of the service: rebuild values from the outcome log, rebuild the vector
index from SQL, and the store's counts and value table."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import func
from sqlmodel import col, select

from memory_service.core import lesson_rows
from memory_service.core.embedder import Embedder
from memory_service.core.index import VectorIndex
from memory_service.core.schema import (
    Attempt,
    Lesson,
    LessonValue,
    Outcome,
    Retrieval,
    Trajectory,
)
from memory_service.core.settings import Settings
from memory_service.core.store import Store
from memory_service.core.values import rebuild_values

ProgressFn = Callable[[int, int], None]


class Maintenance:
    """Derived state (values, the vector index) rebuilt from the SQL source of truth."""

    def __init__(self, store: Store, index: VectorIndex, embedder: Embedder, settings: Settings):
        self.store = store
        self.index = index
        self.embedder = embedder
        self.settings = settings

    def rebuild_values(self) -> int:
        """Recompute every LessonValue row from the outcome log."""
        with self.store.write_lock, self.store.session() as session:
            count = rebuild_values(
                session, self.settings.alpha, self.settings.q0, self.settings.reward_min_count
            )
            session.commit()
            return count

    def value_table(self) -> list[tuple[str, str, str, int, float, float]]:
        with self.store.session() as session:
            rows = session.exec(
                select(LessonValue).order_by(
                    col(LessonValue.lesson_id), col(LessonValue.stage), col(LessonValue.scope)
                )
            ).all()
            return [(r.lesson_id, r.stage, r.scope, r.n, r.q, r.sumsq) for r in rows]

    def reindex(self, batch_size: int = 512, progress: ProgressFn | None = None) -> int:
        """Drop and rebuild the vector index from the active lessons in SQL."""
        with self.store.write_lock, self.store.session() as session:
            self.index.reset()
            total = session.exec(
                select(func.count()).select_from(Lesson).where(Lesson.status == "active")
            ).one()
            done = 0
            offset = 0
            while True:
                rows = session.exec(
                    select(Lesson)
                    .where(Lesson.status == "active")
                    .order_by(col(Lesson.id))
                    .offset(offset)
                    .limit(batch_size)
                ).all()
                if not rows:
                    break
                offset += len(rows)
                vectors = self.embedder.embed(
                    [lesson_rows.embedding_text(r.kind, r.text, r.applicability) for r in rows]
                )
                self.index.upsert(
                    [r.id for r in rows], vectors, [lesson_rows.index_metadata(r) for r in rows]
                )
                done += len(rows)
                if progress:
                    progress(done, int(total))
            return done

    def counts(self) -> dict[str, int]:
        with self.store.session() as session:
            return {
                name: int(session.exec(select(func.count()).select_from(table)).one())
                for name, table in (
                    ("lessons", Lesson),
                    ("trajectories", Trajectory),
                    ("attempts", Attempt),
                    ("retrievals", Retrieval),
                    ("outcomes", Outcome),
                    ("values", LessonValue),
                )
            }
