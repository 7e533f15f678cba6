"""Schema migrations (Alembic): the migrated schema is the tables' schema, a store made by the
previous revision (or before migrations) upgrades and keeps its data, `tunemem migrate` works,
and workers racing on an empty PostgreSQL database migrate it once.

The PostgreSQL case needs a server (`conftest.empty_pg_database`) and skips with the reason
without one; test_core_pg_evidence.py takes the evidence columns through PostgreSQL.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel
from typer.testing import CliRunner

from tunemem.cli.app import app
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.core.sql.store import (
    alembic_config,
    create_store_engine,
    current_revision,
    head_revision,
    migrate,
)
from tunemem.memory_service.service import MemoryService


def sqlite_engine(path: Path) -> Engine:
    return create_store_engine(f"sqlite:///{path}", migrate_schema=False)


def previous_revision() -> str | None:
    """The revision before the newest one; None when the newest is the first."""
    script = ScriptDirectory.from_config(alembic_config()).get_revision(head_revision())
    down = script.down_revision if script is not None else None
    assert not isinstance(down, tuple), "the migrations must stay one line"
    return down


def store_of_the_previous_revision(path: Path) -> Engine:
    """A store as the previous revision made it; before the first revision, as tunemem made
    stores then (the first revision's tables, no alembic_version)."""
    engine = sqlite_engine(path)
    previous = previous_revision()
    migrate(engine, previous or "0001")
    if previous is None:
        with engine.begin() as connection:
            connection.execute(text("DROP TABLE alembic_version"))
    return engine


# Rows in the first revision's columns: later revisions only add columns, so these stay valid.
ROWS = [
    """INSERT INTO lesson (id, tenant, kind, text, hint, code, content_hash, applicability, op,
       chips, backends, provenance, status, created_at, updated_at) VALUES ('lesson-1',
       'default', 'insight', 'use BLOCK_SIZE 1024 for softmax on h200', NULL, NULL, 'hash-1',
       '{"op": "softmax", "chips": ["h200"]}', 'softmax', ',h200,', ',cuda,', '{}', 'active',
       '2026-01-01 00:00:00', '2026-01-01 00:00:00')""",
    """INSERT INTO lessonvalue (lesson_id, stage, scope, n, q, sumsq, updated_at) VALUES
       ('lesson-1', 'draft', 'chip:h200', 3, 0.5, 1.5, '2026-01-01 00:00:00')""",
]


def test_the_migrated_schema_is_the_tables_schema(tmp_path):
    """Fails when a table class changed without a revision (see migrations/__init__.py)."""
    engine = sqlite_engine(tmp_path / "fresh.db")
    assert migrate(engine) is None
    with engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), SQLModel.metadata)
    assert differences == []
    assert current_revision(engine) == head_revision()


def test_a_store_of_the_previous_revision_upgrades_and_keeps_its_data(tmp_path, embedder):
    data_dir = tmp_path / "store"
    data_dir.mkdir()
    engine = store_of_the_previous_revision(data_dir / "tunemem.db")
    with engine.begin() as connection:
        for row in ROWS:
            connection.execute(text(row))
    engine.dispose()
    service = MemoryService(Settings(data_dir=data_dir, index="memory"), embedder=embedder)
    try:
        assert current_revision(service.engine) == head_revision()
        lesson = service.get_lesson("lesson-1")
        assert lesson.text == "use BLOCK_SIZE 1024 for softmax on h200"
        assert lesson.applicability.chips == ["h200"]
        assert [(v.stage, v.scope, v.n, v.q) for v in lesson.values] == [
            ("draft", "chip:h200", 3, 0.5)
        ]
        assert service.counts()["lessons"] == 1
    finally:
        service.close()


