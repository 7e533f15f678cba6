"""Evidence behind generalised values, loaded from the store: recorded search spaces (stored
trajectories), configuration lessons and their reaches, parameter-setting lessons and their
recorded effects, and lessons' per-chip outcome statistics.

Recorded spaces never change once stored, so each is read once per process; the reaches of the
configuration lessons are recomputed only when the lessons or the spaces change (a cheap
count and timestamp check per retrieval). Only lessons of an op that has a recorded space are
read, so a memory without recorded spaces pays one small query. The values themselves are
computed by `retrieval.generalised`; this module only gathers their inputs.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from memory_service.core.schema import Attempt, Lesson, LessonValue, Trajectory
from retrieval.generalised import (
    GeneralisedSettings,
    affinities,
    generalised_estimate,
    source_prior,
)
from retrieval.recorded import (
    ConfigLesson,
    RecordedSpace,
    SettingLesson,
    SourceReach,
    SpaceColumns,
    lesson_reaches,
    setting_effects,
    source_reaches,
)
from retrieval.transfer import SearchSpace, config_key
from retrieval.values import ScopeStats, ValueEstimate

CHIP_PREFIX = "chip:"


@dataclass(frozen=True)
class _Reaches:
    signature: tuple[object, ...]
    lessons: dict[str, ConfigLesson]
    reaches: dict[str, dict[str, float]]
    pooled: dict[str, dict[str, SourceReach]]
    effects: dict[str, dict[str, float]]


def _load_space(session: Session, trajectory_id: str, chip: str, op: str) -> RecordedSpace | None:
    """A stored trajectory as a search space (None when it has no feasible timed attempt)."""
    latency: dict[str, float | None] = {}
    keys: frozenset[str] | None = None
    for params, compiled, correct, error_category, latency_ms in session.execute(
        sa_select(
            col(Attempt.params),
            col(Attempt.compiled),
            col(Attempt.correct),
            col(Attempt.error_category),
            col(Attempt.latency_ms),
        ).where(col(Attempt.trajectory_id) == trajectory_id)
    ):
        if not params:
            continue
        feasible = compiled and correct is not False and error_category is None
        timed = latency_ms if feasible and latency_ms is not None and latency_ms > 0 else None
        key = config_key(params)
        previous = latency.get(key)
        # A configuration recorded twice keeps its fastest feasible measurement.
        latency[key] = timed if previous is None else min(previous, timed or previous)
        keys = keys or frozenset(params)
    space = SearchSpace(latency=latency)
    if keys is None or space.optimum_ms is None:
        return None
    return RecordedSpace(trajectory_id, chip, op, keys, space)


class Evidence:
    """Per-process caches of the recorded spaces and the reaches of configuration lessons."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spaces: dict[str, RecordedSpace | None] = {}
        self._reaches: dict[str, _Reaches] = {}
        self._columns: dict[str, SpaceColumns] = {}

    def spaces(self, session: Session, tenant: str) -> list[RecordedSpace]:
        """Every stored trajectory of the tenant with a feasible timed attempt, as a space."""
        rows = session.execute(
            sa_select(col(Trajectory.id), col(Trajectory.chip), col(Trajectory.op)).where(
                col(Trajectory.tenant) == tenant
            )
        ).all()
        out = []
        for trajectory_id, chip, op in rows:
            with self._lock:
                known = trajectory_id in self._spaces
            if not known:
                loaded = _load_space(session, trajectory_id, chip, op)
                with self._lock:
                    self._spaces[trajectory_id] = loaded
            space = self._spaces[trajectory_id]
            if space is not None:
                out.append(space)
        return out

    def reaches(self, session: Session, tenant: str) -> _Reaches:
        """Reaches of the tenant's configuration lessons on its recorded spaces (cached)."""
        spaces = self.spaces(session, tenant)
        ops = sorted({s.op for s in spaces})
        count, latest = (
            session.execute(
                sa_select(func.count(), func.max(Lesson.updated_at)).where(
                    col(Lesson.tenant) == tenant,
                    col(Lesson.op).in_(ops),
                    col(Lesson.status) == "active",
                )
            ).one()
            if ops
            else (0, None)
        )
        signature = (tuple(sorted(s.trajectory_id for s in spaces)), count, latest)
        with self._lock:
            cached = self._reaches.get(tenant)
        if cached is not None and cached.signature == signature:
            return cached
        lessons: dict[str, ConfigLesson] = {}
        settings: list[SettingLesson] = []
        if ops:
            for lesson_id, op, chips, hint in session.execute(
                sa_select(
                    col(Lesson.id), col(Lesson.op), col(Lesson.chips), col(Lesson.hint)
                ).where(
                    col(Lesson.tenant) == tenant,
                    col(Lesson.op).in_(ops),
                    col(Lesson.status) == "active",
                )
            ):
                hint = hint or {}
                config = hint.get("config")
                source = next((c for c in chips.split(",") if c), None)
                if isinstance(config, dict) and config:
                    lessons[lesson_id] = ConfigLesson(lesson_id, source, op, config)
                elif "param" in hint and "value" in hint:
                    prefer = hint.get("effect", "prefer") == "prefer"
                    settings.append(
                        SettingLesson(
                            lesson_id, source, op, str(hint["param"]), hint["value"], prefer
                        )
                    )
        reaches = lesson_reaches(lessons.values(), spaces)
        with self._lock:
            columns = dict(self._columns)
        effects = setting_effects(settings, spaces, columns)
        built = _Reaches(
            signature, lessons, reaches, source_reaches(lessons.values(), reaches), effects
        )
        with self._lock:
            self._reaches[tenant] = built
            self._columns.update(columns)
        return built

    def estimates(
        self,
        session: Session,
        tenant: str,
        lesson_ids: Sequence[str],
        stage: str,
        target: str,
        settings: GeneralisedSettings,
    ) -> dict[str, ValueEstimate]:
        """Generalised value estimates of the candidates on the target chip."""
        evidence = self.reaches(session, tenant)
        stats: dict[str, dict[str, ScopeStats]] = {lid: {} for lid in lesson_ids}
        if lesson_ids:
            for row in session.exec(
                select(LessonValue).where(
                    col(LessonValue.lesson_id).in_(list(lesson_ids)),
                    LessonValue.stage == stage,
                    col(LessonValue.scope).startswith(CHIP_PREFIX),
                )
            ):
                chip = row.scope[len(CHIP_PREFIX) :]
                stats[row.lesson_id][chip] = ScopeStats(row.n, row.q, row.sumsq)
        sources = {
            lid: evidence.lessons[lid].source_chip if lid in evidence.lessons else None
            for lid in lesson_ids
        }
        chips = {target}
        for lid in lesson_ids:
            chips |= set(stats[lid]) | set(evidence.reaches.get(lid, {}))
            chips |= set(evidence.effects.get(lid, {}))
            source = sources[lid]
            if source:
                chips |= set(evidence.pooled.get(source, {}))
        affinity = affinities(target, sorted(chips), evidence.reaches, settings)
        out = {}
        for lid in lesson_ids:
            source = sources[lid]
            prior = None
            if source:
                mean, weight, _ = source_prior(
                    source, evidence.pooled.get(source, {}), affinity, settings
                )
                prior = (mean, weight)
            out[lid] = generalised_estimate(
                target=target,
                own=stats[lid].get(target),
                neighbours={c: s for c, s in stats[lid].items() if c != target},
                recorded=evidence.reaches.get(lid, {}),
                affinity=affinity,
                prior=prior,
                settings=settings,
                source=source,
                effects=evidence.effects.get(lid),
            )
        return out
