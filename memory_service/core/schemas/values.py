"""The response model of a lesson's learned value in one context (`sort=value` listings, the
`/ui` lessons page). Part of the API schema family (`memory_service.core.schemas.lessons` uses it);
fields may be added, never renamed."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ContextValue(BaseModel):
    """A lesson's learned value in one context (a chip's scope chain), at one stage."""

    stage: Literal["draft", "refine"]
    chip: str | None = Field(description="the context's chip id; null: the global scope only")
    value: float = Field(description="the shrinkage estimate down the chip's scope chain")
    value_scope: str = Field(description="the scope carrying the most weight")
    n: int = Field(description="outcomes in the context's most specific scope")
    n_total: int = Field(description="outcomes in every scope of the chain")
    ci_low: float
    ci_high: float


class ClaimsPublic(BaseModel):
    """How one recorded run's claims held up when outcomes on its chip re-measured them."""

    trajectory_id: str = Field(description="the recorded run (source of the claims)")
    chip: str = Field(description="the chip the run was recorded under")
    op: str
    source: str = Field(description="where the run came from (file, upload)")
    n: int = Field(description="re-measurements of configurations the run timed")
    reproduced: float = Field(description="mean of min(1, claimed / measured latency)")
    claimed_reach: float = Field(description="mean of the run's optimum / claimed latency")
    measured_reach: float = Field(description="mean of the run's optimum / measured latency")
