"""Recorded reach: how far lessons' configurations get on the recorded search spaces in memory.

Pure aggregation over plain data, for the generalised value (`retrieval.generalised`):

- `lesson_reaches`: for each configuration lesson and each chip with a recorded space of the
  same op and the same parameter names, the fraction of that space's optimum the lesson's
  configuration reaches (the mean over that chip's spaces when it has several);
- `source_reaches`: those reaches pooled per (source chip, other chip) over all of the source's
  lessons, any kernel: a source's track record on each chip;
- `chip_agreement`: the rank correlation of the reaches on two chips over the lessons recorded
  on both: whether the two chips favour the same configurations;
- `setting_effects`: for each parameter-setting lesson ("prefer use_shmem=1", "avoid
  block_size_x=16") and each chip with a recorded space of the same op that has the
  parameter, how much following the lesson speeds configurations up there:
  tanh(ln(median latency of the space's timed configurations / median of those that follow
  it)), on the refine reward's scale: positive where the setting holds on that chip, negative
  where it reverses.

These are the transfer audit's optimum fractions; the ranking and the audit read the same
evidence.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tunemem.retrieval.transfer import SearchSpace, optimum_fraction, spearman


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
    problem: str | None = None  # the problem size as JSON text, when the run named one


@dataclass(frozen=True)
class ConfigLesson:
    """A lesson carrying a configuration: its id, source chip, op and the configuration."""

    lesson_id: str
    source_chip: str | None
    op: str
    config: Mapping[str, Any]


PerSpace = dict[str, dict[str, dict[str, float]]]  # lesson id -> chip -> space id -> number


def lesson_space_reaches(
    lessons: Iterable[ConfigLesson], spaces: Iterable[RecordedSpace]
) -> PerSpace:
    """lesson id -> chip -> space (trajectory id) -> optimum fraction, over matching spaces."""
    by_space: dict[tuple[str, frozenset[str]], list[RecordedSpace]] = {}
    for space in spaces:
        if space.space.optimum_ms is not None:
            by_space.setdefault((space.op, space.keys), []).append(space)
    out: PerSpace = {}
    for lesson in lessons:
        matching = by_space.get((lesson.op, frozenset(lesson.config)), [])
        rows: dict[str, dict[str, float]] = {}
        for space in matching:
            fraction, _ = optimum_fraction(lesson.config, space.space)
            rows.setdefault(space.chip, {})[space.trajectory_id] = fraction
        if rows:
            out[lesson.lesson_id] = rows
    return out


def per_chip(
    rows: Mapping[str, Mapping[str, float]], trust: Mapping[str, float] | None = None
) -> dict[str, float]:
    """chip -> the mean over its spaces, weighted by each space's trust (absent: 1)."""
    out = {}
    for chip, by_space in rows.items():
        weights = {s: (trust or {}).get(s, 1.0) for s in by_space}
        total = sum(weights.values())
        if by_space and total > 0.0:
            out[chip] = sum(weights[s] * v for s, v in by_space.items()) / total
        elif by_space:
            out[chip] = sum(by_space.values()) / len(by_space)
    return out


def lesson_reaches(
    lessons: Iterable[ConfigLesson], spaces: Iterable[RecordedSpace]
) -> dict[str, dict[str, float]]:
    """lesson id -> chip -> mean optimum fraction over that chip's matching spaces."""
    return {lid: per_chip(rows) for lid, rows in lesson_space_reaches(lessons, spaces).items()}


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


@dataclass(frozen=True)
class SettingLesson:
    """A lesson about one parameter's value: prefer it, or avoid it."""

    lesson_id: str
    source_chip: str | None
    op: str
    param: str
    value: Any
    prefer: bool


@dataclass(frozen=True)
class SpaceColumns:
    """A space's timed configurations by column: latencies, and each parameter's values as text."""

    latency: np.ndarray
    values: dict[str, np.ndarray]


def space_columns(space: SearchSpace) -> SpaceColumns:
    latencies: list[float] = []
    rows: list[dict[str, Any]] = []
    for key, latency in space.latency.items():
        if latency is not None and latency > 0:
            latencies.append(latency)
            rows.append(json.loads(key))
    names = set.intersection(*(set(r) for r in rows)) if rows else set()
    return SpaceColumns(
        latency=np.asarray(latencies, dtype=np.float64),
        values={n: np.asarray([str(r[n]) for r in rows], dtype=str) for n in sorted(names)},
    )


def _effect(lesson: SettingLesson, columns: SpaceColumns) -> float | None:
    values = columns.values.get(lesson.param)
    if values is None or not len(values):
        return None
    carries = values == str(lesson.value)
    following = columns.latency[carries if lesson.prefer else ~carries]
    if not len(following) or len(following) == len(values):
        return None
    return math.tanh(math.log(float(np.median(columns.latency)) / float(np.median(following))))


def setting_effect(lesson: SettingLesson, space: SearchSpace) -> float | None:
    """tanh(ln(median of the space / median of the configurations following the lesson)).

    Over the space's timed configurations; following a "prefer" lesson is carrying the
    setting, following an "avoid" one is not carrying it (values compared as text, so 1 and
    "1" are one setting). None when the space lacks the parameter or when every or no timed
    configuration follows the lesson (the effect is not observable there).
    """
    return _effect(lesson, space_columns(space))


def setting_space_effects(
    lessons: Sequence[SettingLesson],
    spaces: Iterable[RecordedSpace],
    cache: dict[str, SpaceColumns] | None = None,
) -> PerSpace:
    """lesson id -> chip -> space (trajectory id) -> `setting_effect` there, over the spaces
    of the lesson's op.

    `cache` (trajectory id -> columns) keeps each space's columns across calls: recorded spaces
    never change once stored.
    """
    cache = {} if cache is None else cache
    wanted = {lesson.op for lesson in lessons}
    by_op: dict[str, list[tuple[str, str, SpaceColumns]]] = {}
    for space in spaces:
        if space.op in wanted:
            if space.trajectory_id not in cache:
                cache[space.trajectory_id] = space_columns(space.space)
            by_op.setdefault(space.op, []).append(
                (space.chip, space.trajectory_id, cache[space.trajectory_id])
            )
    out: PerSpace = {}
    for lesson in lessons:
        rows: dict[str, dict[str, float]] = {}
        for chip, space_id, columns in by_op.get(lesson.op, []):
            effect = _effect(lesson, columns)
            if effect is not None:
                rows.setdefault(chip, {})[space_id] = effect
        if rows:
            out[lesson.lesson_id] = rows
    return out


def setting_effects(
    lessons: Sequence[SettingLesson],
    spaces: Iterable[RecordedSpace],
    cache: dict[str, SpaceColumns] | None = None,
) -> dict[str, dict[str, float]]:
    """lesson id -> chip -> mean `setting_effect` over that chip's spaces of the lesson's op."""
    return {
        lid: per_chip(rows) for lid, rows in setting_space_effects(lessons, spaces, cache).items()
    }
