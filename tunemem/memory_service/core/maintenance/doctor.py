"""`tunemem doctor`: find, and with `fix` repair, the stored records that the door refuses now
but a store written before it checked them may hold.

What it looks for, per tenant:

- lessons whose hint is no object (a list, text, no JSON at all): the fix clears it by id;
- lessons whose applicability is no object of the API's conditions: the fix rebuilds it from
  the lesson's filter columns (op, chips, backends), which retrieval filters by;
- lessons whose hint has a part the suggester cannot read (`ingest.validate.hint_problem`: a
  list or an object where a parameter value goes, a statistic that is not a number). The fix
  keeps the hint's usable parts and drops the others, through the lessons part's own edit (so
  the previous hint is kept as a revision and the index entry follows);
- attempts whose parameter values are not scalars (a list, an object): no search space holds
  such a configuration. The fix deletes the attempt (and counts it out of its run);
- attempts whose latency lies outside 1e-9..1e9 ms (0, 1e-300) or is no number: the fix clears
  the latency and records the attempt as failing, with a reason;
- outcomes (the log values are computed from, which an export carries) whose credited lessons
  or scope chain are no list of strings, whose latencies (timings included) are no usable
  latency, whose reward is no number in -1..1, or whose stored answer is no object: the fix
  empties the lists, clears the latencies, clamps the reward (0 when it is no number) and
  empties the answer; the tenant's values are then rebuilt from the repaired log (by the
  service).

Every other JSON or number column of those rows that a read sees as empty (`sql.stored_types`)
is named and, with fix, emptied in the store too (`doctor_columns`). Every column it checks is
read as the database holds it, not through the tables' JSON and number types, so a value that
is not JSON (a hand edit) is named with its row instead of failing the whole read; the repairs
are SQL updates by id, which read nothing back.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import ValidationError
from sqlalchemy import Text, delete, type_coerce, update
from sqlmodel import Session, col, select

from tunemem.ingest.validate import hint_problem, latency_problem, scalar_problem
from tunemem.memory_service.core.lessons.rows import filter_applicability, normalise_applicability
from tunemem.memory_service.core.maintenance.doctor_columns import unreadable_columns
from tunemem.memory_service.core.schemas.lessons import Applicability
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.tables import Attempt, Lesson, Outcome, Trajectory

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
    outcomes: list[str] = field(default_factory=list)
    fixed: bool = False

    @property
    def problems(self) -> int:
        return len(self.lessons) + len(self.attempts) + len(self.outcomes)


class Unreadable(ValueError):
    """A stored value that is not JSON."""


def raw(column: Any) -> Any:
    """A column as the database holds it (text for SQLite's JSON), no type processing."""
    return type_coerce(column, Text)


def parsed(value: Any) -> Any:
    """A raw JSON column's value (a driver that parses JSON hands it over parsed)."""
    if not isinstance(value, str | bytes):
        return value
    try:
        return json.loads(value)
    except ValueError as exc:
        raise Unreadable(f"not JSON ({str(value)[:40]!r})") from exc


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


def _number(value: Any) -> Any:
    """A raw number column's value as a number where it is one (SQLite may hold text)."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _attempt_problem(params_raw: Any, latencies: dict[str, Any]) -> tuple[str, str] | None:
    """(what is wrong, the repair) of one stored attempt, or None."""
    try:
        params = parsed(params_raw)
    except Unreadable as exc:
        return f"params: {exc}", "delete"
    if not isinstance(params, dict):
        return "params is not an object", "delete"
    for name, value in params.items():
        problem = scalar_problem(value, f"params.{name}")
        if problem:
            return problem, "delete"
    for name, value in latencies.items():
        problem = latency_problem(name, value)
        if problem:
            return problem, "clear"
    return None


def _outcome_repairs(row: Any) -> tuple[list[str], dict[str, Any]]:
    """What is wrong with one raw outcome row, and the column values that repair it."""
    problems: list[str] = []
    repair: dict[str, Any] = {}
    for name, empty in (("lessons", []), ("scope_chain", []), ("response", {})):
        try:
            value = parsed(getattr(row, name))
        except Unreadable as exc:
            problems.append(f"{name}: {exc}")
            repair[name] = empty
            continue
        kind_ok = (
            isinstance(value, dict)
            if name == "response"
            else isinstance(value, list) and all(isinstance(v, str) for v in value)
        )
        if not kind_ok:
            problems.append(
                f"{name} is not {'an object' if name == 'response' else 'a list of ids'}"
            )
            repair[name] = empty
    try:
        timings = parsed(row.timings_ms)
    except Unreadable as exc:
        timings, problems = None, [*problems, f"timings_ms: {exc}"]
        repair["timings_ms"] = None
    if timings is not None and (
        not isinstance(timings, list)
        or any(t is None or latency_problem("timings_ms", t) for t in timings)
    ):
        problems.append("timings_ms is not a list of latencies")
        repair["timings_ms"] = None
    for name in ("latency_ms", "best_before_ms"):
        problem = latency_problem(name, _number(getattr(row, name)))
        if problem:
            problems.append(problem)
            repair[name] = None
    reward = _number(row.reward)
    if isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward):
        problems.append(f"reward is not a number: {str(reward)[:40]!r}")
        repair["reward"] = 0.0
    elif not -1.0 <= reward <= 1.0:
        problems.append(f"reward {reward:g} is outside -1..1")
        repair["reward"] = max(-1.0, min(1.0, float(reward)))
    return problems, repair


class Doctor:
    """Finds and repairs unusable stored records of one tenant (see the module)."""

    def __init__(self, store: Store, edit_hint: HintEdit) -> None:
        self.store = store
        self.edit_hint = edit_hint

    def run(self, tenant: str, fix: bool = False) -> DoctorReport:
        report = DoctorReport(fixed=fix)
        hints: list[tuple[str, dict[str, Any] | None]] = []
        with self.store.write_lock, self.store.session() as session:
            rows: Sequence[Any] = session.exec(
                select(  # type: ignore[call-overload]
                    Lesson.id,
                    raw(Lesson.hint).label("hint"),
                    raw(Lesson.applicability).label("applicability"),
                    Lesson.op,
                    Lesson.chips,
                    Lesson.backends,
                ).where(Lesson.tenant == tenant)
            ).all()
            for row in rows:
                self._applicability(session, row, report, fix)
                found = self._hint(session, row, report, fix)
                if found is not None:
                    hints.append(found)
            self._attempts(session, tenant, report, fix)
            self._outcomes(session, tenant, report, fix)
            for listed, lines in unreadable_columns(session, tenant, fix).items():
                getattr(report, listed).extend(lines)
            if fix:
                session.commit()
        if fix:
            for lesson_id, cleaned in hints:
                self.edit_hint(lesson_id, cleaned, tenant)
        return report

    @staticmethod
    def _hint(
        session: Session, row: Any, report: DoctorReport, fix: bool
    ) -> tuple[str, dict[str, Any] | None] | None:
        """A hint that is no object is cleared by id (the lesson edit would read it as
        empty); one with unusable parts is returned with the parts the edit is to keep."""
        try:
            hint = parsed(row.hint)
            if hint is not None and not isinstance(hint, dict):
                raise Unreadable("is no object")
        except Unreadable as exc:
            report.lessons.append(f"lesson {row.id}: hint {exc}")
            if fix:
                session.exec(update(Lesson).where(col(Lesson.id) == row.id).values(hint=None))  # type: ignore[call-overload]
            return None
        problem = hint_problem(hint) if hint is not None else None
        if not problem:
            return None
        report.lessons.append(f"lesson {row.id}: {problem}")
        return row.id, usable_hint(cast(dict[str, Any], hint))

    @staticmethod
    def _applicability(session: Session, row: Any, report: DoctorReport, fix: bool) -> None:
        """An applicability that is no object of the API's conditions is rebuilt from the
        lesson's filter columns (its op, chips and backends, which retrieval filters by)."""
        try:
            Applicability.model_validate(parsed(row.applicability))
            return
        except (Unreadable, ValidationError):
            pass
        report.lessons.append(f"lesson {row.id}: applicability is no object of conditions")
        if fix:
            rebuilt = filter_applicability(row.op, row.chips, row.backends)
            session.exec(
                update(Lesson)
                .where(col(Lesson.id) == row.id)
                .values(applicability=normalise_applicability(rebuilt))
            )  # type: ignore[call-overload]

    @staticmethod
    def _attempts(session: Session, tenant: str, report: DoctorReport, fix: bool) -> None:
        rows = session.exec(
            select(  # type: ignore[call-overload]
                Attempt.id,
                Attempt.index,
                Trajectory.id,
                raw(Attempt.params),
                raw(Attempt.latency_ms),
                raw(Attempt.latency_min_ms),
                Attempt.compiled,
                Attempt.error_category,
            )
            .join(Trajectory, col(Trajectory.id) == col(Attempt.trajectory_id))
            .where(Trajectory.tenant == tenant)
            .order_by(col(Attempt.id))
        ).all()
        for attempt_id, index, run_id, params, latency, latency_min, compiled, category in rows:
            latencies = {"latency_ms": _number(latency), "latency_min_ms": _number(latency_min)}
            found = _attempt_problem(params, latencies)
            if found is None:
                continue
            problem, repair = found
            done = {"delete": "deleted", "clear": "cleared"}[repair] if fix else repair
            report.attempts.append(f"run {run_id} attempt {index}: {problem} ({done})")
            if not fix:
                continue
            if repair == "delete":
                session.exec(delete(Attempt).where(col(Attempt.id) == attempt_id))  # type: ignore[call-overload]
                run = session.get(Trajectory, run_id)
                if run is not None:
                    run.n_attempts = max(0, (run.n_attempts or 1) - 1)
                    session.add(run)
                continue
            values: dict[str, Any] = {
                name: None for name, value in latencies.items() if latency_problem(name, value)
            }
            kept = None if "latency_ms" in values else latencies["latency_ms"]
            if kept is None and category is None:
                values.update(error_category="other", error=f"{problem}: cleared by tunemem doctor")
                if compiled:
                    values["correct"] = False
            session.exec(update(Attempt).where(col(Attempt.id) == attempt_id).values(**values))  # type: ignore[call-overload]

    @staticmethod
    def _outcomes(session: Session, tenant: str, report: DoctorReport, fix: bool) -> None:
        rows = session.exec(
            select(  # type: ignore[call-overload]
                Outcome.id,
                raw(Outcome.lessons).label("lessons"),
                raw(Outcome.scope_chain).label("scope_chain"),
                raw(Outcome.response).label("response"),
                raw(Outcome.latency_ms).label("latency_ms"),
                raw(Outcome.best_before_ms).label("best_before_ms"),
                raw(Outcome.timings_ms).label("timings_ms"),
                raw(Outcome.reward).label("reward"),
            )
            .where(Outcome.tenant == tenant)
            .order_by(col(Outcome.id))
        ).all()
        for row in rows:
            problems, repair = _outcome_repairs(row)
            if not problems:
                continue
            outcome_id = row[0]
            done = "repaired" if fix else "repair"
            report.outcomes.append(f"outcome {outcome_id}: {'; '.join(problems)} ({done})")
            if fix:
                session.exec(update(Outcome).where(col(Outcome.id) == outcome_id).values(**repair))  # type: ignore[call-overload]
