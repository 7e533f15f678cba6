"""Noisy and mislabelled memory for the learning benchmark (`--noise`, `--mislabel`).

What enters the memory is a claim: somebody's one measurement under conditions nobody sees.
`MemoryNoise` makes those claims untrustworthy the way real ones are, and only those:

- noise sigma: every recorded time of an ingested run (each attempt's mean and minimum, and the
  baseline) is multiplied by a seeded log-normal factor exp(N(0, sigma)), one factor per attempt,
  so the distilled exemplars, effects and recorded reach rest on noisy numbers;
- mislabel fraction: that fraction of the benchmark's runs (rounded, among those that have
  another chip of their backend in the benchmark) is ingested under another chip's name of the
  same backend, chosen by the seed.

What the agent measures (the replay runner over the true recording), what it reports and what
scores it stay the true recorded times: the agent's outcomes are honest re-measurements. Every
arm of one seed sees the same corrupted memory; the seed changes the draws.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from tunemem.bench.learning.dirty import (
    Dirt,
    SingleTimingRunner,
    choose,
    partial_runs,
    replay_as,
)
from tunemem.bench.learning.tasks import Task
from tunemem.ingest.records import AttemptRecord, TrajectoryRecord
from tunemem.kernels.runners.replay import ReplayRunner


@dataclass(frozen=True)
class MemoryNoise:
    """How untrustworthy the ingested claims are: log-normal time noise and a mislabel rate."""

    sigma: float = 0.0
    mislabel: float = 0.0
    dirt: Dirt = field(default_factory=Dirt)  # partial runs, replays, single timings

    def __post_init__(self) -> None:
        if not (math.isfinite(self.sigma) and 0.0 <= self.sigma <= 3.0):
            raise ValueError(f"noise sigma must be in [0, 3], not {self.sigma}")
        if not (math.isfinite(self.mislabel) and 0.0 <= self.mislabel <= 1.0):
            raise ValueError(f"mislabel fraction must be in [0, 1], not {self.mislabel}")

    @property
    def clean(self) -> bool:
        return self.sigma == 0.0 and self.mislabel == 0.0 and self.dirt.clean

    def as_json(self) -> dict[str, float]:
        """What the report's `noise` records."""
        return {"sigma": self.sigma, "mislabel": self.mislabel, **asdict(self.dirt)}

    def plan(self, tasks: Sequence[Task], seed: int) -> NoisyMemory:
        """The corrupted memory of one seed over all the benchmark's tasks."""
        return NoisyMemory(self, tasks, seed)


def _key(task: Task) -> str:
    # name and file name, not the absolute path: the draws must not depend on the checkout
    return f"{task.name}|{task.path.name}"


def _noisy_attempt(attempt: AttemptRecord, factor: float) -> AttemptRecord:
    return replace(
        attempt,
        latency_ms=None if attempt.latency_ms is None else attempt.latency_ms * factor,
        latency_min_ms=None if attempt.latency_min_ms is None else attempt.latency_min_ms * factor,
        params=dict(attempt.params),
        metrics=dict(attempt.metrics),
    )


