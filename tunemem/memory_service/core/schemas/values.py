"""The response model of a lesson's learned value in one context (`sort=value` listings, the
`/ui` lessons page). Part of the API schema family (`memory_service.core.schemas.lessons` uses it);
fields may be added, never renamed."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Estimator = Literal["generalised", "chain"]


class ContextValue(BaseModel):
    """A lesson's learned value in one context (a chip's scope chain), at one stage: the one
    estimate that ranks it there, as retrieve, report, the valued listing and the lesson show."""

    stage: Literal["draft", "refine"]
    chip: str | None = Field(description="the context's chip id; null: the global scope only")
    estimator: Estimator = Field(
        description="generalised (own outcomes, other chips' recorded reaches and outcomes, "
        "the source chip's record) or chain (own outcomes down the scope chain)"
    )
    value: float = Field(description="the estimate, in the reward range [-1, 1]")
    value_scope: str = Field(description="the term carrying the most weight")
    n: int = Field(description="outcomes in the context's most specific scope")
    n_total: int = Field(description="outcomes in every scope of the chain")
    ci_low: float = Field(description="95% interval, clipped to the reward range")
    ci_high: float
    terms: dict[str, float] = Field(
        default_factory=dict, description="share of the estimate's weight per term"
    )


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
