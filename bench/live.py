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
`live.json` and `live.md`. GPU only; not part of CI. `python -m bench.live --help`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.live_memory import SERVICE_SETTINGS, WIDEN_K, MemoryPool, MemorySpec, load_sweeps
from bench.live_report import REFERENCE, merge, render_markdown, score_report
from ingest.records import TrajectoryRecord

ARMS: dict[str, dict[str, Any] | None] = {
    "random": None,
    "similarity": {"lam": 0.0, "exploration_c": 0.0, "k_recall": 60},
    "value_backoff": {"lam": 0.5, "backoff": True, "k_recall": 60},
}
SETTINGS = ("same_task", "all_tasks")
# Decode attention first: prefill attention's all_tasks memory then holds its live sweeps.
DEFAULT_TASKS = ("softmax", "rmsnorm", "gemm", "decode_attention", "attention")
COST_RULE = (
    "measured wall time of each evaluation (correctness checks and do_bench), with compilation "
    "charged per configuration: the longest first launch (compile + one run) of that "
    "configuration in the run, whichever arm paid it"
)


def _attempts(result: Any) -> list[dict[str, Any]]:
    keep = ("index", "config", "feasible", "latency_ms", "error_category", "origin", "metrics")
    return [{k: a.get(k) for k in keep} for a in result.attempts]


def _sweep_attempts(record: TrajectoryRecord) -> list[dict[str, Any]]:
    return [
        {
            "index": a.index,
            "config": dict(a.params),
            "feasible": a.feasible,
            "latency_ms": a.latency_ms,
            "error_category": a.error_category,
            "origin": "sweep",
            "metrics": dict(a.metrics),
        }
        for a in record.attempts
    ]


