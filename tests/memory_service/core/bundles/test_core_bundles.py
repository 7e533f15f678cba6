"""Export a store, import it into an empty one: same lessons, outcomes, values and ranking."""

from __future__ import annotations

import pytest

from tunemem.memory_service.core.errors import InvalidInput
from tunemem.memory_service.core.schemas.learning import RetrieveRequest
from tunemem.memory_service.core.schemas.lessons import LessonCreate
from tunemem.memory_service.core.schemas.outcomes import ReportRequest

LESSONS = [
    LessonCreate(
        kind="insight",
        text="Stage RMSNorm rows in registers when they fit in one block",
        applicability={"op": "rmsnorm", "chips": ["h200"], "backends": ["cuda"]},
    ),
    LessonCreate(
        kind="failure",
        text="num_warps=32 with BLOCK_N=1024 spills registers in RMSNorm",
        applicability={"op": "rmsnorm", "chips": ["h200"], "backends": ["cuda"]},
    ),
]
HEADER = '{"kind": "header", "version": 1, "tenant": "default"}\n'
ASK = RetrieveRequest(
    query="rmsnorm rows", task={"op": "rmsnorm"}, context={"chip": "h100"}, stage="draft"
)


def test_round_trip_and_idempotent_import(make_service, tmp_path):
    source = make_service(tmp_path / "a")
    ids = source.add_lessons(LESSONS).ids
    for i in range(3):
        r = source.retrieve(ASK)
        source.report(
            ReportRequest(
                retrieval_id=r.retrieval_id,
                used=[ids[i % 2]],
                outcome={
                    "compiled": True,
                    "correct": i != 1,
                    # what the attempt was and its timings travel with the outcome
                    "config": {"BLOCK": 64 * (i + 1)},
                    "timings_ms": [1.0, 1.1, 1.2],
                },
            ),
            idempotency_key=f"k{i}",
        )
    bundle = tmp_path / "bundle.jsonl.gz"
    counts = source.export(bundle)
    assert counts["lesson"] == 2 and counts["outcome"] == 3 and counts["retrieval"] == 3

    target = make_service(tmp_path / "b")
    added = target.import_bundle(bundle)
    assert added["lesson"] == 2 and added["outcome"] == 3
    assert target.value_table() == source.value_table()
    assert [x.id for x in target.retrieve(ASK).lessons] == [
        x.id for x in source.retrieve(ASK).lessons
    ]
    again = target.import_bundle(bundle)
    assert all(n == 0 for n in again.values())
    assert target.counts()["outcomes"] == 3


def test_bad_bundle_changes_nothing(make_service, tmp_path):
    service = make_service(tmp_path / "c")
    service.add_lessons(LESSONS[:1])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(HEADER + '{"kind": "lesson", "data": {"id": "x"}}\n{oops\n')
    before = service.counts()
    with pytest.raises(InvalidInput):
        service.import_bundle(bad)
    assert service.counts() == before
    invalid = tmp_path / "invalid.jsonl"
    invalid.write_text(HEADER + '{"kind": "lesson", "data": {"id": "x"}}\n')
    with pytest.raises(InvalidInput):
        service.import_bundle(invalid)
    assert service.counts() == before
