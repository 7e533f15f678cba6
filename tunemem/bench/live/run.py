"""`tunemem bench live`: the agent tunes held-out shapes of the project's Triton kernels on the GPU.

For each task, each shape is held out in turn. A fresh memory ingests the recorded H200 sweeps
of the task's other shapes (setting `same_task`) or, as a second setting, of every other task
whose lessons the service can return for it (`all_tasks`: the service gates lessons by op, so
this differs from `same_task` only where two tasks share one, prefill and decode attention).
Then the agent tunes the held-out shape live with a budget of B attempts, per arm: `random`
(no memory), `similarity` (lam 0) and `value_backoff` (lam 0.5, scope back-off); the value
arms first tune each source shape in replay so lessons carry values. The recorded sweep of the
held-out shape is re-run live in the same run: its re-timed best configuration is the
reference, and its measured cost is the exhaustive search's, for scale. Decode attention has no
recorded sweep: its shapes are swept live first and then held out the same way.

Every live attempt is saved as a native trajectory (`live-<task>.jsonl`); the report goes to
`live.json` and `live.md`. GPU only; not part of CI. `python -m tunemem.bench.live --help`.
"""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tunemem.bench.common.arms import (
    ARMS,
    LIVE_ARMS,
    LIVE_SERVICE_SETTINGS,
    PROPOSERS,
    WIDEN_K,
    arm_proposer,
)
from tunemem.bench.common.options import Listed, command_line, prog
from tunemem.bench.common.paths import RESULTS_OF, SWEEPS
from tunemem.bench.common.results import merged_provenance, provenance
from tunemem.bench.live.markdown import LIVE_HELD, save
from tunemem.bench.live.memories import (
    MemoryPool,
    MemorySpec,
    load_sweeps,
    plan_memories,
)
from tunemem.bench.live.report import (
    COST_RULE,
    REFERENCE,
    merge,
    run_attempts,
    score_report,
    sweep_attempts,
    tag_live,
)
from tunemem.ingest.records import TrajectoryRecord

SETTINGS = ("same_task", "all_tasks")
# Decode attention first: prefill attention's all_tasks memory then holds its live sweeps.
DEFAULT_TASKS = ("softmax", "rmsnorm", "gemm", "decode_attention", "attention")


