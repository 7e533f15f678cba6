"""`tunemem bench learning`: tuning by replay on recorded Kernel Tuner search spaces, with and
without the memory, in two protocols.

- `loo` (leave-one-chip-out): for every task (kernel family, chip) T a fresh service ingests
  the caches of the family's other chips, the agent tunes each of those chips with the same
  budget without seeing that chip's own lessons (so the values it leaves are about transfer),
  then tunes T, whose data was never ingested.
- `lifelong` (`bench.learning.lifelong`): one memory serves a seeded stream of all tasks.

Arms: random search (no memory), similarity-only retrieval, value-driven retrieval without and
with scope back-off (the chain estimate), the generalised value (`retrieval.generalised`:
recorded reach, neighbour chips, source prior), and `default` (no ranking options: what a user
gets); plus the naive-transfer line (each source's best configuration tried once). The agent
reaches the service over HTTP (a real uvicorn server on a free port), like any other client.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tunemem.agent_client.client import MemoryClient
from tunemem.agent_client.proposers import create_proposer
from tunemem.agent_client.run import run_graph
from tunemem.bench.common.arms import ARMS, SERVICE_SETTINGS, WIDEN_K, arm_proposer
from tunemem.bench.common.memory_server import LiveService
from tunemem.bench.common.paths import KERNELTUNER_CACHES, RESULTS_OF
from tunemem.bench.common.results import machine
from tunemem.bench.learning.dirty import true_curve
from tunemem.bench.learning.lifelong import lifelong_report, ranking_quality, run_random, run_stream
from tunemem.bench.learning.noise import MemoryNoise, NoisyMemory
from tunemem.bench.learning.summary import family_means, goals, summarise, summary_of
from tunemem.bench.learning.tasks import Task, discover_tasks, naive_transfer

DEFAULT_CACHES = KERNELTUNER_CACHES
PROTOCOLS = ("loo", "lifelong")
MAX_BUDGET = 100
CLEAN = MemoryNoise()  # the memory is told the recording as it is


def source_order(sources: list[Task], seed: int) -> list[Task]:
    """The order source chips are tuned in (loo): sorted for seed 0, shuffled by other seeds."""
    ordered = sorted(sources, key=lambda t: t.name)
    if seed:
        random.Random(seed).shuffle(ordered)
    return ordered


def run_loo_arm(
    arm: str,
    target: Task,
    sources: list[Task],
    seed: int,
    budget: int,
    k: int,
    factory: Callable[[], LiveService],
    memory: NoisyMemory,
) -> dict[str, Any]:
    """One (arm, seed) on one target: source runs to gather values, then the target run.
    `memory` says what the sources' runs tell the memory (noisy, mislabelled or as recorded)."""
    options = ARMS[arm]
    if options is None:
        return run_random(target, seed, budget)
    live = factory()
    try:
        live.service.ingest([run for s in sources for run in memory.trajectories(s)])
        with MemoryClient(live.url) as client:
            settings: dict[str, Any] = {"seed": seed, "k": k, "widen_k": WIDEN_K}
            settings["options"] = options
            for i, source in enumerate(source_order(sources, seed)):
                # A source run does not see its own chip's lessons: the values it leaves are
                # about how other chips' lessons carry over, which is what the target needs.
                run_graph(
                    memory.runner(source, f"{target.name}-{seed}-src{i}"),
                    create_proposer("structured"),
                    client,
                    budget,
                    run_id=f"{target.name}-{arm}-{seed}-src{i}",
                    hidden_chips=(source.chip,),
                    **settings,
                )
            quality = ranking_quality(client, target, options)
            quality["best_in_memory"] = memory.best_in_memory(target, sources)
            result = run_graph(
                memory.runner(target, f"{target.name}-{seed}"),
                arm_proposer(arm, client, options),
                client,
                budget,
                run_id=f"{target.name}-{arm}-{seed}",
                **settings,
            )
    finally:
        live.close()
    return {
        "curve": true_curve(target.recording, result.attempts),
        "origins": [a["origin"].split(":")[0] for a in result.attempts],
        **quality,
    }


def run_loo(
    tasks: list[Task],
    extra: list[Task],
    arms: list[str],
    seeds: int,
    budget: int,
    k: int,
    factory: Callable[[], LiveService],
    log: Callable[[str], None],
    noise: MemoryNoise = CLEAN,
) -> dict[str, Any]:
    """Leave-one-chip-out over every task that has at least one source of its family."""
    started = time.time()
    plans = [noise.plan(tasks + extra, s) for s in range(seeds)]
    results: dict[str, Any] = {}
    for target in tasks:
        sources = [t for t in tasks + extra if t.family == target.family and t.chip != target.chip]
        if not sources:
            log(f"{target.name}: no source chips of its family, skipped")
            continue
        per_arm = {}
        for arm in arms:
            runs = [
                run_loo_arm(arm, target, sources, s, budget, k, factory, plans[s])
                for s in range(seeds)
            ]
            per_arm[arm] = summarise(runs, target.optimum_ms, budget)
            per_arm[arm]["origins"] = [r["origins"] for r in runs]
            means = per_arm[arm]["fraction_at"]
            log(
                f"{target.name} {arm}: "
                + ", ".join(f"@{m} {means[m]['mean']:.3f}" for m in means)
                + f" ({time.time() - started:.0f}s)"
            )
        results[target.name] = {
            "family": target.family,
            "chip": target.chip,
            "path": str(target.path),
            "sources": [s.chip for s in sources],
            "optimum_ms": target.optimum_ms,
            "arms": per_arm,
            "naive_transfer": naive_transfer(target, sources),
        }
    summary = summary_of(results, arms)
    families = family_means(results, arms)
    transfers = [max(r["naive_transfer"].values(), default=0.0) for r in results.values()]
    return {
        "tasks": results,
        "summary": summary,
        "families": families,
        "goals": goals(summary, families),
        "best_single_transfer": sum(transfers) / len(transfers) if transfers else 0.0,
        "mislabelled": [plan.mislabelled() for plan in plans],
        "dirty": [plan.dirty() for plan in plans],
    }


