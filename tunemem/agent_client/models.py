"""Typed shapes of the memory API as the agent sees them (DESIGN section 6).

Parsing is lenient about fields the service adds later and strict about the ones the contract
promises, so a changed contract fails loudly here instead of deep inside the agent.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Stage = Literal["draft", "refine"]


class MemoryAPIError(Exception):
    """The memory service answered with an error (4xx/5xx) or an unreadable body."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class TransientAPIError(MemoryAPIError):
    """An error worth retrying: overload, gateway trouble, rate limiting."""


class ServiceWarning(UserWarning):
    """What the service said about a request it answered (a chip name it does not know, with
    the names it may have meant): the answer stands, but rests on less than the caller meant."""


@dataclass(frozen=True)
class RetrievedLesson:
    """One ranked lesson of a retrieval, with the service's score breakdown."""

    id: str
    kind: str
    text: str
    hint: dict[str, Any] | None = None
    code: str | None = None
    applicability: dict[str, Any] = field(default_factory=dict)
    score: float = 0.0
    transferred: bool = False
    rendered_text: str | None = None
    warning: bool = False
    breakdown: dict[str, Any] = field(default_factory=dict)
    glossary: tuple[dict[str, Any], ...] = ()
    stale: bool = False
    caveat: str | None = None  # why a resource-limit failure does (not) warn on this chip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RetrievedLesson:
        return cls(
            id=str(data["id"]),
            kind=str(data["kind"]),
            text=str(data.get("text") or ""),
            hint=data.get("hint"),
            code=data.get("code"),
            applicability=dict(data.get("applicability") or {}),
            score=float(data.get("score") or 0.0),
            transferred=bool(data.get("transferred", False)),
            rendered_text=data.get("rendered_text"),
            warning=bool(data.get("warning", False)),
            breakdown=dict(data.get("breakdown") or {}),
            glossary=tuple(e for e in data.get("glossary") or () if isinstance(e, dict)),
            stale=bool(data.get("stale", False)),
            caveat=data.get("caveat") if isinstance(data.get("caveat"), str) else None,
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def value(self) -> float | None:
        """The lesson's learned value in the retrieval's context, when the service gave one."""
        raw = self.breakdown.get("value")
        return float(raw) if isinstance(raw, int | float) else None


@dataclass(frozen=True)
class Retrieval:
    """The answer to one retrieve call: its id (feedback refers to it), the ranked lessons, and
    what the service made of the context: the chip it recognised (None: not one it knows), the
    scopes whose values ranked the lessons (most specific first) and its `warnings`."""

    retrieval_id: str
    lessons: list[RetrievedLesson]
    settings: dict[str, Any] = field(default_factory=dict)
    stage: str | None = None
    chip: str | None = None
    scope_chain: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Retrieval:
        if "retrieval_id" not in data:
            raise MemoryAPIError(200, "bad_response", "retrieve response without retrieval_id")
        return cls(
            retrieval_id=str(data["retrieval_id"]),
            lessons=[RetrievedLesson.from_json(item) for item in data.get("lessons") or []],
            settings=dict(data.get("settings") or {}),
            stage=data.get("stage"),
            chip=data.get("chip"),
            scope_chain=[str(scope) for scope in data.get("scope_chain") or []],
            warnings=[str(text) for text in data.get("warnings") or []],
        )


@dataclass(frozen=True)
class Outcome:
    """What happened to an attempt, as reported to the service.

    `config` is the attempt's configuration: with it the service credits each used lesson by
    whether the attempt followed it. `timings_ms` are every timing of the attempt (the service
    takes their median as the latency when `latency_ms` is left out); or `latency_spread_ms`
    (the timings' standard deviation) with `repetitions` describe the timings behind
    `latency_ms`. Their spread tempers how far one report moves a value."""

    compiled: bool
    correct: bool | None
    latency_ms: float | None = None
    best_before_ms: float | None = None
    error: str | None = None
    # How the numbers were obtained: {"origin": ..., "device_reported": ...}
    # (`ingest.provenance`); None sends none and the service stores "unstated".
    provenance: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    timings_ms: list[float] | None = None
    latency_spread_ms: float | None = None
    repetitions: int | None = None

    def to_json(self) -> dict[str, Any]:
        body = asdict(self)
        if body["config"] is not None:  # the service takes scalar settings (null: not set)
            body["config"] = {
                str(k): v
                for k, v in body["config"].items()
                if isinstance(v, str | bool | int) or (isinstance(v, float) and math.isfinite(v))
            }
        # Left out when not given, so a service from before these fields accepts the report.
        for name in ("provenance", "config", "timings_ms", "latency_spread_ms", "repetitions"):
            if body[name] is None:
                del body[name]
        return body


def timed_attempt(
    config: dict[str, Any], times: Sequence[Any] | None, latency_ms: float | None
) -> dict[str, Any]:
    """`Outcome` fields of an attempt: its configuration and, where it was timed two or more
    times and has a latency, the spread (standard deviation) and count of those timings (Kernel
    Tuner keeps every run's time of a configuration in its result's `times`)."""
    runs = [float(t) for t in times or () if isinstance(t, int | float) and t > 0]
    if latency_ms is None or len(runs) < 2:
        return {"config": config}
    return {
        "config": config,
        "latency_spread_ms": statistics.pstdev(runs),
        "repetitions": len(runs),
    }


@dataclass(frozen=True)
class OutcomeReceipt:
    """The service's answer to a report: rewards applied and the new values per lesson.

    `duplicate` is true when the report was a retry of one already counted under the same
    idempotency key: the outcome and rewards are the first report's, counted once."""

    rewards: dict[str, float]
    values: dict[str, Any]
    outcome_id: int | None = None
    reward: float | None = None
    duplicate: bool = False
    # lesson -> followed, not_followed, contradicted, confirmed, untested or unknown
    credit: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OutcomeReceipt:
        reward = data.get("reward")
        outcome_id = data.get("outcome_id")
        return cls(
            rewards={str(k): float(v) for k, v in (data.get("rewards") or {}).items()},
            values=dict(data.get("values") or {}),
            outcome_id=int(outcome_id) if isinstance(outcome_id, int) else None,
            reward=float(reward) if isinstance(reward, int | float) else None,
            duplicate=bool(data.get("duplicate", False)),
            credit={str(k): str(v) for k, v in (data.get("credit") or {}).items()},
        )
