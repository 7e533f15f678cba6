"""`tunemem bench tuners`: the tunemem Kernel Tuner strategy against Kernel Tuner's own
strategies, in Kernel Tuner's simulation mode (`tune_cache` replays a cache instead of a GPU).

Tasks are the caches under `--caches` (one task per kernel family and chip, as in `bench
learning`). For every task, seed and strategy, every arm searches the same space: the task's
measured configurations (failed ones left out, so they cost no arm an evaluation).

- Kernel Tuner's strategies run once per budget (some adapt to `max_fevals`), seeded.
- `tunemem` (`agent_client.tuners.kernel_tuner.MemoryStrategy`) runs against a fresh memory
  behind a real HTTP server, filled leave-one-chip-out: first the caches of `--sources`, then
  the family's other chips (in a seeded order); the task's own cache never enters. How each
  source fills it is the memory mode (`MEMORY_MODES`):
  - `caches`: tuned by the strategy in simulation mode with the memory as it is (its outcomes
    reported, its run uploaded), then its whole cache ingested;
  - `self-fed`: only tuned by the strategy (`--source-budget` evaluations, outcomes reported,
    run uploaded): the memory holds what the strategy itself chose to time, nothing else;
  - `kt-runs`: tuned by one of Kernel Tuner's strategies (`--source-strategy`) and its run's
    cache file (only the configurations it evaluated) ingested, as a user ingests the caches
    their tuning scripts wrote.
  The target is then tuned once with the largest budget: the strategy does not look at
  `max_fevals`, so its first B evaluations are its run with budget B.

Per task and on average: the fraction of the optimum at each budget, evaluations to 90 % and
95 % of it (from the largest-budget runs), and the autotuning-methodology score (the
package's random baseline, averaged over evaluations 1..B of the mean best-so-far curve).
`random_exact` is the exact expectation of random sampling without replacement.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tunemem.bench.common.arms import SERVICE_SETTINGS
from tunemem.bench.common.memory_server import LiveService
from tunemem.bench.common.results import provenance, write_result
from tunemem.bench.learning.tasks import Task, discover_tasks
from tunemem.bench.tuners.simulation import (
    best_so_far,
    evals_to,
    fraction_at,
    methodology_score,
    random_expectation,
    run_cache,
    run_results,
    run_strategy,
    simulation_cache,
)

DEFAULT_BUDGETS = (5, 10, 20, 50, 100)
# The memory as a long-running server holds it: a target's first suggest waits (up to two
# minutes) for the performance model of the family's recorded spaces, trained in the
# background after the sources were ingested, instead of going without it.
TUNERS_SERVICE_SETTINGS = {**SERVICE_SETTINGS, "model_wait_s": 120.0}
LEVELS = {"90": 0.9, "95": 0.95}
MEMORY_MODES = ("caches", "self-fed", "kt-runs")


def source_order(tasks: list[Task], seed: int) -> list[Task]:
    ordered = sorted(tasks, key=lambda t: t.name)
    random.Random(seed).shuffle(ordered)
    return ordered


class Arena:
    """The tasks with their simulation caches, and the runs of every arm on them."""

    def __init__(
        self,
        tasks: list[Task],
        sources: list[Task],
        folder: Path,
        k: int,
        memory: str = "caches",
        source_strategy: str = "genetic_algorithm",
    ) -> None:
        if memory not in MEMORY_MODES:
            raise ValueError(f"unknown memory mode {memory!r}; valid: {', '.join(MEMORY_MODES)}")
        self.tasks = tasks
        self.sources = sources
        self.k = k
        self.memory = memory
        self.source_strategy = source_strategy
        self.folder = folder
        self.caches = {
            t.name: simulation_cache(t.recording, folder / f"{i}.json")
            for i, t in enumerate(tasks + sources)
        }
        self._embedder: Any = None

    def kernel_tuner(self, task: Task, strategy: str, budget: int, seed: int) -> list[float | None]:
        return run_strategy(
            self.caches[task.name], task.recording.param_names, strategy, budget, seed
        )

    def _tune(self, url: str, task: Task, budget: int, seed: int) -> list[float | None]:
        from tunemem.agent_client.tuners.kernel_tuner import MemoryStrategy

        strategy = MemoryStrategy(url=url, k=self.k, chip=task.chip, seed=seed, warn=_quiet)
        return run_strategy(
            self.caches[task.name], task.recording.param_names, strategy, budget, seed
        )

    def tunemem(
        self, task: Task, budget: int, source_budget: int, seed: int
    ) -> tuple[list[float | None], dict[str, Any]]:
        """The target's run after the memory is filled leave-one-chip-out (module docstring)."""
        if self._embedder is None:
            from tunemem.memory_service.core.embedding.factory import create_embedder

            self._embedder = create_embedder("minilm")
        family = [t for t in self.tasks if t.family == task.family and t.chip != task.chip]
        live = LiveService(TUNERS_SERVICE_SETTINGS, embedder=self._embedder)
        started = time.perf_counter()
        try:
            for source in sorted(self.sources, key=lambda t: t.name) + source_order(family, seed):
                self._fill(live, source, source_budget, seed)
            filled = time.perf_counter()
            counts = live.service.counts()
            trace = self._tune(live.url, task, budget, seed)
            info = {
                "memory": [t.name for t in family] + [t.name for t in self.sources],
                "memory_mode": self.memory,
                "memory_counts": counts,
                "fill_s": round(filled - started, 1),
                "run_s": round(time.perf_counter() - filled, 1),
            }
        finally:
            live.close()
        return trace, info

    def _fill(self, live: LiveService, source: Task, budget: int, seed: int) -> None:
        """One source into the memory, as the memory mode says (module docstring)."""
        if self.memory == "kt-runs":
            from tunemem.ingest.readers import read_any

            results = run_results(self.caches[source.name], self.source_strategy, budget, seed)
            path = self.folder / f"run-{source.chip}.json"
            run_cache(source.recording, results[: _first_distinct(results, source, budget)], path)
            live.service.ingest(read_any([path]))
            return
        self._tune(live.url, source, budget, seed)
        if self.memory == "caches":
            live.service.ingest([source.trajectory()])


