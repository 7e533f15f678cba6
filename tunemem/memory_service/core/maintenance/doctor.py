"""`tunemem doctor`: find, and with `fix` repair, the stored records that the door refuses now
but a store written before it checked them may hold.

What it looks for, per tenant:

- lessons whose hint has a part the suggester cannot read (`ingest.validate.hint_problem`: a
  list or an object where a parameter value goes, a statistic that is not a number). The fix
  keeps the hint's usable parts and drops the others, through the lessons part's own edit (so
  the previous hint is kept as a revision and the index entry follows);
- attempts whose parameter values are not scalars (a list, an object): no search space holds
  such a configuration. The fix deletes the attempt (and counts it out of its run);
- attempts whose latency lies outside 1e-9..1e9 ms (0, 1e-300): the fix clears the latency and
  records the attempt as failing, with a reason.

Reading never fails on such records (the suggester and the performance model skip them and say
so); this is the repair that makes the store say what the door now guarantees.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session, col, select

from tunemem.ingest.validate import hint_problem, latency_problem, scalar_problem
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.tables import Attempt, Lesson, Trajectory

# The hint's parts the suggester reads, each dropped as a whole when unusable.
_HINT_PARTS: tuple[tuple[str, ...], ...] = (
    ("config",),
    ("avoid", "failure_rate"),
    ("param", "value", "effect", "median_speedup"),
)

HintEdit = Callable[[str, "dict[str, Any] | None", str], None]


@dataclass
class DoctorReport:
    """What `doctor` found (and, with fix, repaired): one line per record."""

    lessons: list[str] = field(default_factory=list)
    attempts: list[str] = field(default_factory=list)
    fixed: bool = False

    @property
    def problems(self) -> int:
        return len(self.lessons) + len(self.attempts)


def usable_hint(hint: dict[str, Any]) -> dict[str, Any] | None:
    """The hint without its unusable parts (None when nothing is left)."""
    kept = dict(hint)
    for part in _HINT_PARTS:
        trial = {k: v for k, v in kept.items() if k in part}
        if trial and hint_problem(trial) is not None:
            for key in part:
                kept.pop(key, None)
    if hint_problem(kept) is not None:  # a shape no part explains: keep nothing
        return None
    return kept or None


def _attempt_problem(attempt: Attempt) -> tuple[str, str] | None:
    """(what is wrong, the repair) of one stored attempt, or None."""
    params = attempt.params if isinstance(attempt.params, dict) else None
    if params is None:
        return "params is not an object", "delete"
    for name, value in params.items():
        problem = scalar_problem(value, f"params.{name}")
        if problem:
            return problem, "delete"
    for name in ("latency_ms", "latency_min_ms"):
        problem = latency_problem(name, getattr(attempt, name))
        if problem:
            return problem, "clear"
    return None


class Doctor:
    """Finds and repairs unusable stored records of one tenant (see the module)."""

    def __init__(self, store: Store, edit_hint: HintEdit) -> None:
        self.store = store
        self.edit_hint = edit_hint

    def run(self, tenant: str, fix: bool = False) -> DoctorReport:
        report = DoctorReport(fixed=fix)
        hints: list[tuple[str, dict[str, Any] | None]] = []
        with self.store.write_lock, self.store.session() as session:
            for lesson_id, hint in session.exec(
                select(Lesson.id, Lesson.hint).where(Lesson.tenant == tenant)
            ):
                problem = hint_problem(hint) if hint is not None else None
                if problem:
                    report.lessons.append(f"lesson {lesson_id}: {problem}")
                    hints.append((lesson_id, usable_hint(hint) if isinstance(hint, dict) else None))
            self._attempts(session, tenant, report, fix)
            if fix:
                session.commit()
        if fix:
            for lesson_id, cleaned in hints:
                self.edit_hint(lesson_id, cleaned, tenant)
        return report

    @staticmethod
    def _attempts(session: Session, tenant: str, report: DoctorReport, fix: bool) -> None:
        rows = session.exec(
            select(Attempt, Trajectory)
            .join(Trajectory, col(Trajectory.id) == col(Attempt.trajectory_id))
            .where(Trajectory.tenant == tenant)
            .order_by(col(Attempt.id))
        ).all()
        for attempt, run in rows:
            found = _attempt_problem(attempt)
            if found is None:
                continue
            problem, repair = found
            done = {"delete": "deleted", "clear": "cleared"}[repair] if fix else repair
            report.attempts.append(f"run {run.id} attempt {attempt.index}: {problem} ({done})")
            if not fix:
                continue
            if repair == "delete":
                session.delete(attempt)
                run.n_attempts = max(0, (run.n_attempts or 1) - 1)
                session.add(run)
                continue
            for name in ("latency_ms", "latency_min_ms"):
                if latency_problem(name, getattr(attempt, name)):
                    setattr(attempt, name, None)
            if attempt.latency_ms is None and attempt.error_category is None:
                attempt.correct = False if attempt.compiled else attempt.correct
                attempt.error_category = "other"
                attempt.error = f"{problem}: cleared by tunemem doctor"
            session.add(attempt)