class LiveBench:
    """One run of the benchmark on this machine's GPU."""

    def __init__(self, args: argparse.Namespace) -> None:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("the live benchmark needs an NVIDIA GPU with CUDA; none is visible")
        self.args = args
        self.device_name = torch.cuda.get_device_name()
        self.run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        self.started = time.monotonic()
        self.shapes: list[dict[str, Any]] = []
        self.trajectories: dict[str, list[TrajectoryRecord]] = {}
        # Every recorded sweep up front: a task's all_tasks memory may need another's.
        from tunemem.kernels.catalogue import task_names

        self.sweeps: dict[str, dict[str, TrajectoryRecord]] = {
            name: found for name in task_names() if (found := load_sweeps(args.sweeps, name))
        }
        self.notes: list[str] = []

    def log(self, message: str) -> None:
        print(f"[live {time.monotonic() - self.started:6.0f}s] {message}", flush=True)

    def runner(self, task: Any, case: Any) -> Any:
        from tunemem.kernels.runners.cuda import CudaRunner

        return CudaRunner(
            task, case, "bfloat16", warmup_ms=self.args.warmup_ms, rep_ms=self.args.rep_ms
        )

    def sweep(self, task: Any, case: Any, runner: Any, configs: list[dict[str, Any]]) -> Any:
        from tunemem.kernels.sweep import sweep_shape

        record = sweep_shape(
            task,
            case,
            runner,
            configs,
            device_name=self.device_name,
            dtype="bfloat16",
            run_id=self.run_id,
        )
        record.source = record.source.replace("tunemem-kernels-sweep", "tunemem-bench-live-sweep")
        return tag_live(record, role="sweep", held_out=case.name)

    def memory_plan(self, task: Any, name: str) -> tuple[list[MemorySpec], dict[str, list]]:
        """Every memory the task's held-out shapes will use, in the order they are used."""
        cases = [c.name for c in task.shapes[: self.args.shapes or None]]
        specs, plan, note = plan_memories(task.op, name, cases, self.sweeps, self.args)
        if note:
            self.notes.append(note)
        return specs, plan

    def live_sweeps(self, task: Any, deadline: float) -> None:
        """Sweep every shape of a task never swept before: its reference and its sources."""
        from tunemem.kernels.sweep import candidate_configs

        self.sweeps[task.name] = {}
        for case in task.shapes[: self.args.shapes or None]:
            if time.monotonic() > deadline:
                self.notes.append(f"{task.name} {case.name}: not swept (time budget spent)")
                continue
            runner = self.runner(task, case)
            configs = candidate_configs(task, case.dims)
            self.log(f"{task.name} {case.name}: live sweep of {len(configs)} configurations")
            record = self.sweep(task, case, runner, configs)
            record.evidence["live_reference"] = True  # the reference of a task never swept
            self.sweeps[task.name][case.name] = record
            runner.release()
        self.trajectories.setdefault(task.name, []).extend(self.sweeps[task.name].values())

    def reference(self, task: Any, case: Any, runner: Any, live_swept: bool) -> dict[str, Any]:
        """The held-out shape's sweep (re-run live unless it was swept live in this run) and
        its reference: the recorded best configuration as re-timed now."""
        from tunemem.kernels.sweep import best_attempt

        recorded = self.sweeps[task.name][case.name]
        reference = best_attempt(recorded)
        if live_swept:
            sweep = recorded
        else:
            configs = [dict(a.params) for a in recorded.attempts]
            if not self.args.resweep:
                configs = [dict(reference.params)]
            self.log(f"{task.name} {case.name}: re-sweep of {len(configs)} configurations")
            sweep = self.sweep(task, case, runner, configs)
            self.trajectories.setdefault(task.name, []).append(sweep)
        timed = [
            a
            for a in sweep.attempts
            if a.params == reference.params and a.feasible and a.latency_ms
        ]
        chosen = timed[0] if timed else best_attempt(sweep)
        return {
            "recorded_reference_ms": reference.metrics.get("latency_median_ms"),
            "reference_config": dict(reference.params),
            "sweep": {"attempts": sweep_attempts(sweep), "live": True},
            "reference_ms": (
                chosen.metrics.get("latency_median_ms", chosen.latency_ms) if chosen else None
            ),
        }

    def run_arm(
        self, task: Any, case: Any, runner: Any, arm: str, label: str, url: str | None
    ) -> Any:
        """One arm's live run on the held-out shape: no memory (random) or the one at `url`."""
        from tunemem.agent_client.client import MemoryClient
        from tunemem.agent_client.proposers import create_proposer
        from tunemem.agent_client.run import run_graph

        run_id = f"live-{task.name}-{case.name}-{label.replace('/', '-')}-{self.run_id}"
        if url is None:
            return run_graph(
                runner,
                create_proposer("random"),
                None,
                self.args.budget,
                run_id=run_id,
                seed=self.args.seed,
            )
        with MemoryClient(url) as client:
            proposer = arm_proposer(arm, client, ARMS[arm])
            return run_graph(
                runner,
                proposer,
                client,
                self.args.budget,
                run_id=run_id,
                seed=self.args.seed,
                k=self.args.k,
                widen_k=WIDEN_K,
                options=ARMS[arm],
                full_description=True,
            )

    def run_shape(self, task: Any, case: Any, keys: list, pool: MemoryPool, live_swept: bool):
        """The reference, then every arm, on one held-out shape."""
        import torch

        entry: dict[str, Any] = {"task": task.name, "shape": case.name, "dims": case.dims}
        self.shapes.append(entry)
        quiet = self.args.quiet_timing
        for _, _, key in keys if quiet else []:
            try:
                pool.acquire(key)
            except (KeyError, TimeoutError) as exc:
                self.log(f"{key}: {exc}")
        runner = self.runner(task, case)
        entry.update(self.reference(task, case, runner, live_swept))
        entry["runs"] = {}
        for setting, arm, key in [("none", "random", None), *keys]:
            if arm not in self.args.arms:
                continue
            label = "random" if key is None else f"{setting}/{arm}"
            prep: dict[str, Any] = {}
            try:
                if key is not None:
                    prep = pool.acquire(key)
                    if "error" in prep:
                        raise RuntimeError(f"memory {key}: {prep['error']}")
                result = self.run_arm(task, case, runner, arm, label, prep.get("url"))
            except Exception as exc:  # one broken run must not lose the others
                entry["runs"][label] = {"error": f"{type(exc).__name__}: {exc}"}
                self.log(f"{task.name} {case.name} {label} failed: {exc}")
                continue
            finally:
                if key is not None and not quiet:
                    pool.release(key)
            entry["runs"][label] = {"attempts": run_attempts(result), "memory": prep}
            record = TrajectoryRecord.from_dict(result.trajectory or {})
            record.source = f"tunemem-bench-live/{task.name}/{case.name}/{label}@{self.run_id}"
            self.trajectories.setdefault(task.name, []).append(
                tag_live(record, role="agent", arm=arm, setting=setting, held_out=case.name)
            )
            best = min((a["latency_ms"] for a in result.attempts if a["latency_ms"]), default=None)
            self.log(f"{task.name} {case.name} {label}: best {best} ms")
        runner.release()
        torch.cuda.empty_cache()
        for _, _, key in keys if quiet else []:
            pool.release(key)

    def run_task(self, name: str, deadline: float) -> None:
        from tunemem.kernels.catalogue import get_task

        task = get_task(name)
        # A task swept live in this run is its own reference; one swept before (the harness's
        # sweeps, or an earlier run's live sweeps) has its held-out shape re-swept now.
        live_swept = name not in self.sweeps
        if live_swept:
            self.live_sweeps(task, deadline)
        specs, plan = self.memory_plan(task, name)
        # By default memories are prepared ahead, overlapping the GPU work. Quiet timing
        # prepares a shape's memories before its timing starts and none while it runs; a
        # control run on the H200 (rmsnorm, nothing in the background) showed the microsecond
        # shapes just as noisy, so the overlap is not what makes them so.
        per_shape = max((len(keys) for keys in plan.values()), default=1)
        pool = MemoryPool(specs, per_shape if self.args.quiet_timing else self.args.workers)
        try:
            for case in task.shapes[: self.args.shapes or None]:
                if case.name not in plan:
                    continue
                if time.monotonic() > deadline:
                    self.notes.append(f"{name} {case.name}: not run (time budget spent)")
                    pool.skip([key for _, _, key in plan[case.name]])
                    continue
                self.run_shape(task, case, plan[case.name], pool, live_swept)
                self.write(partial=True)
        finally:
            pool.close()

    def device(self) -> dict[str, Any]:
        """What the result's machine adds for the GPU: its name, SMs and the toolchain."""
        import torch

        from tunemem.kernels.evidence import toolchain_versions

        return {
            "gpu": self.device_name,
            "sms": torch.cuda.get_device_properties(0).multi_processor_count,
            **toolchain_versions(),
        }

    def write(self, partial: bool = False) -> dict[str, Any]:
        raw = {
            "benchmark": "live",
            "memory_held": LIVE_HELD,
            "partial": partial,
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "run_id": self.run_id,
            **provenance(self.args.command, [self.args.seed], "measured", self.device()),
            "service": (
                "fresh embedded store per memory, index "
                f"{LIVE_SERVICE_SETTINGS['index']} (chromadb is not on the GPU machine), "
                f"embedder {self.args.embedder}, the service's "
                "default ranking and suggest settings otherwise, served over HTTP on localhost"
            ),
            "proposers": {a: PROPOSERS.get(a, "structured") for a in self.args.arms},
            "budget": self.args.budget,
            "k": self.args.k,
            "arms": {a: ARMS[a] for a in self.args.arms},
            "settings": {
                "warmup_ms": self.args.warmup_ms,
                "rep_ms": self.args.rep_ms,
                "quiet_timing": self.args.quiet_timing,
            },
            "reference": REFERENCE,
            "cost_rule": COST_RULE,
            "elapsed_s": time.monotonic() - self.started,
            "notes": list(self.notes),
            "shapes": self.shapes,
        }
        report = score_report(raw)
        save(self.args.out, report, echo=not partial)
        self.save_trajectories()
        return report

    def save_trajectories(self) -> None:
        from tunemem.kernels.sweep import write_trajectories

        folder = self.args.trajectories
        for name, records in self.trajectories.items():
            write_trajectories(records, folder / f"live-{name}.jsonl")


