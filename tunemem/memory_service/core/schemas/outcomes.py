"""The outcome report's request and answer (`POST /v1/outcomes`, MCP `report_outcome`, CLI
`tunemem report`). Part of the API schema family in `memory_service.core.schemas`."""

from __future__ import annotations

import math
import statistics
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from tunemem.ingest.validate import MAX_LATENCY_MS, MIN_LATENCY_MS
from tunemem.memory_service.core.schemas.inbound import Inbound
from tunemem.memory_service.core.schemas.values import ContextValue
from tunemem.retrieval.credit import Verdict

Latency = Annotated[
    float, Field(strict=True, allow_inf_nan=False, ge=MIN_LATENCY_MS, le=MAX_LATENCY_MS)
]
MAX_TIMINGS = 10_000
ParamName = Annotated[str, StringConstraints(min_length=1, max_length=128)]
ParamValue = Annotated[str, StringConstraints(max_length=256)] | bool | int | float


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
    config: dict[ParamName, ParamValue] | None = Field(
        None,
        max_length=256,
        description="the attempt's configuration (parameter -> value); with it, each used "
        "lesson is credited by whether the attempt followed its advice",
    )
    timings_ms: list[Latency] | None = Field(
        None,
        min_length=1,
        max_length=MAX_TIMINGS,
        description="every timing of the attempt, in ms; latency_ms defaults to their median",
    )
    latency_spread_ms: Annotated[float, Field(strict=False, allow_inf_nan=False, ge=0.0)] | None = (
        Field(None, description="the standard deviation of the timings behind latency_ms")
    )
    repetitions: int | None = Field(
        None, ge=1, le=10_000_000, description="how many timings latency_ms summarises"
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

    @model_validator(mode="after")
    def _timings_agree(self) -> OutcomeIn:
        """Timings, spread and repetitions describe one latency, or are refused."""
        if self.config is not None and any(
            isinstance(v, float) and not math.isfinite(v) for v in self.config.values()
        ):
            raise PydanticCustomError("invalid_config", "config values must be finite numbers")
        if self.timings_ms:
            if self.latency_spread_ms is not None or self.repetitions is not None:
                raise PydanticCustomError(
                    "invalid_timings",
                    "give either timings_ms or latency_spread_ms with repetitions, not both "
                    "(the timings say their own spread and count)",
                )
            low, high = min(self.timings_ms), max(self.timings_ms)
            if self.latency_ms is None:
                self.latency_ms = statistics.median(self.timings_ms)
            elif not low <= self.latency_ms <= high:
                raise PydanticCustomError(
                    "invalid_timings",
                    "latency_ms {latency} lies outside its timings ({low} to {high} ms); "
                    "leave it out to report the timings' median",
                    {"latency": self.latency_ms, "low": low, "high": high},
                )
        elif (self.latency_spread_ms is not None or self.repetitions is not None) and (
            self.latency_ms is None
        ):
            raise PydanticCustomError(
                "invalid_timings",
                "latency_spread_ms and repetitions describe latency_ms: give latency_ms too",
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
    credit: dict[str, Verdict] = Field(
        default_factory=dict,
        description="with the attempt's configuration: each used lesson's verdict (followed, "
        "not_followed, contradicted, confirmed, untested, unknown); lessons not followed or "
        "untested are not updated",
    )
    timing_weight: float = Field(
        1.0, description="the share of the learning rate the timing's spread allowed (refine)"
    )
