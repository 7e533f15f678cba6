"""The transfer audit (DESIGN section 5): which lessons carry over between chips or backends.

Reads the SQL store: each lesson's observed value per chip scope
(`chip:<id>`) or backend scope (`backend:<b>`) for one stage, and the recorded search spaces
(Trajectory + Attempt rows, e.g. ingested Kernel Tuner caches). For every ordered pair of
distinct scopes it reports the lessons with outcomes on both, their values, the rank
correlation of values, the lessons that helped on the source and hurt on the target, and,
for lessons whose hint carries a `config` distilled from a recorded space on the source, the
fraction of the target's recorded optimum that config reaches on the target's space.

The arithmetic lives in `retrieval.transfer`; this module only gathers plain data.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlmodel import Session, col, select

from tunemem import platforms
from tunemem.memory_service.core.errors import InvalidInput
from tunemem.memory_service.core.schemas.audit import (
    LessonBriefPublic,
    OptimumReachPublic,
    PairOptimumPublic,
    TransferAuditPublic,
    TransferPairPublic,
    TransferQuery,
)
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.tables import Lesson, LessonValue, Trajectory
from tunemem.memory_service.core.values.generalised_inputs import Evidence
from tunemem.memory_service.core.values.recorded_spaces import load_spaces
from tunemem.memory_service.core.values.toolchain_evidence import scope_values_under
from tunemem.retrieval.recorded import RecordedSpace
from tunemem.retrieval.toolchain import ToolchainPolicy
from tunemem.retrieval.transfer import (
    ScopeValue,
    optimum_fraction,
    transfer_matrix,
)

TEXT_CHARS = 240


def _selected_scopes(level: str, chips: list[str], backends: list[str]) -> list[str] | None:
    """Requested scope names normalised through `platforms`, or None for "all observed"."""
    if level == "chip":
        if backends:
            raise InvalidInput(
                "backends= filters the backend level; use chips= with level=chip",
                code="invalid_audit_filter",
            )
        selected: list[str] = []
        for name in chips:
            try:
                chip_id = platforms.resolve(name).id
            except ValueError as exc:
                raise InvalidInput(str(exc), code="unknown_chip") from exc
            if chip_id not in selected:
                selected.append(chip_id)
        return selected or None
    if chips:
        raise InvalidInput(
            "chips= filters the chip level; use backends= with level=backend",
            code="invalid_audit_filter",
        )
    for name in backends:
        if name.lower() not in platforms.BACKENDS:
            raise InvalidInput(
                f"unknown backend {name!r}; valid backends: {', '.join(platforms.BACKENDS)}",
                code="unknown_backend",
            )
    return list(dict.fromkeys(b.lower() for b in backends)) or None


def scope_values(
    session: Session, level: str, stage: str, op: str | None, tenant: str
) -> tuple[dict[str, dict[str, ScopeValue]], dict[str, Lesson]]:
    """Observed values per scope name (`a100`, `cuda`) -> lesson id, and the lesson rows."""
    prefix = f"{level}:"
    conditions: list[Any] = [
        LessonValue.stage == stage,
        col(LessonValue.scope).startswith(prefix),
        LessonValue.n > 0,
        Lesson.tenant == tenant,
    ]
    if op:
        conditions.append(Lesson.op == op.lower())
    rows = session.exec(
        select(LessonValue, Lesson)
        .join(Lesson, col(Lesson.id) == col(LessonValue.lesson_id))
        .where(*conditions)
    ).all()
    values: dict[str, dict[str, ScopeValue]] = defaultdict(dict)
    lessons: dict[str, Lesson] = {}
    for value, lesson in rows:
        values[value.scope[len(prefix) :]][value.lesson_id] = ScopeValue(n=value.n, q=value.q)
        lessons[lesson.id] = lesson
    return dict(values), lessons


def _recorded_spaces(
    session: Session, op: str | None, tenant: str
) -> tuple[list[RecordedSpace], dict[str, str]]:
    """Every stored trajectory with at least one feasible timed attempt, as a search space
    (`values.recorded_spaces`), and each one's backend."""
    conditions = [Trajectory.tenant == tenant]
    if op:
        conditions.append(Trajectory.op == op.lower())
    rows = list(session.exec(select(Trajectory).where(*conditions)))
    loaded = load_spaces(session, [(t.id, t.chip, t.op, t.task) for t in rows])
    spaces = [space for space in loaded.values() if space is not None]
    return spaces, {t.id: t.backend for t in rows}