def _first_distinct(results: list[dict[str, Any]], task: Task, budget: int) -> int:
    """How many of Kernel Tuner's results hold the run's first `budget` distinct
    configurations (results repeat configurations served from the cache)."""
    names = task.recording.param_names
    seen: set[tuple[Any, ...]] = set()
    for i, result in enumerate(results):
        seen.add(tuple(result.get(name) for name in names))
        if len(seen) > budget:
            return i
    return len(results)


def _quiet(message: str) -> None:
    """Warnings of the strategy during a benchmark go to the result, not the terminal."""
    _WARNINGS.append(message)


_WARNINGS: list[str] = []


def _mean_std(values: list[float]) -> dict[str, Any]:
    return {
        "mean": statistics.fmean(values),
        "std": statistics.pstdev(values) if len(values) > 1 else 0.0,
        "by_seed": values,
    }


def _hits(traces: list[list[float | None]], optimum: float, level: float) -> dict[str, Any]:
    found = [evals_to(trace, optimum, level) for trace in traces]
    reached = [n for n in found if n is not None]
    return {
        "median": statistics.median(reached) if len(reached) * 2 > len(found) else None,
        "mean_reached": statistics.fmean(reached) if reached else None,
        "reached": len(reached),
        "of": len(found),
    }


def score_task(
    task: Task,
    by_budget: dict[int, list[list[float | None]]],
    budgets: list[int],
) -> dict[str, Any]:
    """Fractions per budget (mean ± std over seeds), evaluations to 90/95 % and the score."""
    optimum = task.optimum_ms
    times = list(task.recording.feasible().values())
    top = max(budgets)
    longest = by_budget[top]
    curve = [
        statistics.fmean(column)
        for column in zip(*(best_so_far(t, top) for t in longest), strict=True)
    ]
    return {
        "fraction_at": {
            str(b): _mean_std([fraction_at(t, optimum, b) for t in by_budget[b]]) for b in budgets
        },
        "evals_to": {name: _hits(longest, optimum, level) for name, level in LEVELS.items()},
        "score": methodology_score(times, curve),
        "seeds": len(longest),
    }


def run_tuners_bench(
    caches: list[Path],
    sources: list[Path],
    budgets: list[int],
    seeds: int,
    out: Path,
    strategies: list[str],
    k: int,
    source_budget: int | None,
    command: str,
    progress: Callable[[str], None] = print,
    memory: str = "caches",
    source_strategy: str = "genetic_algorithm",
) -> dict[str, Any]:
    """Run every arm on every task; write `out` (JSON), its Markdown and plot beside it."""
    from tunemem.bench.tuners.report import held, markdown, plot

    budgets = sorted(set(budgets))
    tasks = discover_tasks(caches)
    extra = discover_tasks(sources) if sources else []
    names = {t.name for t in tasks}
    extra = [t for t in extra if t.name not in names]
    result: dict[str, Any] = {
        "benchmark": "tuners",
        **provenance(command, list(range(seeds)), "replayed"),
        "settings": {
            "budgets": budgets,
            "seeds": seeds,
            "k": k,
            "source_budget": source_budget or max(budgets),
            "memory": memory,
            "source_strategy": source_strategy if memory == "kt-runs" else None,
            "strategies": ["tunemem", *strategies],
            "caches": [str(p) for p in caches],
            "sources": [str(p) for p in sources],
            "failed_configurations": "left out of the space (as tune_cache does): they cost "
            "no arm an evaluation",
            "score": "autotuning_methodology 1.1.0 RandomSearchCalculatedBaseline, standardised "
            "curve averaged over evaluations 1..max budget",
        },
        "tasks": {},
    }
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tunemem-tuners-") as folder:
        arena = Arena(tasks, extra, Path(folder), k, memory, source_strategy)
        for task in tasks:
            entry: dict[str, Any] = {"optimum_ms": task.optimum_ms, "arms": {}}
            times = list(task.recording.feasible().values())
            entry["space"] = len(times)
            entry["random_exact"] = random_expectation(times, budgets)
            runs: dict[int, list[list[float | None]]] = {}
            fills = []
            for seed in range(seeds):
                trace, info = arena.tunemem(task, max(budgets), source_budget or max(budgets), seed)
                fills.append(info)
                for b in budgets:
                    runs.setdefault(b, []).append(trace[:b])
            entry["arms"]["tunemem"] = score_task(task, runs, budgets)
            entry["arms"]["tunemem"]["memory"] = fills
            progress(f"{task.name}: tunemem {_line(entry['arms']['tunemem'], budgets)}")
            for strategy in strategies:
                runs = {
                    b: [arena.kernel_tuner(task, strategy, b, seed) for seed in range(seeds)]
                    for b in budgets
                }
                entry["arms"][strategy] = score_task(task, runs, budgets)
                progress(f"{task.name}: {strategy} {_line(entry['arms'][strategy], budgets)}")
            result["tasks"][task.name] = entry
    result["summary"] = summary(result["tasks"], budgets)
    result["memory_held"] = held(result["settings"])
    result["warnings"] = sorted(set(_WARNINGS))
    result["wall_s"] = round(time.perf_counter() - started, 1)
    write_result(out.parent, out.stem, result, markdown(result))
    plot(result, out.with_suffix(".png"))
    return result


