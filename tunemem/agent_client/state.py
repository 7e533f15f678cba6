"""The agent's state: a narrow input (what to tune, with what budget) and the full run state.

Everything here is plain JSON-like data, because the SQLite checkpointer stores it after every
step; live objects (runner, proposer, client) travel in `AgentContext` instead.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict


def merge_lessons(
    left: dict[str, dict[str, Any]], right: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Lessons seen during the run, by id; a later sighting replaces an earlier one."""
    return {**(left or {}), **(right or {})}


class AgentInput(TypedDict):
    """What a run is started with."""

    run_id: str
    task: dict[str, Any]  # TaskDescription as a dict: op, chip, backend, kernel, signature
    space: dict[str, list[Any]]
    budget: int
    seed: int


class AgentState(AgentInput, total=False):
    """The whole state of a run, checkpointed after every node."""

    stage: str  # "draft" until the first feasible attempt, then "refine"
    attempts: int
    retrieval: dict[str, Any] | None  # id, lessons, settings, scope chain, warnings
    proposal: dict[str, Any] | None  # config, used, origin, rationale
    result: dict[str, Any] | None  # the evaluation of the current proposal
    history: Annotated[list[dict[str, Any]], operator.add]  # one entry per attempt
    seen_lessons: Annotated[dict[str, dict[str, Any]], merge_lessons]
    best_latency_ms: float | None
    best_config: dict[str, Any] | None
    since_improvement: int
    stop_reason: str | None
    write_back: dict[str, Any] | None  # the service's answer to the trajectory upload
