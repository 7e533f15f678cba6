"""A property of the bundle format (issue #22): whatever a bundle holds, random records of every
kind or a real export with records mutated, dropped, duplicated or forged, its import is either
refused with a 4xx and changes nothing in the store, or accepted, and then a store-wide rebuild
of the values equals the live table, another tenant's rows are untouched, every read of the
importing tenant answers and importing it again adds nothing. Bounded to well under a minute."""

from __future__ import annotations

import copy
import itertools
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.memory_service.core.bundles.bundle_helpers import ASK, fill, records, snapshot, write
from tunemem.memory_service.core.errors import ServiceError
from tunemem.memory_service.core.schemas.lessons import LessonFilter

KINDS = ("lesson", "trajectory", "attempt", "retrieval", "outcome")
FIELDS = {
    "lesson": ["id", "kind", "text", "hint", "code", "content_hash", "applicability",
               "provenance", "status", "created_at", "updated_at", "op", "tenant"],
    "trajectory": ["id", "source_format", "source", "op", "chip", "backend", "task", "context",
                   "baseline_latency_ms", "evidence", "synthetic", "n_attempts", "created_at"],
    "attempt": ["trajectory_id", "index", "params", "code", "compiled", "correct",
                "error_category", "error", "latency_ms", "latency_min_ms", "repetitions",
                "metrics"],
    "retrieval": ["id", "query", "task", "context", "stage", "scope_chain", "results",
                  "settings", "created_at"],
    "outcome": ["retrieval_id", "lessons", "stage", "task_key", "scope_chain", "compiled",
                "correct", "latency_ms", "best_before_ms", "error", "reward", "reporter",
                "verified", "idempotency_key", "response", "created_at"],
}  # fmt: skip
HOSTILE_TEXT = st.sampled_from(["\ud800", "a\x00b", "", " ", "long", "é", "weird"]).map(
    lambda text: "x" * 30_000 if text == "long" else text
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    HOSTILE_TEXT,
    st.sampled_from(
        ["draft", "refine", "active", "archived", "insight", "cuda", "h100", "global",
         "2026-01-01T00:00:00", "2026-01-01T00:00:00Z", "2031-05-05T05:05:05+02:00"]
    ),
)  # fmt: skip
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=40)
STAMP = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
).map(lambda t: t.isoformat())
LATENCY = st.floats(min_value=1e-3, max_value=1e6) | st.none()
SMALL_JSON = st.dictionaries(TEXT, st.integers(-1000, 1000) | TEXT | st.booleans(), max_size=3)
# Values a real store could hold: a bundle carrying them may well be accepted.
PLAUSIBLE: dict[str, dict[str, Any]] = {
    "lesson": {"text": TEXT, "hint": SMALL_JSON | st.none(), "provenance": SMALL_JSON,
               "status": st.sampled_from(["active", "archived"]), "created_at": STAMP},
    "trajectory": {"source": TEXT, "evidence": SMALL_JSON, "synthetic": st.booleans(),
                   "baseline_latency_ms": LATENCY},
    "attempt": {"params": SMALL_JSON, "latency_ms": LATENCY, "compiled": st.booleans(),
                "correct": st.booleans() | st.none(), "error": TEXT | st.none()},
    "retrieval": {"query": TEXT, "created_at": STAMP, "settings": SMALL_JSON},
    "outcome": {"compiled": st.booleans(), "correct": st.booleans() | st.none(),
                "latency_ms": LATENCY, "best_before_ms": LATENCY, "error": TEXT | st.none(),
                "reward": st.floats(-1.0, 1.0), "reporter": TEXT | st.none(),
                "created_at": STAMP},
}  # fmt: skip
NAMES = itertools.count()


@pytest.fixture(scope="module")
def world(tmp_path_factory, embedder):
    """A source export of team-a, and a target store where team-b already has its data."""
    from tunemem.memory_service.core.settings import Settings
    from tunemem.memory_service.service import MemoryService

    root = tmp_path_factory.mktemp("bundle-properties")
    source = MemoryService(Settings(data_dir=root / "source", index="memory"), embedder=embedder)
    fill(source, "team-a")
    base = records(source, root / "a.jsonl", "team-a")
    source.close()
    target = MemoryService(Settings(data_dir=root / "target", index="memory"), embedder=embedder)
    fill(target, "team-b")
    foreign = {
        "lesson": [x.id for x in target.list_lessons(LessonFilter(), tenant="team-b").data],
        "retrieval": [target.retrieve(ASK, tenant="team-b").retrieval_id],
    }
    yield {"base": base, "target": target, "root": root, "foreign": foreign}
    target.close()


