"""Transfer statistics between two scopes (chips or backends): pure functions over plain data.

Given each lesson's observed value (n, Q) in a source scope and in a target scope, a pair's
statistics are: the lessons with outcomes on both, the Spearman rank correlation of their
values (ties get average ranks), how often the two sides agree on whether a lesson helped,
and the lessons that helped on the source but hurt on the target. "Helped" and "hurt" are
relative to the neutral value Q0 that an untried lesson starts from.

The optimum fraction of a configuration on a recorded search space is the space's fastest
feasible latency divided by that configuration's latency there; a configuration the space
marks infeasible, or does not hold, reaches 0. The audit asks `measured_reach` instead, which
counts only spaces that measured the configuration (complete recordings first, else the
partial runs that timed it) and says "not measured" (None) where none did.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ScopeValue:
    """A lesson's observed value in one scope for one stage: n outcomes, running value q."""

    n: int
    q: float


@dataclass(frozen=True)
class LessonPairValue:
    """One lesson's values on the source and on the target of a pair."""

    lesson_id: str
    source_q: float
    source_n: int
    target_q: float
    target_n: int


@dataclass
class PairStats:
    """Value transfer from `source` to `target` over the lessons observed on both."""

    source: str
    target: str
    n_common: int
    spearman: float | None
    sign_agreement: float | None
    mean_source: float | None
    mean_target: float | None
    common: list[LessonPairValue] = field(default_factory=list)
    helped_source_hurt_target: list[LessonPairValue] = field(default_factory=list)
    helped_both: list[str] = field(default_factory=list)


