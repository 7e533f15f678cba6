"""The transfer audit's public shape, defined once: `memory_service.core.audit.transfer` builds it
directly, and it is the one form of the audit outside the service.

The HTTP route returns it, the remote client validates a server's answer into it, the CLI and
MCP print it and the HTML report renders it, wherever the audit was computed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_service.core.schemas.values import ClaimsPublic


class _FromAudit(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class LessonPairValuePublic(_FromAudit):
    lesson_id: str
    source_q: float = Field(description="observed value (Q) on the source")
    source_n: int = Field(description="outcomes on the source")
    target_q: float
    target_n: int


class OptimumReachPublic(_FromAudit):
    lesson_id: str
    target_trajectory: str
    target_chip: str
    fraction: float = Field(description="target optimum latency / this config's latency there")
    latency_ms: float | None = Field(description="the config on the target; null: infeasible")
    optimum_ms: float | None


class PairOptimumPublic(_FromAudit):
    n_lessons: int
    n_spaces: int = Field(description="recorded target search spaces the configs were tried on")
    mean_fraction: float
    best_fraction: float
    reaches: list[OptimumReachPublic]


class TransferPairPublic(_FromAudit):
    source: str
    target: str
    n_common: int = Field(description="lessons with outcomes on both")
    spearman: float | None = Field(description="rank correlation of values; null: undefined")
    sign_agreement: float | None = Field(description="share of common lessons both judge alike")
    mean_source: float | None
    mean_target: float | None
    common: list[LessonPairValuePublic]
    helped_source_hurt_target: list[LessonPairValuePublic]
    helped_both: list[str]
    optimum: PairOptimumPublic | None


class LessonBriefPublic(_FromAudit):
    id: str
    kind: str
    text: str
    op: str
    origin: str | None = Field(description="the chip or backend the lesson was learned on")
    config: dict[str, Any] | None


class TransferAuditPublic(_FromAudit):
    """The transfer matrix: every ordered pair of scopes, and the lessons it mentions."""

    level: Literal["chip", "backend"]
    stage: Literal["draft", "refine"]
    op: str | None
    scopes: list[str]
    neutral: float = Field(description="the value above which a lesson helped (Q0)")
    min_n: int
    toolchain: dict[str, str] | None = Field(
        None, description="the cut: values from outcomes under these versions only"
    )
    pairs: list[TransferPairPublic]
    lessons: dict[str, LessonBriefPublic]
    claims: list[ClaimsPublic] = Field(
        default_factory=list,
        description="per recorded run re-measured by outcomes on its chip: claimed reach against"
        " measured, worst reproduced first",
    )

    def pair(self, source: str, target: str) -> TransferPairPublic:
        for item in self.pairs:
            if item.source == source and item.target == target:
                return item
        raise KeyError(f"no pair {source} -> {target} in the audit")
