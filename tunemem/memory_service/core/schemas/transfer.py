"""Response models of the cross-platform and toolchain views (DESIGN section 5): a transferred
lesson's glossary, and the toolchain evidence behind a value. Part of the API schema family
(`memory_service.core.schemas.lessons` uses them); fields may be added, never renamed."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class VersionChangePublic(BaseModel):
    component: str
    evidence: str = Field(description="the version the evidence was gathered under")
    current: str = Field(description="the version the query runs")


class EvidencePublic(BaseModel):
    """Evidence gathered under one set of toolchain versions."""

    versions: dict[str, str]
    n: int = Field(description="outcomes under these versions (0 for the source run)")
    source: bool = Field(description="the run the lesson was distilled from")
    status: Literal["current", "superseded", "unknown"]
    changed: list[VersionChangePublic] = Field(default_factory=list)


class ToolchainBreakdown(BaseModel):
    """How the query's toolchain discounted a lesson's value, and the versions behind it."""

    current: dict[str, str] = Field(description="the toolchain the query named")
    weights: dict[str, float] = Field(
        description="per scope, the weight of one outcome there (< 1 where some are superseded)"
    )
    undiscounted_value: float
    evidence: list[EvidencePublic]
    stale: bool


class GlossaryEntryPublic(BaseModel):
    """A source term of a transferred lesson and its counterpart on the target chip."""

    term: str
    concept: str
    counterpart: str | None = Field(description="None where the target has no counterpart")
    rendered: bool = Field(description="whether rendered_text uses the counterpart")
    note: str | None = Field(None, description="what the target chip's descriptor says")
    caveat: str | None = Field(None, description="where the mapping changes a quantity")
