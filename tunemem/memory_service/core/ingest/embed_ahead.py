"""Embedding an ingest's next batch of lessons while the current batch is stored.

The model's forward passes give up the interpreter lock, so the lesson texts of batch N+1 are
embedded on a background thread (which runs the embedder's passes side by side) while batch
N's rows are built and written by the ingesting thread. Only lessons whose content the store
does not hold yet are embedded, each text once per ingest, through the embedder's own
`embed_documents` (so the on-disk cache works as usual); the vectors handed to `add_lessons`
are the ones it would have computed itself, and the store ends bit for bit the same.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from pydantic import ValidationError
from sqlmodel import col, select

from tunemem.ingest.records import TrajectoryRecord
from tunemem.memory_service.core.lessons import rows as lesson_rows
from tunemem.memory_service.core.lessons.part import Lessons
from tunemem.memory_service.core.schemas.lessons import LessonCreate
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.tables import Lesson, Trajectory

DISTILL_ERRORS = (ValidationError, ValueError, KeyError, TypeError)


@dataclass
class Prepared:
    """One batch of trajectories, distilled, its new lesson texts sent to the embedder."""

    batch: list[TrajectoryRecord]
    # Per record id: its drafted lessons, or the error its distillation raised.
    drafted: dict[str, list[LessonCreate] | Exception] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)


class EmbedAhead:
    """Distils a batch and starts embedding its new lessons' texts in the background."""

    def __init__(self, store: Store, lessons_part: Lessons, tenant: str):
        self.store = store
        self.lessons_part = lessons_part
        self.tenant = tenant
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tunemem-embed-ahead")
        self._pending: dict[str, tuple[Future[np.ndarray], int]] = {}

    def prepare(self, batch: list[TrajectoryRecord], ids: dict[str, str]) -> Prepared:
        """Distil the batch's trajectories not stored yet and embed their new lessons' texts.

        Args:
            batch: the trajectories, in order.
            ids: stored trajectory id of each record id.
        """
        prepared = Prepared(batch)
        with self.store.session() as session:
            stored = set(
                session.exec(
                    select(Trajectory.id).where(
                        col(Trajectory.id).in_(list(ids.values())), Trajectory.tenant == self.tenant
                    )
                ).all()
            )
            lessons: list[LessonCreate] = []
            for record in batch:
                if ids[record.id] in stored or record.id in prepared.drafted:
                    continue
                try:
                    drafted = _lessons_of(record)
                except DISTILL_ERRORS as exc:
                    prepared.drafted[record.id] = exc
                    continue
                prepared.drafted[record.id] = drafted
                lessons.extend(drafted)
            digests = {lesson_rows.content_hash(lesson): lesson for lesson in lessons}
            known = set(
                session.exec(
                    select(Lesson.content_hash).where(
                        Lesson.tenant == self.tenant, col(Lesson.content_hash).in_(set(digests))
                    )
                ).all()
            )
        for digest, lesson in digests.items():
            if digest in known:
                continue
            app = lesson_rows.normalise_applicability(lesson.applicability)
            text = lesson_rows.embedding_text(lesson.kind, lesson.text, app)
            if text not in self._pending and text not in prepared.texts:
                prepared.texts.append(text)
        if prepared.texts:
            future = self._pool.submit(self.lessons_part.embedder.embed_documents, prepared.texts)
            for row, text in enumerate(prepared.texts):
                self._pending[text] = (future, row)
        return prepared

    def vectors(self, prepared: Prepared) -> dict[str, np.ndarray]:
        """The vectors of every text embedded ahead so far (waiting for this batch's); the
        batch's own are forgotten afterwards."""
        out = {}
        for text, (future, row) in self._pending.items():
            if future.done() or text in prepared.texts:
                out[text] = future.result()[row]
        for text in prepared.texts:
            self._pending.pop(text, None)
        return out

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _lessons_of(record: TrajectoryRecord) -> list[LessonCreate]:
    from tunemem.ingest.distill import distill

    lessons = []
    for draft in distill(record):
        lessons.append(
            LessonCreate(
                kind=draft.kind,  # type: ignore[arg-type]
                text=draft.text,
                hint=draft.hint,
                code=draft.code,
                applicability=draft.applicability,  # type: ignore[arg-type]
                provenance=draft.provenance,
            )
        )
    return lessons
