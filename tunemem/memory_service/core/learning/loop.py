"""The learning loop, a part of the service: retrieve (recall, gate, rank), report (rewards
and value updates), and the history behind a lesson's values.

Given the store, the vector index, the embedder and the settings it needs; the facade
`MemoryService` delegates to it."""

from __future__ import annotations

import time
import uuid

from sqlalchemy import String, cast
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import col, select

from tunemem import platforms
from tunemem.memory_service.core.embedding.factory import Embedder
from tunemem.memory_service.core.errors import InvalidInput
from tunemem.memory_service.core.learning.candidates_sql import gating_conditions, write_retrieval
from tunemem.memory_service.core.learning.context_notes import context_warnings
from tunemem.memory_service.core.learning.outcome_write import answer, record_outcome, task_key
from tunemem.memory_service.core.learning.transfer_text import limit_fields, transfer_fields
from tunemem.memory_service.core.lessons.part import get_row, value_rows
from tunemem.memory_service.core.lessons.rows import stored_applicability
from tunemem.memory_service.core.lessons.source_runs import source_runs
from tunemem.memory_service.core.schemas.learning import (
    Breakdown,
    ContextIn,
    LessonHistory,
    OutcomePublic,
    RetrievedLesson,
    RetrieveRequest,
    RetrieveResponse,
    TaskIn,
)
from tunemem.memory_service.core.schemas.lessons import SourceRunPublic
from tunemem.memory_service.core.schemas.outcomes import ReportRequest, ReportResponse
from tunemem.memory_service.core.schemas.values import Estimator
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.stored_types import damage_warning, damaged_reads
from tunemem.memory_service.core.sql.tables import Lesson, Outcome, utcnow
from tunemem.memory_service.core.values.estimates import estimator_of, value_estimates
from tunemem.memory_service.core.values.generalised_inputs import Evidence
from tunemem.memory_service.core.values.toolchain_evidence import QueryToolchains
from tunemem.memory_service.core.vectors.base import VectorIndex
from tunemem.retrieval.gating import Query, gate
from tunemem.retrieval.knobs import echo
from tunemem.retrieval.query import query_text
from tunemem.retrieval.ranking import Candidate, RankedLesson, rank, recall_size


