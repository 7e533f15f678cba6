"""Issue 36's evidence columns on PostgreSQL as on SQLite: an outcome and a trajectory carrying
every evidence field (values that stress the column types: JSON lists, floats, nulls, booleans,
long text) read back as written, through doctor and a bundle too; and the transfer audit, which
filters on coverage and origin, answers the same on both. SYNTHETIC rows, except the bundled
convolution caches of the audit (real measurements, ingest/samples/LICENSES.md).

The PostgreSQL cases need a server (`conftest.new_pg_database`) and skip with the reason
without one; the SQLite cases always run, so each expectation is checked on both.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlmodel import select

from tunemem.ingest.provenance import Provenance
from tunemem.ingest.readers import read_any
from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, TrajectoryRecord
from tunemem.ingest.samples import SAMPLES_DIR, TARGETS_DIR
from tunemem.memory_service.core.schemas.audit import TransferQuery
from tunemem.memory_service.core.schemas.learning import RetrieveRequest
from tunemem.memory_service.core.schemas.lessons import LessonCreate
from tunemem.memory_service.core.schemas.outcomes import ReportRequest
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.core.sql.tables import Attempt, Outcome, Trajectory
from tunemem.memory_service.service import MemoryService

from .evidence_stores import BACKENDS, DEVICE, LONG_ERROR, database_url, evidence_of


def open_service(request, tmp_path: Path, backend: str, embedder) -> MemoryService:
    url = database_url(request, tmp_path, backend) if backend == "postgres" else None
    settings = Settings(data_dir=tmp_path / "store", index="memory", database_url=url)
    service = MemoryService(settings, embedder=embedder)
    request.addfinalizer(service.close)
    return service


def retrieve(service: MemoryService, chip: str) -> Any:
    return service.retrieve(
        RetrieveRequest(
            query="tile the convolution",
            task={"op": "convolution"},
            context={"chip": chip},
            stage="refine",
            k=5,
        )
    )


TIMINGS = [0.001, 0.1 + 0.2, 1 / 3, 2.5, 1e4, 123456.789]  # floats that JSON must keep exact
CONFIG = {"block_size_x": 32, "ratio": 0.1 + 0.2, "padding": True, "layout": "r" * 256, "k": -7}
OUTCOMES: list[dict[str, Any]] = [
    {
        "compiled": True,
        "correct": True,
        "timings_ms": TIMINGS,
        "best_before_ms": 2.5,
        "config": CONFIG,
        "provenance": {"origin": "measured", "device_reported": DEVICE},
    },
    {"compiled": False, "error": LONG_ERROR, "config": {"block_size_x": 64, "padding": False}},
    {
        "compiled": True,
        "correct": True,
        "latency_ms": 0.30000000000000004,
        "latency_spread_ms": 0.0,
        "repetitions": 10_000_000,
        "provenance": {"origin": "replayed"},
    },
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_evidence_field_reads_back_as_it_was_written(request, tmp_path, backend, embedder):
    service = open_service(request, tmp_path, backend, embedder)
    lesson = service.add_lessons(
        [
            LessonCreate(
                kind="exemplar",
                text="block_size_x 32 with padding for the convolution on h100",
                hint={"config": {"block_size_x": 32, "padding": True}},
                applicability={"op": "convolution", "chips": ["h100"], "backends": ["cuda"]},
            )
        ]
    ).ids[0]
    answers = []
    for outcome in OUTCOMES:
        retrieval = retrieve(service, "NVIDIA H100 80GB HBM3")
        report = ReportRequest(retrieval_id=retrieval.retrieval_id, used=[lesson], outcome=outcome)
        answers.append(service.report(report))
    evidence = {
        "tool": "kernel_tuner",
        "sources": ["exemplar", "search", None],
        "spread": [0.1 + 0.2, 1e-300, -0.0],
        "partial": True,
        "note": "x" * 20_000,
        "nested": {"lists": [[1, 2], [], [True, None]]},
    }
    run = TrajectoryRecord(
        source_format="native",
        source="synthetic/evidence-round-trip",
        task=TaskSpec("convolution", signature={"tune_params_keys": ["block_size_x"]}),
        context=ContextSpec("h100", "cuda", chip_raw="NVIDIA H100 80GB HBM3"),
        attempts=[
            AttemptRecord(
                0,
                {"block_size_x": 32},
                latency_ms=1 / 3,
                latency_min_ms=0.3,
                repetitions=7,
                metrics={"gflops": 1e6 / 3},
            ),
            AttemptRecord(
                1,
                {"block_size_x": 64},
                compiled=False,
                correct=None,
                error_category="compile",
                error=LONG_ERROR,
            ),
        ],
        evidence=evidence,
        provenance=Provenance("measured", "partial", DEVICE),
    )
    service.ingest([run])

    with service.store.session() as session:
        rows = list(session.exec(select(Outcome).order_by(sa.column("id"))))
        stored_run = session.get(Trajectory, run.id)
        attempts = list(session.exec(select(Attempt).where(Attempt.trajectory_id == run.id)))
    read = [
        {
            "config": o.config,
            "timings_ms": o.timings_ms,
            "latency_ms": o.latency_ms,
            "latency_spread_ms": o.latency_spread_ms,
            "repetitions": o.repetitions,
            "origin": o.origin,
            "device_reported": o.device_reported,
            "error": o.error,
            "credit": o.credit,
        }
        for o in rows
    ]
    assert read == [
        {
            "config": CONFIG,
            "timings_ms": TIMINGS,
            "latency_ms": statistics.median(TIMINGS),
            "latency_spread_ms": None,
            "repetitions": None,
            "origin": "measured",
            "device_reported": DEVICE,
            "error": None,
            "credit": answers[0].credit,
        },
        {
            "config": {"block_size_x": 64, "padding": False},
            "timings_ms": None,
            "latency_ms": None,
            "latency_spread_ms": None,
            "repetitions": None,
            "origin": "unstated",
            "device_reported": None,
            "error": LONG_ERROR,
            "credit": answers[1].credit,
        },
        {
            "config": None,
            "timings_ms": None,
            "latency_ms": 0.30000000000000004,
            "latency_spread_ms": 0.0,
            "repetitions": 10_000_000,
            "origin": "replayed",
            "device_reported": None,
            "error": None,
            "credit": {},
        },
    ]
    assert answers[0].credit == {lesson: "followed"} and answers[1].credit  # judged, and kept
    # An absent configuration or timing list is SQL NULL, as in the rows from before 0007, so
    # "outcomes without a configuration" is one query over old and new rows alike.
    with service.engine.connect() as connection:
        absent = connection.execute(
            sa.text(
                "SELECT SUM(CASE WHEN config IS NULL THEN 1 ELSE 0 END),"
                " SUM(CASE WHEN timings_ms IS NULL THEN 1 ELSE 0 END) FROM outcome"
            )
        ).one()
    assert tuple(absent) == (1, 2)
    assert stored_run is not None
    assert (stored_run.origin, stored_run.coverage, stored_run.device_reported) == (
        "measured",
        "partial",
        DEVICE,
    )
    assert stored_run.evidence == evidence
    assert sorted(
        (a.index, a.latency_ms, a.latency_min_ms, a.repetitions, a.metrics, a.error)
        for a in attempts
    ) == [(0, 1 / 3, 0.3, 7, {"gflops": 1e6 / 3}, None), (1, None, None, None, {}, LONG_ERROR)]
    # What the API shows of them: the lesson's history, as stored.
    history = service.lesson_history(lesson).outcomes
    assert [(o.origin, o.device_reported) for o in history] == [
        ("measured", DEVICE),
        ("unstated", None),
        ("replayed", None),
    ]
    assert service.doctor().problems == 0  # doctor reads every such value as sound

    # A bundle of the store carries them whole into a fresh store of the same kind.
    bundle = tmp_path / "evidence.tar.gz"
    service.export(bundle)
    again = open_service(request, tmp_path / "again", backend, embedder)
    again.import_bundle(bundle)
    with again.store.session() as session:
        imported = list(session.exec(select(Outcome).order_by(sa.column("id"))))
        imported_run = session.get(Trajectory, run.id)
    assert [evidence_of(o) for o in imported] == [evidence_of(o) for o in rows]
    assert imported_run is not None and imported_run.evidence == evidence
    assert evidence_of(imported_run) == evidence_of(stored_run)


def partial_run(config: dict[str, Any]) -> TrajectoryRecord:
    """A SYNTHETIC simulated run on the W6600 that timed one configuration impossibly fast."""
    return TrajectoryRecord(
        source_format="native",
        source="synthetic/partial-w6600",
        task=TaskSpec("convolution", signature={"tune_params_keys": sorted(config)}),
        context=ContextSpec("w6600", "hip"),
        attempts=[AttemptRecord(0, dict(config), latency_ms=0.001)],
        provenance=Provenance("simulated", "partial"),
    )


def optimum(audit: dict[str, Any]) -> Any:
    (pair,) = [p for p in audit["pairs"] if (p["source"], p["target"]) == ("mi250x", "w6600")]
    return pair["optimum"]


def audit_of(service: MemoryService) -> dict[str, Any]:
    return service.audit_transfer(TransferQuery(op="convolution"), tenant="default").model_dump()


@pytest.mark.server
def test_the_transfer_audit_reads_the_evidence_on_postgres_as_on_sqlite(
    request, tmp_path, embedder
):
    """The same store on both databases: the bundled caches (recorded, complete), a partial
    simulated run and outcomes measured, replayed and simulated on the MI250X. The audit that
    filters on coverage (complete spaces first) and on origin (replays re-measure nothing)
    answers the same on both, and the partial run and the replays move nothing."""
    audits = []
    for backend in ("sqlite", "postgres"):
        service = open_service(request, tmp_path / backend, backend, embedder)
        service.ingest(read_any([SAMPLES_DIR / "kerneltuner" / "convolution", TARGETS_DIR]))
        fresh = audit_of(service)
        recorded = retrieve(service, "AMD Instinct MI250X")
        used = [x for x in recorded.lessons if (x.hint or {}).get("config")][:2]
        assert used
        service.ingest([partial_run(config=used[0].hint["config"])])  # type: ignore[index]
        for origin in ("replayed", "simulated", "measured"):
            for lesson in used:
                config = lesson.hint["config"]  # type: ignore[index]
                provenance = {"origin": origin}
                if origin == "measured":
                    provenance["device_reported"] = "AMD Instinct MI250X"
                service.report(
                    ReportRequest(
                        retrieval_id=recorded.retrieval_id,
                        used=[lesson.id],
                        outcome={
                            "compiled": True,
                            "correct": True,
                            "latency_ms": 50.0,  # far from the recording: replays must not say so
                            "config": config,
                            "provenance": provenance,
                        },
                    )
                )
        audit = audit_of(service)
        audits.append(audit)
        claims = audit["claims"]
        assert [(c["chip"], c["n"]) for c in claims] == [("mi250x", len(used))]  # measured only
        assert optimum(audit) == optimum(fresh)  # the partial run scores no configuration
    assert audits[0] == audits[1]
