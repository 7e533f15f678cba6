"""`tunemem bench autotune`: the full `triton.autotune` against the memory's drop-in, on the GPU.

For each of the project's Triton kernels (kernels/), each shape is held out in turn: a fresh
memory (embedded store, in-memory index, hashing embedder, over HTTP) ingests the recorded
sweeps of the task's other shapes, and the drop-in
(`agent_client.tuners.triton.autotune`) tunes the held-out shape with it; the full
`triton.autotune` tunes the same shape over the task's whole configuration list (the tuning
space, pruned by the task's validity check as a Triton user's `early_config_prune` would).
Each arm runs in its own process with an empty Triton cache, tuning the task's shapes in
order, and its autotune wall seconds are those of the first call of each key (prune, suggest,
compile, timing, launch). Then the two chosen configurations of each shape are re-timed
interleaved in a third process, and the drop-in's speed is the full choice's median time over
its own.

Writes `autotune.json` and `autotune.md` (in --out) and `autotune-<task>.jsonl` (in
--trajectories): the trajectories the drop-in reported, and the full autotune's timings.
`python -m tunemem.bench.autotune --help`. GPU run on the device; `--device cpu` runs the same
protocol
under the Triton interpreter on the tasks' small shapes (the test uses it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tunemem.bench.autotune.report import render_markdown, summarise, to_trajectories
from tunemem.bench.common.options import Listed, prog
from tunemem.bench.common.paths import RESULTS_OF, SWEEPS
from tunemem.bench.live.memories import MemoryPool, MemorySpec, load_sweeps

DEFAULT_TASKS = ("softmax", "rmsnorm", "decode_attention", "attention", "gemm")
GOALS = {"wall_ratio_at_most": 0.2, "speed_at_least": 0.98, "shapes_share_at_least": 0.9}


def parser(name: str = prog("autotune", None)) -> argparse.ArgumentParser:
    """The options of `tunemem bench autotune` and `python -m tunemem.bench.autotune`."""
    p = argparse.ArgumentParser(prog=name, description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="kernels, comma-separated")
    p.add_argument("--shapes", type=int, default=0, help="shapes per task (0: all)")
    p.add_argument("--sweeps", type=Path, default=SWEEPS, help="recorded sweeps")
    p.add_argument(
        "--trajectories", type=Path, default=SWEEPS, help="where autotune-<task>.jsonl go"
    )
    p.add_argument(
        "--out", type=Path, default=RESULTS_OF["autotune"], help="where autotune.json and .md go"
    )
    p.add_argument("--top-k", type=float, default=5, help="configurations the drop-in times")
    p.add_argument("--explore", type=float, default=0.5, help="the drop-in's exploration share")
    p.add_argument(
        "--options",
        type=json.loads,
        default=None,
        help='the drop-in\'s ranking options, JSON ({"lam": 0.0})',
    )
    p.add_argument("--rounds", type=int, default=5, help="interleaved re-timing rounds")
    p.add_argument("--workers", type=int, default=8, help="memories prepared at once")
    p.add_argument("--budget-s", type=float, default=540.0, help="wall-clock budget")
    p.add_argument(
        "--device", choices=("cuda", "cpu"), default="cuda", help="cuda, or cpu (the interpreter)"
    )
    p.add_argument("--seed", type=int, default=0, help="the drop-in's seed")
    p.add_argument("--name", default="autotune", help="result files' name")
    p.add_argument(
        "--full-only",
        action="store_true",
        help="run only the full autotune arm and save its results (for --full-from)",
    )
    p.add_argument(
        "--cold",
        action="store_true",
        help="the cold protocol: an empty memory per kernel and key order (bench.autotune.cold)",
    )
    p.add_argument(
        "--orders",
        action=Listed,
        item=int,
        what="seeds (0,1,2 or 0 1 2)",
        default=[0],
        help="--cold key orders: seeds",
    )
    p.add_argument(
        "--full-from",
        type=Path,
        help="take the full arm's results from an earlier --full-only run's JSON",
    )
    return p


# The Markdown of a --full-only run, whose JSON is read back by --full-from.
FULL_ONLY = (
    "# bench autotune: the full autotune arm only\n\nThe full `triton.autotune` of each task's "
    "shapes, kept for a later run's `--full-from`; no drop-in ran, nothing is compared.\n"
)


def _top_k(value: float) -> int | float:
    return int(value) if value >= 1 else value


class AutotuneBench:
    """One run of the benchmark."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.started = time.monotonic()
        self.run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        self.notes: list[str] = []
        self.results: list[dict[str, Any]] = []
        self.trajectories: dict[str, list[dict[str, Any]]] = {}
        self.tmp = tempfile.TemporaryDirectory(prefix="tunemem-autotune-")
        self.full_runs: dict[str, dict[str, Any]] = {}
        if args.full_from is not None:
            earlier = json.loads(args.full_from.read_text())
            self.full_runs = {run["task"]: run for run in earlier["full_runs"]}
            self.notes.append(
                f"full arm from {args.full_from.name} (run {earlier['run_id']}, "
                f"{earlier['machine'].get('gpu')}), re-timed interleaved in this run"
            )

    def log(self, message: str) -> None:
        print(f"[autotune {time.monotonic() - self.started:6.0f}s] {message}", flush=True)

    def shapes(self, task: Any) -> list[Any]:
        cases = task.small_shapes if self.args.device == "cpu" else task.shapes
        return cases[: self.args.shapes or None]

    def subprocess(self, spec: dict[str, Any], label: str) -> dict[str, Any]:
        """Run one arm (or the re-timing) in a fresh process with an empty Triton cache."""
        folder = Path(self.tmp.name) / label
        folder.mkdir(parents=True, exist_ok=True)
        spec_path, out_path = folder / "spec.json", folder / "out.json"
        spec_path.write_text(json.dumps({**spec, "device": self.args.device}))
        env = {**os.environ, "TRITON_CACHE_DIR": str(folder / "triton-cache")}
        env["PYTHONUNBUFFERED"] = "1"
        if self.args.device == "cpu":
            env["TRITON_INTERPRET"] = "1"
        cmd = [
            sys.executable,
            "-m",
            "tunemem.bench.autotune.launchers",
            str(spec_path),
            str(out_path),
        ]
        done = subprocess.run(cmd, env=env, check=False)
        if done.returncode != 0 or not out_path.exists():
            raise RuntimeError(f"{label}: the arm's process failed (exit {done.returncode})")
        return json.loads(out_path.read_text())

    def memory_specs(self, names: list[str]) -> tuple[list[MemorySpec], dict[str, list[str]]]:
        """A memory per held-out shape: the recorded sweeps of the task's other shapes."""
        from tunemem.kernels.catalogue import get_task

        specs: list[MemorySpec] = []
        planned: dict[str, list[str]] = {}
        for name in names:
            task = get_task(name)
            sweeps = load_sweeps(self.args.sweeps, name)
            planned[name] = []
            for case in self.shapes(task):
                sources = tuple(r for shape, r in sweeps.items() if shape != case.name)
                planned[name].append(case.name)
                if sources:
                    key = f"{name}/{case.name}"
                    specs.append(MemorySpec(key, sources, seed=self.args.seed))
                elif not self.args.full_only:
                    self.notes.append(f"{name} {case.name}: no recorded sweep of another shape")
        return specs, planned

    def run(self) -> dict[str, Any]:
        from tunemem.kernels.catalogue import get_task

        names = [n for n in self.args.tasks.split(",") if n]
        specs, planned = self.memory_specs(names)
        pool = MemoryPool([] if self.args.full_only else specs, workers=self.args.workers)
        deadline = self.started + self.args.budget_s
        try:
            for name in names:
                if time.monotonic() > deadline:
                    self.notes.append(f"{name}: not run (time budget spent)")
                    pool.skip([f"{name}/{s}" for s in planned.get(name, [])])
                    continue
                self.run_task(get_task(name), planned.get(name, []), pool, specs, deadline)
                self.write()  # what is done so far survives a run cut short
        finally:
            pool.close()
            self.tmp.cleanup()
        return self.write()

    def run_task(
        self, task: Any, shapes: list[str], pool: MemoryPool, specs: list, deadline: float
    ) -> None:
        if not shapes:
            return
        common = {
            "task": task.name,
            "seed": self.args.seed,
            "deadline": time.time() + (deadline - time.monotonic()),
        }
        full = self.full_runs.get(task.name)
        if full is not None and {e["shape"] for e in full["shapes"]} < set(shapes):
            self.notes.append(f"{task.name}: the earlier full run misses shapes; run here")
            full = None
        if full is None:
            self.log(f"{task.name}: full triton.autotune on {len(shapes)} shapes")
            full = self.subprocess(
                {**common, "arm": "full", "shapes": [{"shape": s} for s in shapes]},
                f"{task.name}-full",
            )
            self.full_runs[task.name] = full
        if self.args.full_only:
            return
        done = {entry["shape"] for entry in full["shapes"]}
        with_memory = {spec.key for spec in specs}
        shapes = [s for s in shapes if s in done and f"{task.name}/{s}" in with_memory]
        if not shapes:
            return
        full = {**full, "shapes": [e for e in full["shapes"] if e["shape"] in shapes]}
        urls = []
        for shape in shapes:
            ready = pool.acquire(f"{task.name}/{shape}")
            if "error" in ready:
                raise RuntimeError(f"memory for {task.name}/{shape}: {ready['error']}")
            urls.append({"shape": shape, "url": ready["url"], "prep_s": ready.get("prep_s")})
        self.log(f"{task.name}: the drop-in on {len(shapes)} held-out shapes")
        try:
            memory = self.subprocess(
                {
                    **common,
                    "arm": "memory",
                    "shapes": urls,
                    "top_k": _top_k(self.args.top_k),
                    "explore": self.args.explore,
                    "options": self.args.options,
                },
                f"{task.name}-memory",
            )
        finally:
            for shape in shapes:
                pool.release(f"{task.name}/{shape}")
        self.log(f"{task.name}: interleaved re-timing of the chosen configurations")
        chosen = [
            {"shape": f["shape"], "configs": {"full": f["chosen"], "memory": m["chosen"]}}
            for f, m in zip(full["shapes"], memory["shapes"], strict=True)
        ]
        retimed = self.subprocess(
            {**common, "arm": "retime", "rounds": self.args.rounds, "shapes": chosen},
            f"{task.name}-retime",
        )
        for f, m, r, u in zip(
            full["shapes"], memory["shapes"], retimed["retime"], urls, strict=True
        ):
            self.results.append(self.shape_result(f, m, r, u))
        self.trajectories[task.name] = to_trajectories(task, full["shapes"], memory["shapes"])

    @staticmethod
    def shape_result(full: dict, memory: dict, retimed: dict, url: dict) -> dict[str, Any]:
        full_ms = statistics.median(retimed["retimed_ms"]["full"])
        memory_ms = statistics.median(retimed["retimed_ms"]["memory"])
        return {
            "task": full["task"],
            "shape": full["shape"],
            "dims": full["dims"],
            "memory_prep_s": url.get("prep_s"),
            "full": {k: full[k] for k in ("wall_s", "bench_s", "timed", "chosen")},
            "memory": {
                **{k: memory[k] for k in ("wall_s", "bench_s", "timed", "chosen")},
                "decision": memory.get("decision"),
                "reported": memory.get("reported"),
            },
            "wall_ratio": memory["wall_s"] / full["wall_s"] if full["wall_s"] else None,
            "retimed_ms": retimed["retimed_ms"],
            "full_ms": full_ms,
            "memory_ms": memory_ms,
            "speed": full_ms / memory_ms if memory_ms else None,
            "full_timings": full["timings"],
        }

    def device(self) -> dict[str, Any]:
        """What the result's machine adds for the GPU (or the interpreter): its toolchain."""
        from tunemem.kernels.evidence import toolchain_versions

        found: dict[str, Any] = toolchain_versions()
        if self.args.device == "cuda":
            import torch

            found["gpu"] = torch.cuda.get_device_name()
        else:
            found["gpu"] = "none (Triton interpreter on the CPU)"
        return found

    def report_head(self, benchmark: str, held: dict[str, str], seeds: list[int]) -> dict[str, Any]:
        """What every `bench autotune` report begins with, full-cache or cold: with what the
        memory held and how to reproduce it (`provenance`; timed, on the GPU or the CPU)."""
        from tunemem.bench.common.results import provenance

        return {
            "benchmark": benchmark,
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "run_id": self.run_id,
            **provenance(self.args.command, seeds, "measured", self.device()),
            "device": self.args.device,
            "memory_held": held,
            "top_k": _top_k(self.args.top_k),
            "explore": self.args.explore,
            "rounds": self.args.rounds,
            "notes": self.notes,
        }

    def save(self, report: dict[str, Any], markdown: str | None) -> dict[str, Any]:
        """Write the report's JSON, its Markdown (unless None) and the trajectories, in --out
        and --trajectories under --name; the one writer of both protocols."""
        from tunemem.bench.common.results import write_result
        from tunemem.ingest.records import TrajectoryRecord
        from tunemem.kernels.sweep import write_trajectories

        write_result(self.args.out, self.args.name, report, markdown or FULL_ONLY)
        if markdown is None:
            return report
        self.args.trajectories.mkdir(parents=True, exist_ok=True)
        for name, records in self.trajectories.items():
            write_trajectories(
                [TrajectoryRecord.from_dict(r) for r in records],
                self.args.trajectories / f"{self.args.name}-{name}.jsonl",
            )
        return report

    def write(self) -> dict[str, Any]:
        from tunemem.bench.common.results import memory_held

        held = memory_held(
            "complete",
            "a fresh memory per held-out shape, holding the recorded sweeps of the task's other "
            "shapes and nothing of the held-out one",
        )
        report = {
            **self.report_head("autotune", held, [self.args.seed]),
            "options": self.args.options,
            "goals": GOALS,
            "elapsed_s": time.monotonic() - self.started,
            "summary": summarise(self.results, GOALS),
            "shapes": self.results,
        }
        if self.args.full_only:
            report["full_runs"] = list(self.full_runs.values())
            return self.save(report, None)
        return self.save(report, render_markdown(report))
