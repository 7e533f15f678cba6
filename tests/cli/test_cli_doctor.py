"""`tunemem doctor` on a store written before the door checked hints and runs (issue 30): the
unusable records are written straight into SQL, as the old door accepted them (a lesson hint
with a list for a value, statistics that are not numbers, an attempt with a list-valued
parameter, latencies of 0 and 1e-300 ms); doctor lists them and exits 1, `--fix` repairs them,
and then the store reads clean and suggest answers without leaving anything out.

All records are synthetic, written by the test.
"""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session, select
from typer.testing import CliRunner

from tunemem.cli.app import app
from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, TrajectoryRecord
from tunemem.memory_service.core.schemas.lessons import LessonCreate
from tunemem.memory_service.core.schemas.suggest import SuggestRequest
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.core.sql.tables import Attempt, Lesson, Trajectory
from tunemem.memory_service.service import MemoryService

runner = CliRunner()
ENV = {"TUNEMEM_EMBEDDER": "hashing", "TUNEMEM_INDEX": "memory"}
SETTINGS = {"embedder": "hashing", "index": "memory"}
BAD = {
    "config-list": {"config": {"BLOCK": [64, 128]}, "note": "kept"},
    "speedup-text": {"param": "BLOCK", "value": 64, "median_speedup": "fast"},
    "rate-text": {"avoid": {"BLOCK": 16}, "failure_rate": "often", "config": {"BLOCK": 64}},
}


def _old_store(data_dir: Path) -> dict[str, str]:
    """A store as a pre-fix door left it; returns the bad lessons' ids by name."""
    service = MemoryService(Settings(data_dir=data_dir, **SETTINGS))
    try:
        run = TrajectoryRecord(
            source_format="native",
            source="runs/doctor",
            task=TaskSpec(op="softmax"),
            context=ContextSpec(chip="a100", backend="cuda"),
            attempts=[
                AttemptRecord(index=i, params={"BLOCK": b}, latency_ms=1.0 + i)
                for i, b in enumerate((16, 32, 64, 128))
            ],
        )
        service.ingest([run])
        names = list(BAD)
        created = service.add_lessons(
            [
                LessonCreate(kind="insight", text=f"lesson {name}", hint={"config": {"BLOCK": 32}})
                for name in names
            ]
        )
        ids = dict(zip(names, created.ids, strict=True))
        with Session(service.engine) as session:
            for name, lesson_id in ids.items():
                lesson = session.get(Lesson, lesson_id)
                assert lesson is not None
                lesson.hint = BAD[name]
                session.add(lesson)
            stored = session.exec(select(Trajectory)).one()
            session.add(Attempt(trajectory_id=stored.id, index=10, params={"BLOCK": [1]}))
            session.add(
                Attempt(trajectory_id=stored.id, index=11, params={"BLOCK": 256}, latency_ms=0.0)
            )
            session.add(
                Attempt(trajectory_id=stored.id, index=12, params={"BLOCK": 512}, latency_ms=1e-300)
            )
            stored.n_attempts += 3
            session.add(stored)
            session.commit()
        return ids
    finally:
        service.close()


