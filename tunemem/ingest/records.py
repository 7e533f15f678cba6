"""Canonical records that every ingest reader yields and every consumer reads.

A reader turns an external format into `TrajectoryRecord`s (one tuning run of one task
in one context) or `RejectedRecord`s (a bad record with its position and reason).
Distillation turns a trajectory into `LessonDraft`s. Nothing here touches a database.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any, TypeVar

from tunemem.ingest.provenance import Provenance

_Part = TypeVar("_Part")

NATIVE_FORMAT_VERSION = 1

# Error categories an attempt may carry when it is not feasible.
ERROR_CATEGORIES = ("compile", "runtime", "incorrect", "timeout", "resources", "rejected", "other")


class RecordShapeError(ValueError):
    """A trajectory dict lacks a field, has one it should not, or nests the wrong type; the
    message says which, in words ("task: missing field 'op'")."""


def _build(cls: type[_Part], data: Any, where: str) -> _Part:
    """One dataclass from a dict, naming a missing or unknown field instead of raising
    KeyError/TypeError."""
    prefix = f"{where}: " if where else ""
    if not isinstance(data, dict):
        raise RecordShapeError(f"{where or 'the record'} must be a JSON object")
    declared = {f.name: f for f in fields(cls)}  # type: ignore[arg-type]
    missing = [
        name
        for name, spec in declared.items()
        if name not in data and spec.default is MISSING and spec.default_factory is MISSING
    ]
    if missing:
        raise RecordShapeError(f"{prefix}missing field {', '.join(map(repr, missing))}")
    unknown = sorted(set(data) - set(declared))
    if unknown:
        raise RecordShapeError(
            f"{prefix}unknown field {', '.join(map(repr, unknown))} (known: {', '.join(declared)})"
        )
    return cls(**data)


def stable_hash(obj: Any, length: int = 32) -> str:
    """Hex digest of a JSON-normalised object; the basis of every deterministic id."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:length]


@dataclass
class TaskSpec:
    """What was tuned: operator family, kernel name and signature (shapes, dtype)."""

    op: str
    kernel: str | None = None
    signature: dict[str, Any] = field(default_factory=dict)
    dtype: str | None = None


@dataclass
class ContextSpec:
    """Where it ran. `chip` is the normalised id from `platforms`; `chip_raw` the name as read."""

    chip: str
    backend: str
    chip_raw: str | None = None
    model: str | None = None
    scenario: str | None = None
    toolchain: dict[str, str] = field(default_factory=dict)


def is_feasible(compiled: bool, correct: bool | None, error: str | None) -> bool:
    """Feasible: it compiled, was not found incorrect, and no error was recorded.

    The one definition, for recorded attempts (`error`: their error category) and reported
    outcomes (their error text) alike. `correct` None is no check made (Kernel Tuner caches
    record times only); a report that says neither correct nor incorrect must give its error
    (`OutcomeIn`), so it is not feasible.
    """
    return bool(compiled) and correct is not False and error is None


@dataclass
class AttemptRecord:
    """One evaluated candidate: a configuration (params) and/or code, and what happened."""

    index: int
    params: dict[str, Any] = field(default_factory=dict)
    code: str | None = None
    compiled: bool = True
    correct: bool | None = True
    error_category: str | None = None
    error: str | None = None
    latency_ms: float | None = None
    latency_min_ms: float | None = None
    repetitions: int | None = None
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        return is_feasible(self.compiled, self.correct, self.error_category)


@dataclass
class TrajectoryRecord:
    """The ordered attempts of one tuning run of one task in one context."""

    source_format: str
    source: str
    task: TaskSpec
    context: ContextSpec
    attempts: list[AttemptRecord] = field(default_factory=list)
    baseline_latency_ms: float | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    synthetic: bool = False
    provenance: Provenance = field(default_factory=Provenance)

    @property
    def id(self) -> str:
        """Deterministic id: the same run read twice gets the same id."""
        return stable_hash(
            {
                "source_format": self.source_format,
                "source": self.source,
                "task": asdict(self.task),
                "context": asdict(self.context),
                "n": len(self.attempts),
            }
        )

    def to_dict(self) -> dict[str, Any]:
        # "version" and "source_format" first: format detection reads only a file's head.
        return {"version": NATIVE_FORMAT_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrajectoryRecord:
        """The record a `to_dict()` (native format) dict describes.

        Raises:
            RecordShapeError: a missing, unknown or wrongly nested field, named in words.
        """
        if not isinstance(data, dict):
            raise RecordShapeError("a trajectory must be a JSON object")
        missing = [
            name for name in ("source_format", "source", "task", "context") if name not in data
        ]
        if missing:
            raise RecordShapeError(f"missing field {', '.join(map(repr, missing))}")
        attempts = data.get("attempts", [])
        if not isinstance(attempts, list):
            raise RecordShapeError("attempts must be a list")
        return cls(
            source_format=data["source_format"],
            source=data["source"],
            task=_build(TaskSpec, data["task"], "task"),
            context=_build(ContextSpec, data["context"], "context"),
            attempts=[
                _build(AttemptRecord, attempt, f"attempts[{position}]")
                for position, attempt in enumerate(attempts)
            ],
            baseline_latency_ms=data.get("baseline_latency_ms"),
            evidence=data.get("evidence", {}),
            synthetic=data.get("synthetic", False),
            provenance=_build(Provenance, data.get("provenance", {}), "provenance"),
        )


@dataclass
class RejectedRecord:
    """A record a reader could not turn into a trajectory: where it was and why."""

    path: str
    position: str
    reason: str


@dataclass
class LessonDraft:
    """A distilled lesson before storage.

    applicability keys: op, kernel, chips, families, backends, models, scenarios, dtypes,
    signature (dict of bounds or values); lists empty mean "any".
    """

    kind: str  # insight | failure | exemplar | api
    text: str
    applicability: dict[str, Any]
    hint: dict[str, Any] | None = None
    code: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
