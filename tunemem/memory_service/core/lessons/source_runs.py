"""Where a lesson's evidence came from: the provenance of the run it was distilled from (the
trajectory its `provenance.trajectory_id` names), for the doors that show a lesson (retrieve's
breakdown, suggest, the lesson page)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlmodel import Session, col, select

from tunemem.memory_service.core.schemas.lessons import SourceRunPublic
from tunemem.memory_service.core.sql.tables import Lesson, Trajectory


def source_runs(session: Session, lessons: Iterable[Lesson]) -> dict[str, SourceRunPublic]:
    """Lesson id -> its source run's provenance, for the lessons distilled from a stored run
    (one primary-key read for all of them); lessons added by hand or by API have none."""
    wanted = {
        lesson.id: str(lesson.provenance["trajectory_id"])
        for lesson in lessons
        if isinstance((lesson.provenance or {}).get("trajectory_id"), str)
    }
    if not wanted:
        return {}
    runs = {
        run.id: run
        for run in session.exec(
            select(Trajectory).where(col(Trajectory.id).in_(sorted(set(wanted.values()))))
        )
    }
    return {
        lesson_id: SourceRunPublic(
            trajectory_id=run.id,
            chip=run.chip,
            origin=run.origin,
            coverage=run.coverage,
            device_reported=run.device_reported,
        )
        for lesson_id, trajectory_id in wanted.items()
        if (run := runs.get(trajectory_id)) is not None
    }
