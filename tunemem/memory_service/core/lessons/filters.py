"""A `LessonFilter` as SQL: the conditions every listing shares, and the plain listing by
creation time. The other listings (by value in a context, by stale evidence, by failed claims)
take the same conditions (`listings`, `claims`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, or_
from sqlmodel import Session, col, select

from tunemem import platforms
from tunemem.memory_service.core.lessons import rows as lesson_rows
from tunemem.memory_service.core.schemas.lessons import LessonFilter, LessonList
from tunemem.memory_service.core.sql.tables import Lesson


def filter_conditions(where: LessonFilter, tenant: str) -> list[Any]:
    """The tenant's lessons of the filter's status, kind, op, backend and text (not its chip,
    which each listing reads its own way)."""
    conditions: list[Any] = [Lesson.tenant == tenant]
    if where.status != "all":
        conditions.append(Lesson.status == where.status)
    if where.kind:
        conditions.append(Lesson.kind == where.kind)
    if where.op:
        conditions.append(Lesson.op == where.op.lower())
    if backend := where.backend:
        conditions.append(
            or_(
                col(Lesson.backends) == ",",
                col(Lesson.backends).contains(f",{backend.lower()},", autoescape=True),
            )
        )
    if where.q:
        # autoescape: "%" and "_" in the query are literal characters, not wildcards.
        conditions.append(func.lower(Lesson.text).contains(where.q.lower(), autoescape=True))
    return conditions


def chip_id_for_filter(chip: str) -> str:
    """A chip as lessons name it: its id when known, else the name as given (lower case)."""
    try:
        return platforms.resolve(chip).id
    except platforms.UnknownChipError:
        return chip.lower()


def naming_chip(chip_id: str) -> Any:
    """The condition: the lesson names this chip."""
    return col(Lesson.chips).contains(f",{chip_id},", autoescape=True)


def created_rows(session: Session, conditions: list[Any]) -> list[Lesson]:
    """Every lesson meeting the conditions, oldest first."""
    query = select(Lesson).where(*conditions).order_by(col(Lesson.created_at), col(Lesson.id))
    return list(session.exec(query).all())


def created_page(session: Session, where: LessonFilter, conditions: list[Any]) -> LessonList:
    """One page of the lessons meeting the conditions, oldest first, and how many there are."""
    total = session.exec(select(func.count()).select_from(Lesson).where(*conditions)).one()
    rows = session.exec(
        select(Lesson)
        .where(*conditions)
        .order_by(col(Lesson.created_at), col(Lesson.id))
        .offset(where.offset)
        .limit(where.limit)
    ).all()
    return LessonList(data=[lesson_rows.to_public(r) for r in rows], count=int(total))
