"""Request and response shapes of `POST /v1/suggest` (DESIGN section 6; fields may be added,
never renamed).

A space is parameter names with their allowed scalar values, and optionally the caller's own
list of valid configurations (a restriction it already applied). Everything is bounded at the
door: at most 64 parameters of at most 1,000 values (integers within 64 bits), 50,000 valid
configurations and 10,000 observations, so a request that is accepted can be answered: the
performance model is refit on at most 256 of the observations
(`search.model_search.FIT_OBSERVATIONS`) and the search stops at `suggest_deadline_s`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictInt,
    model_validator,
)

from tunemem.memory_service.core.schemas.inbound import Inbound
from tunemem.memory_service.core.schemas.learning import ContextIn, RetrieveOptions, TaskIn
from tunemem.memory_service.core.schemas.lessons import SourceRunPublic, Stage
from tunemem.memory_service.core.schemas.outcomes import Latency

MAX_PARAMS = 64
MAX_VALUES = 1000
MAX_VALID = 50_000
MAX_OBSERVATIONS = 10_000

ParamName = Annotated[str, Field(min_length=1, max_length=128)]


def _no_integer(value: Any) -> Any:
    """An integer is no float here: one past 64 bits is refused, not turned into a float."""
    if isinstance(value, int) and not isinstance(value, bool):
        raise ValueError("an integer beyond 64 bits")
    return value


# A parameter value: a boolean, an integer within 64 bits, a finite number or a short string
# (bool first, so true stays true and is not read as 1).
Scalar = (
    StrictBool
    | Annotated[StrictInt, Field(gt=-(2**63), lt=2**63)]
    | Annotated[float, Field(strict=True, allow_inf_nan=False), BeforeValidator(_no_integer)]
    | Annotated[str, Field(strict=True, max_length=256)]
)
Config = dict[ParamName, Scalar]
SuggestionSource = Literal["exemplar", "preference", "model", "search"]


def value_key(value: Any) -> tuple[bool, Any]:
    """A parameter value as a set key: 1 and 1.0 are the same value, true and 1 are not."""
    return (isinstance(value, bool), value)


class SpaceIn(BaseModel):
    """A parameter space: allowed values per parameter, and optionally the valid list."""

    model_config = ConfigDict(extra="forbid")

    _allowed: dict[str, set[tuple[bool, Any]]] = PrivateAttr(default_factory=dict)
    params: dict[ParamName, Annotated[list[Scalar], Field(min_length=1, max_length=MAX_VALUES)]] = (
        Field(min_length=1, max_length=MAX_PARAMS, description="allowed values per parameter")
    )
    # Values are checked against `params` (which holds only scalars) by `_consistent`: cheaper
    # for tens of thousands of configurations than a type check per value.
    valid: list[dict[ParamName, Any]] | None = Field(
        None,
        max_length=MAX_VALID,
        description="the valid configurations (the caller's restriction already applied); "
        "suggestions are drawn from this list when it is given",
    )

    @model_validator(mode="after")
    def _consistent(self) -> SpaceIn:
        self._allowed = {}
        for name, values in self.params.items():
            keys = {value_key(value) for value in values}
            if len(keys) < len(values):
                raise ValueError(f"parameter {name!r} lists a value twice")
            self._allowed[name] = keys
        for i, config in enumerate(self.valid or ()):
            problem = self.problem(config)
            if problem:
                raise ValueError(f"valid[{i}]: {problem}")
        return self

    def problem(self, config: dict[str, Any]) -> str | None:
        """Why a configuration is not one of this space's, or None."""
        if config.keys() != self.params.keys():
            missing = sorted(set(self.params) - set(config))
            extra = sorted(set(config) - set(self.params))
            return f"parameters differ from the space's (missing {missing}, unknown {extra})"
        allowed_values = self._allowed
        for name, value in config.items():
            try:
                allowed = value_key(value) in allowed_values[name]
            except TypeError:  # unhashable: a list or an object
                allowed = False
            if not allowed:
                return f"{name}={value!r} is not an allowed value"
        return None


class ObservationIn(BaseModel):
    """One configuration the run has measured: its latency, or that it failed."""

    model_config = ConfigDict(extra="forbid")

    config: Config = Field(max_length=MAX_PARAMS)
    latency_ms: Latency | None = None
    feasible: StrictBool = True
    latency_spread_ms: float | None = Field(
        None, ge=0.0, allow_inf_nan=False, description="the spread of the timings behind it"
    )
    repetitions: int | None = Field(None, ge=1, le=10_000_000, description="how many timings")

    @model_validator(mode="after")
    def _latency_when_feasible(self) -> ObservationIn:
        if self.feasible and self.latency_ms is None:
            raise ValueError("a feasible observation needs its latency_ms")
        if self.latency_spread_ms is not None and self.latency_ms is None:
            raise ValueError("latency_spread_ms describes latency_ms: give latency_ms too")
        return self


class SuggestRequest(Inbound):
    """Task, context, space and the run's observations so far: what to try next."""

    model_config = ConfigDict(extra="forbid")

    task: TaskIn = Field(default_factory=TaskIn)
    context: ContextIn = Field(default_factory=ContextIn)
    space: SpaceIn
    observations: list[ObservationIn] = Field(default_factory=list, max_length=MAX_OBSERVATIONS)
    k: int = Field(5, ge=1, le=100, strict=True, description="configurations to return")
    stage: Stage | None = Field(
        None, description="draft or refine; null: draft until an observation is feasible"
    )
    options: RetrieveOptions = Field(default_factory=RetrieveOptions)
    seed: StrictInt | None = Field(None, ge=0, le=2**63 - 1, description="the search's seed")


class SuggestedLesson(BaseModel):
    """A lesson a suggestion rests on, with its value where it was retrieved."""

    id: str
    value: float
    value_scope: str
    n: int
    source_run: SourceRunPublic | None = Field(
        None, description="how the run the lesson was distilled from was measured"
    )


class SuggestionPublic(BaseModel):
    config: dict[str, Any]
    source: SuggestionSource
    lessons: list[SuggestedLesson] = Field(
        description="report an outcome with `used` = these ids to credit them"
    )
    rationale: str
    prediction: dict[str, Any] | None = Field(
        None, description="a model's prediction for the configuration (source model)"
    )


class SuggestResponse(BaseModel):
    retrieval_id: str = Field(description="report outcomes of these suggestions against it")
    stage: Stage
    chip: str | None
    suggestions: list[SuggestionPublic]
    warnings: list[str]
    settings: dict[str, Any]
