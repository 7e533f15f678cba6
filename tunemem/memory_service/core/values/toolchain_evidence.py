"""Toolchain evidence, a part of the service (DESIGN section 5, staleness).

Each outcome is gathered under the toolchain its retrieval's context named; `LessonEvidence`
counts outcomes per (lesson, stage, scope, toolchain), written with every report and rebuilt
from the outcome log by `values rebuild` (the `ToolchainEvidence` projection,
`values.projections`). A lesson's source run dates it too: its provenance
holds the toolchain of the trajectory it was distilled from (older stores: looked up there).
The arithmetic (status, discount, staleness) lives in `retrieval.toolchain`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from tunemem.ingest.records import is_feasible
from tunemem.memory_service.core.schemas.learning import RetrievedLesson, RetrieveRequest
from tunemem.memory_service.core.schemas.transfer import (
    EvidencePublic,
    ToolchainBreakdown,
    VersionChangePublic,
)
from tunemem.memory_service.core.sql.tables import (
    Lesson,
    LessonEvidence,
    LessonValue,
    Outcome,
    Retrieval,
    Trajectory,
)
from tunemem.retrieval.credit import lesson_rewards
from tunemem.retrieval.ranking import RankingSettings
from tunemem.retrieval.timings import summarise, update_weight
from tunemem.retrieval.toolchain import (
    Staleness,
    ToolchainEvidence,
    ToolchainPolicy,
    compare,
    scope_weights,
    staleness,
)
from tunemem.retrieval.transfer import ScopeValue
from tunemem.retrieval.values import ScopeStats, ValueEstimate, update_stats, value_estimate

GLOBAL = "global"
CHIP_PREFIX = "chip:"


def toolchain_key(versions: Mapping[str, Any]) -> str:
    """Canonical JSON of a toolchain: the same versions always give the same key."""
    return json.dumps({str(k): str(v) for k, v in versions.items()}, sort_keys=True)


def context_toolchain(context: Mapping[str, Any] | None) -> dict[str, str]:
    """The toolchain a stored retrieval context named ({} when none)."""
    raw = (context or {}).get("toolchain") or {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def record_evidence(
    session: Session,
    lesson_ids: Iterable[str],
    stage: str,
    scopes: list[str],
    context: Mapping[str, Any] | None,
    at: datetime,
) -> None:
    """Count one outcome under the toolchain of its retrieval's stored `context` for each
    credited lesson in every scope (nothing when the context named no toolchain)."""
    versions = context_toolchain(context)
    if not versions:
        return
    key = toolchain_key(versions)
    for lesson_id in sorted(set(lesson_ids)):  # the same lock order as the value rows
        for scope in sorted(scopes):
            row = session.get(
                LessonEvidence, (lesson_id, stage, scope, key), with_for_update=True
            ) or LessonEvidence(
                lesson_id=lesson_id, stage=stage, scope=scope, toolchain=key, versions=versions
            )
            row.n, row.updated_at = row.n + 1, at
            session.add(row)


def retrieval_contexts(session: Session, retrieval_ids: Iterable[str]) -> dict[str, Any]:
    """The stored context of each retrieval."""
    ids = list(set(retrieval_ids))
    found: dict[str, Any] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        for rid, context in session.exec(
            select(Retrieval.id, Retrieval.context).where(col(Retrieval.id).in_(chunk))
        ):
            found[rid] = context
    return found


def source_toolchains(session: Session, lessons: Iterable[Lesson]) -> dict[str, dict[str, str]]:
    """Per lesson, the toolchain of the run it was distilled from (absent when unrecorded)."""
    found: dict[str, dict[str, str]] = {}
    by_trajectory: dict[str, list[str]] = defaultdict(list)
    for lesson in lessons:
        provenance = lesson.provenance or {}
        if isinstance(provenance.get("toolchain"), dict) and provenance["toolchain"]:
            found[lesson.id] = {str(k): str(v) for k, v in provenance["toolchain"].items()}
        elif provenance.get("trajectory_id"):
            by_trajectory[str(provenance["trajectory_id"])].append(lesson.id)
    if by_trajectory:
        for tid, context in session.exec(
            select(Trajectory.id, Trajectory.context).where(
                col(Trajectory.id).in_(list(by_trajectory))
            )
        ):
            versions = context_toolchain(context)
            for lesson_id in by_trajectory[tid] if versions else []:
                found[lesson_id] = versions
    return found


def evidence_pieces(
    source: dict[str, str] | None, rows: Iterable[LessonEvidence], n_all: int
) -> list[ToolchainEvidence]:
    """The evidence behind one value: the source run, outcomes per toolchain, and the outcomes
    whose context named none."""
    pieces = [ToolchainEvidence(source, 0, source=True)] if source else []
    by_key: dict[str, tuple[dict[str, str], int]] = {}
    for row in rows:
        versions, n = by_key.get(row.toolchain, (dict(row.versions), 0))
        by_key[row.toolchain] = (versions, n + row.n)
    pieces += [ToolchainEvidence(v, n) for v, n in by_key.values()]
    unrecorded = n_all - sum(n for _, n in by_key.values())
    if unrecorded > 0:
        pieces.append(ToolchainEvidence({}, unrecorded))
    return pieces


def evidence_public(state: Staleness) -> list[EvidencePublic]:
    return [
        EvidencePublic(
            versions=view.versions,
            n=view.n,
            source=view.source,
            status=view.status,
            changed=[VersionChangePublic(**change.__dict__) for change in view.changed],
        )
        for view in state.evidence
    ]


class QueryToolchains:
    """The toolchain evidence of a query's candidate lessons: their values discounted for the
    query's toolchain, and the versions behind each."""

    def __init__(
        self,
        session: Session,
        lesson_ids: list[str],
        stage: str,
        chain: list[str],
        current: Mapping[str, str],
        backend: str | None,
        policy: ToolchainPolicy,
    ):
        self.lesson_ids, self.chain, self.stage = lesson_ids, chain, stage
        self.current, self.backend, self.policy = dict(current), backend, policy
        self.rows: dict[str, dict[str, list[LessonEvidence]]] = defaultdict(
            lambda: defaultdict(list)
        )
        self.stats: dict[str, dict[str, ScopeStats]] = {lid: {} for lid in lesson_ids}
        self.sources: dict[str, dict[str, str]] = {}
        if not lesson_ids:
            return
        for row in session.exec(
            select(LessonEvidence).where(
                col(LessonEvidence.lesson_id).in_(lesson_ids),
                LessonEvidence.stage == stage,
                col(LessonEvidence.scope).in_(chain),
            )
        ):
            self.rows[row.lesson_id][row.scope].append(row)
        for value in session.exec(
            select(LessonValue).where(
                col(LessonValue.lesson_id).in_(lesson_ids),
                LessonValue.stage == stage,
                col(LessonValue.scope).in_(chain),
            )
        ):
            self.stats[value.lesson_id][value.scope] = ScopeStats(value.n, value.q, value.sumsq)
        lessons = session.exec(select(Lesson).where(col(Lesson.id).in_(lesson_ids))).all()
        self.sources = source_toolchains(session, lessons)

    @classmethod
    def for_query(
        cls,
        session: Session,
        lesson_ids: list[str],
        request: RetrieveRequest,
        chain: list[str],
        backend: str | None,
        policy: ToolchainPolicy,
    ) -> QueryToolchains | None:
        """The evidence of the candidates, or None when the request names no toolchain."""
        if not request.context.toolchain:
            return None
        return cls(
            session, lesson_ids, request.stage, chain, request.context.toolchain, backend, policy
        )

    def weights(self, lesson_id: str) -> dict[str, float]:
        """Per scope, the weight of one of the lesson's outcomes there."""
        by_scope = {
            scope: evidence_pieces(None, self.rows[lesson_id].get(scope, []), stats.n)
            for scope, stats in self.stats[lesson_id].items()
        }
        return scope_weights(by_scope, self.current, self.backend, self.policy)

    def chip_weights(self, session: Session) -> dict[str, dict[str, float]]:
        """Per lesson, chip -> the weight of one of its outcomes on that chip (the generalised
        value's own and neighbour terms; chips whose outcomes are all current are left out)."""
        rows: dict[str, dict[str, list[LessonEvidence]]] = defaultdict(lambda: defaultdict(list))
        counts: dict[str, dict[str, int]] = defaultdict(dict)
        if not self.lesson_ids:
            return {}
        for row in session.exec(
            select(LessonEvidence).where(
                col(LessonEvidence.lesson_id).in_(self.lesson_ids),
                LessonEvidence.stage == self.stage,
                col(LessonEvidence.scope).startswith(CHIP_PREFIX),
            )
        ):
            rows[row.lesson_id][row.scope].append(row)
        for value in session.exec(
            select(LessonValue).where(
                col(LessonValue.lesson_id).in_(self.lesson_ids),
                LessonValue.stage == self.stage,
                col(LessonValue.scope).startswith(CHIP_PREFIX),
            )
        ):
            counts[value.lesson_id][value.scope] = value.n
        out = {}
        for lid, by_scope in counts.items():
            pieces = {
                s: evidence_pieces(None, rows[lid].get(s, []), n) for s, n in by_scope.items()
            }
            weights = scope_weights(pieces, self.current, self.backend, self.policy)
            out[lid] = {scope[len(CHIP_PREFIX) :]: w for scope, w in weights.items()}
        return out

    def estimates(
        self, ranking: RankingSettings
    ) -> tuple[dict[str, ValueEstimate], dict[str, float]]:
        """Each candidate's chain value with superseded evidence discounted (DESIGN section
        5), and its value without the discount."""
        estimates, undiscounted = {}, {}
        q0, kappa, backoff = ranking.q0, ranking.kappa, ranking.backoff
        for lid in self.lesson_ids:
            stats = self.stats[lid]
            plain = value_estimate(self.chain, stats, q0=q0, kappa=kappa, backoff=backoff)
            undiscounted[lid] = plain.value
            estimates[lid] = value_estimate(
                self.chain,
                stats,
                q0=q0,
                kappa=kappa,
                backoff=backoff,
                evidence_weight=self.weights(lid),
            )
        return estimates, undiscounted

    def breakdown(self, lesson_id: str, undiscounted: float) -> ToolchainBreakdown:
        """The discount, the versions behind the lesson's value (`undiscounted`: before the
        discount), and whether it is stale."""
        global_stats = self.stats[lesson_id].get(GLOBAL)
        pieces = evidence_pieces(
            self.sources.get(lesson_id),
            self.rows[lesson_id].get(GLOBAL, []),
            global_stats.n if global_stats else 0,
        )
        state = staleness(pieces, self.current, self.backend, self.policy)
        return ToolchainBreakdown(
            current=self.current,
            weights=self.weights(lesson_id),
            undiscounted_value=undiscounted,
            evidence=evidence_public(state),
            stale=state.stale,
        )

    def annotate(
        self, lessons: list[RetrievedLesson], undiscounted: Mapping[str, float]
    ) -> list[RetrievedLesson]:
        """The retrieved lessons with their toolchain breakdown (`undiscounted`: lesson ->
        its value before the discount) and stale flag."""
        annotated = []
        for lesson in lessons:
            view = self.breakdown(lesson.id, undiscounted.get(lesson.id, 0.0))
            breakdown = lesson.breakdown.model_copy(update={"toolchain": view})
            annotated.append(
                lesson.model_copy(update={"breakdown": breakdown, "stale": view.stale})
            )
        return annotated


