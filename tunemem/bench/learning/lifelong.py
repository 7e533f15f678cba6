"""`tunemem bench learning --protocol lifelong`: one memory serves a seeded stream of tasks.

Every (kernel family, chip) search space in the given folders is one tuning task. For each arm
and seed the tasks arrive in a seeded random order (warm-up tasks first, in their own seeded
order, not scored) and one memory serves the whole stream: a task is tuned by replay with the
budget while its own cache is not in memory; then its cache is ingested, as a finished tuning
campaign would be, and the agent's outcomes stay, so later tasks learn from both.

Before a scored task is tuned, its ranking quality is measured: the service is asked for the
task's first (draft) retrieval with the arm's options, and the best of the first k = 1, 3, 5
exemplar configurations of the task's parameter space in the service's order is looked up in
the task's recording, with no search. The agent reaches the memory over HTTP (a real server on
a free port), like any other client.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from typing import Any

from tunemem.agent_client.client import MemoryClient
from tunemem.agent_client.graph import query_text
from tunemem.agent_client.proposers import create_proposer
from tunemem.agent_client.run import run_graph
from tunemem.bench.learning.dirty import true_curve
from tunemem.bench.learning.noise import NoisyMemory
from tunemem.bench.learning.summary import family_means, fractions, goals, summarise, summary_of
from tunemem.bench.learning.tasks import Task, naive_transfer
from tunemem.kernels.runners.replay import ReplayRunner

TOP_K = (1, 3, 5)
RANKING_K = 30  # lessons asked for when measuring ranking quality (exemplars are filtered)


def stream_order(tasks: list[Task], seed: int) -> list[Task]:
    """The seeded order of a list of tasks (sorted by name first, so it is reproducible)."""
    ordered = sorted(tasks, key=lambda t: t.name)
    random.Random(seed).shuffle(ordered)
    return ordered


def ranking_quality(
    client: MemoryClient, task: Task, options: dict[str, Any] | None
) -> dict[str, float]:
    """Best fraction of the optimum among the service's first k exemplar configurations.

    Only exemplars whose configuration has exactly the task's parameters count (others cannot
    be run as they are); fewer than k such exemplars count as what there is (0 if none).
    """
    recording = task.recording
    description = {
        "op": recording.task.op,
        "chip": recording.context.chip,
        "backend": recording.context.backend,
    }
    retrieval = client.retrieve(
        task={"op": recording.task.op, "signature": dict(recording.task.signature)},
        context={"chip": recording.context.chip, "backend": recording.context.backend},
        stage="draft",
        k=RANKING_K,
        query=query_text(description, "draft", list(recording.param_names)),
        options=options,
    )
    configs = [(lesson.hint or {}).get("config") for lesson in retrieval.lessons]
    reached = [
        task.fraction(config)
        for config in configs
        if isinstance(config, dict) and set(config) == set(recording.param_names)
    ]
    return {f"top_{k}": max(reached[:k], default=0.0) for k in TOP_K}


def run_random(task: Task, seed: int, budget: int) -> dict[str, Any]:
    """Random search on one task (no memory): what the stream order cannot change."""
    result = run_graph(
        ReplayRunner(recording=task.recording),
        create_proposer("random"),
        None,
        budget,
        run_id=f"{task.name}-random-{seed}",
        seed=seed,
    )
    return {"curve": [a["latency_ms"] for a in result.attempts], "origins": []}


def run_stream(
    arm: str,
    options: dict[str, Any] | None,
    scored: list[Task],
    warmup: list[Task],
    seed: int,
    budget: int,
    k: int,
    widen_k: int,
    service_factory: Callable[[], Any],
    log: Callable[[str], None],
    memory: NoisyMemory,
    proposer_for: Callable[[str, Any, dict[str, Any] | None], Any] | None = None,
) -> list[dict[str, Any]]:
    """One arm, one seed: the whole stream through one memory; results of the scored tasks.
    `memory` says what each finished run tells the memory (noisy, mislabelled or as recorded)."""
    if proposer_for is None:
        proposer_for = lambda *_: create_proposer("structured")  # noqa: E731
    stream = [(t, False) for t in stream_order(warmup, seed)]
    stream += [(t, True) for t in stream_order(scored, seed)]
    live = service_factory()
    results = []
    try:
        with MemoryClient(live.url) as client:
            position = 0
            ingested: list[Task] = []
            for index, (task, is_scored) in enumerate(stream):
                quality = ranking_quality(client, task, options) if is_scored else {}
                if is_scored:
                    quality["best_in_memory"] = memory.best_in_memory(task, ingested)
                result = run_graph(
                    memory.runner(task, f"{seed}-{index}-{task.name}"),
                    proposer_for(arm, client, options),
                    client,
                    budget,
                    # unique per run: a stream may hold one (family, chip) twice (a GPU
                    # re-tuned), and a repeated run id would repeat its idempotency keys
                    run_id=f"{arm}-{seed}-{index}-{task.name}",
                    seed=seed,
                    k=k,
                    widen_k=widen_k,
                    options=options,
                )
                live.service.ingest(memory.trajectories(task))
                ingested.append(task)
                if is_scored:
                    results.append(
                        {
                            "task": task.name,
                            "position": position,
                            "curve": true_curve(task.recording, result.attempts),
                            "origins": [a["origin"].split(":")[0] for a in result.attempts],
                            **quality,
                        }
                    )
                    position += 1
    finally:
        live.close()
    log(f"lifelong {arm} seed {seed}: {len(results)} scored tasks")
    return results


def position_curve(
    runs: list[dict[str, Any]], tasks: dict[str, Task], budget: int, milestone: int
) -> list[float]:
    """Mean fraction of the optimum at `milestone` attempts by position in the stream."""
    by_position: dict[int, list[float]] = {}
    for run in runs:
        curve = fractions(run["curve"], tasks[run["task"]].optimum_ms, budget)
        by_position.setdefault(run["position"], []).append(curve[min(milestone, budget) - 1])
    return [statistics.fmean(by_position[p]) for p in sorted(by_position)]


def transfer_lines(scored: list[Task], warmup: list[Task]) -> dict[str, dict[str, float]]:
    """Per scored task, each other chip's best configuration of its family tried once."""
    pool = scored + warmup
    return {task.name: naive_transfer(task, pool) for task in scored}


