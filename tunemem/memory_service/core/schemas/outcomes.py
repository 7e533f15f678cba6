"""The outcome report's request and answer (`POST /v1/outcomes`, MCP `report_outcome`, CLI
`tunemem report`). Part of the API schema family in `memory_service.core.schemas`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tunemem.ingest.validate import MAX_LATENCY_MS, MIN_LATENCY_MS
from tunemem.memory_service.core.schemas.inbound import Inbound
from tunemem.memory_service.core.schemas.values import ContextValue

Latency = Annotated[
    float, Field(strict=True, allow_inf_nan=False, ge=MIN_LATENCY_MS, le=MAX_LATENCY_MS)
]


OutcomeOrigin = Literal[
    "measured", "recorded", "replayed", "simulated", "shipped", "hand-entered", "unstated"
]


class OutcomeProvenance(Inbound):
    """How the outcome's numbers were obtained (`ingest.provenance`); absent: unstated."""

    model_config = ConfigDict(extra="forbid")

    origin: OutcomeOrigin = Field(
        "unstated",
        description="measured (timed now on device_reported), recorded, replayed (answered "
        "from a recording), simulated, shipped, hand-entered, or unstated",
    )
    device_reported: str | None = Field(
        None,
        min_length=1,
        max_length=256,
        description="the device name the runtime reported while timing (origin measured only)",
    )

    @model_validator(mode="after")
    def _device_only_when_measured(self) -> OutcomeProvenance:
        if self.device_reported is not None and self.origin != "measured":
            raise ValueError(
                f"device_reported is the device a runtime reported while timing; a "
                f"{self.origin!r} outcome timed nothing on a device (leave it out)"
            )
        return self


class OutcomeIn(Inbound):
    model_config = ConfigDict(extra="forbid")

    compiled: bool
    correct: bool | None = Field(
        None,
        description="did the output match the reference; required when compiled is true, "
        "unless error says how the attempt failed",
    )
    latency_ms: Latency | None = None
    best_before_ms: Latency | None = None
    error: str | None = Field(None, max_length=10_000)
    provenance: OutcomeProvenance | None = Field(
        None, description="how the numbers were obtained; absent: origin unstated"
    )

    @model_validator(mode="after")
    def _result_given(self) -> OutcomeIn:
        # Without it the attempt would count as a failure (reward -1): silent wrong data.
        if self.compiled and self.correct is None and not self.error:
            raise ValueError(
                "say whether the attempt was correct: give correct true or false (an attempt "
                "that did not compile gives compiled false; one that failed another way may "
                "give its error instead)"
            )
        return self


class ReportRequest(Inbound):
    model_config = ConfigDict(extra="forbid")

    retrieval_id: str = Field(min_length=1, max_length=64)
    used: list[str] | None = Field(None, max_length=100)
    outcome: OutcomeIn
    reporter: str | None = Field(None, max_length=128)


class ReportResponse(BaseModel):
    outcome_id: int
    reward: float
    rewards: dict[str, float]
    values: dict[str, ContextValue] = Field(
        description="each credited lesson's value now, in the retrieval's context"
    )
    duplicate: bool = False
