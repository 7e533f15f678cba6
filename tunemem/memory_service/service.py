"""The MemoryService facade: every entry point (HTTP, MCP, CLI) calls these methods.

It owns the SQL store (source of truth), the vector index (a rebuildable cache) and the
embedder, and composes the parts in `memory_service.core` (lessons, learning loop, ingest,
export/import, audit, keys, maintenance), each given only the collaborators it needs. Every
method here is a one-line delegation; ranking and value arithmetic live in `retrieval`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Self

from sqlalchemy.engine import Engine
from sqlmodel import Session

from tunemem.ingest.records import RejectedRecord, TrajectoryRecord
from tunemem.memory_service.core.access import keys as auth
from tunemem.memory_service.core.audit.transfer import transfer_audit
from tunemem.memory_service.core.bundles import export_import as bundles
from tunemem.memory_service.core.embedding.cache import DiskCachedEmbedder, EmbeddingCache
from tunemem.memory_service.core.embedding.factory import Embedder, create_embedder
from tunemem.memory_service.core.ingest.store_runs import ingest_records
from tunemem.memory_service.core.ingest.uploads import uploaded_records
from tunemem.memory_service.core.learning.loop import LearningLoop
from tunemem.memory_service.core.lessons.part import Lessons
from tunemem.memory_service.core.maintenance.doctor import Doctor, DoctorReport
from tunemem.memory_service.core.maintenance.part import Maintenance, ProgressFn
from tunemem.memory_service.core.schemas.audit import TransferAuditPublic, TransferQuery
from tunemem.memory_service.core.schemas.ingest import IngestSummary, TrajectoriesIn
from tunemem.memory_service.core.schemas.learning import (
    LessonHistory,
    RetrieveRequest,
    RetrieveResponse,
)
from tunemem.memory_service.core.schemas.lessons import (
    LessonCreate,
    LessonDetail,
    LessonFilter,
    LessonList,
    LessonPublic,
    LessonsCreated,
    LessonUpdate,
)
from tunemem.memory_service.core.schemas.outcomes import ReportRequest, ReportResponse
from tunemem.memory_service.core.schemas.suggest import SuggestRequest, SuggestResponse
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.suggest.model_suggester import ModelSuggester
from tunemem.memory_service.core.suggest.part import Suggestions
from tunemem.memory_service.core.suggest.perf_model_cache import PerformanceModels
from tunemem.memory_service.core.values.generalised_inputs import Evidence
from tunemem.memory_service.core.vectors.base import VectorIndex
from tunemem.memory_service.core.vectors.embedder_guard import ModelCheckedIndex, VectorModels
from tunemem.memory_service.core.vectors.factory import create_index
from tunemem.memory_service.core.vectors.pointers import IndexPointers


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
        self.store = Store.open(self.settings)
        self.embedder = embedder or create_embedder(
            self.settings.embedder,
            self.settings.embedding_model_path,
            self.settings.embed_threads,
            self.settings.model_cache,
        )
        cache_path = self.settings.resolved_embedding_cache()
        self._embedding_cache = EmbeddingCache(cache_path) if cache_path else None
        if self._embedding_cache is not None:
            self.embedder = DiskCachedEmbedder(self.embedder, self._embedding_cache)
        self.index = index or create_index(
            self.settings.index,
            path=self.settings.data_dir / "chroma",
            url=self.settings.index_url,
            collection=self.settings.index_collection,
            generations=IndexPointers(self.store),
        )
        # The parts see the index through the guard that holds them to the embedder that made
        # each tenant's vectors; `self.index` stays the bare index (benchmarks, tests).
        self.vectors = ModelCheckedIndex(
            self.index, VectorModels(self.store), self.embedder.fingerprint
        )
        self._mended: set[str] = set()  # tenants whose index this service has repaired
        self._mended_all = False
        parts = (self.store, self.vectors, self.embedder, self.settings)
        evidence = Evidence()  # recorded spaces and claims, shared by lessons and learning
        self._lessons = Lessons(*parts, evidence=evidence)
        self._learning = LearningLoop(*parts, evidence=evidence)
        self._maintenance = Maintenance(*parts)
        self._models = PerformanceModels(
            self.store,
            wait_s=self.settings.model_wait_s,
            per_tenant=self.settings.model_builds_per_tenant,
        )
        self._suggestions = Suggestions(
            self._learning,
            model=ModelSuggester(self._models, self.settings.tenant)
            if self.settings.suggest_model
            else None,
            deadline_s=self.settings.suggest_deadline_s,
        )

    @property
    def engine(self) -> Engine:
        """The SQL engine (benchmarks and tests read the store directly)."""
        return self.store.engine

    def _tenant(self, tenant: str | None) -> str:
        return tenant or self.settings.tenant

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the store, the model cache and the embedding cache."""
        self._models.close()
        self.store.close()
        if self._embedding_cache is not None:
            self._embedding_cache.close()

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
        return self._lessons.add_lessons(lessons, tenant=tenant, creator=creator, session=session)

    def list_lessons(
        self, where: LessonFilter | None = None, *, tenant: str | None = None
    ) -> LessonList:
        """Lessons matching the filter, oldest first; `count` is the total matching."""
        return self._lessons.list_lessons(where or LessonFilter(), tenant=tenant)

    def get_lesson(self, lesson_id: str, *, tenant: str | None = None) -> LessonDetail:
        """One lesson with its values per stage and scope."""
        return self._lessons.get_lesson(lesson_id, tenant=tenant)

    def update_lesson(
        self, lesson_id: str, update: LessonUpdate, *, tenant: str | None = None
    ) -> LessonPublic:
        """Edit text, kind, hint or applicability; the previous version is kept as a revision."""
        return self._lessons.update_lesson(lesson_id, update, tenant=tenant)

    def archive_lesson(self, lesson_id: str, *, tenant: str | None = None) -> LessonPublic:
        """Archive (never delete): the lesson leaves retrieval, its history stays."""
        return self._lessons.archive_lesson(lesson_id, tenant=tenant)

    # ---------------------------------------------------------- learning loop
    def retrieve(self, request: RetrieveRequest, *, tenant: str | None = None) -> RetrieveResponse:
        """Recall by similarity, gate by applicability, re-rank by similarity and value."""
        return self._learning.retrieve(request, tenant=tenant)

    def report(
        self,
        request: ReportRequest,
        *,
        idempotency_key: str | None = None,
        tenant: str | None = None,
    ) -> ReportResponse:
        """Record an outcome, reward the credited lessons in every scope, return new values."""
        return self._learning.report(request, idempotency_key=idempotency_key, tenant=tenant)

    def lesson_history(self, lesson_id: str, *, tenant: str | None = None) -> LessonHistory:
        """The outcomes that credited a lesson, oldest first, and its values per scope."""
        return self._learning.lesson_history(lesson_id, tenant=tenant)

    def suggest(self, request: SuggestRequest, *, tenant: str | None = None) -> SuggestResponse:
        """Untried valid configurations of a space, from the memory's lessons, then search."""
        return self._suggestions.suggest(request, tenant=tenant)

    # ------------------------------------------------------------------ ingest
    def ingest(
        self,
        records: Iterable[TrajectoryRecord | RejectedRecord],
        *,
        tenant: str | None = None,
        progress: Callable[[TrajectoryRecord | RejectedRecord], None] | None = None,
    ) -> IngestSummary:
        """Store trajectories, distil and store their lessons; idempotent per trajectory.

        The first ingest of a tenant by this service mends its index first: an earlier
        ingest killed between an SQL commit and its index write left lessons out of it."""
        chosen = self._tenant(tenant)
        if not self._mended_all and chosen not in self._mended:
            self.repair_index(chosen)
        return ingest_records(
            self.store, self._lessons, self.settings.batch_size, records, chosen, progress
        )

    def upload_trajectories(
        self, body: TrajectoriesIn, *, tenant: str | None = None
    ) -> IngestSummary:
        """Ingest uploaded native trajectories; one bad trajectory refuses the batch."""
        return self.ingest(uploaded_records(body.trajectories), tenant=tenant)

    # ------------------------------------------------------------------- audit
    def audit_transfer(
        self, query: TransferQuery | None = None, *, tenant: str | None = None
    ) -> TransferAuditPublic:
        """Which lessons transfer across chips or backends (DESIGN section 5); with a
        toolchain, from only the outcomes gathered under it."""
        return transfer_audit(
            self.store,
            self.settings.q0,
            query or TransferQuery(),
            tenant=self._tenant(tenant),
            policy=self.settings.toolchain_policy(),
            alpha=self.settings.alpha,
            evidence=self._learning.evidence,
        )

    # ----------------------------------------------------------- export/import
    def export(self, path: Path, *, tenant: str | None = None) -> dict[str, int]:
        """Write the tenant's lessons, runs, retrievals and outcome log to a JSONL bundle."""
        return bundles.export_bundle(self.store, path, self._tenant(tenant))

    def import_bundle(self, path: Path, *, tenant: str | None = None) -> dict[str, int]:
        """Load a bundle written by `export` (idempotent); values are rebuilt from its log."""
        return bundles.import_bundle(
            self.store,
            self.vectors,
            self.embedder,
            self._maintenance.rebuild_in,
            path,
            self._tenant(tenant),
        )

    # -------------------------------------------------------------------- keys
    def authenticate(self, authorization: str | None, client_host: str | None) -> tuple[str, str]:
        """(tenant, role) of a request's Authorization header, or Unauthorized."""
        with self.store.session() as session:
            return auth.authenticate(session, authorization, client_host, self.settings.tenant)

    def create_key(
        self, role: str, *, tenant: str | None = None, name: str = ""
    ) -> tuple[auth.ApiKey, str]:
        """A new API key and its secret (shown once; only its hash is stored)."""
        with self.store.session() as session:
            return auth.create_key(session, role, self._tenant(tenant), name)

    def list_keys(self) -> list[auth.ApiKey]:
        """Every API key (ids, roles, tenants; never the secrets)."""
        with self.store.session() as session:
            return auth.list_keys(session)

    def revoke_key(self, key_id: str) -> auth.ApiKey:
        """Revoke a key; requests with it get 401 from then on."""
        with self.store.session() as session:
            return auth.revoke_key(session, key_id)

    # ------------------------------------------------------------- maintenance
    def rebuild_values(self, tenant: str | None = None) -> int:
        """Recompute the LessonValue rows of one tenant (None: every tenant) from the log."""
        return self._maintenance.rebuild_values(tenant)

    def value_table(self) -> list[tuple[str, str, str, int, float, float]]:
        """Every value row as (lesson, stage, scope, n, q, sumsq), ordered."""
        return self._maintenance.value_table()

    def reindex(
        self,
        batch_size: int = 512,
        progress: ProgressFn | None = None,
        *,
        tenant: str | None = None,
    ) -> int:
        """Rebuild the vector index of one tenant (None: every tenant) from SQL."""
        rebuilt = self._maintenance.reindex(batch_size, progress, tenant)
        if tenant is None:
            self.vectors.record_every_tenant()
        return rebuilt

    def doctor(self, fix: bool = False, *, tenant: str | None = None) -> DoctorReport:
        """Find, and with fix repair, stored hints, attempts and outcomes the door now refuses
        (the tenant's values rebuilt from a repaired outcome log)."""

        def edit(lesson_id: str, hint: dict[str, Any] | None, owner: str) -> None:
            self._lessons.update_lesson(lesson_id, LessonUpdate(hint=hint), tenant=owner)

        report = Doctor(self.store, edit).run(self._tenant(tenant), fix)
        if fix and report.outcomes:
            self.rebuild_values(self._tenant(tenant))
        return report

    def repair_index(self, tenant: str | None = None) -> dict[str, int]:
        """Make the vector index hold exactly SQL's active lessons of one tenant (None: every
        tenant; run on server start)."""
        repaired = self._maintenance.repair_index(tenant)
        if tenant is None:
            self._mended_all = True
        else:
            self._mended.add(tenant)
        return repaired

    def health(self, tenant: str | None = None) -> dict[str, Any]:
        """Index usability and the SQL and index counts (of one tenant, or all)."""
        return self._maintenance.health(tenant)

    def counts(self, tenant: str | None = None) -> dict[str, int]:
        """Rows per table, of one tenant's data (None: the whole store)."""
        return self._maintenance.counts(tenant)
