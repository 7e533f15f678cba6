"""Which value estimate ranks a lesson in a context: the one a retrieve ranks by and a report
answers with, so that every door (HTTP, CLI, MCP, the agent) shows one value per lesson and
context, named the same way."""

from __future__ import annotations

from typing import NamedTuple

from sqlmodel import Session

from tunemem.memory_service.core.schemas.values import ContextValue, Estimator
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.core.sql.tables import Retrieval
from tunemem.memory_service.core.values.generalised_inputs import Evidence
from tunemem.memory_service.core.values.lesson_values import value_stats
from tunemem.memory_service.core.values.toolchain_evidence import QueryToolchains
from tunemem.retrieval.knobs import KNOBS
from tunemem.retrieval.ranking import RankingSettings
from tunemem.retrieval.values import ValueEstimate, value_estimate


def estimator_of(ranking: RankingSettings, chip: str | None) -> Estimator:
    """Which estimate ranks lessons in a context: the generalised one needs a known chip."""
    return "generalised" if ranking.values == "generalised" and chip else "chain"


def context_value(
    estimate: ValueEstimate, stage: str, chip: str | None, estimator: Estimator
) -> ContextValue:
    """The public form of one estimate, the same at every door that shows a value."""
    return ContextValue(
        stage=stage,  # type: ignore[arg-type]  # a Stage, checked at the door
        chip=chip,
        estimator=estimator,
        value=estimate.value,
        value_scope=estimate.scope,
        n=estimate.n_local,
        n_total=estimate.n_total,
        ci_low=estimate.ci_low,
        ci_high=estimate.ci_high,
        terms=dict(estimate.weights),
    )


def chain_estimates(
    session: Session,
    lesson_ids: list[str],
    stage: str,
    chain: list[str],
    ranking: RankingSettings,
) -> dict[str, ValueEstimate]:
    """Each lesson's own outcomes down the context's scope chain."""
    stats = value_stats(session, lesson_ids, stage, chain)
    return {
        lid: value_estimate(chain, s, q0=ranking.q0, kappa=ranking.kappa, backoff=ranking.backoff)
        for lid, s in stats.items()
    }


class Estimates(NamedTuple):
    """The estimates of one context: the one that ranks each lesson, and, with a toolchain
    named, each lesson's value before superseded outcomes were discounted (else empty)."""

    ranking: dict[str, ValueEstimate]
    undiscounted: dict[str, float]


def value_estimates(
    evidence: Evidence,
    session: Session,
    tenant: str,
    lesson_ids: list[str],
    stage: str,
    chip: str | None,
    chain: list[str],
    ranking: RankingSettings,
    toolchains: QueryToolchains | None,
) -> Estimates:
    """The estimate that ranks each lesson in this context.

    Generalised values need a known chip; with a toolchain named, outcomes under superseded
    versions count less in whichever estimate ranks (the generalised one's own and neighbour
    outcomes, the chain's scopes), and the undiscounted values come with them.
    """
    if estimator_of(ranking, chip) == "generalised" and chip:
        weights = toolchains.chip_weights(session) if toolchains else None
        found = evidence.estimates(
            session, tenant, lesson_ids, stage, chip, ranking.generalised, weights
        )
        if not toolchains:
            return Estimates(found, {})
        plain = found
        if weights and any(weights.values()):
            plain = evidence.estimates(
                session, tenant, lesson_ids, stage, chip, ranking.generalised
            )
        return Estimates(found, {lid: e.value for lid, e in plain.items()})
    if toolchains:
        return Estimates(*toolchains.estimates(ranking))
    return Estimates(chain_estimates(session, lesson_ids, stage, chain, ranking), {})


def ranking_of(settings: Settings, retrieval: Retrieval) -> RankingSettings:
    """The ranking settings a retrieval was made with (as its response echoed them)."""
    echoed = retrieval.settings or {}
    return settings.ranking(**{k: v for k, v in echoed.items() if k in KNOBS})