def run_lifelong(
    tasks: list[Task],
    warmup: list[Task],
    arms: list[str],
    seeds: int,
    budget: int,
    k: int,
    factory: Callable[[], LiveService],
    log: Callable[[str], None],
    noise: MemoryNoise = CLEAN,
) -> dict[str, Any]:
    """Every arm over `seeds` stream orders of the tasks (warm-up tasks first, not scored)."""
    runs: dict[str, list[dict[str, Any]]] = {}
    plans = [noise.plan(tasks + warmup, s) for s in range(seeds)]
    for arm in arms:
        options = ARMS[arm]
        runs[arm] = []
        for seed in range(seeds):
            if options is None:
                from tunemem.bench.learning.lifelong import stream_order

                order = stream_order(tasks, seed)
                runs[arm] += [
                    {"task": t.name, "position": p, **run_random(t, seed, budget)}
                    for p, t in enumerate(order)
                ]
                continue
            runs[arm] += run_stream(
                arm,
                options,
                tasks,
                warmup,
                seed,
                budget,
                k,
                WIDEN_K,
                factory,
                log,
                plans[seed],
                arm_proposer,
            )
    report = lifelong_report(runs, tasks, warmup, budget)
    report["mislabelled"] = [plan.mislabelled() for plan in plans]
    report["dirty"] = [plan.dirty() for plan in plans]
    return report


def run_learning_bench(
    caches: list[Path] | None = None,
    *,
    protocol: str = "loo",
    warmup: list[Path] | None = None,
    sources: list[Path] | None = None,
    seeds: int = 5,
    budget: int = 20,
    out: Path = RESULTS_OF["learning"] / "learning.json",
    k: int = 5,
    quick: bool = False,
    arms: list[str] | None = None,
    note: str = "",
    embedder: str = "minilm",
    log: Callable[[str], None] | None = None,
    noise: MemoryNoise | None = None,
) -> dict[str, Any]:
    """Run one protocol; write JSON (with a top-level `summary` per arm), Markdown and PNG.

    Args:
        caches: folders (or files) of Kernel Tuner caches, searched recursively; the tasks.
        protocol: `loo` or `lifelong`.
        warmup: lifelong only: caches whose tasks run first and are not scored.
        sources: loo only: caches used only as sources, never as targets.
        seeds: seeds (stream orders, source orders) per arm; budget: attempts per task.
        out: the JSON path; `.md` and `.png` are written beside it.
        k: lessons per retrieval; quick: 1 seed, 6 attempts (for tests).
        arms: a subset of ARMS (all by default). note: a line the Markdown carries.
        embedder: the service's embedder (`minilm`, the default, or `hashing`).
        noise: what enters the memory is noisy and/or mislabelled (`bench.learning.noise`);
            what the agent measures and is scored on stays the true recording.
    """
    from tunemem.bench.learning.lifelong_report import write_markdown as lifelong_markdown
    from tunemem.bench.learning.lifelong_report import write_plot as lifelong_plot
    from tunemem.bench.learning.report import learning_held, write_markdown, write_plot
    from tunemem.memory_service.core.embedding.factory import create_embedder

    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; valid: {', '.join(PROTOCOLS)}")
    log = log or (lambda message: print(message, flush=True))
    if not 1 <= budget <= MAX_BUDGET:
        raise ValueError(f"budget {budget}: attempts per task run from 1 to {MAX_BUDGET}")
    if quick:
        seeds, budget = 1, min(budget, 6)
    arms = arms or list(ARMS)
    noise = noise or CLEAN
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise ValueError(f"unknown arms {unknown}; valid: {', '.join(ARMS)}")
    cache_paths = list(caches or [DEFAULT_CACHES])
    tasks = discover_tasks(cache_paths)
    warm = discover_tasks(list(warmup)) if warmup else []
    extra = discover_tasks(list(sources)) if sources else []
    shared_embedder = create_embedder(embedder, None)  # loaded once, shared by every service
    settings = {**SERVICE_SETTINGS, "embedder": embedder}

    def factory() -> LiveService:
        return LiveService(settings, shared_embedder)

    started = time.time()
    if protocol == "loo":
        body = run_loo(tasks, extra, arms, seeds, budget, k, factory, log, noise)
    else:
        body = run_lifelong(tasks, warm, arms, seeds, budget, k, factory, log, noise)
    report = {
        "benchmark": "learning",
        "protocol": protocol,
        "caches": [str(c) for c in cache_paths],
        "warmup": [str(w) for w in warmup or []],
        "extra_sources": [str(s) for s in sources or []],
        "n_scored": len(tasks),
        "n_warmup": len(warm),
        "seeds": seeds,
        "budget": budget,
        "k": k,
        "arms": {a: ARMS[a] for a in arms},
        "service_settings": settings,
        "noise": noise.as_json(),
        "machine": machine(),
        "note": note,
        **body,
    }
    report["memory_held"] = learning_held(protocol)
    report["elapsed_s"] = round(time.time() - started, 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    if protocol == "loo":
        write_markdown(report, out.with_suffix(".md"))
        write_plot(report, out.with_suffix(".png"))
    else:
        lifelong_markdown(report, out.with_suffix(".md"))
        lifelong_plot(report, out.with_suffix(".png"))
    return report
