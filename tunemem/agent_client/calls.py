"""The agent's calls of the memory API, one function each: the request (`tunemem.wire`) and how
its answer is read.

`MemoryClient` and `AsyncMemoryClient` are built from `CALLS` (each method is one of these
functions, sent the client's way), and the tuners' `MemoryLink` sends the same requests, so a
body, a header or an answer's reading is written here once. Every report carries an
`Idempotency-Key` (fresh unless the caller fixes one), so that a report whose answer was lost and
is sent again is counted once by the service.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tunemem import wire
from tunemem.agent_client.models import (
    Outcome,
    OutcomeReceipt,
    Retrieval,
    ServiceWarning,
    Stage,
)

T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One call: its request, and `read`, which turns the answer's JSON object into `T`."""

    request: wire.Request
    read: Callable[[dict[str, Any]], T]


def _as_is(answer: dict[str, Any]) -> dict[str, Any]:
    return answer


def _retrieval(answer: dict[str, Any]) -> Retrieval:
    """The parsed answer; each of its warnings is also raised as a `ServiceWarning`, so a
    caller that never reads `Retrieval.warnings` (an agent, a script) still sees it once (at the
    caller's line: this runs in the client's method, two frames below it)."""
    retrieval = Retrieval.from_json(answer)
    for text in retrieval.warnings:
        warnings.warn(text, ServiceWarning, stacklevel=3)
    return retrieval


def health() -> Call[dict[str, Any]]:
    """The service's health and counts (GET /healthz)."""
    return Call(wire.health(), _as_is)


def retrieve(
    task: dict[str, Any],
    context: dict[str, Any],
    stage: Stage = "draft",
    k: int = 3,
    query: str | None = None,
    options: dict[str, Any] | None = None,
) -> Call[Retrieval]:
    """Up to k lessons for the task in its context, ranked (POST /v1/retrieve); the answer's
    warnings are also raised as `ServiceWarning`s."""
    return Call(wire.retrieve(task, context, stage, k, query, options), _retrieval)


def suggest(
    task: dict[str, Any],
    context: dict[str, Any],
    space: dict[str, Any],
    observations: Iterable[dict[str, Any]] | None = None,
    k: int = 5,
    stage: Stage | None = None,
    options: dict[str, Any] | None = None,
    seed: int | None = None,
) -> Call[dict[str, Any]]:
    """Up to k untried configurations of `space` ({"params": {name: [values]}, "valid":
    [...] | None}, or the params alone), in the memory's order (POST /v1/suggest).
    Report each one's outcome with the answer's `retrieval_id` and its lessons' ids."""
    request = wire.suggest(task, context, space, observations, k, stage, options, seed)
    return Call(request, _as_is)


def report(
    retrieval_id: str,
    outcome: Outcome,
    used: list[str] | None = None,
    idempotency_key: str | None = None,
) -> Call[OutcomeReceipt]:
    """An attempt's outcome, crediting the `used` lessons of a retrieval (POST /v1/outcomes)."""
    key = idempotency_key or uuid.uuid4().hex
    request = wire.report(retrieval_id, outcome.to_json(), used, idempotency_key=key)
    return Call(request, OutcomeReceipt.from_json)


def add_lessons(lessons: Iterable[dict[str, Any]]) -> Call[dict[str, Any]]:
    """Add lessons (POST /v1/lessons); the service merges near-duplicates."""
    return Call(wire.add_lessons(lessons), _as_is)


def upload_trajectories(trajectories: Iterable[dict[str, Any]]) -> Call[dict[str, Any]]:
    """Tuning runs, distilled into lessons by the service (POST /v1/trajectories)."""
    return Call(wire.upload_trajectories(trajectories), _as_is)


def list_lessons(**filters: Any) -> Call[dict[str, Any]]:
    """Lessons matching the filters that are not None (GET /v1/lessons)."""
    return Call(wire.list_lessons(**filters), _as_is)


# The calls both clients make, each a method of the same name and signature.
CALLS: tuple[Callable[..., Call[Any]], ...] = (
    health,
    retrieve,
    suggest,
    report,
    add_lessons,
    upload_trajectories,
    list_lessons,
)
