"""Finding the parameter settings that make configurations fail.

Single values first, then pairs of values. A setting is kept when, over enough
configurations, it fails at least `min_rate` of the time, or at least `RISK_RATIO` times as
often as the whole space (and in at least `MIN_RISK_RATE` of its configurations) — scattered
resource failures are found that way. A pair that contains a value which alone fails at
`min_rate` adds nothing and is skipped. Rules are ranked by how many failures they explain.

Pairs are sought among the first `MAX_PAIR_PARAMS` parameters only (real spaces have fewer),
and a candidate keeps its codes, not a mask over every attempt, so time stays O(P^2 n) with P
bounded and memory O(n) whatever a file holds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from tunemem.ingest.records import TrajectoryRecord

RISK_RATIO = 3.0
MIN_RISK_RATE = 0.1
MIN_RISK_FAILURES = 5
MAX_PAIR_PARAMS = 32


@dataclass(frozen=True)
class FailureRule:
    """A setting that mostly fails: {param: value, ...}, over n configurations."""

    avoid: dict[str, Any]
    n: int
    n_failed: int
    failure_rate: float
    error_category: str
    example: str | None


def _codes(values: list[Any]) -> tuple[list[Any], np.ndarray] | None:
    if not all(isinstance(v, int | float | str | bool) for v in values):
        return None
    keys = [str(v) for v in values]
    uniques, codes = np.unique(np.array(keys, dtype=object).astype(str), return_inverse=True)
    firsts: dict[str, Any] = {}
    for i, key in enumerate(keys):
        firsts.setdefault(key, values[i])
    return [firsts[u] for u in uniques], codes


def failing_settings(
    traj: TrajectoryRecord,
    params: list[str],
    failed: np.ndarray,
    min_rate: float,
    min_group: int,
    limit: int,
) -> list[FailureRule]:
    """The settings of `params` whose failure rate is at least `min_rate`, best first."""
    attempts = traj.attempts
    encoded: dict[str, tuple[list[Any], np.ndarray]] = {}
    for param in params:
        result = _codes([a.params.get(param) for a in attempts])
        if result is not None and len(result[0]) > 1:
            encoded[param] = result
    base_rate = float(failed.mean()) if len(failed) else 0.0
    risky_rate = max(MIN_RISK_RATE, RISK_RATIO * base_rate)

    def kept(totals: np.ndarray, fails: np.ndarray) -> np.ndarray:
        rate = fails / np.maximum(totals, 1)
        risky = (rate >= risky_rate) & (fails >= MIN_RISK_FAILURES)
        return (totals >= min_group) & ((rate >= min_rate) | risky)

    # (failures, rate, order, setting, ((param codes, code), ...)): masks are built for the
    # few rules kept, never for every candidate.
    found: list[tuple[int, float, int, dict[str, Any], tuple[tuple[np.ndarray, int], ...]]] = []
    chosen_values: set[tuple[str, str]] = set()
    order = 0
    for param, (values, codes) in encoded.items():
        totals = np.bincount(codes, minlength=len(values))
        fails = np.bincount(codes, weights=failed, minlength=len(values))
        for code in np.flatnonzero(kept(totals, fails)):
            value = values[code]
            found.append(
                (
                    int(fails[code]),
                    fails[code] / totals[code],
                    order,
                    {param: value},
                    ((codes, int(code)),),
                )
            )
            if fails[code] >= min_rate * totals[code]:
                chosen_values.add((param, str(value)))
            order += 1
    paired = list(encoded.items())[:MAX_PAIR_PARAMS]
    for (p1, (v1, c1)), (p2, (v2, c2)) in combinations(paired, 2):
        # Only the pairs that occur: len(v1) * len(v2) bins could be n^2.
        pairs, joint = np.unique(c1.astype(np.int64) * len(v2) + c2, return_inverse=True)
        totals = np.bincount(joint, minlength=len(pairs))
        fails = np.bincount(joint, weights=failed, minlength=len(pairs))
        for code in np.flatnonzero(kept(totals, fails)):
            code1, code2 = int(pairs[code]) // len(v2), int(pairs[code]) % len(v2)
            a, b = v1[code1], v2[code2]
            if (p1, str(a)) in chosen_values or (p2, str(b)) in chosen_values:
                continue
            found.append(
                (
                    int(fails[code]),
                    fails[code] / totals[code],
                    order,
                    {p1: a, p2: b},
                    ((c1, code1), (c2, code2)),
                )
            )
            order += 1
    found.sort(key=lambda f: (-f[0], -f[1], f[2]))
    rules = []
    for n_failed, rate, _, avoid, where in found[:limit]:
        mask = np.ones(len(attempts), dtype=bool)
        for codes_of, wanted in where:
            mask &= codes_of == wanted
        members = np.flatnonzero(mask & failed)
        categories = Counter(attempts[int(i)].error_category or "other" for i in members)
        category = sorted(categories.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        example = next(
            (
                attempts[int(i)].error
                for i in members
                if attempts[int(i)].error_category == category
            ),
            None,
        )
        rules.append(FailureRule(avoid, int(mask.sum()), n_failed, float(rate), category, example))
    return rules