def test_doctor_finds_and_repairs_a_store_written_before_the_door_checks(tmp_path: Path):
    data_dir = tmp_path / "store"
    ids = _old_store(data_dir)
    args = ["doctor", "--data-dir", str(data_dir)]

    found = runner.invoke(app, args, env=ENV)
    assert found.exit_code == 1, found.output
    assert all(lesson_id in found.output for lesson_id in ids.values())
    assert found.output.count("attempt") >= 3 and "--fix" in found.output

    fixed = runner.invoke(app, [*args, "--fix"], env=ENV)
    assert fixed.exit_code == 0, fixed.output
    assert "repaired 3 lesson(s), 3 attempt(s) and 0 outcome(s)" in fixed.output

    clean = runner.invoke(app, args, env=ENV)
    assert clean.exit_code == 0 and "no unusable" in clean.output

    service = MemoryService(Settings(data_dir=data_dir, **SETTINGS))
    try:
        hints = {name: service.get_lesson(lesson_id).hint for name, lesson_id in ids.items()}
        assert hints["config-list"] == {"note": "kept"}  # the free part stays
        assert hints["speedup-text"] is None
        assert hints["rate-text"] == {"config": {"BLOCK": 64}}
        with Session(service.engine) as session:
            attempts = session.exec(select(Attempt).order_by(Attempt.index)).all()
            run = session.exec(select(Trajectory)).one()
        assert [a.index for a in attempts] == [0, 1, 2, 3, 11, 12]  # the list-valued one is gone
        assert run.n_attempts == 6
        for attempt in attempts[4:]:
            assert attempt.latency_ms is None and attempt.error_category == "other"
        request = SuggestRequest.model_validate(
            {"task": {"op": "softmax"}, "space": {"params": {"BLOCK": [16, 32, 64, 128]}}, "k": 4}
        )
        answer = service.suggest(request)
        assert len(answer.suggestions) == 4
        assert not [w for w in answer.warnings if "left out" in w]
    finally:
        service.close()


def test_doctor_names_rows_it_cannot_read_and_repairs_outcomes_too(tmp_path: Path):
    """Issue 39, case 7: values written by hand into SQLite (a hint and params that are not
    JSON, a text latency, an outcome crediting no list, a reward of 7) are each named by their
    row, repaired by --fix, and the export then imports into an empty store."""
    from sqlalchemy import text

    from tunemem.memory_service.core.schemas.learning import (
        ContextIn,
        RetrieveRequest,
        TaskIn,
    )
    from tunemem.memory_service.core.schemas.outcomes import OutcomeIn, ReportRequest

    data_dir = tmp_path / "store"
    ids = _old_store(data_dir)
    service = MemoryService(Settings(data_dir=data_dir, **SETTINGS))
    try:
        got = service.retrieve(
            RetrieveRequest(
                task=TaskIn(op="softmax"), context=ContextIn(chip="a100"), stage="draft", k=3
            )
        )
        used = [lesson.id for lesson in got.lessons[:1]]
        service.report(
            ReportRequest(
                retrieval_id=got.retrieval_id,
                used=used,
                outcome=OutcomeIn(compiled=True, correct=True, latency_ms=1.0),
            )
        )
    finally:
        service.close()
    bad_lesson = ids["config-list"]
    with Session(MemoryService(Settings(data_dir=data_dir, **SETTINGS)).engine) as session:
        session.execute(
            text("UPDATE lesson SET hint = '{not json' WHERE id = :i"), {"i": bad_lesson}
        )
        session.execute(text("UPDATE attempt SET params = 'BLOCK=64' WHERE \"index\" = 0"))
        session.execute(text("UPDATE attempt SET latency_ms = 'fast' WHERE \"index\" = 1"))
        session.execute(text("UPDATE outcome SET lessons = '\"x\"', reward = 7"))
        session.commit()
    args = ["doctor", "--data-dir", str(data_dir)]
    found = runner.invoke(app, args, env=ENV)
    assert found.exit_code == 1, found.output
    assert f"lesson {bad_lesson}: hint not JSON" in found.output
    assert "attempt 0: params: not JSON" in found.output
    assert "attempt 1: latency_ms is not a number" in found.output
    assert "outcome 1: lessons is not a list of ids; reward 7 is outside -1..1" in found.output
    fixed = runner.invoke(app, [*args, "--fix"], env=ENV)
    assert fixed.exit_code == 0, fixed.output
    clean = runner.invoke(app, args, env=ENV)
    assert clean.exit_code == 0 and "no unusable" in clean.output, clean.output
    bundle = tmp_path / "export.jsonl"
    exported = runner.invoke(app, ["export", str(bundle), "--data-dir", str(data_dir)], env=ENV)
    assert exported.exit_code == 0, exported.output
    other = tmp_path / "other"
    imported = runner.invoke(app, ["import", str(bundle), "--data-dir", str(other)], env=ENV)
    assert imported.exit_code == 0, imported.output
