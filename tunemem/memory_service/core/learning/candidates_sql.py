"""What a retrieve reads from and writes to the SQL store on its hot path, as Core statements
(no ORM unit of work or identity map): the candidates' gating conditions and value statistics,
and the Retrieval row."""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import ValidationError
from sqlalchemy import String, cast, insert
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from tunemem.memory_service.core.schemas.lessons import Applicability
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.stored_types import note_damaged
from tunemem.memory_service.core.sql.tables import Lesson, Retrieval

# Parsed applicability by its JSON text: lessons share a few hundred distinct applicabilities,
# and parsing 200 of them was the largest Python cost of a retrieve at 100k lessons. Keyed by
# the text itself, an edited lesson can never be gated by its old applicability.
_PARSED: dict[str, Any] = {}
_PARSED_MAX = 4096


def _applicability(text: str | None) -> Any:
    """The parsed applicability JSON (read-only: shared between retrievals); None where the
    stored text is no object of the API's conditions (a hand edit: noted as a damaged read)."""
    if not text:
        return {}
    parsed = _PARSED.get(text)
    if parsed is None:
        try:
            parsed = orjson.loads(text)
            Applicability.model_validate(parsed)
        except (orjson.JSONDecodeError, ValidationError):
            note_damaged("lesson applicability", text)
            return None
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        _PARSED[text] = parsed
    return parsed


def gating_conditions(session: Session, lesson_ids: list[str]) -> dict[str, tuple[Any, bool]]:
    """(applicability, has code) of the active lessons among the ids.

    A Core query, with the applicability read as text and parsed by orjson once per distinct
    text (`_applicability`): SQLAlchemy's JSON result processing and ORM row handling were a
    fifth of a retrieve at 100k lessons. (Status is filtered here, not in SQL, so the planner
    looks ids up by primary key instead of scanning the status index.) The returned
    applicabilities are shared: callers read them only.
    """
    if not lesson_ids:
        return {}
    lesson = Lesson.__table__  # type: ignore[attr-defined]
    statement = sa_select(
        lesson.c.id,
        cast(lesson.c.applicability, String),
        lesson.c.code.is_not(None),
        lesson.c.status,
    ).where(lesson.c.id.in_(lesson_ids))
    rows = session.connection().execute(statement).fetchall()
    conditions = {}
    for lid, text, has_code, status in rows:
        applicability = _applicability(text) if status == "active" else None
        if applicability is not None:  # where a lesson applies is unreadable: it is left out
            conditions[lid] = (applicability, bool(has_code))
    return conditions


def write_retrieval(store: Store, row: dict[str, Any]) -> None:
    """Insert a Retrieval row and commit it, one writer at a time in this process.

    Called after the retrieve's read session has given its connection back, so a retrieve
    waiting for the write lock holds no pooled connection that the lock's holder might need
    (SQLite's own busy handler would otherwise make concurrent writers sleep).
    """
    with store.write_lock, store.engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            # The row is visible to every worker at commit either way; waiting for its WAL
            # fsync (18 ms p50 on the bench VM) only guards against a crash of PostgreSQL
            # itself in the next ~0.2 s, which the embedded SQLite store (WAL,
            # synchronous=NORMAL) does not guard against either. Outcomes, the log that
            # values come from, keep synchronous commits.
            connection.exec_driver_sql("SET LOCAL synchronous_commit = off")
        connection.execute(insert(Retrieval.__table__), row)  # type: ignore[attr-defined]


def own_lessons(session: Session, lesson_ids: list[str], tenant: str) -> set[str]:
    """Those of `lesson_ids` that are the tenant's own: the only lessons an outcome credits.

    The tenant is compared here, not in SQL: with both conditions SQLite's planner (no
    statistics) looks rows up by the tenant index and reads every lesson of the tenant
    (73 ms a report at 100k lessons) instead of a few by primary key.
    """
    if not lesson_ids:
        return set()
    rows = session.exec(select(Lesson.id, Lesson.tenant).where(col(Lesson.id).in_(lesson_ids)))
    return {lid for lid, owner in rows if owner == tenant}
