"""Typed shapes of the memory API as the agent sees them (DESIGN section 6).

Parsing is lenient about fields the service adds later and strict about the ones the contract
promises, so a changed contract fails loudly here instead of deep inside the agent.
"""

from __future__ import annotations

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
    """The answer to one retrieve call: its id (feedback refers to it) and ranked lessons."""

    retrieval_id: str
    lessons: list[RetrievedLesson]
    settings: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Retrieval:
        if "retrieval_id" not in data:
            raise MemoryAPIError(200, "bad_response", "retrieve response without retrieval_id")
        return cls(
            retrieval_id=str(data["retrieval_id"]),
            lessons=[RetrievedLesson.from_json(item) for item in data.get("lessons") or []],
            settings=dict(data.get("settings") or {}),
        )


@dataclass(frozen=True)
class Outcome:
    """What happened to an attempt, as reported to the service."""

    compiled: bool
    correct: bool | None
    latency_ms: float | None = None
    best_before_ms: float | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class OutcomeReceipt:
    """The service's answer to a report: rewards applied and the new values per lesson."""

    rewards: dict[str, float]
    values: dict[str, Any]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OutcomeReceipt:
        return cls(
            rewards={str(k): float(v) for k, v in (data.get("rewards") or {}).items()},
            values=dict(data.get("values") or {}),
        )