def scope_values_under(
    session: Session,
    level: str,
    stage: str,
    op: str | None,
    tenant: str,
    toolchain: Mapping[str, str],
    policy: ToolchainPolicy,
    *,
    alpha: float,
    q0: float,
) -> tuple[dict[str, dict[str, ScopeValue]], dict[str, Lesson]]:
    """The transfer audit's values per scope name, from only the outcomes gathered under
    `toolchain` (current by the policy, on each outcome's backend; outcomes whose context named
    no toolchain are left out): the outcome log replayed with its recorded rewards."""
    prefix = f"{level}:"
    outcomes = session.exec(
        select(Outcome)
        .where(Outcome.tenant == tenant, Outcome.stage == stage)
        .order_by(col(Outcome.id))
    ).all()
    contexts = retrieval_contexts(session, (o.retrieval_id for o in outcomes))
    stats: dict[str, dict[str, ScopeStats]] = defaultdict(dict)
    for outcome in outcomes:
        context = contexts.get(outcome.retrieval_id) or {}
        versions = context_toolchain(context)
        if compare(versions, toolchain, context.get("backend"), policy).status != "current":
            continue
        rewards = lesson_rewards(set(outcome.lessons), outcome.credit or {}, outcome.reward)
        timing = summarise(
            outcome.timings_ms, outcome.latency_ms, outcome.latency_spread_ms, outcome.repetitions
        )
        feasible = is_feasible(outcome.compiled, outcome.correct, outcome.error)
        step = alpha * update_weight(outcome.stage, feasible, timing)
        for scope in outcome.scope_chain:
            if not scope.startswith(prefix):
                continue
            for lesson_id, reward in rewards.items():
                before = stats[scope[len(prefix) :]].get(lesson_id)
                stats[scope[len(prefix) :]][lesson_id] = update_stats(before, reward, step, q0)
    ids = sorted({lid for by_lesson in stats.values() for lid in by_lesson})
    conditions: list[Any] = [col(Lesson.id).in_(ids), Lesson.tenant == tenant]
    if op:
        conditions.append(Lesson.op == op.lower())
    lessons = {row.id: row for row in session.exec(select(Lesson).where(*conditions))}
    values = {
        scope: {lid: ScopeValue(s.n, s.q) for lid, s in by_lesson.items() if lid in lessons}
        for scope, by_lesson in stats.items()
    }
    return {scope: found for scope, found in values.items() if found}, lessons
