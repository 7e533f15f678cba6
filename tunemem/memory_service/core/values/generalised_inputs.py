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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlmodel import Session, col

from tunemem.ingest.records import is_feasible
from tunemem.memory_service.core.schemas.values import ClaimsPublic
from tunemem.memory_service.core.sql.tables import (
    Lesson,
    LessonValue,
    Outcome,
    Retrieval,
    Trajectory,
)
from tunemem.memory_service.core.values.recorded_spaces import load_spaces, problem_text
from tunemem.retrieval.generalised import Affinities, generalised_estimate
from tunemem.retrieval.generalised_settings import GeneralisedSettings
from tunemem.retrieval.generalised_terms import GeneralisedInputs
from tunemem.retrieval.recorded import (
    ConfigLesson,
    PerSpace,
    RecordedSpace,
    SettingLesson,
    SourceReach,
    SpaceColumns,
    lesson_space_reaches,
    per_chip,
    setting_space_effects,
    source_reaches,
)
from tunemem.retrieval.reproduction import ClaimCheck, Remeasurement, claim_checks, space_trust
from tunemem.retrieval.values import ScopeStats, ValueEstimate

CHIP_PREFIX = "chip:"


# Outcomes whose numbers were not timed on the chip now: they neither confirm nor contradict
# a recorded run's claims (`ingest.provenance`).
NOT_REMEASURED = ("replayed", "simulated", "shipped")


@dataclass(frozen=True)
class _Reaches:
    signature: tuple[object, ...]
    lessons: dict[str, ConfigLesson]
    reaches: dict[str, dict[str, float]]
    pooled: dict[str, dict[str, SourceReach]]
    space_reaches: PerSpace
    space_effects: PerSpace
    spaces: list[RecordedSpace]


@dataclass
class _Remeasured:
    """A tenant's re-measurements read so far from the (append-only) outcome log."""

    last_id: int = 0
    items: list[Remeasurement] = field(default_factory=list)
    checks: dict[str, ClaimCheck] = field(default_factory=dict)
    signature: tuple[object, ...] = ()


