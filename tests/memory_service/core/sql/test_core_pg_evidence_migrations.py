"""Issue 36's evidence columns (migrations 0006 and 0007) on PostgreSQL as on SQLite: an empty
database migrates to the tables' schema and back down past them, and rows of the revisions
before (0005, then the previous head) upgrade to head with what they say of themselves.
SYNTHETIC rows.

The PostgreSQL cases need a server (`conftest.new_pg_database`) and skip with the reason
without one; the SQLite cases always run, so each expectation is checked on both.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlmodel import Session, SQLModel, select

from tunemem.memory_service.core.sql.store import (
    alembic_config,
    create_store_engine,
    current_revision,
    head_revision,
    migrate,
)
from tunemem.memory_service.core.sql.tables import Outcome, Trajectory

from .evidence_stores import BACKENDS, DEVICE, EVIDENCE_COLUMNS, database_url
from .test_core_migrations import previous_revision


def evidence_columns(engine: sa.Engine) -> dict[tuple[str, str], tuple[str, bool]]:
    """(table, column) -> (its type, nullable) for the evidence columns the store has."""
    inspector = sa.inspect(engine)
    return {
        (table, column["name"]): (str(column["type"]).lower(), column["nullable"])
        for table in ("outcome", "trajectory")
        for column in inspector.get_columns(table)
        if column["name"] in EVIDENCE_COLUMNS
    }


@pytest.mark.server
def test_an_empty_postgres_database_migrates_to_the_tables_schema_and_back(empty_pg_database):
    engine = create_store_engine(empty_pg_database, migrate_schema=False)
    try:
        assert migrate(engine) is None
        with engine.connect() as connection:
            differences = compare_metadata(
                MigrationContext.configure(connection), SQLModel.metadata
            )
        assert differences == []
        columns = evidence_columns(engine)
        assert columns[("outcome", "config")] == ("json", True)
        assert columns[("outcome", "credit")] == ("json", False)
        assert columns[("outcome", "timings_ms")] == ("json", True)
        assert columns[("outcome", "latency_spread_ms")] == ("double precision", True)
        assert columns[("outcome", "repetitions")] == ("integer", True)
        assert columns[("trajectory", "coverage")] == ("varchar(16)", False)
        assert columns[("trajectory", "device_reported")] == ("varchar(256)", True)
        # The evidence revisions go down and up again on PostgreSQL too.
        with engine.begin() as connection:
            command.downgrade(alembic_config(connection), "0005")
        assert evidence_columns(engine) == {}
        migrate(engine)
        assert current_revision(engine) == head_revision()
        assert len(evidence_columns(engine)) == 10
    finally:
        engine.dispose()


def _insert(connection: sa.Connection, table: str, **values: Any) -> None:
    """One row through typed columns, so JSON and booleans bind alike on both databases."""
    types = {
        dict: sa.JSON,
        list: sa.JSON,
        bool: sa.Boolean,
        int: sa.Integer,
        float: sa.Float,
        datetime: sa.DateTime,
    }
    columns = [sa.column(k, types.get(type(v), sa.String)()) for k, v in values.items()]
    connection.execute(sa.table(table, *columns).insert().values(**values))


CREATED = datetime(2026, 1, 1, tzinfo=UTC)
OLD_OUTCOME = dict(
    tenant="default",
    retrieval_id="r-old",
    lessons=["lesson-1"],
    stage="refine",
    task_key="k",
    scope_chain=["chip:a100", "global"],
    compiled=True,
    correct=True,
    latency_ms=1.25,
    reward=0.5,
    verified=False,
    response={},
    created_at=CREATED,
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_rows_of_the_revisions_before_upgrade_to_head(request, tmp_path, backend):
    """0005 -> 0006 (provenance) with runs and an outcome in the store, then the previous head
    -> head (credit and timings) with an outcome of 0006 added."""
    engine = create_store_engine(database_url(request, tmp_path, backend), migrate_schema=False)
    try:
        migrate(engine, "0005")
        task = {"op": "conv", "signature": {"tune_params_keys": ["a", "b"]}}
        runs = {"sweep": [(1, 1), (1, 2), (2, 1), (2, 2)], "part": [(2, 1)]}
        with engine.begin() as connection:
            for name, configs in runs.items():
                _insert(
                    connection,
                    "trajectory",
                    id=name,
                    tenant="default",
                    source_format="kerneltuner",
                    source=name,
                    op="conv",
                    chip="a100",
                    backend="cuda",
                    task=task,
                    context={},
                    evidence={"tune_params": {"a": [1, 2], "b": [1, 2]}},
                    synthetic=False,
                    n_attempts=len(configs),
                    created_at=CREATED,
                )
                for index, (a, b) in enumerate(configs):
                    _insert(
                        connection,
                        "attempt",
                        trajectory_id=name,
                        index=index,
                        params={"a": a, "b": b},
                        compiled=True,
                        metrics={},
                    )
            _insert(connection, "outcome", **OLD_OUTCOME)
        migrate(engine, previous_revision() or "head")
        with engine.begin() as connection:
            _insert(
                connection,
                "outcome",
                **{**OLD_OUTCOME, "retrieval_id": "r-0006"},
                origin="measured",
                device_reported=DEVICE,
            )
        assert migrate(engine) == previous_revision()
        with Session(engine) as session:
            trajectories = {t.id: t for t in session.exec(select(Trajectory))}
            outcomes = list(session.exec(select(Outcome).order_by(sa.column("id"))))
        assert {k: (t.origin, t.coverage, t.device_reported) for k, t in trajectories.items()} == {
            "sweep": ("recorded", "complete", None),
            "part": ("recorded", "partial", None),
        }
        assert [
            (o.retrieval_id, o.origin, o.device_reported, o.config, o.credit, o.timings_ms)
            for o in outcomes
        ] == [
            ("r-old", "unstated", None, None, {}, None),
            ("r-0006", "measured", DEVICE, None, {}, None),
        ]
        assert {(o.latency_spread_ms, o.repetitions, o.latency_ms) for o in outcomes} == {
            (None, None, 1.25)
        }
    finally:
        engine.dispose()
