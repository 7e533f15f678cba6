"""The transfer audit's query and public shape, each defined once.

`TransferQuery` is the one value every door builds (the HTTP route from its query string, the
remote client into one, MCP from its flat arguments, the CLI from its options) and the service
takes, so its defaults and bounds are written here only. `TransferAuditPublic` is what
`memory_service.core.audit.transfer` builds, and the one form of the audit outside the service:
the HTTP route returns it, the remote client validates a server's answer into it, the CLI and
MCP print it and the HTML report renders it, wherever the audit was computed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from tunemem.memory_service.core.schemas.inbound import Inbound
from tunemem.memory_service.core.schemas.lessons import Stage
from tunemem.memory_service.core.schemas.values import ClaimsPublic
from tunemem.retrieval.toolchain import parse_toolchain

AuditLevel = Literal["chip", "backend"]


def _names(raw: list[str]) -> list[str]:
    """Names given as a list, comma lists or both, stripped, empty ones dropped."""
    return [name.strip() for part in raw for name in part.split(",") if name.strip()]


class TransferQuery(Inbound):
    """Which transfer audit to build: one query value taken by every door."""

    level: AuditLevel | None = Field(
        None,
        description="compare chips or backends; default: backend when only backends are named,"
        " else chip",
    )
    chips: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="chips to compare at level chip (names or comma lists); default every chip"
        " observed",
    )
    backends: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="backends to compare at level backend; default every backend observed",
    )
    op: str | None = Field(None, max_length=128, description="only this operator family")
    stage: Stage | None = Field(
        None,
        description="whose values are compared; default: the stage with evidence of transfer"
        " (rank correlations, then lessons observed on two scopes), draft when neither has more",
    )
    min_n: int = Field(
        1, ge=1, le=1_000_000, description="outcomes a lesson needs in a scope to count there"
    )
    toolchain: list[str] = Field(
        default_factory=list,
        max_length=16,
        description="cut by toolchain: component=version (repeatable), e.g. triton=3.6; values"
        " from only the outcomes gathered under these versions",
    )

    @field_validator("chips", "backends", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("toolchain", mode="before")
    @classmethod
    def _pairs(cls, value: Any) -> Any:
        if isinstance(value, Mapping):  # {"triton": "3.6"}, as retrieve's context takes it
            value = [f"{component}={version}" for component, version in value.items()]
        elif isinstance(value, str):
            value = [value]
        if isinstance(value, list) and all(isinstance(pair, str) for pair in value):
            try:
                parse_toolchain(value)
            except ValueError as exc:
                # Its own error type, so the HTTP door answers `invalid_toolchain` for it.
                raise PydanticCustomError("invalid_toolchain", str(exc)) from exc
        return value

    @property
    def scope_level(self) -> AuditLevel:
        """The level compared: as given, else backend when only backends are named."""
        if self.level is not None:
            return self.level
        return "backend" if self.backends and not self.chips else "chip"

    def chip_names(self) -> list[str]:
        return _names(self.chips)

    def backend_names(self) -> list[str]:
        return _names(self.backends)

    def cut(self) -> dict[str, str]:
        """The toolchain cut as {component: version}; empty: every outcome counts."""
        return parse_toolchain(self.toolchain)

    def as_params(self) -> dict[str, Any]:
        """The query as HTTP query parameters (lists repeat their key), defaults left out."""
        return self.model_dump(exclude_defaults=True)


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
    target_trajectory: str = Field(description="the first target space that measured it")
    target_chip: str
    fraction: float = Field(
        description="the target's optimum latency / this config's latency there, the mean over"
        " the spaces that measured it (0: it failed there)"
    )
    latency_ms: float | None = Field(description="the config on the target; null: it failed")
    optimum_ms: float | None = Field(
        description="the complete recording's optimum, or the partial run's own best"
    )
    coverage: Literal["complete", "partial"] = Field(
        "complete",
        description="complete: over whole recorded spaces; partial: no complete recording holds"
        " it, over the partial runs that timed it (each run's own best)",
    )
    origin: str = Field("unstated", description="how the target space's numbers were obtained")
    n_spaces: int = Field(1, description="target spaces that measured this configuration")


class PairOptimumPublic(_FromAudit):
    n_lessons: int = Field(description="configuration lessons measured on the target")
    n_spaces: int = Field(description="target search spaces those were measured on")
    mean_fraction: float | None = Field(description="null: no lesson measured on the target")
    best_fraction: float | None
    reaches: list[OptimumReachPublic] = Field(description="one per lesson")
    not_measured: list[str] = Field(
        default_factory=list,
        description="configuration lessons that no target space measured: not measured, which"
        " is not infeasible",
    )


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
    stage_note: str | None = Field(
        None, description="why this stage is shown, when the query named none"
    )
    op: str | None
    ops: list[str] = Field(
        default_factory=list, description="the operator families the store holds"
    )
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
