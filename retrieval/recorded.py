"""Recorded reach: how far lessons' configurations get on the recorded search spaces in memory.

Pure aggregation over plain data, for the generalised value (`retrieval.generalised`):

- `lesson_reaches`: for each configuration lesson and each chip with a recorded space of the
  same op and the same parameter names, the fraction of that space's optimum the lesson's
  configuration reaches (the mean over that chip's spaces when it has several);
- `source_reaches`: those reaches pooled per (source chip, other chip) over all of the source's
  lessons, any kernel: a source's track record on each chip;
- `chip_agreement`: the rank correlation of the reaches on two chips over the lessons recorded
  on both: whether the two chips favour the same configurations.

These are the transfer audit's optimum fractions; the ranking and the audit read the same
evidence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from retrieval.transfer import SearchSpace, optimum_fraction, spearman


def reach_reward(fraction: float) -> float:
    """A recorded optimum fraction f in [0, 1] on the reward scale: 2f - 1 (infeasible: -1)."""
    return 2.0 * min(1.0, max(0.0, fraction)) - 1.0


@dataclass(frozen=True)
class SourceReach:
    """Pooled reaches of one source chip's lessons on one other chip: n and reward sum."""

    n: int
    reward_sum: float


@dataclass(frozen=True)
class RecordedSpace:
    """A stored trajectory seen as a search space: chip, op, parameter names, latencies."""

    trajectory_id: str
    chip: str
    op: str
    keys: frozenset[str]
    space: SearchSpace


@dataclass(frozen=True)
class ConfigLesson:
    """A lesson carrying a configuration: its id, source chip, op and the configuration."""

    lesson_id: str
    source_chip: str | None
    op: str
    config: Mapping[str, Any]


def lesson_reaches(
    lessons: Iterable[ConfigLesson], spaces: Iterable[RecordedSpace]
) -> dict[str, dict[str, float]]:
    """lesson id -> chip -> mean optimum fraction over that chip's matching spaces."""
    by_space: dict[tuple[str, frozenset[str]], list[RecordedSpace]] = {}
    for space in spaces:
        if space.space.optimum_ms is not None:
            by_space.setdefault((space.op, space.keys), []).append(space)
    out: dict[str, dict[str, float]] = {}
    for lesson in lessons:
        matching = by_space.get((lesson.op, frozenset(lesson.config)), [])
        sums: dict[str, list[float]] = {}
        for space in matching:
            fraction, _ = optimum_fraction(lesson.config, space.space)
            sums.setdefault(space.chip, []).append(fraction)
        if sums:
            out[lesson.lesson_id] = {chip: sum(v) / len(v) for chip, v in sums.items()}
    return out


def source_reaches(
    lessons: Iterable[ConfigLesson], reaches: Mapping[str, Mapping[str, float]]
) -> dict[str, dict[str, SourceReach]]:
    """source chip -> other chip -> pooled reaches (count, sum of 2f - 1) of its lessons."""
    pooled: dict[str, dict[str, list[float]]] = {}
    for lesson in lessons:
        if not lesson.source_chip:
            continue
        for chip, fraction in reaches.get(lesson.lesson_id, {}).items():
            if chip == lesson.source_chip:
                continue
            row = pooled.setdefault(lesson.source_chip, {}).setdefault(chip, [0.0, 0.0])
            row[0] += 1
            row[1] += reach_reward(fraction)
    return {
        source: {chip: SourceReach(int(n), total) for chip, (n, total) in row.items()}
        for source, row in pooled.items()
    }


def chip_agreement(
    reaches: Mapping[str, Mapping[str, float]], first: str, second: str, min_common: int = 3
) -> tuple[float | None, int]:
    """(Spearman correlation of the reaches on two chips, lessons recorded on both).

    None when fewer than `min_common` lessons are recorded on both, or a side is constant.
    """
    common = sorted(lid for lid, row in reaches.items() if first in row and second in row)
    if len(common) < min_common:
        return None, len(common)
    xs = [reaches[lid][first] for lid in common]
    return spearman(xs, [reaches[lid][second] for lid in common]), len(common)
