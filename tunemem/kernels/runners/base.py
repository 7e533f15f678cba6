"""The runner interface: evaluate one configuration of one task, return what happened.

Runners (`cuda`, `cpu`, `replay`) are interchangeable behind `Runner`; `create_runner`
builds one by name. A proposer never holds a runner: the agent's evaluate step does, so a
proposer can only learn measurements of configurations it chose.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from tunemem.ingest.provenance import Provenance
from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, is_feasible


@dataclass(frozen=True)
class EvalResult:
    """Outcome of evaluating one configuration."""

    compiled: bool
    correct: bool | None
    error_category: str | None = None
    error: str | None = None
    latency_ms: float | None = None
    latency_min_ms: float | None = None
    repetitions: int | None = None
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        return is_feasible(self.compiled, self.correct, self.error_category)

    def to_attempt(
        self, index: int, params: dict[str, Any], code: str | None = None
    ) -> AttemptRecord:
        return AttemptRecord(
            index=index,
            params=dict(params),
            code=code,
            compiled=self.compiled,
            correct=self.correct,
            error_category=self.error_category,
            error=self.error,
            latency_ms=self.latency_ms,
            latency_min_ms=self.latency_min_ms,
            repetitions=self.repetitions,
            metrics=dict(self.metrics),
        )


class Runner(ABC):
    """Evaluates configurations of one task on one chip."""

    name: str = ""

    @abstractmethod
    def parameter_space(self) -> dict[str, list[Any]]:
        """The declared tunable parameters and their allowed values.

        Returns:
            Mapping of parameter name to its candidate values (public knowledge, no timings).
        """

    @abstractmethod
    def evaluate(self, config: dict[str, Any]) -> EvalResult:
        """Compile, check and (where the runner can) time one configuration.

        Args:
            config: one value per parameter of `parameter_space()`.

        Returns:
            The evaluation; an invalid or failing configuration is an infeasible result, not
            an exception.
        """

    def description(self) -> tuple[TaskSpec, ContextSpec]:
        """The public description of what this runner tunes and where (no measurements).

        Returns:
            The task (op, kernel, signature, dtype) and the context (chip, backend, toolchain).
        """
        task = getattr(self, "task", None)
        context = getattr(self, "context", None)
        if not isinstance(task, TaskSpec) or not isinstance(context, ContextSpec):
            raise NotImplementedError(f"{type(self).__name__} does not describe its task")
        return task, context

    def evidence(self) -> dict[str, Any]:
        """How this runner measures (stored with every attempt it evaluates).

        Returns:
            Facts such as the runner kind, toolchain versions, template hash and device name.
        """
        return {"runner": self.name}

    def provenance(self) -> Provenance:
        """How this runner's numbers are obtained (`ingest.provenance`): a runner that times
        kernels says `measured` with the device the runtime reports; one that answers from a
        recording says `replayed`. A run of a few attempts is `partial`.

        Returns:
            The provenance stored with the run's trajectory and sent with its outcomes.
        """
        return Provenance(origin="unstated", coverage="partial")