@st.composite
def bundles(draw: Any, base: list[dict[str, Any]], foreign: dict[str, list[str]]) -> list:
    """A real export with a few mutations, or records of every kind made from scratch."""
    items = copy.deepcopy(base)
    if draw(st.integers(0, 4)) == 0:
        items = items[:1] + [
            {"kind": draw(st.sampled_from(KINDS)), "data": draw(_random_data())}
            for _ in range(draw(st.integers(1, 4)))
        ]
        return items
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(1, len(items) - 1))
        action = draw(
            st.sampled_from(
                ["plausible", "plausible", "plausible", "drop", "set", "drop_field", "copy",
                 "forge", "kind"]
            )
        )  # fmt: skip
        record = items[at]
        if action == "drop":
            items.pop(at) if len(items) > 2 else None
        elif action == "copy":
            items.insert(draw(st.integers(1, len(items))), copy.deepcopy(record))
        elif action == "kind":
            record["kind"] = draw(st.sampled_from((*KINDS, "header", "values")))
        elif action == "drop_field" and record["data"]:
            record["data"].pop(draw(st.sampled_from(sorted(record["data"]))))
        elif action == "forge":
            _forge(draw, record, foreign)
        elif action == "plausible" and record["kind"] in PLAUSIBLE:
            name, values = draw(st.sampled_from(sorted(PLAUSIBLE[record["kind"]].items())))
            record["data"][name] = draw(values)
        else:
            name = draw(st.sampled_from(FIELDS.get(record["kind"], ["id"])))
            record["data"][name] = draw(VALUES)
    return items


def _forge(draw: Any, record: dict[str, Any], foreign: dict[str, list[str]]) -> None:
    """Point a reference at another tenant's row: the attack of issue #22, defect 1."""
    data, lesson = record["data"], draw(st.sampled_from(foreign["lesson"]))
    if record["kind"] == "retrieval" and data.get("results"):
        data["results"][0]["id"] = lesson
    elif record["kind"] == "outcome":
        if draw(st.booleans()):
            data["lessons"] = [lesson]
        else:
            data["retrieval_id"] = foreign["retrieval"][0]
    else:
        data["id"] = lesson


@st.composite
def _random_data(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(KINDS))
    names = draw(st.lists(st.sampled_from(FIELDS[kind]), max_size=len(FIELDS[kind])))
    return {name: draw(VALUES) for name in names}


def _rows_of(state: dict[str, list[Any]], text: str) -> dict[str, list[Any]]:
    return {table: [row for row in rows if text in row] for table, rows in state.items()}


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_every_bundle_is_refused_whole_or_imported_consistently(world, data):
    target, root = world["target"], world["root"]
    items = data.draw(bundles(world["base"], world["foreign"]))
    tenant = "team-a"  # the tenant the export came from; earlier examples may have filled it
    path = root / f"{next(NAMES)}.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    before = snapshot(target)
    team_b = set(world["foreign"]["lesson"])
    values_b = [v for v in target.value_table() if v[0] in team_b]
    try:
        added = target.import_bundle(path, tenant=tenant)
    except ServiceError as refused:
        event(f"refused: {refused.code}")
        assert 400 <= refused.status < 500, refused
        assert snapshot(target) == before, f"refused ({refused.message}) but changed the store"
        return
    event("accepted")
    live = target.value_table()
    target.rebuild_values()
    assert target.value_table() == live, "rebuild disagrees with the imported values"
    after = snapshot(target)
    assert _rows_of(after, "team-b") == _rows_of(before, "team-b")
    assert [v for v in live if v[0] in team_b] == values_b
    lessons = target.list_lessons(LessonFilter(status="all", limit=500), tenant=tenant).data
    for lesson in lessons:
        target.get_lesson(lesson.id, tenant=tenant)
        target.lesson_history(lesson.id, tenant=tenant)
    target.retrieve(ASK, tenant=tenant)
    again = target.import_bundle(write(path, items), tenant=tenant)
    assert set(again.values()) <= {0}, (added, again)
