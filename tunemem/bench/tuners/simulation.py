"""Kernel Tuner's simulation mode for `bench tuners`: caches it can replay, runs of its own
strategies (or ours) on them, and the scores of a run.

A recorded cache becomes a plain-JSON simulation cache holding only its measured
configurations: failed ones are left out of the space, as `tune_cache` itself does (it
restricts the space to the cache's valid entries), so a failure costs no strategy an
evaluation. Old-layout caches (no `problem_size`, parameters only in the keys) are rewritten in
the current layout, with problem size [1] when none is recorded.

A run's trace is the time of each distinct configuration in the order it was first evaluated
(Kernel Tuner's results repeat configurations served again from the cache; those cost no
evaluation). The methodology score is the autotuning-methodology package's (its calculated
random-search-without-replacement baseline and its standardisation: (strategy - random) /
(optimum - random) per evaluation, averaged over the evaluations 1..B).
"""

from __future__ import annotations

import json
import math
import random
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tunemem.kernels.runners.replay import Recording

KT_STRATEGIES = (
    "random_sample",
    "genetic_algorithm",
    "bayes_opt",
    "pso",
    "simulated_annealing",
    "adaptive_tabu_greywolf",
    "hybrid_vndx",
)


def simulation_cache(recording: Recording, path: Path) -> Path:
    """Write the recording's measured configurations as a Kernel Tuner cache at `path`."""
    names = recording.param_names
    cache: dict[str, dict[str, Any]] = {}
    for key, latency in recording.feasible().items():
        cache[",".join(str(v) for v in key)] = {
            **dict(zip(names, key, strict=True)),
            "time": latency,
        }
    problem = recording.task.signature.get("problem_size") or [1]
    document = {
        "device_name": recording.context.chip_raw or recording.context.chip,
        "kernel_name": recording.task.kernel or recording.task.op,
        "problem_size": problem,
        "tune_params_keys": names,
        "tune_params": {name: list(recording.space[name]) for name in names},
        "objective": "time",
        "cache": cache,
    }
    path.write_text(json.dumps(document))
    return path


def run_cache(recording: Recording, results: Sequence[dict[str, Any]], path: Path) -> Path:
    """The cache file Kernel Tuner writes for a run (`cache=`): only the configurations the run
    evaluated, in the order it evaluated them, with the recording's device and problem."""
    names = recording.param_names
    document = json.loads(simulation_cache(recording, path).read_text())
    evaluated: dict[str, dict[str, Any]] = {}
    for result in results:
        key = tuple(result.get(name) for name in names)
        latency = recording.feasible().get(key)
        if latency is not None:
            evaluated.setdefault(
                ",".join(str(v) for v in key),
                {**dict(zip(names, key, strict=True)), "time": latency},
            )
    document["cache"] = evaluated
    path.write_text(json.dumps(document))
    return path


def trace_of(results: Sequence[dict[str, Any]], names: Sequence[str]) -> list[float | None]:
    """Times of the distinct configurations of a run, in first-evaluation order."""
    seen: set[tuple[Any, ...]] = set()
    trace: list[float | None] = []
    for result in results:
        key = tuple(result.get(name) for name in names)
        if key in seen:
            continue
        seen.add(key)
        time = result.get("time")
        if "__error__" not in result and isinstance(time, int | float):
            trace.append(float(time))
        else:
            trace.append(None)
    return trace


def run_strategy(
    cache: Path, names: Sequence[str], strategy: Any, budget: int, seed: int
) -> list[float | None]:
    """One Kernel Tuner run in simulation mode; its trace (at most `budget` long)."""
    return trace_of(run_results(cache, strategy, budget, seed), names)[:budget]


def run_results(cache: Path, strategy: Any, budget: int, seed: int) -> list[dict[str, Any]]:
    """One Kernel Tuner run in simulation mode; Kernel Tuner's own result list.

    Kernel Tuner's strategies draw from the process's global random state (its `seed` reaches
    only pymoo's), so the run seeds both global generators from `seed` and puts them back after:
    the same seed gives the same run whatever ran before it."""
    from kernel_tuner import tune_cache

    saved = random.getstate(), np.random.get_state()
    random.seed(seed)
    np.random.seed(seed)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results, _ = tune_cache(
                str(cache),
                strategy=strategy,
                strategy_options={"max_fevals": budget},
                quiet=True,
                seed=seed,
            )
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
    return list(results)


def best_so_far(trace: Sequence[float | None], length: int) -> list[float]:
    """The best time after each evaluation 1..length (a run that stopped early keeps its
    best; before anything feasible: infinity)."""
    out: list[float] = []
    best = math.inf
    for i in range(length):
        if i < len(trace) and trace[i] is not None:
            best = min(best, trace[i] or math.inf)
        out.append(best)
    return out


def fraction_at(trace: Sequence[float | None], optimum: float, budget: int) -> float:
    best = best_so_far(trace, budget)[-1]
    return optimum / best if math.isfinite(best) else 0.0


def evals_to(trace: Sequence[float | None], optimum: float, level: float) -> int | None:
    """Evaluations until the best reaches `level` of the optimum, or None within the trace."""
    for i, best in enumerate(best_so_far(trace, len(trace)), 1):
        if optimum / best >= level - 1e-12:
            return i
    return None


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def random_expectation(times: Sequence[float], budgets: Sequence[int]) -> dict[str, float]:
    """Exact expected fraction of the optimum of uniform random search without replacement."""
    ordered = sorted(times)
    n = len(ordered)
    optimum = ordered[0]
    out: dict[str, float] = {}
    for budget in budgets:
        b = min(budget, n)
        # P(the best of b draws is the i-th best) = C(n-1-i, b-1) / C(n, b), i from 0.
        log_total = _log_comb(n, b)
        out[str(budget)] = sum(
            math.exp(_log_comb(n - 1 - i, b - 1) - log_total) * optimum / ordered[i]
            for i in range(n - b + 1)
        )
    return out


class _SpaceStats:
    """What the package's random baseline reads of a search space (minimised times)."""

    minimization = True

    def __init__(self, times: Sequence[float]) -> None:
        ordered = np.sort(np.asarray(times, dtype=float))
        self.objective_performances_total_sorted = ordered
        self.objective_performances_total_sorted_nan = ordered
        self._optimum = float(ordered[0])

    def total_performance_absolute_optimum(self) -> float:
        return self._optimum


def methodology_score(times: Sequence[float], curve: Sequence[float]) -> float:
    """The autotuning-methodology score of a mean best-so-far curve over evaluations 1..B."""
    from autotuning_methodology.baseline import RandomSearchCalculatedBaseline

    baseline = RandomSearchCalculatedBaseline(_SpaceStats(times))  # type: ignore[arg-type]
    fevals = np.arange(1, len(curve) + 1)
    finite = np.asarray([c if math.isfinite(c) else max(times) for c in curve], dtype=float)
    standardised = baseline.get_standardised_curve(fevals, finite, x_type="fevals")
    return float(np.mean(standardised))
