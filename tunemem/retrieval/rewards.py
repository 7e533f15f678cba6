"""Stage rewards (DESIGN section 4) and the per-task running statistics that normalise them.

draft: +1 when the attempt is feasible, -1 otherwise.
refine: -1 when infeasible, else tanh(ln(best_before / latency)), normalised PopArt-style by
the running mean and deviation of that raw reward on the same task.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

STAGES = ("draft", "refine")
# Every reward lies in [REWARD_MIN, REWARD_MAX], so every value (a mean of rewards and Q0) does.
REWARD_MIN = -1.0
REWARD_MAX = 1.0


@dataclass(frozen=True)
class RewardStats:
    """Welford running statistics of raw refine rewards on one task."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    @property
    def std(self) -> float:
        return math.sqrt(self.m2 / (self.n - 1)) if self.n > 1 else 0.0

    def push(self, raw: float) -> RewardStats:
        n = self.n + 1
        delta = raw - self.mean
        mean = self.mean + delta / n
        return RewardStats(n=n, mean=mean, m2=self.m2 + delta * (raw - mean))


def draft_reward(feasible: bool) -> float:
    return 1.0 if feasible else -1.0


def raw_refine_reward(
    feasible: bool, latency_ms: float | None, best_before_ms: float | None
) -> float:
    """tanh(ln(best_before / latency)); 0 when there is nothing to compare with."""
    if not feasible:
        return -1.0
    if not latency_ms or not best_before_ms or latency_ms <= 0 or best_before_ms <= 0:
        return 0.0
    return math.tanh(math.log(best_before_ms / latency_ms))


def refine_reward(
    feasible: bool,
    latency_ms: float | None,
    best_before_ms: float | None,
    stats: RewardStats,
    *,
    min_count: int = 5,
    min_std: float = 0.05,
) -> tuple[float, RewardStats]:
    """The normalised refine reward and the task statistics after this outcome.

    Normalisation uses the statistics from before this outcome, and only once `min_count`
    feasible outcomes were seen (earlier the raw reward is used). The normalised reward is
    clipped to [-1, 1] so it stays on the scale of the infeasible penalty.

    Args:
        feasible: compiled, correct and not rejected.
        latency_ms: this attempt's latency.
        best_before_ms: the best feasible latency before this attempt.
        stats: running statistics of raw rewards of feasible outcomes on this task.
        min_count: observations needed before normalising.
        min_std: floor of the deviation, so a near-constant history does not blow rewards up.

    Returns:
        (reward, updated stats); infeasible outcomes leave the statistics unchanged.
    """
    if not feasible:
        return -1.0, stats
    raw = raw_refine_reward(True, latency_ms, best_before_ms)
    if stats.n >= min_count:
        reward = (raw - stats.mean) / max(stats.std, min_std)
        reward = max(-1.0, min(1.0, reward))
    else:
        reward = raw
    return reward, stats.push(raw)


def stage_reward(
    stage: str,
    feasible: bool,
    latency_ms: float | None,
    best_before_ms: float | None,
    stats: RewardStats,
) -> tuple[float, RewardStats]:
    """Dispatch on stage; returns (reward, updated refine statistics)."""
    if stage == "draft":
        return draft_reward(feasible), stats
    if stage == "refine":
        return refine_reward(feasible, latency_ms, best_before_ms, stats)
    raise ValueError(f"unknown stage {stage!r}; valid stages: {', '.join(STAGES)}")
