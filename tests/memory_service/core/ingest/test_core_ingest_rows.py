"""Attempt rows written by the ingest's bulk insert read back as the records held them
(SYNTHETIC trajectories)."""

from __future__ import annotations

from sqlmodel import select

from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, TrajectoryRecord
from tunemem.memory_service.core.sql.tables import Attempt


def _record() -> TrajectoryRecord:
    attempts = [
        AttemptRecord(index=0, params={"BLOCK": 128, "tile": [2, 4], "name": "é"}, latency_ms=0.5),
        AttemptRecord(
            index=1,
            params={"BLOCK": 256},
            compiled=False,
            correct=None,
            error_category="compile",
            error="ptxas: too many resources",
            metrics={"gbps": 812.5, "occupancy": 0.75},
        ),
        AttemptRecord(
            index=2,
            params={},
            code="def k(): pass",
            correct=False,
            latency_min_ms=0.25,
            repetitions=7,
        ),
    ]
    return TrajectoryRecord(
        source_format="native",
        source="synthetic/rows.json@0",
        task=TaskSpec(op="softmax", dtype="fp16"),
        context=ContextSpec(chip="a100", backend="cuda"),
        attempts=attempts,
        synthetic=True,
    )


def test_bulk_inserted_attempts_read_back_unchanged(service) -> None:
    record = _record()
    summary = service.ingest([record])
    assert (summary.added, summary.attempts) == (1, 3)
    with service.store.session() as session:
        rows = session.exec(select(Attempt).order_by(Attempt.index)).all()
    assert len(rows) == 3
    for row, want in zip(rows, record.attempts, strict=True):
        assert row.trajectory_id == record.id
        assert (row.index, row.params, row.code) == (want.index, want.params, want.code)
        assert (row.compiled, row.correct, row.error_category, row.error) == (
            want.compiled,
            want.correct,
            want.error_category,
            want.error,
        )
        assert (row.latency_ms, row.latency_min_ms, row.repetitions) == (
            want.latency_ms,
            want.latency_min_ms,
            want.repetitions,
        )
        assert row.metrics.keys() == want.metrics.keys()
        for key, value in want.metrics.items():
            assert row.metrics[key] == value
    assert service.ingest([record]).added == 0
