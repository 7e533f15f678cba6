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
from collections.abc import Callable
from typing import Any

from sqlmodel import Session, col, select

from tunemem import platforms
from tunemem.memory_service.core.audit.optimum import optimum_matrix
from tunemem.memory_service.core.errors import InvalidInput
from tunemem.memory_service.core.schemas.audit import (
    LessonBriefPublic,
    TransferAuditPublic,
    TransferPairPublic,
    TransferQuery,
)
from tunemem.memory_service.core.sql.store import Store
from tunemem.memory_service.core.sql.tables import Lesson, LessonValue, Trajectory
from tunemem.memory_service.core.values.generalised_inputs import Evidence
from tunemem.memory_service.core.values.toolchain_evidence import scope_values_under
from tunemem.retrieval.toolchain import ToolchainPolicy
from tunemem.retrieval.transfer import (
    ScopeValue,
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


Values = tuple[dict[str, dict[str, ScopeValue]], dict[str, Lesson]]


def _evidence(
    values: dict[str, dict[str, ScopeValue]], neutral: float, min_n: int
) -> tuple[int, int]:
    """How much a stage's values say about transfer: (pairs with a rank correlation, lessons
    observed on two scopes)."""
    pairs = transfer_matrix(values, sorted(values), neutral=neutral, min_n=min_n)
    return (
        sum(1 for p in pairs if p.spearman is not None),
        max((p.n_common for p in pairs), default=0),
    )


def _stage_shown(
    asked: str | None, values_of: Callable[[str], Values], neutral: float, min_n: int
) -> tuple[str, str | None, Values]:
    """The stage to show, why (when it was not asked for), and its values: the one asked for;
    else the stage with evidence (rank correlations first, then lessons observed on two
    scopes), draft when neither has more."""
    if asked is not None:
        return asked, None, values_of(asked)
    draft, refine = values_of("draft"), values_of("refine")
    draft_has, refine_has = (
        _evidence(draft[0], neutral, min_n),
        _evidence(refine[0], neutral, min_n),
    )
    if refine_has > draft_has:
        return (
            "refine",
            (
                "stage refine shown: it holds more evidence of transfer than draft "
                f"({refine_has[0]} pairs with a rank correlation against {draft_has[0]}); "
                "ask for stage draft to see it"
            ),
            refine,
        )
    other = " (refine has none more)" if refine_has == draft_has else ""
    return "draft", f"stage draft shown{other}; ask for stage refine to see it", draft


def _ops(session: Session, tenant: str) -> list[str]:
    """The operator families the store holds runs or lessons of (the page's op selector)."""
    runs = session.exec(select(Trajectory.op).where(Trajectory.tenant == tenant).distinct())
    taught = session.exec(select(Lesson.op).where(Lesson.tenant == tenant).distinct())
    return sorted({op for op in [*runs, *taught] if op})


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
    level, min_n = query.scope_level, query.min_n
    toolchain = query.cut()
    selected = _selected_scopes(level, query.chip_names(), query.backend_names())
    op = query.op.strip().lower() if query.op and query.op.strip() else None
    with store.session() as session:

        def values_of(stage: str) -> tuple[dict[str, dict[str, ScopeValue]], dict[str, Lesson]]:
            if not toolchain:
                return scope_values(session, level, stage, op, tenant)
            return scope_values_under(
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

        stage, stage_note, (values, valued) = _stage_shown(query.stage, values_of, neutral, min_n)
        optimum, config_lessons, spaced = optimum_matrix(session, level, op, tenant)
        claims = evidence.claim_rows(session, tenant, op) if evidence is not None else []
        ops = _ops(session, tenant)
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
            "stage_note": stage_note,
            "op": op,
            "ops": ops,
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
