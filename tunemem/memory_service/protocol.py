"""MemoryAPI: the operations every door (CLI, MCP) may call, whether the memory is the
embedded `MemoryService` or a server reached through `RemoteService`.

Both classes satisfy this Protocol structurally, so a caller typed against it works with
either and never needs to know which it has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol, Self

from tunemem.ingest.records import RejectedRecord, TrajectoryRecord
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


class MemoryAPI(Protocol):
    """The lesson memory, local or remote."""

    def retrieve(self, request: RetrieveRequest) -> RetrieveResponse:
        """Rank lessons for a task, context and stage by similarity and learned value."""
        ...

    def report(
        self, request: ReportRequest, *, idempotency_key: str | None = None
    ) -> ReportResponse:
        """Report an attempt's outcome; the credited lessons' values move."""
        ...

    def suggest(self, request: SuggestRequest) -> SuggestResponse:
        """Up to k untried valid configurations of a space, in the memory's order, each with
        the lessons it rests on and one retrieval id that outcomes credit."""
        ...

    def add_lessons(self, lessons: list[LessonCreate]) -> LessonsCreated:
        """Add lessons (idempotent by content; near-duplicates merge)."""
        ...

    def list_lessons(self, where: LessonFilter | None = None) -> LessonList:
        """Lessons matching the filter, oldest first, with the total count."""
        ...

    def get_lesson(self, lesson_id: str) -> LessonDetail:
        """One lesson with its values per stage and scope."""
        ...

    def lesson_history(self, lesson_id: str) -> LessonHistory:
        """The outcomes behind a lesson's values."""
        ...

    def update_lesson(self, lesson_id: str, update: LessonUpdate) -> LessonPublic:
        """Edit a lesson (the previous version is kept)."""
        ...

    def archive_lesson(self, lesson_id: str) -> LessonPublic:
        """Archive a lesson: it leaves retrieval, its history stays."""
        ...

    def ingest(
        self,
        records: Iterable[TrajectoryRecord | RejectedRecord],
        *,
        progress: Callable[[TrajectoryRecord | RejectedRecord], None] | None = None,
    ) -> IngestSummary:
        """Store trajectories and their distilled lessons (idempotent per trajectory); an
        index left short by an ingest killed midway is mended first."""
        ...

    def upload_trajectories(self, body: TrajectoriesIn) -> IngestSummary:
        """Store native trajectories as one batch: one bad trajectory refuses all of it."""
        ...

    def audit_transfer(self, query: TransferQuery | None = None) -> TransferAuditPublic:
        """Which lessons transfer across chips or backends (under one toolchain, if given)."""
        ...

    def rebuild_values(self, tenant: str | None = None) -> int:
        """Recompute a tenant's values from the outcome log (None: every tenant the caller
        maintains); returns the outcomes replayed."""
        ...

    def export(self, path: Path, *, tenant: str | None = None) -> dict[str, int]:
        """Write a tenant's lessons, runs, retrievals and outcome log to a bundle at `path`
        (.jsonl or .jsonl.gz); returns counts per kind. Default tenant: the caller's."""
        ...

    def import_bundle(self, path: Path, *, tenant: str | None = None) -> dict[str, int]:
        """Load a bundle into a tenant (idempotent); returns counts added per kind."""
        ...

    def reindex(self, *, tenant: str | None = None) -> int:
        """Rebuild a tenant's vector index from SQL (None: every tenant the caller
        maintains); returns the lessons indexed."""
        ...

    def close(self) -> None:
        """Release the store or the connection."""
        ...

    def __enter__(self) -> Self:
        """`with open_service(...) as memory:` closes the memory when the block ends."""
        ...

    def __exit__(self, *_exc: object) -> None: ...
