"""Dirty-memory streams of the learning benchmark (`--partial`, `--replayed`, `--single-timings`).

A memory that a swarm of agents writes to is told more than the finished campaigns: short runs
of a few evaluations, replays of one chip's recording sent under another chip's name, and
outcomes timed once on a busy machine. Beside `noise.py`'s corruption of the ingested runs
(`--noise`, `--mislabel`), `Dirt` adds those, seeded, and only those:

- partial fraction: that fraction of the benchmark's runs (rounded) is also uploaded as
  `PARTIAL_RUNS` partial runs of `PARTIAL_ATTEMPTS` evaluations each, drawn from the run
  (as the Kernel Tuner page's 10-evaluation example uploads them), under their own source;
- replayed fraction: that fraction of the runs (among those with another chip of their backend
  in the benchmark) is also uploaded as a replay labelled as another chip of its backend;
- single-timings fraction: that share of the agent's evaluations is reported as one timing
  that moved by exp(N(0, timing sigma)) instead of the recorded mean with its spread; the agent
  acts on that timing (its best so far), as an agent on a noisy machine would.

What scores a run stays the true recorded time of each configuration it tried.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from tunemem.ingest.records import TrajectoryRecord
from tunemem.kernels.runners.base import EvalResult
from tunemem.kernels.runners.replay import Recording, ReplayRunner

PARTIAL_RUNS = 2  # partial uploads per chosen run
PARTIAL_ATTEMPTS = 10  # evaluations in each
DEFAULT_TIMING_SIGMA = 0.2


def _fraction(name: str, value: float) -> None:
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"{name} fraction must be in [0, 1], not {value}")


@dataclass(frozen=True)
class Dirt:
    """What a swarm adds to the memory: partial runs, replays under another chip's name and
    single noisy timings (shares in [0, 1]; sigma of the timing noise in [0, 3])."""

    partial: float = 0.0
    replayed: float = 0.0
    single_timings: float = 0.0
    timing_sigma: float = DEFAULT_TIMING_SIGMA

    def __post_init__(self) -> None:
        _fraction("partial", self.partial)
        _fraction("replayed", self.replayed)
        _fraction("single-timings", self.single_timings)
        if not (math.isfinite(self.timing_sigma) and 0.0 <= self.timing_sigma <= 3.0):
            raise ValueError(f"timing noise sigma must be in [0, 3], not {self.timing_sigma}")

    @property
    def clean(self) -> bool:
        return self.partial == 0.0 and self.replayed == 0.0 and self.single_timings == 0.0


def choose(keys: Sequence[str], share: float, seed: int, what: str) -> list[str]:
    """The seeded `share` (rounded) of `keys` (sorted first, so the draw is reproducible)."""
    pool = sorted(keys)
    count = min(round(share * len(pool)), len(pool))
    return sorted(random.Random(f"{what}:{seed}").sample(pool, count))


def partial_runs(record: TrajectoryRecord, seed: int, key: str) -> list[TrajectoryRecord]:
    """`PARTIAL_RUNS` uploads of `PARTIAL_ATTEMPTS` evaluations drawn from one run."""
    rng = random.Random(f"partial-draw:{seed}:{key}")
    runs = []
    for i in range(PARTIAL_RUNS):
        picked = sorted(
            rng.sample(range(len(record.attempts)), min(PARTIAL_ATTEMPTS, len(record.attempts)))
        )
        attempts = [replace(record.attempts[j], index=k) for k, j in enumerate(picked)]
        runs.append(
            replace(record, source=f"{record.source}#partial-{i}", attempts=attempts, evidence={})
        )
    return runs


def replay_as(record: TrajectoryRecord, chip: str, raw: str | None) -> TrajectoryRecord:
    """The run uploaded again as a replay labelled with another chip's name."""
    context = replace(record.context, chip=chip, chip_raw=raw)
    return replace(record, source=f"{record.source}#replay-as-{chip}", context=context)


class SingleTimingRunner(ReplayRunner):
    """A replay whose evaluations, in a seeded share, come back as one noisy timing: the
    recorded mean times exp(N(0, sigma)), with no spread and one repetition."""

    def __init__(self, recording: Recording, share: float, sigma: float, seed: str) -> None:
        super().__init__(recording=recording)
        self.share, self.sigma = share, sigma
        self.rng = random.Random(seed)
        self.noisy = 0

    def evaluate(self, config: dict[str, Any]) -> EvalResult:
        result = super().evaluate(config)
        # two draws per evaluation whatever the result, so the sequence is the same in every arm
        pick, factor = self.rng.random(), self.rng.lognormvariate(0.0, self.sigma)
        if result.latency_ms is None or pick >= self.share:
            return result
        self.noisy += 1
        metrics = {k: v for k, v in result.metrics.items() if k != "latency_std_ms"}
        return replace(
            result,
            latency_ms=result.latency_ms * factor,
            latency_min_ms=None,
            repetitions=1,
            metrics=metrics,
        )


def true_curve(recording: Recording, attempts: Sequence[dict[str, Any]]) -> list[float | None]:
    """The recorded time of each configuration a run tried (None: infeasible), whatever the
    run was told."""
    return [recording.latency_of(a["config"]) if a.get("feasible") else None for a in attempts]
