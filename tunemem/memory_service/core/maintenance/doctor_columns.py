"""Doctor's pass over the columns it has no repair of its own for.

The tables' JSON and number columns (`sql.stored_types`) read a value they cannot use (no JSON,
a list where an object goes, text where a number goes) as empty, so no read fails on it; this
pass finds those values of a tenant's lessons, runs, attempts, retrievals and outcomes, names
each by its row and column, and with `fix` writes the empty value the reads already see. The
columns `doctor` repairs in its own way (hints, applicability, parameters, latencies, an
outcome's credited lessons, scope chain, timings, answer and reward) are left to it.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Column, Table, Text, select, type_coerce, update
from sqlmodel import Session

from tunemem.memory_service.core.sql.stored_types import StoredFloat, StoredJSON
from tunemem.memory_service.core.sql.tables import Attempt, Lesson, Outcome, Retrieval, Trajectory

# Repaired by `doctor` itself, each in its own way.
OWN_REPAIRS = frozenset(
    {
        "lesson hint",
        "lesson applicability",
        "attempt params",
        "attempt latency_ms",
        "attempt latency_min_ms",
        "outcome lessons",
        "outcome scope_chain",
        "outcome response",
        "outcome timings_ms",
        "outcome latency_ms",
        "outcome best_before_ms",
        "outcome reward",
    }
)
# Each table, what a report line calls its row, and which report list the line joins.
TABLES: tuple[tuple[Any, str, str], ...] = (
    (Lesson, "lesson", "lessons"),
    (Trajectory, "run", "attempts"),
    (Attempt, "attempt", "attempts"),
    (Retrieval, "retrieval", "outcomes"),
    (Outcome, "outcome", "outcomes"),
)


def _readable(column: Column[Any], stored: Any) -> bool:
    kind = column.type
    if stored is None:
        return True
    if isinstance(kind, StoredFloat):
        return StoredFloat.number(stored) is not None
    if isinstance(stored, str | bytes):
        try:
            stored = json.loads(stored)
        except ValueError:
            return False
    assert isinstance(kind, StoredJSON)
    return kind.accepts(stored)


def _empty(column: Column[Any]) -> Any:
    kind = column.type
    assert isinstance(kind, StoredJSON | StoredFloat)
    return kind.empty


def _checked(table: Table) -> list[Column[Any]]:
    return [
        c
        for c in table.columns
        if isinstance(c.type, StoredJSON | StoredFloat) and c.type.column not in OWN_REPAIRS
    ]


def unreadable_columns(session: Session, tenant: str, fix: bool) -> dict[str, list[str]]:
    """Report lines by report list ("lessons", "attempts", "outcomes"); with fix, each
    unreadable value is replaced by the empty value its column reads it as."""
    found: dict[str, list[str]] = {}
    runs = Trajectory.__table__  # type: ignore[attr-defined]
    for model, label, listed in TABLES:
        table = model.__table__
        columns = _checked(table)
        if not columns:
            continue
        statement = select(table.c.id, *(type_coerce(c, Text).label(c.name) for c in columns))
        if model is Attempt:
            statement = statement.join(runs, runs.c.id == table.c.trajectory_id).where(
                runs.c.tenant == tenant
            )
        else:
            statement = statement.where(table.c.tenant == tenant)
        for row in session.connection().execute(statement.order_by(table.c.id)):
            values = row._mapping
            bad = [c for c in columns if not _readable(c, values[c.name])]
            if not bad:
                continue
            names = ", ".join(c.name for c in bad)
            done = "emptied" if fix else "read as empty"
            found.setdefault(listed, []).append(
                f"{label} {values['id']}: {names} cannot be read as stored ({done})"
            )
            if fix:
                empty = {c.name: _empty(c) for c in bad}
                session.connection().execute(
                    update(table).where(table.c.id == values["id"]).values(**empty)
                )
    return found