def test_migrate_on_start_can_be_turned_off(tmp_path, embedder):
    settings = Settings(data_dir=tmp_path / "s", index="memory", migrate_on_start=False)
    (tmp_path / "s").mkdir()
    service = MemoryService(settings, embedder=embedder)
    try:
        assert current_revision(service.engine) is None
    finally:
        service.close()


def test_tunemem_migrate(tmp_path, monkeypatch):
    monkeypatch.delenv("TUNEMEM_DATABASE_URL", raising=False)
    runner = CliRunner()
    data = ["--data-dir", str(tmp_path / "cli")]
    first = runner.invoke(app, ["migrate", *data])
    assert first.exit_code == 0, first.output
    assert f"to {head_revision()}" in first.output
    again = runner.invoke(app, ["migrate", *data])
    assert again.exit_code == 0 and "nothing to do" in again.output
    unknown = runner.invoke(app, ["migrate", *data, "--revision", "9999"])
    assert unknown.exit_code == 2 and "9999" in unknown.output


@pytest.mark.server
def test_workers_racing_on_an_empty_postgres_database_migrate_it_once(empty_pg_database):
    workers = 4
    start = threading.Barrier(workers)
    engines = [create_engine(empty_pg_database) for _ in range(workers)]
    before: list[str | None] = []
    errors: list[BaseException] = []

    def worker(engine: Engine) -> None:
        try:
            start.wait()
            before.append(migrate(engine))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(e,)) for e in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    try:
        assert errors == []
        # one worker found the database empty; the others waited on the lock, then found it done
        assert before.count(None) == 1 and before.count(head_revision()) == workers - 1
        assert current_revision(engines[0]) == head_revision()
    finally:
        for engine in engines:
            engine.dispose()


def test_the_provenance_revision_says_what_old_rows_are(tmp_path):
    """0006 (issue 36): a Kernel Tuner cache stored before is recorded, complete or partial
    from its stored attempts; vLLM's configs are shipped; a tool's own upload and every old
    outcome stay unstated. SYNTHETIC rows."""
    engine = sqlite_engine(tmp_path / "old.db")
    migrate(engine, "0005")
    declared = '{"tune_params": {"a": [1, 2], "b": [1, 2]}}'
    signature = '{"op": "conv", "signature": {"tune_params_keys": ["a", "b"]}}'
    runs = {
        "sweep": ("kerneltuner", [(1, 1), (1, 2), (2, 1), (2, 2)]),
        "part": ("kerneltuner", [(2, 1), (1, 1)]),
        "vllm": ("vllm-moe", [(1, 1)]),
        "tool": ("native", [(1, 1)]),
    }
    with engine.begin() as connection:
        for name, (fmt, configs) in runs.items():
            connection.execute(
                text(
                    "INSERT INTO trajectory (id, tenant, source_format, source, op, chip, backend,"
                    " task, context, evidence, synthetic, n_attempts, created_at) VALUES (:id, "
                    "'default', :fmt, :id, 'conv', 'a100', 'cuda', :task, '{}', :evidence, 0, :n,"
                    " '2026-01-01 00:00:00')"
                ),
                {
                    "id": name,
                    "fmt": fmt,
                    "task": signature,
                    "evidence": declared,
                    "n": len(configs),
                },
            )
            for index, (a, b) in enumerate(configs):
                connection.execute(
                    text(
                        'INSERT INTO attempt (trajectory_id, "index", params, compiled, metrics)'
                        " VALUES (:tid, :i, :params, 1, '{}')"
                    ),
                    {"tid": name, "i": index, "params": f'{{"a": {a}, "b": {b}}}'},
                )
    migrate(engine)
    with engine.connect() as connection:
        rows = dict(
            (row[0], (row[1], row[2]))
            for row in connection.execute(text("SELECT id, origin, coverage FROM trajectory"))
        )
    assert rows == {
        "sweep": ("recorded", "complete"),
        "part": ("recorded", "partial"),
        "vllm": ("shipped", "partial"),
        "tool": ("unstated", "unstated"),
    }
