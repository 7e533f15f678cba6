"""The transfer audit's optimum fractions: how far each source chip's configuration lessons get
on the target's measured search spaces, counting only what was measured.

A target space is a stored trajectory of the same op and parameter names on another chip, with
its provenance (`ingest.provenance`): a `complete` recording holds every valid configuration,
a `partial` run only what it timed. Each (lesson, pair) is counted once
(`retrieval.transfer.measured_reach`): over the complete recordings that hold the lesson's
configuration, else over the partial runs that timed it (the fraction of each run's own best);
where neither did, the lesson is listed as not measured, never scored as infeasible.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlmodel import Session, select

from tunemem.memory_service.core.schemas.audit import OptimumReachPublic, PairOptimumPublic
from tunemem.memory_service.core.sql.tables import Lesson, Trajectory
from tunemem.memory_service.core.values.recorded_spaces import load_spaces
from tunemem.retrieval.recorded import RecordedSpace
from tunemem.retrieval.transfer import measured_reach


def _recorded_spaces(
    session: Session, op: str | None, tenant: str
) -> tuple[list[RecordedSpace], dict[str, Trajectory]]:
    """Every stored trajectory with at least one feasible timed attempt, as a search space
    (`values.recorded_spaces`), and each one's row (backend, provenance)."""
    conditions: list[Any] = [Trajectory.tenant == tenant]
    if op:
        conditions.append(Trajectory.op == op.lower())
    rows = {t.id: t for t in session.exec(select(Trajectory).where(*conditions))}
    loaded = load_spaces(session, [(t.id, t.chip, t.op, t.task) for t in rows.values()])
    return [space for space in loaded.values() if space is not None], rows


def _config_lessons(session: Session, op: str | None, tenant: str) -> list[Lesson]:
    conditions: list[Any] = [Lesson.tenant == tenant]
    if op:
        conditions.append(Lesson.op == op.lower())
    return [
        lesson
        for lesson in session.exec(select(Lesson).where(*conditions))
        if isinstance((lesson.hint or {}).get("config"), dict)
        and (lesson.provenance or {}).get("trajectory_id")
    ]


def optimum_matrix(
    session: Session, level: str, op: str | None, tenant: str
) -> tuple[dict[tuple[str, str], PairOptimumPublic], dict[str, Lesson], set[str]]:
    """Optimum fractions per (source, target) scope name; the lessons used; the scopes seen.

    A lesson's source is the chip (or backend) of the run it was distilled from. Its
    configuration is looked up in the target's spaces with the same op and parameter names;
    spaces of the lesson's own chip are left out (at level backend too), since that is no
    transfer.
    """
    spaces, rows = _recorded_spaces(session, op, tenant)
    by_id = {s.trajectory_id: s for s in spaces}

    def scope(space: RecordedSpace) -> str:
        return space.chip if level == "chip" else rows[space.trajectory_id].backend

    reaches: dict[tuple[str, str], list[OptimumReachPublic]] = defaultdict(list)
    unmeasured: dict[tuple[str, str], list[str]] = defaultdict(list)
    used: dict[str, Lesson] = {}
    for lesson in _config_lessons(session, op, tenant):
        origin = by_id.get(lesson.provenance["trajectory_id"])
        if origin is None:
            continue
        config = lesson.hint["config"]  # type: ignore[index]
        targets: dict[str, list[tuple[str, Any, bool]]] = defaultdict(list)
        for space in spaces:
            if space.chip == origin.chip or space.op != origin.op:
                continue
            if space.keys != frozenset(config):
                continue
            complete = rows[space.trajectory_id].coverage == "complete"
            targets[scope(space)].append((space.trajectory_id, space.space, complete))
        for target, candidates in targets.items():
            pair = (scope(origin), target)
            reach = measured_reach(config, candidates)
            used[lesson.id] = lesson
            if reach is None:
                unmeasured[pair].append(lesson.id)
                continue
            row = rows[reach.space_id]
            reaches[pair].append(
                OptimumReachPublic(
                    lesson_id=lesson.id,
                    target_trajectory=reach.space_id,
                    target_chip=row.chip,
                    fraction=reach.fraction,
                    latency_ms=reach.latency_ms,
                    optimum_ms=reach.optimum_ms,
                    coverage=reach.coverage,
                    origin=row.origin,
                    n_spaces=reach.n_spaces,
                )
            )
    matrix = {}
    for pair in set(reaches) | set(unmeasured):
        items = sorted(reaches.get(pair, []), key=lambda r: (-r.fraction, r.lesson_id))
        fractions = [r.fraction for r in items]
        matrix[pair] = PairOptimumPublic(
            n_lessons=len(items),
            n_spaces=len({r.target_trajectory for r in items}),
            mean_fraction=sum(fractions) / len(fractions) if fractions else None,
            best_fraction=max(fractions) if fractions else None,
            reaches=items,
            not_measured=sorted(unmeasured.get(pair, [])),
        )
    return matrix, used, {scope(s) for s in spaces}