def parser(name: str = prog("live", None)) -> argparse.ArgumentParser:
    """The options of `tunemem bench live` and `python -m tunemem.bench.live`."""
    p = argparse.ArgumentParser(prog=name, description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="kernels, comma-separated")
    p.add_argument("--budget", type=int, default=10, help="live attempts per run")
    p.add_argument(
        "--arms",
        default=",".join(LIVE_ARMS),
        help="random, similarity, value_backoff, default (the agent on suggest)",
    )
    p.add_argument("--settings", default=",".join(SETTINGS), help="same_task, all_tasks")
    p.add_argument("--shapes", type=int, default=0, help="held-out shapes per task (0: all)")
    p.add_argument("--sweeps", type=Path, default=SWEEPS, help="recorded sweeps")
    p.add_argument("--trajectories", type=Path, default=SWEEPS, help="where live-<task>.jsonl go")
    p.add_argument("--out", type=Path, default=RESULTS_OF["live"], help="where live.json go")
    p.add_argument("--warmup-ms", type=float, default=5.0)
    p.add_argument("--rep-ms", type=float, default=30.0)
    p.add_argument("--budget-s", type=float, default=540.0, help="wall-clock budget, seconds")
    p.add_argument("--workers", type=int, default=6, help="memories prepared at once")
    p.add_argument("--k", type=int, default=3)
    p.add_argument(
        "--embedder",
        default="minilm",
        help="the memories' embedder: minilm (the service's default) or hashing (no weights)",
    )
    p.add_argument("--seed", type=int, default=0, help="the agent's and the search's seed")
    p.add_argument(
        "--resweep",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="re-run each held-out shape's sweep",
    )
    p.add_argument(
        "--quiet-timing",
        action="store_true",
        help="prepare each shape's memories before timing it, none while it is timed",
    )
    p.add_argument(
        "--merge", action=Listed, item=Path, help="merge these live.json files into --out instead"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser(prog("live", argv)).parse_args(argv)
    args.command = command_line("live", argv)
    if args.merge:
        parts = [json.loads(path.read_text()) for path in args.merge]
        save(args.out, {**merge(parts), **merged_provenance(parts, args.command)})
        return 0
    args.tasks = [t for t in args.tasks.split(",") if t]
    args.arms = [a for a in args.arms.split(",") if a]
    args.settings = [s for s in args.settings.split(",") if s]
    unknown = sorted(set(args.arms) - set(ARMS)) + sorted(set(args.settings) - set(SETTINGS))
    if unknown:
        print(f"unknown arms or settings {unknown}; arms: {list(ARMS)}, settings: {SETTINGS}")
        return 2
    bench = LiveBench(args)
    deadline = bench.started + args.budget_s
    for name in args.tasks:
        bench.run_task(name, deadline)
    bench.write(partial=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
