"""Lessons whose claims failed to reproduce (`GET /v1/lessons?sort=unreproduced`, `tunemem
lessons top --unreproduced`): the lessons distilled from recorded runs whose timings, re-measured
by outcomes on the run's chip, came out slower than claimed (or failed), worst run first.

How well a run reproduced is `Evidence.claim_rows` (`retrieval.reproduction`): the same
evidence that discounts the run's recorded reach in the generalised value.
"""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, col, select

from tunemem.memory_service.core.lessons import rows as lesson_rows
from tunemem.memory_service.core.schemas.lessons import LessonFilter, LessonList
from tunemem.memory_service.core.sql.tables import Lesson
from tunemem.memory_service.core.values.generalised_inputs import Evidence

# A run whose re-measurements averaged at least this close to its claims counts as reproduced.
REPRODUCED = 0.999


def unreproduced_lessons(
    session: Session,
    where: LessonFilter,
    conditions: list[Any],
    evidence: Evidence,
    tenant: str,
    chip_id: str | None,
) -> LessonList:
    """Lessons matching `conditions` whose source run's claims were contradicted by outcomes
    (on `chip_id` when given), worst reproduced run first; a page and the count."""
    runs = {
        row.trajectory_id: row
        for row in evidence.claim_rows(session, tenant, where.op.lower() if where.op else None)
        if row.reproduced < REPRODUCED and (chip_id is None or row.chip == chip_id)
    }
    if not runs:
        return LessonList(data=[], count=0)
    ops = sorted({row.op for row in runs.values()})
    found = []
    for lesson in session.exec(
        select(Lesson).where(*conditions, col(Lesson.op).in_(ops)).order_by(col(Lesson.id))
    ):
        run = runs.get(str((lesson.provenance or {}).get("trajectory_id")))
        if run is not None:
            found.append((run, lesson))
    found.sort(key=lambda item: (item[0].reproduced, -item[0].n, item[1].created_at, item[1].id))
    data = []
    for run, lesson in found[where.offset : where.offset + where.limit]:
        public = lesson_rows.to_public(lesson)
        public.claims = run
        data.append(public)
    return LessonList(data=data, count=len(found))