def average_ranks(values: Sequence[float]) -> list[float]:
    """Ranks 1..n of `values`; tied values share the average of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        shared = (start + end) / 2.0 + 1.0
        for position in range(start, end + 1):
            ranks[order[position]] = shared
        start = end + 1
    return ranks


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson correlation; None when fewer than two points or either side is constant."""
    if len(xs) != len(ys):
        raise ValueError(f"pearson needs equal lengths, got {len(xs)} and {len(ys)}")
    n = len(xs)
    if n < 2:
        return None
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    syy = sum((y - mean_y) ** 2 for y in ys)
    if sxx <= 0.0 or syy <= 0.0:
        return None
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman rank correlation with ties (Pearson correlation of average ranks).

    None when fewer than two pairs, or when all values on one side are tied: a constant
    ranking says nothing about agreement.
    """
    if len(xs) != len(ys):
        raise ValueError(f"spearman needs equal lengths, got {len(xs)} and {len(ys)}")
    return pearson(average_ranks(xs), average_ranks(ys))


def pair_stats(
    source: str,
    target: str,
    source_values: Mapping[str, ScopeValue],
    target_values: Mapping[str, ScopeValue],
    *,
    neutral: float = 0.0,
    min_n: int = 1,
) -> PairStats:
    """Statistics of one (source, target) pair.

    Args:
        source, target: names of the two scopes (e.g. "a100", "mi250x").
        source_values, target_values: lesson id -> observed value in that scope.
        neutral: the value of a lesson that neither helps nor hurts (Q0).
        min_n: outcomes a lesson needs on each side to count as observed there.
    """
    common_ids = sorted(
        lid
        for lid, value in source_values.items()
        if value.n >= min_n and lid in target_values and target_values[lid].n >= min_n
    )
    common = [
        LessonPairValue(
            lesson_id=lid,
            source_q=source_values[lid].q,
            source_n=source_values[lid].n,
            target_q=target_values[lid].q,
            target_n=target_values[lid].n,
        )
        for lid in common_ids
    ]
    xs = [c.source_q for c in common]
    ys = [c.target_q for c in common]
    agreeing = sum(1 for x, y in zip(xs, ys, strict=True) if (x > neutral) == (y > neutral))
    hurt = [c for c in common if c.source_q > neutral and c.target_q < neutral]
    hurt.sort(key=lambda c: (c.target_q - c.source_q, c.lesson_id))
    return PairStats(
        source=source,
        target=target,
        n_common=len(common),
        spearman=spearman(xs, ys),
        sign_agreement=agreeing / len(common) if common else None,
        mean_source=sum(xs) / len(xs) if xs else None,
        mean_target=sum(ys) / len(ys) if ys else None,
        common=common,
        helped_source_hurt_target=hurt,
        helped_both=[c.lesson_id for c in common if c.source_q > neutral and c.target_q > neutral],
    )


def transfer_matrix(
    values: Mapping[str, Mapping[str, ScopeValue]],
    scopes: Iterable[str] | None = None,
    *,
    neutral: float = 0.0,
    min_n: int = 1,
) -> list[PairStats]:
    """Pair statistics for every ordered pair of distinct scopes.

    Args:
        values: scope name -> lesson id -> observed value.
        scopes: the scopes to pair, in display order (default: every scope in `values`,
            sorted); a scope missing from `values` pairs with no common lessons.
    """
    names = list(scopes) if scopes is not None else sorted(values)
    return [
        pair_stats(
            source,
            target,
            values.get(source, {}),
            values.get(target, {}),
            neutral=neutral,
            min_n=min_n,
        )
        for source in names
        for target in names
        if source != target
    ]


# --------------------------------------------------------------- recorded search spaces
def config_key(params: Mapping[str, Any]) -> str:
    """A canonical key of a configuration: sorted keys, integral floats written as ints."""

    def canonical(value: Any) -> Any:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, list | tuple):
            return [canonical(v) for v in value]
        return value

    return json.dumps({k: canonical(v) for k, v in params.items()}, sort_keys=True, default=str)


@dataclass
class SearchSpace:
    """A recorded search space: configuration key -> latency (ms), None when infeasible."""

    latency: dict[str, float | None]

    @property
    def optimum_ms(self) -> float | None:
        timed = [v for v in self.latency.values() if v is not None and v > 0]
        return min(timed) if timed else None


def optimum_fraction(config: Mapping[str, Any], space: SearchSpace) -> tuple[float, float | None]:
    """(optimum latency / the configuration's latency on `space`, that latency).

    Infeasible, missing or untimed configurations reach 0 (latency None); so does any
    configuration on a space without a feasible timed optimum.
    """
    optimum = space.optimum_ms
    latency = space.latency.get(config_key(config))
    if optimum is None or latency is None or latency <= 0:
        return 0.0, latency
    return min(1.0, optimum / latency), latency


@dataclass(frozen=True)
class MeasuredReach:
    """A configuration's optimum fraction on a target, over the spaces that measured it.

    `coverage` says which: `complete` recordings (the fraction of each one's optimum), or,
    where no complete recording holds the configuration, `partial` runs that timed it (the
    fraction of each run's own best). `latency_ms` and `optimum_ms` are the first such
    space's; `latency_ms` None: it failed there.
    """

    fraction: float
    latency_ms: float | None
    optimum_ms: float | None
    space_id: str
    coverage: str
    n_spaces: int


def measured_reach(
    config: Mapping[str, Any], spaces: Sequence[tuple[str, SearchSpace, bool]]
) -> MeasuredReach | None:
    """The reach of `config` over target spaces `(id, space, complete)`; None where none of
    them measured it (not measured, which is not infeasible).

    A space measured the configuration when it holds it, timed or failed. Complete recordings
    that hold it are used when there are any; otherwise the partial runs that timed it.
    """
    key = config_key(config)
    holding = [(sid, space, complete) for sid, space, complete in spaces if key in space.latency]
    chosen = [item for item in holding if item[2]] or holding
    if not chosen:
        return None
    fractions = [optimum_fraction(config, space)[0] for _, space, _ in chosen]
    first_id, first, complete = chosen[0]
    return MeasuredReach(
        fraction=sum(fractions) / len(fractions),
        latency_ms=first.latency.get(key),
        optimum_ms=first.optimum_ms,
        space_id=first_id,
        coverage="complete" if complete else "partial",
        n_spaces=len(chosen),
    )
