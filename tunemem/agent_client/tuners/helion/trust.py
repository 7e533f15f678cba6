"""Whether the memory's configurations for a new shape can be trusted without Helion's search
(pure: no Helion, no I/O; the memory-first mode, `memory_first.py`).

The memory-first mode times only the memory's top candidates for a new shape and keeps the
best, which is fast when the best configuration carries over from the remembered shapes and
wrong when it does not. Three checks decide, each over the remembered timings of the kernel:

- enough candidates: the ranking offers at least `min_candidates` configurations;
- a near shape: the nearest remembered shape is within `max_distance` (summed `|log2|` size
  ratios, `ranking.shape_distance`; another chip counts as `other_device_penalty` more);
- a flat optimum there: at least `min_near_best` configurations reached `near_best` of that
  shape's best time. A memory-bound kernel (softmax, RMSNorm) has many near-best
  configurations and a remembered good one stays good; a matmul's best tiling is a lone peak
  (one configuration within 0.9 of the best at 1024^3 on an H100) that moves with the shape.

Where a check fails, the mode runs Helion's own search, seeded with the same candidates. The
thresholds were set on the H100 logs of bench/results/helion/ runs 1-3 (softmax, RMSNorm and
matmul, before this mode existed): they are a judgement from those logs, not fitted to a later
run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tunemem.agent_client.tuners.helion.ranking import Timing, config_key, shape_distance

__all__ = ["TrustPolicy", "Trust", "judge"]


@dataclass(frozen=True, kw_only=True)
class TrustPolicy:
    """When the memory's candidates are used without Helion's search (see the module)."""

    max_distance: float = 6.0
    """The farthest the nearest remembered shape may be (summed |log2| size ratios)."""
    near_best: float = 0.9
    """A configuration is near-best on a shape when it reached this share of the best speed."""
    min_near_best: int = 3
    """Near-best configurations needed on the nearest remembered shape."""
    min_candidates: int = 2
    """Candidates the ranking must offer (2 at least: Helion's finite search needs two)."""
    other_device_penalty: float = 2.0
    """Added to the distance of a shape remembered on another chip."""

    def __post_init__(self) -> None:
        if not (self.max_distance >= 0 and math.isfinite(self.max_distance)):
            raise ValueError(f"max_distance must be a finite number >= 0, not {self.max_distance}")
        if not 0 < self.near_best <= 1:
            raise ValueError(f"near_best must be in (0, 1], not {self.near_best}")
        if self.min_near_best < 1:
            raise ValueError(f"min_near_best must be at least 1, not {self.min_near_best}")
        if self.min_candidates < 2:
            # Helion's finite search (the candidates' timing) takes two configurations or more.
            raise ValueError(f"min_candidates must be at least 2, not {self.min_candidates}")


@dataclass(frozen=True)
class Trust:
    """The verdict, with the figures it rests on."""

    trusted: bool
    reason: str
    nearest_shape: tuple[int, ...] | None = None
    nearest_device: str | None = None
    distance: float | None = None
    near_best: int = 0
    timed_there: int = 0
    candidates: int = 0


def judge(
    timings: Iterable[Timing],
    *,
    kernel: str,
    shape: Sequence[int],
    device: str,
    candidates: int,
    policy: TrustPolicy | None = None,
) -> Trust:
    """Decide whether `candidates` configurations ranked from `timings` may stand in for
    Helion's search on `kernel` at `shape` on `device` (see the module)."""
    policy = policy or TrustPolicy()
    target = tuple(int(x) for x in shape)
    per_scope: dict[tuple[tuple[int, ...], str], dict[str, float]] = {}
    for t in timings:
        if t.kernel != kernel or not (t.time_ms > 0 and math.isfinite(t.time_ms)):
            continue
        slot = per_scope.setdefault((tuple(t.shape), t.device), {})
        key = config_key(t.config)
        slot[key] = min(t.time_ms, slot.get(key, math.inf))
    if not per_scope:
        return Trust(False, "the memory holds no timings of this kernel", candidates=candidates)

    def distance(scope: tuple[tuple[int, ...], str]) -> float:
        penalty = 0.0 if scope[1] == device else policy.other_device_penalty
        return shape_distance(target, scope[0]) + penalty

    nearest = min(per_scope, key=lambda scope: (distance(scope), -len(per_scope[scope])))
    times = per_scope[nearest]
    best = min(times.values())
    near = sum(1 for ms in times.values() if best / ms >= policy.near_best)
    away = round(distance(nearest), 4)

    def verdict(trusted: bool, reason: str) -> Trust:
        return Trust(trusted, reason, nearest[0], nearest[1], away, near, len(times), candidates)

    where = f"{list(nearest[0])} on {nearest[1]}"
    if candidates < policy.min_candidates:
        return verdict(False, f"{candidates} candidates (fewer than {policy.min_candidates})")
    if away > policy.max_distance:
        return verdict(
            False,
            f"the nearest remembered shape, {where}, is {away:.2f} away "
            f"(more than {policy.max_distance:g})",
        )
    if near < policy.min_near_best:
        return verdict(
            False,
            f"at {where} only {near} of {len(times)} configurations reached "
            f"{policy.near_best:g} of the best (a lone optimum, fewer than {policy.min_near_best})",
        )
    return verdict(
        True, f"{near} of {len(times)} configurations near the best at {where}, {away:.2f} away"
    )
