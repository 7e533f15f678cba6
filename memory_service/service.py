"""The MemoryService facade: every entry point (HTTP, MCP, CLI) calls these methods.

It owns the SQL store (source of truth), the vector index (a rebuildable cache) and the
embedder, and delegates ranking and value arithmetic to the pure `retrieval` package.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import String, cast, func, or_
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, col, select

import platforms
from ingest.records import RejectedRecord, TrajectoryRecord, stable_hash
from memory_service import lessons as lesson_rows
from memory_service.embedder import Embedder, create_embedder
from memory_service.errors import InvalidInput, NotFound
from memory_service.index import VectorIndex, create_index
from memory_service.models import (
    Applicability,
    Breakdown,
    ContextIn,
    IngestSummary,
    LessonCreate,
    LessonDetail,
    LessonHistory,
    LessonList,
    LessonPublic,
    LessonsCreated,
    LessonUpdate,
    OutcomePublic,
    ReportRequest,
    ReportResponse,
    RetrievedLesson,
    RetrieveRequest,
    RetrieveResponse,
    TaskIn,
    ValueNow,
    ValuePublic,
)
from memory_service.schema import Lesson, LessonRevision, LessonValue, Outcome, Retrieval, utcnow
from memory_service.settings import Settings
from memory_service.store import create_store_engine
from memory_service.values import apply_reward, compute_reward, rebuild_values
from retrieval.gating import Query, gate
from retrieval.ranking import Candidate, rank, recall_size
from retrieval.values import ScopeStats, ValueEstimate, value_estimate

ProgressFn = Callable[[int, int], None]


class MemoryService:
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

    # ----------------------------------------------------------------- lessons
    def add_lessons(
        self,
        lessons: list[LessonCreate],
        *,
        tenant: str | None = None,
        creator: str | None = None,
        session: Session | None = None,
    ) -> LessonsCreated:
        """Add lessons; exact duplicates and near-duplicates merge into the existing lesson."""
        tenant = tenant or self.settings.tenant
        with self._write_lock:
            own = session is None
            session = session or Session(self.engine)
            try:
                result, new_rows, vectors = self._prepare_lessons(session, lessons, tenant, creator)
                for row in new_rows:
                    session.add(row)
                session.flush()
                if new_rows:
                    self.index.upsert(
                        [r.id for r in new_rows],
                        vectors,
                        [self._index_metadata(r) for r in new_rows],
                    )
                if own:
                    session.commit()
            except Exception:
                if own:
                    session.rollback()
                raise
            finally:
                if own:
                    session.close()
        return result

    def _prepare_lessons(
        self, session: Session, lessons: list[LessonCreate], tenant: str, creator: str | None
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
        fresh_vectors = self.embedder.embed(
            [
                lesson_rows.embedding_text(rows[i].kind, rows[i].text, rows[i].applicability)
                for i in fresh
            ]
        )
        vector_of = dict(zip(fresh, fresh_vectors, strict=True))
        ids: list[str] = []
        merged: list[str] = []
        created: list[str] = []
        new_rows: list[Lesson] = []
        new_vectors: list[np.ndarray] = []
        for i, (row, digest) in enumerate(zip(rows, digests, strict=True)):
            target = existing.get(digest)
            if target is None:
                target = self._near_duplicate(
                    session, row, vector_of[i], tenant, new_rows, new_vectors
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
        tenant: str,
        batch_rows: list[Lesson],
        batch_vectors: list[np.ndarray],
    ) -> str | None:
        threshold = self.settings.dedup_threshold
        if batch_vectors:
            sims = np.stack(batch_vectors) @ vector
            for other, sim in zip(batch_rows, sims, strict=True):
                if sim >= threshold and self._same_conditions(other, row):
                    return other.id
        for candidate_id, sim in self.index.query(vector, 3, tenant):
            if sim < threshold:
                break
            other = session.get(Lesson, candidate_id)
            if other is not None and other.status == "active" and self._same_conditions(other, row):
                return other.id
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

    @staticmethod
    def _index_metadata(row: Lesson) -> dict[str, Any]:
        return {
            "tenant": row.tenant,
            "kind": row.kind,
            "op": row.op,
            "backends": row.backends,
        }

    def list_lessons(
        self,
        *,
        kind: str | None = None,
        backend: str | None = None,
        chip: str | None = None,
        op: str | None = None,
        q: str | None = None,
        status: str = "active",
        limit: int = 50,
        offset: int = 0,
        tenant: str | None = None,
    ) -> LessonList:
        tenant = tenant or self.settings.tenant
        conditions = [Lesson.tenant == tenant]
        if status != "all":
            conditions.append(Lesson.status == status)
        if kind:
            conditions.append(Lesson.kind == kind)
        if op:
            conditions.append(Lesson.op == op.lower())
        if backend:
            conditions.append(
                or_(Lesson.backends == ",", col(Lesson.backends).contains(f",{backend.lower()},"))
            )
        if chip:
            chip_id = self._chip_id_for_filter(chip)
            conditions.append(col(Lesson.chips).contains(f",{chip_id},"))
        if q:
            conditions.append(func.lower(Lesson.text).contains(q.lower()))
        with Session(self.engine) as session:
            total = session.exec(select(func.count()).select_from(Lesson).where(*conditions)).one()
            rows = session.exec(
                select(Lesson)
                .where(*conditions)
                .order_by(col(Lesson.created_at), col(Lesson.id))
                .offset(offset)
                .limit(limit)
            ).all()
            return LessonList(data=[lesson_rows.to_public(r) for r in rows], count=int(total))

    @staticmethod
    def _chip_id_for_filter(chip: str) -> str:
        try:
            return platforms.resolve(chip).id
        except platforms.UnknownChipError:
            return chip.lower()

    def _get_row(self, session: Session, lesson_id: str, tenant: str) -> Lesson:
        row = session.get(Lesson, lesson_id)
        if row is None or row.tenant != tenant:
            raise NotFound(f"no lesson with id {lesson_id}", code="lesson_not_found")
        return row

    def get_lesson(self, lesson_id: str, *, tenant: str | None = None) -> LessonDetail:
        tenant = tenant or self.settings.tenant
        with Session(self.engine) as session:
            row = self._get_row(session, lesson_id, tenant)
            values = self._value_rows(session, lesson_id)
            return LessonDetail(**lesson_rows.to_public(row).model_dump(), values=values)

    @staticmethod
    def _value_rows(session: Session, lesson_id: str) -> list[ValuePublic]:
        rows = session.exec(
            select(LessonValue)
            .where(LessonValue.lesson_id == lesson_id)
            .order_by(col(LessonValue.stage), col(LessonValue.scope))
        ).all()
        return [ValuePublic(stage=r.stage, scope=r.scope, n=r.n, q=r.q) for r in rows]  # type: ignore[arg-type]

    def update_lesson(
        self, lesson_id: str, update: LessonUpdate, *, tenant: str | None = None
    ) -> LessonPublic:
        """Edit text, kind, hint or applicability; the previous version is kept as a revision."""
        tenant = tenant or self.settings.tenant
        with self._write_lock, Session(self.engine) as session:
            row = self._get_row(session, lesson_id, tenant)
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
            if row.status == "active":
                vector = self.embedder.embed(
                    [lesson_rows.embedding_text(row.kind, row.text, row.applicability)]
                )
                self.index.upsert([row.id], vector, [self._index_metadata(row)])
            session.commit()
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
        with self._write_lock, Session(self.engine) as session:
            row = self._get_row(session, lesson_id, tenant)
            if row.status != "archived":
                session.add(self._revision(row, "archive"))
                row.status = "archived"
                row.updated_at = utcnow()
                session.add(row)
                session.flush()
                self.index.delete([row.id])
                session.commit()
                session.refresh(row)
            return lesson_rows.to_public(row)

    # --------------------------------------------------------------- retrieval
    @staticmethod
    def resolve_context(context: ContextIn) -> tuple[str | None, str | None, list[str]]:
        """(chip id, backend, scope chain) of a request's context."""
        if context.chip:
            try:
                chip = platforms.resolve(context.chip, backend=context.backend)
            except platforms.UnknownChipError as exc:
                raise InvalidInput(str(exc), code="unknown_chip") from exc
            return (chip.id if chip.known else None), chip.backend, platforms.scope_chain(chip)
        if context.backend:
            backend = context.backend.lower()
            valid = list(platforms.BACKENDS)
            if backend not in valid:
                raise InvalidInput(
                    f"unknown backend {context.backend!r}; valid: {', '.join(valid)}",
                    code="unknown_backend",
                )
            return None, backend, [f"backend:{backend}", "global"]
        return None, None, ["global"]

    @staticmethod
    def task_key(task: TaskIn) -> str:
        return stable_hash(
            {"op": task.op, "kernel": task.kernel, "signature": task.signature, "dtype": task.dtype}
        )

    @staticmethod
    def query_text(request: RetrieveRequest, chip: str | None, backend: str | None) -> str:
        task, ctx = request.task, request.context
        parts = [request.query.strip()] if request.query.strip() else []
        if task.op:
            parts.append(f"op: {task.op}")
        if task.kernel:
            parts.append(f"kernel: {task.kernel}")
        if task.signature:
            parts.append(
                "signature: " + ", ".join(f"{k}={v}" for k, v in sorted(task.signature.items()))
            )
        if task.dtype:
            parts.append(f"dtype: {task.dtype}")
        for key, value in (
            ("chip", chip or ctx.chip),
            ("backend", backend),
            ("model", ctx.model),
            ("scenario", ctx.scenario),
        ):
            if value:
                parts.append(f"{key}: {value}")
        parts.append(f"stage: {request.stage}")
        return "\n".join(parts)

    def retrieve(self, request: RetrieveRequest, *, tenant: str | None = None) -> RetrieveResponse:
        """Recall by similarity, gate by applicability, re-rank by similarity and value."""
        tenant = tenant or self.settings.tenant
        chip, backend, chain = self.resolve_context(request.context)
        ranking = self.settings.ranking(
            k=request.k,
            **request.options.model_dump(exclude_none=True),
        )
        vector = self.embedder.embed([self.query_text(request, chip, backend)])[0]
        n_recall = recall_size(ranking, self.index.count())
        hits = self.index.query(vector, n_recall * 3, tenant)
        with Session(self.engine) as session:
            rows = {
                r.id: r
                for r in session.exec(
                    select(Lesson).where(
                        col(Lesson.id).in_([h[0] for h in hits]), Lesson.status == "active"
                    )
                )
            }
            query = Query(op=request.task.op, dtype=request.task.dtype, backend=backend)
            admitted = gate(
                [
                    (lid, sim, rows[lid].applicability, bool(rows[lid].code))
                    for lid, sim in hits
                    if lid in rows
                ],
                query,
                ranking.similarity_floor,
            )[:n_recall]
            estimates = self._estimates(
                session,
                [lid for lid, _ in admitted],
                request.stage,
                chain,
                ranking.q0,
                ranking.kappa,
                ranking.backoff,
            )
            ranked = rank([Candidate(lid, sim, estimates[lid]) for lid, sim in admitted], ranking)
            lessons = [self._retrieved(rows[r.lesson_id], r, backend) for r in ranked]
            settings_echo = {**ranking.__dict__, "k_recall_used": n_recall, "pool": len(admitted)}
            retrieval_id = str(uuid.uuid4())
            retrieval = Retrieval(
                id=retrieval_id,
                tenant=tenant,
                query=request.query,
                task=request.task.model_dump(),
                context={**request.context.model_dump(), "chip_id": chip, "backend": backend},
                stage=request.stage,
                scope_chain=chain,
                results=[
                    {"id": item.id, "score": item.score, **item.breakdown.model_dump()}
                    for item in lessons
                ],
                settings=settings_echo,
            )
            session.add(retrieval)
            session.commit()
        return RetrieveResponse(
            retrieval_id=retrieval_id,
            stage=request.stage,
            chip=chip,
            scope_chain=chain,
            lessons=lessons,
            settings=settings_echo,
        )

    @staticmethod
    def _estimates(
        session: Session,
        lesson_ids: list[str],
        stage: str,
        chain: list[str],
        q0: float,
        kappa: float,
        backoff: bool,
    ) -> dict[str, ValueEstimate]:
        stats: dict[str, dict[str, ScopeStats]] = {lid: {} for lid in lesson_ids}
        if lesson_ids:
            for row in session.exec(
                select(LessonValue).where(
                    col(LessonValue.lesson_id).in_(lesson_ids),
                    LessonValue.stage == stage,
                    col(LessonValue.scope).in_(chain),
                )
            ):
                stats[row.lesson_id][row.scope] = ScopeStats(row.n, row.q, row.sumsq)
        return {
            lid: value_estimate(chain, s, q0=q0, kappa=kappa, backoff=backoff)
            for lid, s in stats.items()
        }

    @staticmethod
    def _retrieved(row: Lesson, ranked: Any, target_backend: str | None) -> RetrievedLesson:
        source_backends = row.applicability.get("backends") or []
        transferred = bool(
            target_backend and source_backends and target_backend not in source_backends
        )
        rendered = None
        source_scope = None
        if row.applicability.get("chips"):
            source_scope = f"chip:{row.applicability['chips'][0]}"
        elif source_backends:
            source_scope = f"backend:{source_backends[0]}"
        if transferred and target_backend:
            rendered = platforms.render(row.text, source_backends[0], target_backend).text
        return RetrievedLesson(
            id=row.id,
            kind=row.kind,  # type: ignore[arg-type]
            text=row.text,
            hint=row.hint,
            code=row.code,
            applicability=Applicability(**row.applicability),
            score=ranked.score,
            transferred=transferred,
            source_scope=source_scope,
            rendered_text=rendered,
            warning=row.kind == "failure",
            breakdown=Breakdown(
                similarity=ranked.similarity,
                value=ranked.value,
                value_scope=ranked.value_scope,
                n=ranked.n,
                exploration=ranked.exploration,
                z_sim=ranked.z_similarity,
                z_value=ranked.z_value,
                ci_low=ranked.ci_low,
                ci_high=ranked.ci_high,
            ),
        )

    # ---------------------------------------------------------------- outcomes
    def report(
        self,
        request: ReportRequest,
        *,
        idempotency_key: str | None = None,
        tenant: str | None = None,
    ) -> ReportResponse:
        """Record an outcome, reward the credited lessons in every scope, return new values.

        With several API workers on one PostgreSQL store, two reports may race to create the
        same value row; the loser's transaction rolls back whole and is retried.
        """
        for attempt in range(5):
            try:
                return self._report_once(request, idempotency_key=idempotency_key, tenant=tenant)
            except (IntegrityError, OperationalError):
                if attempt == 4:
                    raise
                time.sleep(0.01 * (2**attempt))
        raise AssertionError("unreachable")

    def _report_once(
        self,
        request: ReportRequest,
        *,
        idempotency_key: str | None = None,
        tenant: str | None = None,
    ) -> ReportResponse:
        tenant = tenant or self.settings.tenant
        with self._write_lock, Session(self.engine) as session:
            if idempotency_key:
                previous = session.exec(
                    select(Outcome).where(
                        Outcome.tenant == tenant, Outcome.idempotency_key == idempotency_key
                    )
                ).first()
                if previous is not None:
                    if previous.retrieval_id != request.retrieval_id:
                        raise InvalidInput(
                            "idempotency key already used for another retrieval",
                            code="idempotency_key_reused",
                        )
                    return ReportResponse(**{**previous.response, "duplicate": True})
            retrieval = session.get(Retrieval, request.retrieval_id)
            if retrieval is None or retrieval.tenant != tenant:
                raise NotFound(
                    f"no retrieval with id {request.retrieval_id}", code="retrieval_not_found"
                )
            returned = [r["id"] for r in retrieval.results]
            used = list(dict.fromkeys(request.used)) if request.used is not None else returned
            unknown = [lid for lid in used if lid not in returned]
            if unknown:
                raise InvalidInput(
                    f"lessons not returned by retrieval {retrieval.id}: {', '.join(unknown)}",
                    code="lesson_not_in_retrieval",
                )
            outcome = request.outcome
            task = TaskIn(**retrieval.task)
            task_key = self.task_key(task)
            now = utcnow()
            reward = compute_reward(
                session,
                tenant,
                retrieval.stage,
                task_key,
                outcome.compiled,
                outcome.correct,
                outcome.error,
                outcome.latency_ms,
                outcome.best_before_ms,
                self.settings.reward_min_count,
            )
            apply_reward(
                session,
                used,
                retrieval.stage,
                retrieval.scope_chain,
                reward,
                self.settings.alpha,
                self.settings.q0,
                now,
            )
            session.flush()
            ranking = self.settings.ranking()
            estimates = self._estimates(
                session,
                used,
                retrieval.stage,
                retrieval.scope_chain,
                ranking.q0,
                ranking.kappa,
                ranking.backoff,
            )
            row = Outcome(
                tenant=tenant,
                retrieval_id=retrieval.id,
                lessons=used,
                stage=retrieval.stage,
                task_key=task_key,
                scope_chain=retrieval.scope_chain,
                compiled=outcome.compiled,
                correct=outcome.correct,
                latency_ms=outcome.latency_ms,
                best_before_ms=outcome.best_before_ms,
                error=outcome.error,
                reward=reward,
                reporter=request.reporter,
                idempotency_key=idempotency_key,
                created_at=now,
            )
            session.add(row)
            session.flush()
            response = ReportResponse(
                outcome_id=row.id or 0,
                reward=reward,
                rewards={lid: reward for lid in used},
                values={
                    lid: ValueNow(
                        stage=retrieval.stage,  # type: ignore[arg-type]
                        value=est.value,
                        value_scope=est.scope,
                        n=est.n_local,
                        ci_low=est.ci_low,
                        ci_high=est.ci_high,
                    )
                    for lid, est in estimates.items()
                },
            )
            row.response = response.model_dump(mode="json")
            session.add(row)
            session.commit()
            return response

    def lesson_history(self, lesson_id: str, *, tenant: str | None = None) -> LessonHistory:
        """The outcomes that credited a lesson, oldest first, and its values per scope."""
        tenant = tenant or self.settings.tenant
        with Session(self.engine) as session:
            self._get_row(session, lesson_id, tenant)
            rows = session.exec(
                select(Outcome)
                .where(
                    Outcome.tenant == tenant,
                    cast(Outcome.lessons, String).contains(f'"{lesson_id}"'),
                )
                .order_by(col(Outcome.id))
            ).all()
            outcomes = [
                OutcomePublic(**r.model_dump(include=set(OutcomePublic.model_fields)))
                for r in rows
                if lesson_id in r.lessons
            ]
            return LessonHistory(
                lesson_id=lesson_id, outcomes=outcomes, values=self._value_rows(session, lesson_id)
            )

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
