"""Numbers of the learning benchmark, shared by both protocols: per task over seeds, per arm
over tasks (the JSON's top-level `summary`), per kernel family, and the goals.

A run is one (task, arm, seed): the latencies of its attempts in order (None = infeasible) and,
where measured, its ranking quality (`top_1`, `top_3`, `top_5`). Fractions are of the task's
recorded optimum, best so far.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

MILESTONES = (1, 5, 10, 20, 50, 100)
THRESHOLDS = (0.90, 0.95)
TOP_KEYS = ("top_1", "top_3", "top_5", "best_in_memory")


def fractions(curve: list[float | None], optimum: float, budget: int) -> list[float]:
    """Best-so-far fraction of the optimum after each attempt (0 before a feasible one)."""
    best: float | None = None
    out = []
    for latency in curve[:budget]:
        if latency is not None and (best is None or latency < best):
            best = latency
        out.append(optimum / best if best else 0.0)
    return out + [out[-1] if out else 0.0] * (budget - len(out))


def spread(values: list[float]) -> dict[str, float]:
    return {
        "mean": statistics.fmean(values),
        "std": statistics.pstdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
    }


def summarise(runs: list[dict[str, Any]], optimum: float, budget: int) -> dict[str, Any]:
    """One (task, arm) over seeds: milestones, attempts to 90/95%, first feasible, top-k."""
    curves = [fractions(r["curve"], optimum, budget) for r in runs]
    summary: dict[str, Any] = {
        "fraction_at": {
            str(m): spread([c[min(m, budget) - 1] for c in curves]) for m in MILESTONES
        },
        "first_attempt_feasible": statistics.fmean(
            1.0 if r["curve"] and r["curve"][0] is not None else 0.0 for r in runs
        ),
        "mean_curve": [statistics.fmean(c[i] for c in curves) for i in range(budget)],
    }
    for threshold in THRESHOLDS:
        hits = [next((i + 1 for i, f in enumerate(c) if f >= threshold), None) for c in curves]
        reached = [h for h in hits if h is not None]
        summary[f"attempts_to_{int(threshold * 100)}"] = {
            "reached": len(reached),
            "of": len(hits),
            "median": statistics.median(reached) if reached else None,
            "per_seed": hits,
        }
    for key in TOP_KEYS:
        values = [r[key] for r in runs if key in r]
        if values:
            summary[key] = spread(values)
    return summary


def arm_means(entries: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Means over tasks of the per-task seed means: "1".."20", top-k, first feasible."""
    entries = list(entries)
    out = {
        str(m): statistics.fmean(e["fraction_at"][str(m)]["mean"] for e in entries)
        for m in MILESTONES
    }
    for key in TOP_KEYS:
        values = [e[key]["mean"] for e in entries if key in e]
        if values:
            out[key] = statistics.fmean(values)
    out["first_attempt_feasible"] = statistics.fmean(e["first_attempt_feasible"] for e in entries)
    return out


def summary_of(
    results: dict[str, Any], arms: list[str], only: set[str] | None = None
) -> dict[str, dict[str, float]]:
    """arm -> means over the tasks of `results` (restricted to `only` when given)."""
    out = {}
    for arm in arms:
        entries = [
            r["arms"][arm]
            for name, r in results.items()
            if arm in r["arms"] and (only is None or name in only)
        ]
        if entries:
            out[arm] = arm_means(entries)
    return out


def family_means(results: dict[str, Any], arms: list[str]) -> dict[str, dict[str, Any]]:
    """kernel family -> arm -> means over that family's tasks."""
    families = sorted({r["family"] for r in results.values()})
    return {
        family: summary_of(
            results, arms, {name for name, r in results.items() if r["family"] == family}
        )
        for family in families
    }


def goals(
    summary: dict[str, dict[str, float]],
    families: dict[str, dict[str, Any]],
    candidate: str = "default",
    baseline: str = "similarity",
) -> dict[str, bool]:
    """The issue's goals for the candidate arm against similarity-only, on seed means."""
    c, s = summary.get(candidate), summary.get(baseline)
    if not c or not s:
        return {}
    worst = min(
        (f[candidate]["5"] - f[baseline]["5"] for f in families.values() if candidate in f),
        default=0.0,
    )
    out = {
        "beats_similarity_by_0.03_at_5": c["5"] - s["5"] >= 0.03,
        "beats_similarity_by_0.03_at_10": c["10"] - s["10"] >= 0.03,
        "no_family_loses_more_than_0.01_at_5": worst >= -0.01,
        "reaches_0.90_within_5": c["5"] >= 0.90,
        "reaches_0.95_within_10": c["10"] >= 0.95,
        "first_attempt_feasible_0.99": c["first_attempt_feasible"] >= 0.99,
    }
    if "top_3" in c and "top_3" in s:
        out["top_3_beats_similarity"] = c["top_3"] > s["top_3"]
    return out
