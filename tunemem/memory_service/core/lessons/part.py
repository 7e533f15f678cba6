"""Lessons, a part of the service: add (with dedup), list, get, edit, archive.

Given the store, the vector index, the embedder and the settings it needs; the facade
`MemoryService` delegates to it."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np
from sqlalchemy import event
from sqlmodel import Session, col, select

from tunemem.memory_service.core import ids
from tunemem.memory_service.core.embedding.factory import Embedder
from tunemem.memory_service.core.lessons import rows as lesson_rows
from tunemem.memory_service.core.lessons.claims import unreproduced_lessons
from tunemem.memory_service.core.lessons.filters import (
    chip_id_for_filter,
    created_page,
    created_rows,
    filter_conditions,
    naming_chip,
)
from tunemem.memory_service.core.lessons.listings import in_context, stale_page, valued_lessons
from tunemem.memory_service.core.lessons.source_runs import source_runs
from tunemem.memory_service.core.schemas.lessons import (
    LessonCreate,
    LessonDetail,
    LessonFilter,
    LessonList,
    LessonPublic,
    LessonsCreated,
    LessonUpdate,
    ValuePublic,
)
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.tables import Lesson, LessonRevision, LessonValue, utcnow
from tunemem.memory_service.core.values.generalised_inputs import Evidence
from tunemem.memory_service.core.vectors.base import VectorIndex

log = logging.getLogger(__name__)


def get_row(session: Session, lesson_id: str, tenant: str) -> Lesson:
    """The tenant's lesson with this id or unique id prefix; NotFound or `ambiguous_id`."""
    return ids.find(session, Lesson, lesson_id, tenant, what="lesson", code="lesson_not_found")


def value_rows(session: Session, lesson_id: str) -> list[ValuePublic]:
    """A lesson's values per stage and scope."""
    rows = session.exec(
        select(LessonValue)
        .where(LessonValue.lesson_id == lesson_id)
        .order_by(col(LessonValue.stage), col(LessonValue.scope))
    ).all()
    return [ValuePublic(stage=r.stage, scope=r.scope, n=r.n, q=r.q) for r in rows]  # type: ignore[arg-type]