class NoisyMemory:
    """What one seed's memory is told about each task: the labels and the noisy times."""

    def __init__(self, noise: MemoryNoise, tasks: Sequence[Task], seed: int) -> None:
        self.noise = noise
        self.seed = seed
        pool = sorted({_key(t): t for t in tasks}.items())
        chips: dict[str, dict[str, str | None]] = {}  # backend -> chip -> a raw name
        for _, task in pool:
            ctx = task.recording.context
            chips.setdefault(ctx.backend, {}).setdefault(ctx.chip, ctx.chip_raw)
        eligible = [key for key, t in pool if len(chips[t.recording.context.backend]) > 1]
        count = min(round(noise.mislabel * len(pool)), len(eligible))
        rng = random.Random(f"mislabel:{seed}")
        # label: (chip, raw name) a mislabelled task is ingested under
        self.labels: dict[str, tuple[str, str | None]] = {}
        by_key = dict(pool)
        for key in sorted(rng.sample(eligible, count)):
            ctx = by_key[key].recording.context
            others = sorted(c for c in chips[ctx.backend] if c != ctx.chip)
            chip = rng.choice(others)
            self.labels[key] = (chip, chips[ctx.backend][chip])
        self._records: dict[str, TrajectoryRecord] = {}
        self._exemplars: dict[str, list[dict[str, Any]]] = {}
        dirt = noise.dirt
        self.partial = choose([key for key, _ in pool], dirt.partial, seed, "partial")
        # replayed: (chip, raw name) a task's run is also uploaded under
        self.replays: dict[str, tuple[str, str | None]] = {}
        draw = random.Random(f"replayed-as:{seed}")
        for key in choose(eligible, dirt.replayed, seed, "replayed"):
            ctx = by_key[key].recording.context
            chip = draw.choice(sorted(c for c in chips[ctx.backend] if c != ctx.chip))
            self.replays[key] = (chip, chips[ctx.backend][chip])

    def dirty(self) -> dict[str, Any]:
        """Which tasks' runs were also uploaded as partial runs, or as replays of which chip."""
        return {
            "partial": [key.split("|")[0] for key in self.partial],
            "replayed": {key.split("|")[0]: chip for key, (chip, _) in self.replays.items()},
        }

    def trajectories(self, task: Task) -> list[TrajectoryRecord]:
        """Everything the memory is told of a task's run: the run (`trajectory`), then its
        partial uploads and its replay under another chip's name, where the seed chose them."""
        record = self.trajectory(task)
        key = _key(task)
        extra = partial_runs(record, self.seed, key) if key in self.partial else []
        if key in self.replays:
            extra.append(replay_as(record, *self.replays[key]))
        return [record, *extra]

    def runner(self, task: Task, run: str) -> ReplayRunner:
        """The replay of a task's recording that one run measures with; with single timings,
        the seeded share of its evaluations is reported as one noisy timing (the same draws in
        every arm: `run` names the run without its arm)."""
        dirt = self.noise.dirt
        if dirt.single_timings == 0.0:
            return ReplayRunner(recording=task.recording)
        seed = f"timing:{self.seed}:{_key(task)}:{run}"
        return SingleTimingRunner(task.recording, dirt.single_timings, dirt.timing_sigma, seed)

    def mislabelled(self) -> dict[str, str]:
        """Task name -> the chip it is ingested under, for the mislabelled tasks."""
        return {key.split("|")[0]: chip for key, (chip, _) in self.labels.items()}

    def trajectory(self, task: Task) -> TrajectoryRecord:
        """The run as the memory is told it (the task's own record when the memory is clean)."""
        clean = task.trajectory()
        if self.noise.sigma == 0.0 and self.noise.mislabel == 0.0:
            return clean
        key = _key(task)
        if key not in self._records:
            record = clean
            if self.noise.sigma > 0:
                rng = random.Random(f"noise:{self.seed}:{key}")
                attempts = [
                    _noisy_attempt(a, rng.lognormvariate(0.0, self.noise.sigma))
                    for a in clean.attempts
                ]
                baseline = clean.baseline_latency_ms
                if baseline is not None:
                    baseline *= rng.lognormvariate(0.0, self.noise.sigma)
                record = replace(record, attempts=attempts, baseline_latency_ms=baseline)
            if key in self.labels:
                chip, raw = self.labels[key]
                record = replace(record, context=replace(record.context, chip=chip, chip_raw=raw))
            self._records[key] = record
        return self._records[key]

    def exemplar_configs(self, task: Task) -> list[dict[str, Any]]:
        """The configurations of the exemplar lessons the task's run distils into, as told."""
        if self.noise.sigma == 0:
            return task.exemplar_configs()
        from tunemem.ingest.distill import distill

        key = _key(task)
        if key not in self._exemplars:
            configs = [
                (d.hint or {}).get("config")
                for d in distill(self.trajectory(task))
                if d.kind == "exemplar"
            ]
            self._exemplars[key] = [dict(c) for c in configs if isinstance(c, dict)]
        return self._exemplars[key]

    def best_in_memory(self, target: Task, memory: Sequence[Task]) -> float:
        """The best fraction of the target's true optimum among the exemplar configurations of
        its family that the memory holds (the most any ranking could reach)."""
        return max(
            (
                target.fraction(config)
                for task in memory
                if task.family == target.family and task.chip != target.chip
                for config in self.exemplar_configs(task)
            ),
            default=0.0,
        )