def lifelong_report(
    runs: dict[str, list[dict[str, Any]]],
    scored: list[Task],
    warmup: list[Task],
    budget: int,
) -> dict[str, Any]:
    """Per task and arm over seeds; summaries over all scored tasks and the second half."""
    by_name = {t.name: t for t in scored}
    transfer = transfer_lines(scored, warmup)
    arms = list(runs)
    tasks: dict[str, Any] = {}
    for task in sorted(scored, key=lambda t: t.name):
        tasks[task.name] = {
            "family": task.family,
            "chip": task.chip,
            "path": str(task.path),
            "optimum_ms": task.optimum_ms,
            "naive_transfer": transfer[task.name],
            "arms": {
                arm: summarise(
                    [r for r in runs[arm] if r["task"] == task.name], task.optimum_ms, budget
                )
                for arm in arms
            },
        }
    half = len(scored) // 2
    late: dict[str, Any] = {}
    for task in scored:
        late[task.name] = {"family": task.family, "arms": {}}
        for arm in arms:
            chosen = [r for r in runs[arm] if r["task"] == task.name and r["position"] >= half]
            if chosen:
                late[task.name]["arms"][arm] = summarise(chosen, task.optimum_ms, budget)
    late = {name: entry for name, entry in late.items() if entry["arms"]}
    summary = summary_of(tasks, arms)
    summary_late = summary_of(late, arms)
    families_late = family_means(late, arms)

    def best_transfer(names: list[str]) -> float:
        values = [max(transfer[n].values(), default=0.0) for n in names]
        return statistics.fmean(values) if values else 0.0

    late_weights = [r["task"] for r in runs[arms[0]] if r["position"] >= half] if arms else []
    return {
        "tasks": tasks,
        "summary": summary,
        "summary_second_half": summary_late,
        "families_second_half": families_late,
        "goals": goals(summary_late, families_late),
        "best_single_transfer": best_transfer(list(tasks)),
        "best_single_transfer_second_half": best_transfer(late_weights),
        "by_position": {arm: position_curve(runs[arm], by_name, budget, 5) for arm in arms},
        "mean_curves": {
            arm: [
                statistics.fmean(e["arms"][arm]["mean_curve"][i] for e in tasks.values())
                for i in range(budget)
            ]
            for arm in arms
        },
    }
