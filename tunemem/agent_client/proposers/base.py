"""What a proposer sees and returns, and the `Proposer` interface.

A proposer is handed a `ProposalRequest`: the task's public description, its parameter space,
the lessons the memory service returned (now and earlier in the run) and the outcomes of its own
past attempts. Nothing else: it never holds the runner, so it cannot read a measurement of a
configuration it did not choose (the request is plain frozen data, built by the graph).
"""

from __future__ import annotations

import itertools
import random
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tunemem.agent_client.models import RetrievedLesson, Stage
from tunemem.search.hints import config_key, space_size


@dataclass(frozen=True)
class TaskDescription:
    """The public description of a tuning task: what to tune and where."""

    op: str
    chip: str
    backend: str
    kernel: str | None = None
    signature: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AttemptOutcome:
    """One of the proposer's own past attempts and what it earned."""

    index: int
    config: dict[str, Any]
    feasible: bool
    latency_ms: float | None
    error_category: str | None = None
    used: tuple[str, ...] = ()
    origin: str = ""
    # the spread of the timings behind latency_ms and their count, where the runner measured them
    latency_spread_ms: float | None = None
    repetitions: int | None = None


@dataclass(frozen=True)
class ProposalRequest:
    """Everything a proposer may know when choosing the next configuration."""

    task: TaskDescription
    space: Mapping[str, tuple[Any, ...]]
    stage: Stage
    lessons: tuple[RetrievedLesson, ...]
    seen_lessons: tuple[RetrievedLesson, ...]
    history: tuple[AttemptOutcome, ...]
    seed: int = 0

    def tried(self) -> set[tuple[Any, ...]]:
        return {config_key(self.space, a.config) for a in self.history}

    def best(self) -> AttemptOutcome | None:
        feasible = [a for a in self.history if a.feasible and a.latency_ms is not None]
        return min(feasible, key=lambda a: a.latency_ms or 0.0) if feasible else None

    def rng(self) -> random.Random:
        """A generator fixed by the seed and the attempt number, so a resumed run repeats."""
        return random.Random(self.seed * 1_000_003 + len(self.history))


@dataclass(frozen=True)
class Proposal:
    """The next configuration, the lesson ids credited for it, and why it was chosen."""

    config: dict[str, Any]
    used: tuple[str, ...]
    origin: str
    rationale: str = ""


class ProposalError(RuntimeError):
    """The proposer has nothing left to propose (every configuration tried)."""


class Proposer(ABC):
    """Chooses configurations of a task's parameter space."""

    name: str = ""

    @abstractmethod
    def propose(self, request: ProposalRequest) -> Proposal:
        """Choose the next configuration.

        Args:
            request: the task, its parameter space, the lessons and the proposer's own history.

        Returns:
            A configuration with one value per parameter of `request.space`, the ids of the
            lessons of `request.lessons` that shaped it (credited by the service), and a reason.
        """


def random_untried(request: ProposalRequest, rng: random.Random) -> dict[str, Any]:
    """A uniformly random configuration not tried yet (exhaustive listing for tiny spaces)."""
    tried = request.tried()
    space = request.space
    if space_size(space) <= 4 * (len(tried) + 1):
        left = [c for c in itertools.product(*space.values()) if c not in tried]
        if not left:
            raise ProposalError("every configuration of the space has been tried")
        return dict(zip(space, rng.choice(left), strict=True))
    while True:
        config = {name: rng.choice(list(values)) for name, values in space.items()}
        if config_key(space, config) not in tried:
            return config