def merge_results(parts: list[Path], out: Path, command: str) -> dict[str, Any]:
    """One result from runs on disjoint task sets with the same settings (e.g. one process per
    kernel family, each filling its memories from its own family): tasks joined, summary,
    Markdown and plot made again."""
    import json

    from tunemem.bench.tuners.report import held, markdown, plot

    loaded = [json.loads(p.read_text()) for p in parts]
    first = loaded[0]
    keys = ("budgets", "seeds", "k", "source_budget", "strategies", "sources", "memory")
    for other in loaded[1:]:
        if any(other["settings"].get(key) != first["settings"].get(key) for key in keys):
            raise ValueError("the results to merge were run with different settings")
    result = dict(first)
    if len({r.get("code_version") for r in loaded}) > 1:
        raise ValueError("the results to merge were run on different code versions")
    result.update(provenance(command, list(range(first["settings"]["seeds"])), "replayed"))
    result["code_version"] = first.get("code_version")  # the parts' code, not the merge's
    result["settings"] = {
        **first["settings"],
        "caches": [c for r in loaded for c in r["settings"]["caches"]],
    }
    result["tasks"] = {name: t for r in loaded for name, t in r["tasks"].items()}
    result["summary"] = summary(result["tasks"], list(first["settings"]["budgets"]))
    result["memory_held"] = held(result["settings"])
    result["warnings"] = sorted({w for r in loaded for w in r.get("warnings", [])})
    result["wall_s"] = round(sum(r["wall_s"] for r in loaded), 1)
    result["parts"] = [
        {"command": r["command"], "code_version": r.get("code_version"), "wall_s": r["wall_s"]}
        for r in loaded
    ]
    write_result(out.parent, out.stem, result, markdown(result))
    plot(result, out.with_suffix(".png"))
    return result


def _line(arm: dict[str, Any], budgets: list[int]) -> str:
    cells = " ".join(f"@{b} {arm['fraction_at'][str(b)]['mean']:.3f}" for b in budgets)
    return f"{cells} score {arm['score']:.3f}"


def summary(tasks: dict[str, Any], budgets: list[int]) -> dict[str, dict[str, Any]]:
    """Per arm: the means over tasks (and `random_exact`, the exact random expectation)."""
    arms = list(next(iter(tasks.values()))["arms"]) if tasks else []
    out: dict[str, dict[str, Any]] = {}
    for arm in arms:
        entries = [t["arms"][arm] for t in tasks.values()]
        means: dict[str, Any] = {
            str(b): statistics.fmean(e["fraction_at"][str(b)]["mean"] for e in entries)
            for b in budgets
        }
        means["range"] = {str(b): _seed_range(entries, b) for b in budgets}
        means["score"] = statistics.fmean(e["score"] for e in entries)
        for name in LEVELS:
            reached = [e["evals_to"][name]["median"] for e in entries]
            means[f"evals_to_{name}"] = (
                statistics.fmean(r for r in reached if r is not None)
                if all(r is not None for r in reached)
                else None
            )
            means[f"tasks_reaching_{name}"] = sum(r is not None for r in reached)
        out[arm] = means
    out["random_exact"] = {
        str(b): statistics.fmean(t["random_exact"][str(b)] for t in tasks.values()) for b in budgets
    }
    return out


def _seed_range(entries: list[dict[str, Any]], budget: int) -> list[float] | None:
    """[lowest, highest] over seeds of the mean over tasks at a budget (seed i of every task
    is one run of the whole benchmark); None for results written before seeds were kept."""
    columns = [e["fraction_at"][str(budget)].get("by_seed") for e in entries]
    if any(c is None for c in columns):
        return None
    per_seed = [statistics.fmean(seed) for seed in zip(*columns, strict=True)]
    return [min(per_seed), max(per_seed)]
