"""An import is a validated, all-or-nothing transaction: every record is checked with the API's
models, every reference resolves inside the importing tenant or the bundle, and a refused
bundle changes nothing and names its first bad line (issue #22, defects 1, 2, 3 and 5)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.memory_service.core.bundles.bundle_helpers import ASK, fill, records, snapshot, write
from tunemem.memory_service.core.errors import ServiceError

Records = list[dict[str, Any]]


def first(items: Records, kind: str) -> dict[str, Any]:
    return next(item["data"] for item in items if item["kind"] == kind)


def line_of(items: Records, kind: str) -> int:
    return next(i for i, item in enumerate(items, 1) if item["kind"] == kind)


@pytest.fixture
def two_tenants(make_service):
    service = make_service()
    fill(service, "team-a")
    fill(service, "team-b")
    return service


def _refused(service: Any, tmp_path, items: Records, tenant: str = "team-a") -> ServiceError:
    before = snapshot(service)
    with pytest.raises(ServiceError) as caught:
        service.import_bundle(write(tmp_path / "forged.jsonl", items), tenant=tenant)
    assert 400 <= caught.value.status < 500
    assert snapshot(service) == before, "a refused bundle changed the store"
    assert str(tmp_path) not in caught.value.message
    return caught.value


def test_a_bundle_cannot_credit_another_tenants_lesson(two_tenants, tmp_path):
    service = two_tenants
    b_lesson = service.list_lessons(tenant="team-b").data[0].id
    items = records(service, tmp_path / "a.jsonl", "team-a")
    forged = copy.deepcopy(items)
    retrieval = first(forged, "retrieval")
    retrieval["id"] = "00000000-0000-4000-8000-000000000001"
    retrieval["results"][0]["id"] = b_lesson
    outcome = first(forged, "outcome")
    outcome.update(retrieval_id=retrieval["id"], lessons=[b_lesson], idempotency_key=None)
    outcome["created_at"] = "2030-01-01T00:00:00Z"
    error = _refused(service, tmp_path, forged)
    assert error.code == "bundle_reference"
    assert f"line {line_of(forged, 'retrieval')}" in error.message
    assert b_lesson in error.message
    # Into an empty tenant as well: the lesson must be the tenant's own or the bundle's.
    _refused(service, tmp_path, forged, tenant="team-c")
    assert service.rebuild_values() > 0  # the store-wide rebuild still works


def test_an_outcome_may_credit_only_lessons_its_retrieval_returned(two_tenants, tmp_path):
    service = two_tenants
    items = records(service, tmp_path / "a.jsonl", "team-a")
    own = [item["data"]["id"] for item in items if item["kind"] == "lesson"]
    forged = copy.deepcopy(items)
    outcome = first(forged, "outcome")
    returned = {r["id"] for r in first(forged, "retrieval")["results"]}
    outcome.update(lessons=[x for x in own if x not in returned] or ["no-such-lesson"])
    outcome["created_at"] = "2030-01-01T00:00:00Z"
    outcome["idempotency_key"] = None
    error = _refused(service, tmp_path, forged)
    assert error.code == "bundle_reference"
    assert f"line {line_of(forged, 'outcome')}" in error.message


MUTATIONS: dict[str, tuple[str, Callable[[dict[str, Any]], None], str]] = {
    "an outcome of a stage that does not exist": (
        "outcome",
        lambda d: d.update(stage="weird"),
        "invalid_bundle",
    ),
    "a lesson of a status that does not exist": (
        "lesson",
        lambda d: d.update(status="weird"),
        "invalid_bundle",
    ),
    "a retrieval with a naive datetime": (
        "retrieval",
        lambda d: d.update(created_at="2026-01-01T00:00:00"),
        "invalid_bundle",
    ),
    "an outcome reward of 99": ("outcome", lambda d: d.update(reward=99), "invalid_bundle"),
    "a negative latency": ("outcome", lambda d: d.update(latency_ms=-5.0), "invalid_bundle"),
    "an attempt's negative latency": (
        "attempt",
        lambda d: d.update(latency_ms=-5.0),
        "invalid_bundle",
    ),
    "an outcome of a retrieval that does not exist": (
        "outcome",
        lambda d: d.update(retrieval_id="11111111-1111-4111-8111-111111111111"),
        "bundle_reference",
    ),
    "an attempt of a run that is not in the bundle": (
        "attempt",
        lambda d: d.update(trajectory_id="no-such-run"),
        "bundle_reference",
    ),
    "a lesson whose text is not text": ("lesson", lambda d: d.update(text=7), "invalid_bundle"),
    "a lesson with a lone surrogate": (
        "lesson",
        lambda d: d.update(hint={"note": "\ud800"}),
        "invalid_bundle",
    ),
    # Issue 39, case 8: import stored the hints every other door refuses.
    "a lesson whose hint holds a list for a value": (
        "lesson",
        lambda d: d.update(hint={"config": {"BLOCK": [64, 128]}}),
        "invalid_bundle",
    ),
    "a lesson whose speed-up is text": (
        "lesson",
        lambda d: d.update(hint={"param": "BLOCK", "value": 64, "median_speedup": "fast"}),
        "invalid_bundle",
    ),
    "a run with a NUL in its source": (
        "trajectory",
        lambda d: d.update(source="a\x00b"),
        "invalid_bundle",
    ),
    "an outcome whose stage is not its retrieval's": (
        "outcome",
        lambda d: d.update(stage="refine" if d["stage"] == "draft" else "draft"),
        "bundle_reference",
    ),
}


@pytest.mark.parametrize("name", list(MUTATIONS))
def test_a_bad_record_is_refused_by_line_and_changes_nothing(name, make_service, tmp_path):
    kind, mutate, code = MUTATIONS[name]
    source = make_service(tmp_path / "source")
    fill(source, "team-a")
    items = records(source, tmp_path / "a.jsonl", "team-a")
    mutate(first(items, kind))
    target = make_service(tmp_path / "target")
    error = _refused(target, tmp_path, items)
    assert error.code == code, error.message
    assert f"line {line_of(items, kind)}" in error.message
    assert target.counts()["values"] == 0
    assert target.rebuild_values() == 0


def test_a_refused_bundle_leaves_later_imports_and_rebuilds_working(make_service, tmp_path):
    source = make_service(tmp_path / "source")
    fill(source, "team-a")
    items = records(source, tmp_path / "a.jsonl", "team-a")
    bad = copy.deepcopy(items)
    first(bad, "outcome").update(stage="weird")
    target = make_service(tmp_path / "target")
    _refused(target, tmp_path, bad)
    added = target.import_bundle(write(tmp_path / "good.jsonl", items), tenant="team-a")
    assert added["outcome"] == 3
    assert added["lesson"] == sum(item["kind"] == "lesson" for item in items) > 2
    live = target.value_table()
    assert target.rebuild_values("team-a") == 3
    assert target.value_table() == live == source.value_table()


def test_the_reports_door_credits_only_the_tenants_own_lessons(two_tenants):
    """Even a retrieval row that names another tenant's lesson (as an old import could leave)
    cannot move that lesson's values through a report."""
    from sqlmodel import Session

    from tunemem.memory_service.core.schemas.outcomes import ReportRequest
    from tunemem.memory_service.core.sql.tables import Retrieval

    service = two_tenants
    b_lesson = service.list_lessons(tenant="team-b").data[0].id
    r = service.retrieve(ASK, tenant="team-a")
    with Session(service.engine) as session:
        row = session.get(Retrieval, r.retrieval_id)
        row.results = [*row.results, {"id": b_lesson, "score": 0.0}]
        session.add(row)
        session.commit()
    before = [v for v in service.value_table() if v[0] == b_lesson]
    with pytest.raises(ServiceError) as caught:
        service.report(
            ReportRequest(
                retrieval_id=r.retrieval_id,
                used=[b_lesson],
                outcome={"compiled": True, "correct": True},
            ),
            tenant="team-a",
        )
    assert caught.value.status == 422
    assert [v for v in service.value_table() if v[0] == b_lesson] == before
    # and a rebuild never credits a lesson of another tenant either
    service.rebuild_values()
    assert [v for v in service.value_table() if v[0] == b_lesson] == before


def test_every_stored_column_has_its_bundle_check():
    """A column added to a table the bundle carries needs its check in `bundle_records`
    (else a bundle carrying it would be refused, or, worse, stored unchecked)."""
    from tunemem.memory_service.core.bundles.validate import MODELS
    from tunemem.memory_service.core.sql.tables import (
        Attempt,
        Lesson,
        Outcome,
        Retrieval,
        Trajectory,
    )

    tables = {
        "lesson": Lesson,
        "trajectory": Trajectory,
        "attempt": Attempt,
        "retrieval": Retrieval,
        "outcome": Outcome,
    }
    for kind, table in tables.items():
        columns = set(table.__table__.columns.keys())  # type: ignore[attr-defined]
        assert columns <= set(MODELS[kind].model_fields), (
            kind,
            columns - set(MODELS[kind].model_fields),
        )
