"""Rank remembered Helion configurations as seeds for a new shape or chip (pure: no Helion,
no I/O).

Pure functions over plain data (standard library only): given timings that
earlier autotunes recorded (kernel, shape, device, configuration, time), pick
the configurations most likely to be fast for a new shape, nearest shape
first. The model is deliberately simple and honest: a configuration's worth on
a remembered shape is its relative speed there (that shape's best time over its
time, 1.0 for the best); its score for the target is the distance-weighted mean
of those relative speeds, shrunk when it was timed on few of the remembered
shapes. Every remembered shape's own best is offered first, nearest first, so
the winner of the closest shape is never ranked out by configurations that are
merely robust.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "Timing",
    "RankedSeed",
    "config_key",
    "shape_distance",
    "rank_seeds",
]


@dataclass(frozen=True)
class Timing:
    """One configuration timed once by an autotuner."""

    kernel: str
    shape: tuple[int, ...]
    device: str
    config: Mapping[str, object]
    time_ms: float


@dataclass(frozen=True)
class RankedSeed:
    """A configuration offered as a seed, with why it was offered."""

    config: dict[str, object]
    score: float
    reason: str
    evidence: list[tuple[tuple[int, ...], str, float]] = field(default_factory=list)


def config_key(config: Mapping[str, object]) -> str:
    """Canonical text of a configuration, equal for equal configurations."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)


def shape_distance(a: Sequence[int], b: Sequence[int]) -> float:
    """Distance between two shapes: summed absolute log2 ratios per dimension.

    Shapes of different rank are far apart (one unit per missing dimension
    on top of the shared ones).
    """
    shared = min(len(a), len(b))
    d = sum(
        abs(math.log2(max(int(x), 1) / max(int(y), 1)))
        for x, y in zip(a[:shared], b[:shared], strict=True)
    )
    return d + abs(len(a) - len(b))


def _relative_speeds(
    timings: Iterable[Timing],
) -> dict[tuple[tuple[int, ...], str], dict[str, tuple[float, Mapping[str, object]]]]:
    """Per (shape, device): config key -> (best time / config time, config)."""
    best_time: dict[tuple[tuple[int, ...], str], dict[str, tuple[float, Mapping[str, object]]]] = {}
    for t in timings:
        if not (t.time_ms > 0 and math.isfinite(t.time_ms)):
            continue
        slot = best_time.setdefault((tuple(t.shape), t.device), {})
        key = config_key(t.config)
        if key not in slot or t.time_ms < slot[key][0]:
            slot[key] = (t.time_ms, t.config)
    rel: dict[tuple[tuple[int, ...], str], dict[str, tuple[float, Mapping[str, object]]]] = {}
    for scope, per_config in best_time.items():
        fastest = min(ms for ms, _ in per_config.values())
        rel[scope] = {k: (fastest / ms, cfg) for k, (ms, cfg) in per_config.items()}
    return rel


def rank_seeds(
    timings: Iterable[Timing],
    *,
    kernel: str,
    shape: Sequence[int],
    device: str,
    k: int = 8,
    other_device_weight: float = 0.5,
    min_relative_speed: float = 0.5,
) -> list[RankedSeed]:
    """Return up to ``k`` configurations to seed an autotune of ``kernel`` at ``shape``.

    Args:
        timings: every remembered timing (other kernels are ignored).
        kernel: the kernel's name; only its own timings count.
        shape: the target shape (the kernel's input sizes, flattened).
        device: the target chip's name; timings on other chips count at
            ``other_device_weight`` of the same distance's weight.
        k: how many seeds at most.
        other_device_weight: weight factor for timings from another chip.
        min_relative_speed: a remembered shape's configurations slower than this
            fraction of that shape's best are not offered on its account.

    Returns:
        Seeds best first. The first ones are the best configuration of each
        remembered shape, nearest shape first (up to half of ``k``); the rest
        are the highest-scoring configurations over all remembered shapes.
        Empty when the memory holds nothing for this kernel.
    """
    target = tuple(int(x) for x in shape)
    rel = _relative_speeds(t for t in timings if t.kernel == kernel)
    if not rel or k <= 0:
        return []

    weights: dict[tuple[tuple[int, ...], str], float] = {}
    for scope in rel:
        scope_shape, scope_device = scope
        w = 1.0 / (1.0 + shape_distance(target, scope_shape))
        if scope_device != device:
            w *= other_device_weight
        weights[scope] = w
    total_weight = sum(weights.values())

    scored: dict[str, RankedSeed] = {}
    for key in {key for per_config in rel.values() for key in per_config}:
        num = 0.0
        den = 0.0
        evidence = []
        config: Mapping[str, object] = {}
        for scope, per_config in rel.items():
            if key in per_config:
                r, config = per_config[key]
                num += weights[scope] * r
                den += weights[scope]
                evidence.append((scope[0], scope[1], round(r, 4)))
        mean_rel = num / den
        support = den / total_weight
        score = mean_rel * (0.5 + 0.5 * support)
        scored[key] = RankedSeed(dict(config), score, "scored", evidence)

    chosen: list[RankedSeed] = []
    taken: set[str] = set()
    by_nearness = sorted(rel, key=lambda scope: -weights[scope])
    for scope in by_nearness:
        if len(chosen) >= max(1, k // 2):
            break
        best_key = max(rel[scope], key=lambda key: rel[scope][key][0])
        if best_key in taken:
            continue
        seed = scored[best_key]
        chosen.append(
            RankedSeed(
                seed.config, seed.score, f"best at {list(scope[0])} on {scope[1]}", seed.evidence
            )
        )
        taken.add(best_key)
    for key, seed in sorted(scored.items(), key=lambda item: (-item[1].score, item[0])):
        if len(chosen) >= k:
            break
        if key in taken:
            continue
        if max(r for _, _, r in seed.evidence) < min_relative_speed:
            continue
        chosen.append(seed)
        taken.add(key)
    return chosen
