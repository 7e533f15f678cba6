"""Lessons ranked by what the memory learned: their value in one context, highest or lowest
first (`GET /v1/lessons?sort=value&chip=...`, `tunemem lessons top`, the `/ui` lessons page).

A lesson's value in a context is the estimate retrieval ranks by in that context
(`memory_service.core.values.estimates`: the generalised value for a known chip, else the shrinkage
estimate down the chip's scope chain), with its 95% interval, so this listing, a retrieve and
a report show one value per lesson. Only lessons with at least one outcome somewhere in the
chain are ranked: an untried lesson sits at the prior and says nothing about what was learned.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlmodel import Session, col, select

from tunemem import platforms
from tunemem.memory_service.core.errors import InvalidInput
from tunemem.memory_service.core.lessons import rows as lesson_rows
from tunemem.memory_service.core.schemas.lessons import (
    LessonFilter,
    LessonList,
    LessonPublic,
    ValuePublic,
)
from tunemem.memory_service.core.schemas.values import ContextValue
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.core.sql.tables import Lesson, LessonEvidence, LessonValue
from tunemem.memory_service.core.values.estimates import (
    context_value,
    estimator_of,
    value_estimates,
)
from tunemem.memory_service.core.values.generalised_inputs import Evidence
from tunemem.memory_service.core.values.toolchain_evidence import (
    GLOBAL,
    evidence_pieces,
    evidence_public,
    source_toolchains,
)
from tunemem.retrieval.toolchain import ToolchainPolicy, newest_versions, parse_toolchain, staleness
from tunemem.retrieval.values import ScopeStats


def context_chain(chip: str | None) -> tuple[str | None, list[str]]:
    """The context's chip id and scope chain; without a chip, the global scope alone."""
    if not chip:
        return None, ["global"]
    try:
        resolved = platforms.resolve(chip)
    except ValueError as exc:  # UnknownChipError included
        raise InvalidInput(str(exc), code="unknown_chip") from exc
    return (resolved.id if resolved.known else None), platforms.scope_chain(resolved)


def valued_lessons(
    session: Session,
    where: LessonFilter,
    conditions: list[Any],
    settings: Settings,
    evidence: Evidence,
    tenant: str,
) -> LessonList:
    """The lessons matching `conditions` (every filter but the chip), ranked by their value
    in the context of `where.chip` at `where.stage`; a page of them and the count ranked."""
    chip_id, chain = context_chain(where.chip)
    stats: dict[str, dict[str, ScopeStats]] = defaultdict(dict)
    rows: dict[str, Lesson] = {}
    for value_row, lesson in session.exec(
        select(LessonValue, Lesson)
        .join(Lesson, col(Lesson.id) == col(LessonValue.lesson_id))
        .where(*conditions, LessonValue.stage == where.stage, col(LessonValue.scope).in_(chain))
    ):
        stats[lesson.id][value_row.scope] = ScopeStats(value_row.n, value_row.q, value_row.sumsq)
        rows[lesson.id] = lesson
    tried = [lid for lid, observed in stats.items() if sum(s.n for s in observed.values()) > 0]
    estimates = value_estimates(
        evidence, session, tenant, tried, where.stage, chip_id, chain, settings.ranking(), None
    ).ranking
    which = estimator_of(settings.ranking(), chip_id)
    ranked = [(lesson_id, estimates[lesson_id]) for lesson_id in tried]
    sign = -1.0 if where.sort == "value" else 1.0
    ranked.sort(key=lambda item: (sign * item[1].value, -item[1].n_total, item[0]))
    page = ranked[where.offset : where.offset + where.limit]
    data = []
    for lesson_id, estimate in page:
        public = lesson_rows.to_public(rows[lesson_id])
        public.value = context_value(estimate, where.stage, chip_id, which)
        data.append(public)
    return LessonList(data=data, count=len(ranked))


def in_context(
    session: Session,
    lesson_id: str,
    values: list[ValuePublic],
    settings: Settings,
    evidence: Evidence,
    tenant: str,
) -> list[ContextValue]:
    """A lesson's estimate per stage in the global context and in each chip's context where
    it has outcomes: what a retrieve, a report and a valued listing there show."""
    ranking = settings.ranking()
    out = []
    for stage in sorted({v.stage for v in values if v.n > 0}):
        chips = sorted(
            v.scope.removeprefix("chip:")
            for v in values
            if v.stage == stage and v.n > 0 and v.scope.startswith("chip:")
        )
        for chip in [None, *chips]:
            try:
                chip_id, chain = context_chain(chip)
            except InvalidInput:  # a chip this version no longer knows: no context to show
                continue
            estimate = value_estimates(
                evidence, session, tenant, [lesson_id], stage, chip_id, chain, ranking, None
            ).ranking[lesson_id]
            out.append(context_value(estimate, stage, chip_id, estimator_of(ranking, chip_id)))
    return out


def stale_page(
    session: Session, rows: list[Lesson], where: LessonFilter, policy: ToolchainPolicy
) -> LessonList:
    """The stale lessons among `rows` (a filtered listing, in order), paged as `where` asks.

    Each lesson is compared on `where.backend` if given, else on its own first backend (the
    components of every backend when it names none), with the toolchain `where.toolchain`
    names, else the newest version of each component that any evidence recorded.
    """
    ids = [row.id for row in rows]
    sources = source_toolchains(session, rows)
    evidence: dict[str, list[LessonEvidence]] = defaultdict(list)
    n_all: dict[str, int] = defaultdict(int)
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        for found in session.exec(
            select(LessonEvidence).where(
                col(LessonEvidence.lesson_id).in_(chunk), LessonEvidence.scope == GLOBAL
            )
        ):
            evidence[found.lesson_id].append(found)
        for lid, n in session.exec(
            select(LessonValue.lesson_id, LessonValue.n).where(
                col(LessonValue.lesson_id).in_(chunk), LessonValue.scope == GLOBAL
            )
        ):
            n_all[lid] += n
    current = parse_toolchain(where.toolchain) or newest_versions(
        [*sources.values(), *(e.versions for pieces in evidence.values() for e in pieces)]
    )
    stale: list[LessonPublic] = []
    for row in rows:
        backends = row.applicability.get("backends") or []
        backend = where.backend.lower() if where.backend else (backends[0] if backends else None)
        pieces = evidence_pieces(
            sources.get(row.id), evidence.get(row.id, []), n_all.get(row.id, 0)
        )
        state = staleness(pieces, current, backend, policy)
        if state.stale:
            stale.append(
                lesson_rows.to_public(row).model_copy(update={"evidence": evidence_public(state)})
            )
    page = stale[where.offset : where.offset + where.limit]
    return LessonList(data=page, count=len(stale), toolchain=current)