class Lessons:
    """Adding, listing, reading, editing and archiving lessons."""

    def __init__(
        self,
        store: Store,
        index: VectorIndex,
        embedder: Embedder,
        settings: Settings,
        evidence: Evidence | None = None,
    ):
        self.store = store
        self.index = index
        self.embedder = embedder
        self.settings = settings
        # shared with the learning loop: how recorded runs' claims held up in outcomes
        self.evidence = evidence or Evidence()

    def add_lessons(
        self,
        lessons: list[LessonCreate],
        *,
        tenant: str | None = None,
        creator: str | None = None,
        session: Session | None = None,
        vectors: Mapping[str, np.ndarray] | None = None,
    ) -> LessonsCreated:
        """Add lessons; exact duplicates and near-duplicates merge into the existing lesson.

        `vectors`: embeddings already computed by this service's embedder, by embedding text
        (an ingest embeds its next batch ahead); the other texts are embedded here.
        """
        tenant = tenant or self.settings.tenant
        with self.store.write_lock:
            own = session is None
            session = session or self.store.session()
            try:
                result, new_rows, matrix = self._prepare_lessons(
                    session, lessons, tenant, creator, vectors or {}
                )
                for row in new_rows:
                    session.add(row)
                session.flush()
                # SQL first, the index after the commit: a crash in between leaves a lesson
                # missing from the index (repaired on start), never an entry without a lesson.
                pending = (
                    [r.id for r in new_rows],
                    matrix,
                    [lesson_rows.index_metadata(r) for r in new_rows],
                )
                if own:
                    session.commit()
                    self._index_after_commit(pending)
                elif new_rows:
                    event.listen(
                        session,
                        "after_commit",
                        lambda _s: self._index_after_commit(pending),
                        once=True,
                    )
            except Exception:
                if own:
                    session.rollback()
                raise
            finally:
                if own:
                    session.close()
        return result

    def _index_after_commit(self, pending: tuple[list[str], np.ndarray, list[dict]]) -> None:
        ids, vectors, metadatas = pending
        if not ids:
            return
        try:
            self.index.upsert(ids, vectors, metadatas)
        except Exception:
            # The lessons are stored (SQL is the truth); the index catches up on repair, and
            # /healthz shows active lessons and index entries apart until then.
            log.exception("index write failed after commit; %d lessons await repair", len(ids))

    def _prepare_lessons(
        self,
        session: Session,
        lessons: list[LessonCreate],
        tenant: str,
        creator: str | None,
        known: Mapping[str, np.ndarray],
    ) -> tuple[LessonsCreated, list[Lesson], np.ndarray]:
        digests = [lesson_rows.content_hash(lesson) for lesson in lessons]
        existing = {
            row.content_hash: row.id
            for row in session.exec(
                select(Lesson).where(
                    Lesson.tenant == tenant, col(Lesson.content_hash).in_(set(digests))
                )
            )
        }
        rows = [
            lesson_rows.to_row(tenant, lesson, d, creator)
            for lesson, d in zip(lessons, digests, strict=True)
        ]
        # Only lessons whose content is not stored yet need an embedding (the costly part).
        fresh = [i for i, d in enumerate(digests) if d not in existing]
        texts = [
            lesson_rows.embedding_text(rows[i].kind, rows[i].text, rows[i].applicability)
            for i in fresh
        ]
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        computed = dict(zip(missing, self.embedder.embed_documents(missing), strict=True))
        fresh_vectors = np.array(
            [known[t] if t in known else computed[t] for t in texts], dtype=np.float32
        ).reshape(len(texts), self.embedder.dim)
        vector_of = dict(zip(fresh, fresh_vectors, strict=True))
        # Nearest stored lessons of every fresh one in one index call (near-duplicate check).
        hits_of = dict(zip(fresh, self.index.query_many(fresh_vectors, 3, tenant), strict=True))
        ids: list[str] = []
        merged: list[str] = []
        created: list[str] = []
        new_rows: list[Lesson] = []
        new_vectors: list[np.ndarray] = []
        for i, (row, digest) in enumerate(zip(rows, digests, strict=True)):
            target = existing.get(digest)
            if target is None:
                target = self._near_duplicate(
                    session, row, vector_of[i], hits_of[i], new_rows, new_vectors
                )
            if target:
                ids.append(target)
                merged.append(target)
                continue
            existing[digest] = row.id
            new_rows.append(row)
            new_vectors.append(vector_of[i])
            ids.append(row.id)
            created.append(row.id)
        matrix = np.stack(new_vectors) if new_vectors else np.zeros((0, self.embedder.dim))
        return LessonsCreated(ids=ids, merged=merged, created=created), new_rows, matrix

    def _near_duplicate(
        self,
        session: Session,
        row: Lesson,
        vector: np.ndarray,
        stored_hits: list[tuple[str, float]],
        batch_rows: list[Lesson],
        batch_vectors: list[np.ndarray],
    ) -> str | None:
        threshold = self.settings.dedup_threshold
        if batch_vectors:
            sims = np.stack(batch_vectors) @ vector
            for other, sim in zip(batch_rows, sims, strict=True):
                if sim >= threshold and self._same_conditions(other, row):
                    return other.id
        for candidate_id, sim in stored_hits:
            if sim < threshold:
                break
            stored = session.get(Lesson, candidate_id)
            if (
                stored is not None
                and stored.status == "active"
                and self._same_conditions(stored, row)
            ):
                return stored.id
        return None

    @staticmethod
    def _same_conditions(a: Lesson, b: Lesson) -> bool:
        # Same wording is not enough: lessons whose structured hints differ (two different
        # configurations, say) carry different knowledge and are kept apart.
        return (
            a.kind == b.kind
            and a.applicability == b.applicability
            and a.code == b.code
            and a.hint == b.hint
        )

    def list_lessons(self, where: LessonFilter, *, tenant: str | None = None) -> LessonList:
        """The lessons the filter selects, in the listing its `sort` and `stale` name: by
        failed claims, by value in the chip's context, or by creation (the stale ones only)."""
        tenant = tenant or self.settings.tenant
        conditions = filter_conditions(where, tenant)
        with self.store.session() as session:
            if where.sort == "unreproduced":
                chip_id = chip_id_for_filter(where.chip) if where.chip else None
                return unreproduced_lessons(
                    session, where, conditions, self.evidence, tenant, chip_id
                )
            if where.sort != "created":  # ranked in the chip's context, not filtered by it
                return valued_lessons(
                    session, where, conditions, self.settings, self.evidence, tenant
                )
            if where.chip:
                conditions.append(naming_chip(chip_id_for_filter(where.chip)))
            if where.stale:  # staleness needs each lesson's evidence, so it is judged there
                every = created_rows(session, conditions)
                return stale_page(session, every, where, self.settings.toolchain_policy())
            return created_page(session, where, conditions)

    def get_lesson(self, lesson_id: str, *, tenant: str | None = None) -> LessonDetail:
        tenant = tenant or self.settings.tenant
        with self.store.session() as session:
            row = get_row(session, lesson_id, tenant)
            values = value_rows(session, row.id)
            contexts = in_context(session, row.id, values, self.settings, self.evidence, tenant)
            return LessonDetail(
                **lesson_rows.to_public(row).model_dump(),
                values=values,
                in_context=contexts,
                source_run=source_runs(session, [row]).get(row.id),
            )

    def update_lesson(
        self, lesson_id: str, update: LessonUpdate, *, tenant: str | None = None
    ) -> LessonPublic:
        """Edit text, kind, hint or applicability; the previous version is kept as a revision."""
        tenant = tenant or self.settings.tenant
        with self.store.write_lock, self.store.session() as session:
            row = get_row(session, lesson_id, tenant)
            session.add(self._revision(row, "edit"))
            changes = update.model_dump(exclude_unset=True)
            if "applicability" in changes and update.applicability is not None:
                row.applicability = lesson_rows.normalise_applicability(update.applicability)
                lesson_rows.set_filter_columns(row)
            for key in ("text", "kind", "hint"):
                if key in changes:
                    setattr(row, key, changes[key])
            row.updated_at = utcnow()
            session.add(row)
            session.flush()
            pending = None
            if row.status == "active":
                vector = self.embedder.embed_documents(
                    [lesson_rows.embedding_text(row.kind, row.text, row.applicability)]
                )
                pending = ([row.id], vector, [lesson_rows.index_metadata(row)])
            session.commit()
            if pending:
                self._index_after_commit(pending)
            session.refresh(row)
            return lesson_rows.to_public(row)

    @staticmethod
    def _revision(row: Lesson, change: str) -> LessonRevision:
        return LessonRevision(
            lesson_id=row.id,
            text=row.text,
            applicability=row.applicability,
            hint=row.hint,
            status=row.status,
            change=change,
        )

    def archive_lesson(self, lesson_id: str, *, tenant: str | None = None) -> LessonPublic:
        """Archive (never delete): the lesson leaves retrieval, its history stays."""
        tenant = tenant or self.settings.tenant
        with self.store.write_lock, self.store.session() as session:
            row = get_row(session, lesson_id, tenant)
            if row.status != "archived":
                session.add(self._revision(row, "archive"))
                row.status = "archived"
                row.updated_at = utcnow()
                session.add(row)
                session.commit()
                try:
                    self.index.delete([row.id])
                except Exception:
                    log.exception("index delete failed after commit; repair drops %s", row.id)
                session.refresh(row)
            return lesson_rows.to_public(row)
