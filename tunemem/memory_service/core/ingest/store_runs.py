"""Storing what `ingest` reads: trajectories, attempts and distilled lessons, in batches.

Each batch of trajectories is one transaction (rows, attempts, lessons and their index
entries), so an ingest killed at any point and rerun ends with the same store as an
uninterrupted one: committed trajectories are skipped by their deterministic ids, the rest
are written again in the same order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict

import numpy as np
from sqlalchemy import JSON
from sqlmodel import Session, col, select

from tunemem.ingest.records import RejectedRecord, TrajectoryRecord, stable_hash
from tunemem.memory_service.core.ingest.embed_ahead import (
    DISTILL_ERRORS,
    EmbedAhead,
    Prepared,
    _lessons_of,
)
from tunemem.memory_service.core.lessons.part import Lessons
from tunemem.memory_service.core.schemas.ingest import IngestSummary
from tunemem.memory_service.core.schemas.lessons import LessonCreate
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.stored_types import StoredJSON
from tunemem.memory_service.core.sql.tables import Attempt, Trajectory

MAX_ATTEMPTS_PER_BATCH = 50_000


def stored_id(record: TrajectoryRecord, tenant: str) -> str:
    """The trajectory's row id in `tenant`: the record's own id qualified by the tenant, so
    the same run posted by two tenants is two rows and neither learns the other has it.
    The default tenant keeps the bare record id (the ids stores made before had)."""
    if tenant == "default":
        return record.id
    return stable_hash({"tenant": tenant, "trajectory": record.id})


def _trajectory_row(record: TrajectoryRecord, tenant: str) -> Trajectory:
    return Trajectory(
        id=stored_id(record, tenant),
        tenant=tenant,
        source_format=record.source_format,
        source=record.source,
        op=record.task.op,
        chip=record.context.chip,
        backend=record.context.backend,
        task=asdict(record.task),
        context=asdict(record.context),
        baseline_latency_ms=record.baseline_latency_ms,
        evidence=record.evidence,
        synthetic=record.synthetic,
        n_attempts=len(record.attempts),
        origin=record.provenance.origin,
        coverage=record.provenance.coverage,
        device_reported=record.provenance.device_reported,
    )


def _attempt_rows(record: TrajectoryRecord, trajectory_id: str) -> list[dict]:
    return [
        {
            "trajectory_id": trajectory_id,
            "index": a.index,
            "params": a.params,
            "code": a.code,
            "compiled": a.compiled,
            "correct": a.correct,
            "error_category": a.error_category,
            "error": a.error,
            "latency_ms": a.latency_ms,
            "latency_min_ms": a.latency_min_ms,
            "repetitions": a.repetitions,
            "metrics": a.metrics,
        }
        for a in record.attempts
    ]


def _insert_attempts(session: Session, rows: list[dict]) -> None:
    """One executemany through the driver: the rows as SQLAlchemy would write them (JSON
    columns by `json.dumps`), without its per-row parameter processing, which was 40% of an
    ingest of ../shared/data."""
    table = Attempt.__table__  # type: ignore[attr-defined]
    columns = [c.name for c in table.columns if c.name != "id"]
    json_columns = {c.name for c in table.columns if isinstance(c.type, JSON | StoredJSON)}
    connection = session.connection()
    quote = connection.dialect.identifier_preparer.quote
    mark = "?" if connection.dialect.paramstyle == "qmark" else "%s"
    statement = (
        f"INSERT INTO {quote(table.name)} ({', '.join(quote(c) for c in columns)}) "
        f"VALUES ({', '.join([mark] * len(columns))})"
    )
    connection.exec_driver_sql(
        statement,
        [
            tuple(
                None if row[c] is None else json.dumps(row[c]) if c in json_columns else row[c]
                for c in columns
            )
            for row in rows
        ],
    )


def _store_batch(
    store: Store,
    lessons_part: Lessons,
    prepared: Prepared,
    vectors: dict[str, np.ndarray],
    tenant: str,
    summary: IngestSummary,
) -> None:
    batch = prepared.batch
    ids = {record.id: stored_id(record, tenant) for record in batch}
    with store.session() as session:
        existing = set(
            session.exec(
                select(Trajectory.id).where(
                    col(Trajectory.id).in_(list(ids.values())), Trajectory.tenant == tenant
                )
            ).all()
        )
        lessons: list[LessonCreate] = []
        fresh: list[TrajectoryRecord] = []
        for record in batch:
            if ids[record.id] in existing:
                summary.skipped += 1
                continue
            drafted = prepared.drafted.get(record.id)
            if drafted is None:  # stored when the batch was prepared, since gone: distil now
                try:
                    drafted = _lessons_of(record)
                except DISTILL_ERRORS as exc:
                    drafted = exc
            if isinstance(drafted, Exception):
                summary.rejected += 1
                summary.rejects.append(
                    {
                        "path": record.source,
                        "position": "trajectory",
                        "reason": f"distillation: {drafted}",
                    }
                )
                continue
            existing.add(ids[record.id])
            fresh.append(record)
            lessons.extend(drafted)
        if not fresh:
            return
        attempts: list[dict] = []
        for record in fresh:
            session.add(_trajectory_row(record, tenant))
            attempts.extend(_attempt_rows(record, ids[record.id]))
        session.flush()
        if attempts:
            _insert_attempts(session, attempts)
        created = (
            lessons_part.add_lessons(lessons, tenant=tenant, session=session, vectors=vectors)
            if lessons
            else None
        )
        session.commit()
    summary.added += len(fresh)
    summary.attempts += len(attempts)
    if created is not None:
        summary.lessons_merged += len(created.merged)
        summary.lessons_added += len(created.created)
        summary.merged += len(created.merged)


def ingest_records(
    store: Store,
    lessons_part: Lessons,
    batch_size: int,
    records: Iterable[TrajectoryRecord | RejectedRecord],
    tenant: str,
    progress: Callable[[TrajectoryRecord | RejectedRecord], None] | None = None,
) -> IngestSummary:
    """Store trajectories and their distilled lessons; returns the counts and the rejects.

    Args:
        store: the SQL store written (its write lock is held throughout).
        lessons_part: stores the distilled lessons, in the same transaction as their runs.
        batch_size: trajectories per transaction.
        records: what a reader yields; rejected records are counted and listed.
        tenant: whose store.
        progress: called once per record read.
    """
    summary = IngestSummary()
    unknown: set[str] = set()
    ahead = EmbedAhead(store, lessons_part, tenant)
    waiting: list[Prepared] = []  # the batch prepared last, stored once the next is prepared

    def store_next(batch: list[TrajectoryRecord] | None) -> None:
        if batch:
            ids = {record.id: stored_id(record, tenant) for record in batch}
            waiting.append(ahead.prepare(batch, ids))
        if len(waiting) > (1 if batch else 0):
            prepared = waiting.pop(0)
            _store_batch(store, lessons_part, prepared, ahead.vectors(prepared), tenant, summary)

    with store.write_lock:
        try:
            _read_into_batches(records, summary, unknown, batch_size, progress, store_next)
            store_next(None)
        finally:
            ahead.close()
    summary.unknown_chips = sorted(unknown)
    return summary


def _read_into_batches(
    records: Iterable[TrajectoryRecord | RejectedRecord],
    summary: IngestSummary,
    unknown: set[str],
    batch_size: int,
    progress: Callable[[TrajectoryRecord | RejectedRecord], None] | None,
    store_next: Callable[[list[TrajectoryRecord] | None], None],
) -> None:
    batch: list[TrajectoryRecord] = []
    batch_attempts = 0
    for record in records:
        if progress:
            progress(record)
        if isinstance(record, RejectedRecord):
            summary.rejected += 1
            summary.rejects.append(
                {"path": record.path, "position": record.position, "reason": record.reason}
            )
            continue
        summary.read += 1
        if record.context.chip.startswith("unknown:"):
            unknown.add(record.context.chip_raw or record.context.chip)
        batch.append(record)
        batch_attempts += len(record.attempts)
        if len(batch) >= batch_size or batch_attempts >= MAX_ATTEMPTS_PER_BATCH:
            store_next(batch)
            batch, batch_attempts = [], 0
    if batch:
        store_next(batch)