class LearningLoop:
    """Retrieval, outcome reports and lesson histories."""

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
        self.evidence = evidence or Evidence()

    @staticmethod
    def resolve_context(context: ContextIn) -> tuple[str | None, str | None, list[str]]:
        """(chip id, backend, scope chain) of a request's context."""
        backend = context.backend.strip().lower() if context.backend is not None else None
        if backend == "":
            backend = None
        if backend is not None and backend not in platforms.BACKENDS:
            raise InvalidInput(
                f"unknown backend {context.backend!r}; valid: {', '.join(platforms.BACKENDS)}",
                code="unknown_backend",
            )
        if context.chip:
            try:
                chip = platforms.resolve(context.chip, backend=backend)
            except platforms.UnknownChipError as exc:
                raise InvalidInput(str(exc), code="unknown_chip") from exc
            except ValueError as exc:  # the backend contradicts the chip
                raise InvalidInput(str(exc), code="context_conflict") from exc
            return (chip.id if chip.known else None), chip.backend, platforms.scope_chain(chip)
        if backend:
            return None, backend, [f"backend:{backend}", "global"]
        return None, None, ["global"]

    @staticmethod
    def task_key(task: TaskIn) -> str:
        return task_key(task)

    @staticmethod
    def query_text(request: RetrieveRequest, chip: str | None, backend: str | None) -> str:
        task, ctx = request.task, request.context
        return query_text(
            request.query,
            stage=request.stage,
            op=task.op,
            kernel=task.kernel,
            signature=task.signature,
            dtype=task.dtype,
            chip=chip or ctx.chip,
            backend=backend,
            model=ctx.model,
            scenario=ctx.scenario,
        )

    def retrieve(self, request: RetrieveRequest, *, tenant: str | None = None) -> RetrieveResponse:
        """Recall by similarity, gate by applicability, re-rank by similarity and value; a
        stored value of the tenant's that could not be read as stored is named in a warning."""
        with damaged_reads() as damaged:
            response = self._retrieve(request, tenant or self.settings.tenant)
        warning = damage_warning(damaged)
        if warning is not None:
            response.warnings.append(warning)
        return response

    def _retrieve(self, request: RetrieveRequest, tenant: str) -> RetrieveResponse:
        chip, backend, chain = self.resolve_context(request.context)
        ranking = self.settings.ranking(
            k=request.k,
            **request.options.model_dump(exclude_none=True),
        )
        vector = self.embedder.embed([self.query_text(request, chip, backend)])[0]
        n_recall = recall_size(ranking, self.index.count(tenant))
        # Over-fetch so that gating can drop some; below the floor nothing is admitted anyway.
        hits = [
            (lid, sim)
            for lid, sim in self.index.query(vector, n_recall * 2, tenant)
            if sim >= ranking.similarity_floor
        ]
        with self.store.session() as session:
            conditions = gating_conditions(session, [h[0] for h in hits])
            query = Query(op=request.task.op, dtype=request.task.dtype, backend=backend)
            admitted = gate(
                [(lid, sim, *conditions[lid]) for lid, sim in hits if lid in conditions],
                query,
                ranking.similarity_floor,
            )[:n_recall]
            ids = [lid for lid, _ in admitted]
            toolchains = QueryToolchains.for_query(
                session, ids, request, chain, backend, self.settings.toolchain_policy()
            )
            estimates, undiscounted = value_estimates(
                self.evidence, session, tenant, ids, request.stage, chip, chain, ranking, toolchains
            )
            ranked = rank([Candidate(lid, sim, estimates[lid]) for lid, sim in admitted], ranking)
            rows = {
                r.id: r
                for r in session.exec(
                    select(Lesson).where(col(Lesson.id).in_([r.lesson_id for r in ranked]))
                )
            }
            which = estimator_of(ranking, chip)
            runs = source_runs(session, rows.values())
            lessons = [
                self._retrieved(rows[r.lesson_id], r, backend, chip, which, runs) for r in ranked
            ]
            lessons = toolchains.annotate(lessons, undiscounted) if toolchains else lessons
            settings_echo = {**echo(ranking), "k_recall_used": n_recall, "pool": len(admitted)}
        retrieval_id = str(uuid.uuid4())
        row = {
            "id": retrieval_id,
            "tenant": tenant,
            "query": request.query,
            "task": request.task.model_dump(),
            "context": {**request.context.model_dump(), "chip_id": chip, "backend": backend},
            "stage": request.stage,
            "scope_chain": chain,
            "results": [
                {"id": item.id, "score": item.score, **item.breakdown.model_dump()}
                for item in lessons
            ],
            "settings": settings_echo,
            "created_at": utcnow(),
        }
        write_retrieval(self.store, row)
        return RetrieveResponse(
            retrieval_id=retrieval_id,
            stage=request.stage,
            chip=chip,
            scope_chain=chain,
            lessons=lessons,
            settings=settings_echo,
            warnings=context_warnings(request.context, chip, chain),
        )

    @staticmethod
    def _retrieved(
        row: Lesson,
        ranked: RankedLesson,
        target_backend: str | None,
        target_chip: str | None,
        estimator: Estimator,
        runs: dict[str, SourceRunPublic],
    ) -> RetrievedLesson:
        return RetrievedLesson(
            **transfer_fields(row, target_backend, target_chip),
            id=row.id,
            kind=row.kind,  # type: ignore[arg-type]
            text=row.text,
            hint=row.hint,
            code=row.code,
            applicability=stored_applicability(row),
            score=ranked.score,
            **limit_fields(row, target_backend, target_chip),
            breakdown=Breakdown.of(ranked, estimator).model_copy(
                update={"source_run": runs.get(row.id)}
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

        The write (outcome row, value rows) holds the store's write lock; the values in the
        answer are estimated after the commit, outside it, so a slow estimate never holds up
        another writer. A duplicate (same idempotency key) answers with the first report's
        outcome id and rewards and the lessons' values as they are now.

        With several API workers on one PostgreSQL store, two reports may race to create the
        same value row; the loser's transaction rolls back whole and is retried.
        """
        if idempotency_key is not None and not idempotency_key.strip():
            raise InvalidInput(
                "Idempotency-Key must not be empty; leave the header out to report without one",
                code="invalid_idempotency_key",
            )
        tenant = tenant or self.settings.tenant
        for attempt in range(5):
            try:
                recorded = record_outcome(
                    self.store, self.settings, request, idempotency_key, tenant
                )
                break
            except (IntegrityError, OperationalError):
                if attempt == 4:
                    raise
                time.sleep(0.01 * (2**attempt))
        return answer(self.store, self.evidence, self.settings, recorded, tenant)

    def lesson_history(self, lesson_id: str, *, tenant: str | None = None) -> LessonHistory:
        """The outcomes that credited a lesson, oldest first, and its values per scope."""
        tenant = tenant or self.settings.tenant
        with self.store.session() as session:
            lesson_id = get_row(session, lesson_id, tenant).id
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
                lesson_id=lesson_id, outcomes=outcomes, values=value_rows(session, lesson_id)
            )