def _config_lessons(session: Session, op: str | None, tenant: str) -> list[Lesson]:
    conditions = [Lesson.tenant == tenant]
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

    A lesson's source is the chip (or backend) of the recorded space it was distilled from.
    Its configuration is looked up in every recorded space of the target with the same op
    and the same parameter names; across chips of one backend (level backend), spaces of the
    lesson's own chip are left out, since that is no transfer.
    """
    spaces, backend = _recorded_spaces(session, op, tenant)
    by_id = {s.trajectory_id: s for s in spaces}
    lessons = _config_lessons(session, op, tenant)
    reaches: dict[tuple[str, str], list[OptimumReachPublic]] = defaultdict(list)
    used: dict[str, Lesson] = {}
    for lesson in lessons:
        origin = by_id.get(lesson.provenance["trajectory_id"])
        if origin is None:
            continue
        config = lesson.hint["config"]  # type: ignore[index]
        source = origin.chip if level == "chip" else backend[origin.trajectory_id]
        for target_space in spaces:
            target = target_space.chip if level == "chip" else backend[target_space.trajectory_id]
            if target_space.chip == origin.chip:
                continue
            if target_space.op != origin.op or target_space.keys != frozenset(config):
                continue
            fraction, latency = optimum_fraction(config, target_space.space)
            reaches[(source, target)].append(
                OptimumReachPublic(
                    lesson_id=lesson.id,
                    target_trajectory=target_space.trajectory_id,
                    target_chip=target_space.chip,
                    fraction=fraction,
                    latency_ms=latency,
                    optimum_ms=target_space.space.optimum_ms,
                )
            )
            used[lesson.id] = lesson
    matrix = {}
    for pair, items in reaches.items():
        items.sort(key=lambda r: (-r.fraction, r.lesson_id, r.target_trajectory))
        matrix[pair] = PairOptimumPublic(
            n_lessons=len({r.lesson_id for r in items}),
            n_spaces=len({r.target_trajectory for r in items}),
            mean_fraction=sum(r.fraction for r in items) / len(items),
            best_fraction=max(r.fraction for r in items),
            reaches=items,
        )
    seen = {s.chip if level == "chip" else backend[s.trajectory_id] for s in spaces}
    return matrix, used, seen


def _brief(lesson: Lesson, level: str) -> LessonBriefPublic:
    applicability = lesson.applicability or {}
    origins = applicability.get("chips" if level == "chip" else "backends") or []
    config = (lesson.hint or {}).get("config")
    text = lesson.text if len(lesson.text) <= TEXT_CHARS else lesson.text[: TEXT_CHARS - 1] + "…"
    return LessonBriefPublic(
        id=lesson.id,
        kind=lesson.kind,
        text=text,
        op=lesson.op,
        origin=origins[0] if origins else None,
        config=config if isinstance(config, dict) else None,
    )


def transfer_audit(
    store: Store,
    neutral: float,
    query: TransferQuery,
    *,
    tenant: str,
    policy: ToolchainPolicy | None = None,
    alpha: float = 0.3,
    evidence: Evidence | None = None,
) -> TransferAuditPublic:
    """Build the transfer audit of one stage at the chip or the backend level.

    Args:
        store: the SQL store read (nothing is written).
        neutral: the value above which a lesson helped (the service's Q0).
        query: which audit (`TransferQuery`): the level ("chip" pairs `chip:<id>` scopes,
            "backend" `backend:<b>` ones), the chips or backends restricting the scopes
            (default: every scope with outcomes or a recorded search space), the operator
            family, the stage whose values are compared, the outcomes a lesson needs in a
            scope to count as observed there, and the toolchain cut: values from only the
            outcomes gathered under those versions (by `policy`), replayed from the outcome
            log with learning rate `alpha`.
        tenant: whose lessons and runs.
        evidence: where the recorded runs' claims are checked against the outcomes; with it,
            `claims` lists how each re-measured run reproduced (on the selected chips).

    Raises:
        InvalidInput: an unknown chip or backend, or names of the other level.
    """
    level, stage, min_n = query.scope_level, query.stage, query.min_n
    toolchain = query.cut()
    selected = _selected_scopes(level, query.chip_names(), query.backend_names())
    op = query.op.strip().lower() if query.op and query.op.strip() else None
    with store.session() as session:
        if toolchain:
            values, valued = scope_values_under(
                session,
                level,
                stage,
                op,
                tenant,
                toolchain,
                policy or ToolchainPolicy(),
                alpha=alpha,
                q0=neutral,
            )
        else:
            values, valued = scope_values(session, level, stage, op, tenant)
        optimum, config_lessons, spaced = optimum_matrix(session, level, op, tenant)
        claims = evidence.claim_rows(session, tenant, op) if evidence is not None else []
    scopes = selected if selected is not None else sorted(set(values) | spaced)
    pairs = [
        TransferPairPublic.model_validate(
            {**stats.__dict__, "optimum": optimum.get((stats.source, stats.target))}
        )
        for stats in transfer_matrix(values, scopes, neutral=neutral, min_n=min_n)
    ]
    referenced = {c.lesson_id for p in pairs for c in p.common} | {
        r.lesson_id for p in pairs if p.optimum for r in p.optimum.reaches
    }
    rows = {**valued, **config_lessons}
    return TransferAuditPublic.model_validate(
        {
            "level": level,
            "stage": stage,
            "op": op,
            "scopes": scopes,
            "neutral": neutral,
            "min_n": min_n,
            "toolchain": toolchain or None,
            "pairs": pairs,
            "lessons": {lid: _brief(rows[lid], level) for lid in sorted(referenced)},
            "claims": [
                c for c in claims if level != "chip" or selected is None or c.chip in selected
            ],
        }
    )
