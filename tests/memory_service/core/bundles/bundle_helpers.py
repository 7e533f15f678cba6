"""Helpers of the bundle tests: a small real store of two tenants, its export as editable
records, and a snapshot of every table to tell whether an import changed anything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import text

from tunemem.ingest.readers.native import parse_record
from tunemem.memory_service.core.schemas.learning import RetrieveRequest
from tunemem.memory_service.core.schemas.lessons import LessonCreate
from tunemem.memory_service.core.schemas.outcomes import ReportRequest

H200 = Path(__file__).resolve().parents[4] / "bench/results/h200/rmsnorm.jsonl"
TABLES = (
    "lesson",
    "lessonrevision",
    "trajectory",
    "attempt",
    "retrieval",
    "outcome",
    "lessonvalue",
    "lessonevidence",
    "taskrewardstat",
)
ASK = RetrieveRequest(
    query="rmsnorm rows", task={"op": "rmsnorm"}, context={"chip": "h100"}, stage="draft"
)
REFINE = RetrieveRequest(
    query="rmsnorm faster", task={"op": "rmsnorm"}, context={"chip": "h100"}, stage="refine"
)


def lessons(tenant: str) -> list[LessonCreate]:
    return [
        LessonCreate(
            kind="insight",
            text=f"Stage RMSNorm rows in registers when they fit in one block ({tenant})",
            applicability={"op": "rmsnorm", "chips": ["h200"], "backends": ["cuda"]},
        ),
        LessonCreate(
            kind="failure",
            text=f"num_warps=32 with BLOCK_N=1024 spills registers in RMSNorm ({tenant})",
            applicability={"op": "rmsnorm", "chips": ["h200"], "backends": ["cuda"]},
        ),
    ]


def fill(service: Any, tenant: str, runs: int = 1) -> list[str]:
    """Lessons, one recorded run, draft and refine outcomes in `tenant`; returns lesson ids."""
    ids = service.add_lessons(lessons(tenant), tenant=tenant).ids
    records = [parse_record(json.loads(line)) for line in H200.read_text().splitlines()[:runs]]
    service.ingest(records, tenant=tenant)
    for i, ask in enumerate((ASK, ASK, REFINE)):
        r = service.retrieve(ask, tenant=tenant)
        outcome = {"compiled": True, "correct": i != 1, "latency_ms": 1.0 + i}
        if ask is REFINE:
            outcome["best_before_ms"] = 4.0
        used = [x.id for x in r.lessons if x.id in ids][:1]
        service.report(
            ReportRequest(retrieval_id=r.retrieval_id, used=used, outcome=outcome), tenant=tenant
        )
    return ids


def records(service: Any, path: Path, tenant: str) -> list[dict[str, Any]]:
    """The tenant's export, one dict per line (the header first)."""
    service.export(path, tenant=tenant)
    return [json.loads(line) for line in path.read_text().splitlines()]


def write(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return path


def snapshot(service: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table the service keeps (all tenants)."""
    with service.engine.connect() as connection:
        return {
            table: sorted(
                tuple(map(repr, row)) for row in connection.execute(text(f"SELECT * FROM {table}"))
            )
            for table in TABLES
        }