def _tag(record: TrajectoryRecord, **extra: Any) -> TrajectoryRecord:
    record.evidence.update({"benchmark": "live", **extra})
    return record


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
        from kernels.catalogue import task_names

        self.sweeps: dict[str, dict[str, TrajectoryRecord]] = {
            name: found for name in task_names() if (found := load_sweeps(args.sweeps, name))
        }
        self.notes: list[str] = []

    def log(self, message: str) -> None:
        print(f"[live {time.monotonic() - self.started:6.0f}s] {message}", flush=True)

    def runner(self, task: Any, case: Any) -> Any:
        from kernels.runners.cuda import CudaRunner

        return CudaRunner(
            task, case, "bfloat16", warmup_ms=self.args.warmup_ms, rep_ms=self.args.rep_ms
        )

    def sweep(self, task: Any, case: Any, runner: Any, configs: list[dict[str, Any]]) -> Any:
        from kernels.sweep import sweep_shape

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
        return _tag(record, role="sweep", held_out=case.name)

    def memory_plan(self, task: Any, name: str) -> tuple[list[MemorySpec], dict[str, list]]:
        """Every memory the task's held-out shapes will use, in the order they are used."""
        own = self.sweeps[name]
        others = [
            r
            for other, sweeps in self.sweeps.items()
            if other != name
            for r in sweeps.values()
            if r.task.op == task.op
        ]
        specs: list[MemorySpec] = []
        plan: dict[str, list[tuple[str, str, str]]] = {}
        for case in task.shapes[: self.args.shapes or None]:
            if case.name not in own:
                continue
            same = [r for shape, r in own.items() if shape != case.name]
            sources = {"same_task": same, "all_tasks": same + others}
            plan[case.name] = []
            for setting in self.args.settings:
                if setting == "all_tasks" and not others:
                    continue
                for arm in self.args.arms:
                    if ARMS[arm] is None:
                        continue
                    key = f"{name}/{case.name}/{setting}/{arm}"
                    replay = tuple(sources[setting]) if arm != "similarity" else ()
                    specs.append(
                        MemorySpec(
                            key,
                            tuple(sources[setting]),
                            replay,
                            dict(ARMS[arm] or {}),
                            self.args.budget,
                            self.args.k,
                            self.args.seed,
                        )
                    )
                    plan[case.name].append((setting, arm, key))
        if "all_tasks" in self.args.settings and not others:
            self.notes.append(
                f"{name}: all_tasks skipped: no other task shares op {task.op!r}, and the "
                "service gates lessons by op, so it would equal same_task"
            )
        return specs, plan

    def run_task(self, name: str, deadline: float) -> None:
        import torch

        from agent_client.client import MemoryClient
        from agent_client.proposers import create_proposer
        from agent_client.run import run_graph
        from kernels.catalogue import get_task
        from kernels.sweep import best_attempt, candidate_configs

        task = get_task(name)
        live_swept = name not in self.sweeps or all(
            r.evidence.get("live_reference") for r in self.sweeps[name].values()
        )
        if name not in self.sweeps:  # never swept: sweep every shape live first (the reference)
            self.sweeps[name] = {}
            for case in task.shapes[: self.args.shapes or None]:
                if time.monotonic() > deadline:
                    self.notes.append(f"{name} {case.name}: not swept (time budget spent)")
                    continue
                runner = self.runner(task, case)
                configs = candidate_configs(task, case.dims)
                self.log(f"{name} {case.name}: live sweep of {len(configs)} configurations")
                record = self.sweep(task, case, runner, configs)
                record.evidence["live_reference"] = True  # the reference of a task never swept
                self.sweeps[name][case.name] = record
                runner.release()
            self.trajectories.setdefault(name, []).extend(self.sweeps[name].values())
        specs, plan = self.memory_plan(task, name)
        pool = MemoryPool(specs, self.args.workers)
        try:
            for case in task.shapes[: self.args.shapes or None]:
                if case.name not in plan:
                    continue
                if time.monotonic() > deadline:
                    self.notes.append(f"{name} {case.name}: not run (time budget spent)")
                    pool.skip([key for _, _, key in plan[case.name]])
                    continue
                entry: dict[str, Any] = {"task": name, "shape": case.name, "dims": case.dims}
                self.shapes.append(entry)
                runner = self.runner(task, case)
                reference = best_attempt(self.sweeps[name][case.name])
                entry["recorded_reference_ms"] = reference.metrics.get("latency_median_ms")
                entry["reference_config"] = dict(reference.params)
                if live_swept:
                    sweep = self.sweeps[name][case.name]
                elif self.args.resweep:
                    configs = [dict(a.params) for a in self.sweeps[name][case.name].attempts]
                    self.log(f"{name} {case.name}: re-sweep of {len(configs)} configurations")
                    sweep = self.sweep(task, case, runner, configs)
                    self.trajectories.setdefault(name, []).append(sweep)
                else:
                    sweep = self.sweep(task, case, runner, [dict(reference.params)])
                    self.trajectories.setdefault(name, []).append(sweep)
                entry["sweep"] = {"attempts": _sweep_attempts(sweep), "live": True}
                timed = [
                    a
                    for a in sweep.attempts
                    if a.params == reference.params and a.feasible and a.latency_ms
                ]
                best_now = best_attempt(sweep)
                chosen = timed[0] if timed else best_now
                entry["reference_ms"] = (
                    chosen.metrics.get("latency_median_ms", chosen.latency_ms) if chosen else None
                )
                entry["runs"] = {}
                for setting, arm, key in [("none", "random", None), *plan[case.name]]:
                    if arm not in self.args.arms:
                        continue
                    label = "random" if key is None else f"{setting}/{arm}"
                    run_id = f"live-{name}-{case.name}-{label.replace('/', '-')}-{self.run_id}"
                    try:
                        if key is None:
                            result = run_graph(
                                runner,
                                create_proposer("random"),
                                None,
                                self.args.budget,
                                run_id=run_id,
                                seed=self.args.seed,
                            )
                            prep: dict[str, Any] = {}
                        else:
                            prep = pool.acquire(key)
                            if "error" in prep:
                                raise RuntimeError(f"memory {key}: {prep['error']}")
                            with MemoryClient(prep["url"]) as client:
                                result = run_graph(
                                    runner,
                                    create_proposer("structured"),
                                    client,
                                    self.args.budget,
                                    run_id=run_id,
                                    seed=self.args.seed,
                                    k=self.args.k,
                                    widen_k=WIDEN_K,
                                    options=ARMS[arm],
                                    full_description=True,
                                )
                    except Exception as exc:  # one broken run must not lose the others
                        entry["runs"][label] = {"error": f"{type(exc).__name__}: {exc}"}
                        self.log(f"{name} {case.name} {label} failed: {exc}")
                        continue
                    finally:
                        if key is not None:
                            pool.release(key)
                    entry["runs"][label] = {"attempts": _attempts(result), "memory": prep}
                    record = TrajectoryRecord.from_dict(result.trajectory or {})
                    record.source = f"tunemem-bench-live/{name}/{case.name}/{label}@{self.run_id}"
                    self.trajectories.setdefault(name, []).append(
                        _tag(record, role="agent", arm=arm, setting=setting, held_out=case.name)
                    )
                    best = min(
                        (a["latency_ms"] for a in result.attempts if a["latency_ms"]), default=None
                    )
                    self.log(f"{name} {case.name} {label}: best {best} ms")
                runner.release()
                torch.cuda.empty_cache()
                self.write(partial=True)
        finally:
            pool.close()

    def machine(self) -> dict[str, Any]:
        import torch

        from bench import machine
        from kernels.evidence import toolchain_versions

        return {
            "gpu": self.device_name,
            "sms": torch.cuda.get_device_properties(0).multi_processor_count,
            **toolchain_versions(),
            **machine(),
        }

    def write(self, partial: bool = False) -> dict[str, Any]:
        raw = {
            "benchmark": "live",
            "partial": partial,
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "run_id": self.run_id,
            "command": self.args.command,
            "machine": self.machine(),
            "service": (
                f"fresh embedded store per memory, index {SERVICE_SETTINGS['index']}, embedder "
                f"{SERVICE_SETTINGS['embedder']} (MiniLM and chromadb not carried to the GPU "
                "machine), served over HTTP on localhost"
            ),
            "budget": self.args.budget,
            "k": self.args.k,
            "arms": {a: ARMS[a] for a in self.args.arms},
            "settings": {"warmup_ms": self.args.warmup_ms, "rep_ms": self.args.rep_ms},
            "reference": REFERENCE,
            "cost_rule": COST_RULE,
            "elapsed_s": time.monotonic() - self.started,
            "notes": list(self.notes),
            "shapes": self.shapes,
        }
        report = score_report(raw)
        out = self.args.out
        out.mkdir(parents=True, exist_ok=True)
        (out / "live.json").write_text(json.dumps(report, indent=1, default=str))
        (out / "live.md").write_text(render_markdown(report))
        self.save_trajectories()
        return report

    def save_trajectories(self) -> None:
        from kernels.sweep import write_trajectories

        folder = self.args.trajectories
        for name, records in self.trajectories.items():
            write_trajectories(records, folder / f"live-{name}.jsonl")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default=",".join(DEFAULT_TASKS))
    p.add_argument("--budget", type=int, default=10, help="live attempts per run")
    p.add_argument("--arms", default=",".join(ARMS))
    p.add_argument("--settings", default=",".join(SETTINGS))
    p.add_argument("--shapes", type=int, default=0, help="held-out shapes per task (0: all)")
    p.add_argument("--sweeps", type=Path, default=Path("bench/results/h200"))
    p.add_argument("--trajectories", type=Path, default=Path("bench/results/h200"))
    p.add_argument("--out", type=Path, default=Path("bench/results"))
    p.add_argument("--warmup-ms", type=float, default=5.0)
    p.add_argument("--rep-ms", type=float, default=30.0)
    p.add_argument("--budget-s", type=float, default=540.0, help="wall-clock budget")
    p.add_argument("--workers", type=int, default=6, help="memories prepared at once")
    p.add_argument("--k", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-resweep", dest="resweep", action="store_false")
    p.add_argument("--merge", type=Path, nargs="+", help="merge live.json files into --out")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.command = (
        " ".join(["python -m bench.live", *sys.argv[1:]])
        if argv is None
        else " ".join(["tunemem bench live", *argv])
    )
    if args.merge:
        report = merge([json.loads(path.read_text()) for path in args.merge])
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "live.json").write_text(json.dumps(report, indent=1, default=str))
        (args.out / "live.md").write_text(render_markdown(report))
        print(render_markdown(report))
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
    report = bench.write(partial=False)
    print(render_markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