class Evidence:
    """Per-process caches of the recorded spaces and the reaches of configuration lessons."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spaces: dict[str, RecordedSpace | None] = {}
        self._reaches: dict[str, _Reaches] = {}
        self._columns: dict[str, SpaceColumns] = {}
        self._remeasured: dict[str, _Remeasured] = {}

    def spaces(self, session: Session, tenant: str) -> list[RecordedSpace]:
        """Every stored trajectory of the tenant with a feasible timed attempt, as a space."""
        # Ids first: a known trajectory's task JSON is not read (nor decoded) again.
        ids = (
            session.execute(sa_select(col(Trajectory.id)).where(col(Trajectory.tenant) == tenant))
            .scalars()
            .all()
        )
        with self._lock:
            unknown = [tid for tid in ids if tid not in self._spaces]
        for start in range(0, len(unknown), 500):
            heads = session.execute(
                sa_select(
                    col(Trajectory.id),
                    col(Trajectory.chip),
                    col(Trajectory.op),
                    col(Trajectory.task),
                ).where(col(Trajectory.id).in_(unknown[start : start + 500]))
            ).all()
            loaded = load_spaces(session, [tuple(head) for head in heads])  # type: ignore[misc]
            with self._lock:
                self._spaces.update(loaded)
        with self._lock:
            found = [self._spaces.get(tid) for tid in ids]
        return [space for space in found if space is not None]

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
        space_reaches = lesson_space_reaches(lessons.values(), spaces)
        reaches = {lid: per_chip(rows) for lid, rows in space_reaches.items()}
        with self._lock:
            columns = dict(self._columns)
        space_effects = setting_space_effects(settings, spaces, columns)
        built = _Reaches(
            signature,
            lessons,
            reaches,
            source_reaches(lessons.values(), reaches),
            space_reaches,
            space_effects,
            spaces,
        )
        with self._lock:
            self._reaches[tenant] = built
            self._columns.update(columns)
        return built

    def claim_checks(self, session: Session, tenant: str) -> dict[str, ClaimCheck]:
        """Recorded space -> how its claims held up in the tenant's reported outcomes.

        The outcome log is append-only, so only outcomes after the last one read are fetched;
        the checks are recomputed when outcomes, spaces or configuration lessons change.
        """
        evidence = self.reaches(session, tenant)
        with self._lock:
            state = self._remeasured.setdefault(tenant, _Remeasured())
            last_id = state.last_id
        fresh: list[Remeasurement] = []
        newest = last_id
        rows = session.execute(
            sa_select(
                col(Outcome.id),
                col(Outcome.scope_chain),
                col(Outcome.lessons),
                col(Outcome.compiled),
                col(Outcome.correct),
                col(Outcome.error),
                col(Outcome.latency_ms),
                col(Retrieval.task),
                col(Outcome.origin),
            )
            .join(Retrieval, col(Retrieval.id) == col(Outcome.retrieval_id))
            .where(col(Outcome.tenant) == tenant, col(Outcome.id) > last_id)
            .order_by(col(Outcome.id))
        )
        for outcome_id, chain, lessons, compiled, correct, error, latency, task, origin in rows:
            newest = max(newest, outcome_id)
            chip = (
                chain[0][len(CHIP_PREFIX) :] if chain and chain[0].startswith(CHIP_PREFIX) else None
            )
            if chip is None or origin in NOT_REMEASURED:
                continue  # a replay of a recording is no re-measurement of it
            measured = latency if is_feasible(compiled, correct, error) else None
            problem = problem_text((task or {}).get("signature"))
            fresh += [Remeasurement(chip, lid, measured, problem) for lid in lessons or []]
        signature = (evidence.signature, newest)
        spaces = evidence.spaces
        with self._lock:
            added = state.last_id == last_id < newest  # another thread may have read them first
            if added:
                state.items.extend(fresh)
                state.last_id = newest
            if state.signature == signature:
                return dict(state.checks)
            if added and state.signature == (evidence.signature, last_id):
                # only new outcomes: their reproductions add to the sums already made
                state.checks = claim_checks(fresh, evidence.lessons, spaces, state.checks)
            else:
                state.checks = claim_checks(state.items, evidence.lessons, spaces)
            state.signature = signature
            return dict(state.checks)

    def claim_rows(
        self, session: Session, tenant: str, op: str | None = None
    ) -> list[ClaimsPublic]:
        """Every recorded run with re-measurements, worst reproduced first."""
        checks = self.claim_checks(session, tenant)
        if not checks:
            return []
        runs = {
            tid: (chip, run_op, source)
            for tid, chip, run_op, source in session.execute(
                sa_select(
                    col(Trajectory.id),
                    col(Trajectory.chip),
                    col(Trajectory.op),
                    col(Trajectory.source),
                ).where(col(Trajectory.id).in_(list(checks)))
            )
        }
        rows = [
            ClaimsPublic(
                trajectory_id=tid,
                chip=runs[tid][0],
                op=runs[tid][1],
                source=runs[tid][2],
                n=check.n,
                reproduced=check.ratio_sum / check.n,
                claimed_reach=check.claimed_reach_sum / check.n,
                measured_reach=check.measured_reach_sum / check.n,
            )
            for tid, check in checks.items()
            if tid in runs and check.n > 0 and (op is None or runs[tid][1] == op)
        ]
        return sorted(rows, key=lambda r: (r.reproduced, -r.n, r.trajectory_id))

    def estimates(
        self,
        session: Session,
        tenant: str,
        lesson_ids: Sequence[str],
        stage: str,
        target: str,
        settings: GeneralisedSettings,
        outcome_weights: Mapping[str, Mapping[str, float]] | None = None,
    ) -> dict[str, ValueEstimate]:
        """Generalised value estimates of the candidates on the target chip; `outcome_weights`:
        per lesson, chip -> the weight of one outcome there (a toolchain's discounts)."""
        evidence = self.reaches(session, tenant)
        stats: dict[str, dict[str, ScopeStats]] = {lid: {} for lid in lesson_ids}
        if lesson_ids:
            # Columns, not ORM rows: a retrieve reads these for every candidate.
            for lesson_id, scope, n, q, sumsq in session.execute(
                sa_select(
                    col(LessonValue.lesson_id),
                    col(LessonValue.scope),
                    col(LessonValue.n),
                    col(LessonValue.q),
                    col(LessonValue.sumsq),
                ).where(
                    col(LessonValue.lesson_id).in_(list(lesson_ids)),
                    col(LessonValue.stage) == stage,
                    col(LessonValue.scope).startswith(CHIP_PREFIX),
                )
            ):
                stats[lesson_id][scope[len(CHIP_PREFIX) :]] = ScopeStats(n, q, sumsq)
        trust: dict[str, float] = {}
        if settings.claim_power > 0.0:
            trust = {
                space: space_trust(check, settings.claim_kappa, settings.claim_power)
                for space, check in self.claim_checks(session, tenant).items()
            }
        inputs = GeneralisedInputs(
            target=target,
            affinity=Affinities(target, evidence.reaches, settings),
            stats=stats,
            outcome_weights=outcome_weights or {},
            reaches=evidence.space_reaches,
            effects=evidence.space_effects,
            space_trust=trust,
            sources={lid: lesson.source_chip for lid, lesson in evidence.lessons.items()},
            pooled=evidence.pooled,
            spaces=tuple(evidence.spaces),
            lessons=evidence.lessons,
        )
        return {lid: generalised_estimate(lid, inputs, settings) for lid in lesson_ids}
