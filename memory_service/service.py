"""The MemoryService facade: every entry point (HTTP, MCP, CLI) calls these methods.

It owns the SQL store (source of truth), the vector index (a rebuildable cache) and the
embedder, and delegates ranking and value arithmetic to the pure `retrieval` package.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from sqlalchemy import func
from sqlmodel import Session, col, select

from ingest.records import RejectedRecord, TrajectoryRecord
from memory_service import lessons as lesson_rows
from memory_service.embedder import Embedder, create_embedder
from memory_service.index import VectorIndex, create_index
from memory_service.models import IngestSummary
from memory_service.schema import Lesson, LessonValue, Outcome, Retrieval
from memory_service.service_learning import LearningLoop
from memory_service.settings import Settings
from memory_service.store import create_store_engine
from memory_service.values import rebuild_values

ProgressFn = Callable[[int, int], None]


class MemoryService(LearningLoop):
    """Value-driven lesson memory over one SQL store, one vector index and one embedder."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        embedder: Embedder | None = None,
        index: VectorIndex | None = None,
    ):
        self.settings = settings or Settings()
        if self.settings.database_url is None:
            self.settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.engine = create_store_engine(self.settings.resolved_database_url())
        self.embedder = embedder or create_embedder(
            self.settings.embedder, self.settings.embedding_model_path
        )
        self.index = index or create_index(
            self.settings.index,
            path=self.settings.data_dir / "chroma",
            url=self.settings.index_url,
            collection=self.settings.index_collection,
        )
        self._write_lock = threading.RLock()

    def close(self) -> None:
        self.engine.dispose()

    # ------------------------------------------------------------- maintenance
    def rebuild_values(self) -> int:
        """Recompute every LessonValue row from the outcome log."""
        with self._write_lock, Session(self.engine) as session:
            count = rebuild_values(
                session, self.settings.alpha, self.settings.q0, self.settings.reward_min_count
            )
            session.commit()
            return count

    def value_table(self) -> list[tuple[str, str, str, int, float, float]]:
        with Session(self.engine) as session:
            rows = session.exec(
                select(LessonValue).order_by(
                    col(LessonValue.lesson_id), col(LessonValue.stage), col(LessonValue.scope)
                )
            ).all()
            return [(r.lesson_id, r.stage, r.scope, r.n, r.q, r.sumsq) for r in rows]

    def reindex(self, batch_size: int = 512, progress: ProgressFn | None = None) -> int:
        """Drop and rebuild the vector index from the active lessons in SQL."""
        with self._write_lock, Session(self.engine) as session:
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
                    [r.id for r in rows], vectors, [self._index_metadata(r) for r in rows]
                )
                done += len(rows)
                if progress:
                    progress(done, int(total))
            return done

    def counts(self) -> dict[str, int]:
        with Session(self.engine) as session:
            from memory_service.schema import Attempt, Trajectory

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

    def export(self, path: Path, *, tenant: str | None = None) -> dict[str, int]:
        """Write the tenant's lessons, runs, retrievals and outcome log to a JSONL bundle."""
        from memory_service.transfer_io import export_bundle

        return export_bundle(self, path, tenant or self.settings.tenant)

    def import_bundle(self, path: Path, *, tenant: str | None = None) -> dict[str, int]:
        """Load a bundle written by `export` (idempotent); values are rebuilt from its log."""
        from memory_service.transfer_io import import_bundle

        return import_bundle(self, path, tenant or self.settings.tenant)

    # ------------------------------------------------------------------ ingest
    def ingest(
        self,
        records: Iterable[TrajectoryRecord | RejectedRecord],
        *,
        tenant: str | None = None,
        progress: Callable[[TrajectoryRecord | RejectedRecord], None] | None = None,
    ) -> IngestSummary:
        """Store trajectories, distil and store their lessons; idempotent per trajectory."""
        from memory_service.ingest_pipeline import ingest_records

        return ingest_records(self, records, tenant or self.settings.tenant, progress)
