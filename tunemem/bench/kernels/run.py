"""`tunemem bench kernels`: tune every task on the local GPU and compare with PyTorch and the chip.

For each task and shape: the sweep's best latency (median of do_bench runs), speedups over
PyTorch eager and torch.compile, and the fraction of the hardware limit (HBM bandwidth for the
memory-bound tasks, peak bf16 FLOP/s for GEMM and attention), with the limits taken from the
chip's `platforms` descriptor and from a device-to-device copy measured in the same run.
Writes `kernels.json` and `kernels.md` to the output folder and one native trajectory file per
task to the trajectories folder. Run on a GPU machine with `python -m tunemem.bench.kernels`.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

from tunemem.bench.common.options import Listed, command_line, prog
from tunemem.bench.common.paths import RESULTS_OF
from tunemem.bench.common.results import (
    memory_held,
    merged_provenance,
    provenance,
    write_result,
)
from tunemem.bench.kernels.report import goal_checks, render_markdown
from tunemem.ingest.records import stable_hash
from tunemem.kernels.catalogue import get_task, task_names
from tunemem.kernels.harness import LatencyStats, time_call
from tunemem.kernels.sweep import (
    best_attempt,
    candidate_configs,
    chip_identity,
    new_run_id,
    sweep_shape,
    toolchain_versions,
    write_trajectories,
)
from tunemem.kernels.tasks.base import KernelTask, ShapeCase

COPY_BYTES = 2 << 30


def measure_copy_bandwidth(warmup_ms: float, rep_ms: float, n_bytes: int = COPY_BYTES) -> dict:
    """Device-to-device copy of `n_bytes` of random data: GB/s counting bytes read + written."""
    import torch

    src = torch.randn(n_bytes // 4, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    stats = time_call(lambda: dst.copy_(src), warmup_ms, rep_ms)
    return {
        "bytes_copied": n_bytes,
        "median_ms": stats.median,
        "gbps": 2 * n_bytes / (stats.median / 1e3) / 1e9,
    }


def hardware_limits(device_name: str) -> dict[str, Any]:
    """The chip descriptor's bandwidth and peak bf16 throughput (None where unknown)."""
    try:
        from tunemem.platforms import resolve

        chip = resolve(device_name)
        return {
            "chip": chip.id,
            "mem_bandwidth_gbs": chip.mem_bandwidth_gbs,
            "peak_bf16_tflops": chip.peak_bf16_tflops,
            "source": chip.source,
        }
    except (ImportError, LookupError, ValueError) as exc:
        return {
            "chip": chip_identity(device_name)[0],
            "mem_bandwidth_gbs": None,
            "peak_bf16_tflops": None,
            "source": f"no descriptor: {exc}",
        }


def _stats_row(stats: LatencyStats) -> dict[str, float]:
    return {
        "median_ms": stats.median,
        "mean_ms": stats.mean,
        "min_ms": stats.minimum,
        "p10_ms": stats.p10,
        "p90_ms": stats.p90,
        "repetitions": stats.repetitions,
    }


def _time_torch(fn: Any, inputs: tuple, timing: tuple[float, float]) -> dict[str, Any]:
    import torch

    try:
        with torch.no_grad():
            fn(*inputs)
            torch.cuda.synchronize()
            return _stats_row(time_call(lambda: fn(*inputs), *timing))
    except Exception as exc:  # a baseline that cannot run is reported, not fatal
        return {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}


def _throughput(task: KernelTask, dims: dict[str, int], median_ms: float | None) -> dict:
    if not median_ms:
        return {"gbps": None, "tflops": None}
    seconds = median_ms / 1e3
    return {
        "gbps": task.bytes_moved(dims, 2) / seconds / 1e9,
        "tflops": task.flops(dims) / seconds / 1e12,
    }


def bench_shape(
    task: KernelTask,
    case: ShapeCase,
    compiled_op: Any,
    *,
    device_name: str,
    run_id: str,
    timing: tuple[float, float],
    config_limit: int | None,
    deadline: float,
    limits: dict[str, Any],
    copy: dict[str, Any],
):
    """Baselines, then the sweep, for one shape; returns (report row, trajectory)."""
    import torch

    from tunemem.kernels.runners.cuda import CudaRunner

    runner = CudaRunner(task, case, dtype="bfloat16", warmup_ms=timing[0], rep_ms=timing[1])
    inputs = runner.problem.inputs[0]
    eager = _time_torch(task.torch_op, inputs, timing)
    compiled = _time_torch(compiled_op, inputs, timing)
    configs = candidate_configs(task, case.dims, limit=config_limit, seed=0)
    # A shuffled order makes a sweep cut short by its deadline a fair random sample.
    random.Random(int(stable_hash([task.name, case.name], 8), 16)).shuffle(configs)
    record = sweep_shape(
        task,
        case,
        runner,
        configs,
        device_name=device_name,
        dtype="bfloat16",
        run_id=run_id,
        deadline=deadline,
        baseline_latency_ms=eager.get("median_ms"),
    )
    runner.release()
    torch.cuda.empty_cache()
    best = best_attempt(record)
    best_ms = best.metrics.get("latency_median_ms", best.latency_ms) if best else None
    row: dict[str, Any] = {
        "task": task.name,
        "op": task.op,
        "shape": case.name,
        "dims": case.dims,
        "model": case.model,
        "scenario": case.scenario,
        "bound": task.bound,
        "configs_tried": len(record.attempts),
        "configs_feasible": sum(a.feasible for a in record.attempts),
        "configs_planned": len(configs),
        "best_config": best.params if best else None,
        "triton": {
            "median_ms": best_ms,
            "mean_ms": best.latency_ms if best else None,
            "min_ms": best.latency_min_ms if best else None,
            **_throughput(task, case.dims, best_ms),
        },
        "eager": {**eager, **_throughput(task, case.dims, eager.get("median_ms"))},
        "compile": {**compiled, **_throughput(task, case.dims, compiled.get("median_ms"))},
    }
    for name in ("eager", "compile"):
        base = row[name].get("median_ms")
        row[f"speedup_vs_{name}"] = base / best_ms if base and best_ms else None
    tput = row["triton"]
    row["copy_gbps"] = copy["gbps"]
    if task.bound == "memory":
        row["fraction_of_copy_bw"] = tput["gbps"] / copy["gbps"] if tput["gbps"] else None
        peak = limits.get("mem_bandwidth_gbs")
        row["fraction_of_peak"] = tput["gbps"] / peak if tput["gbps"] and peak else None
    else:
        peak = limits.get("peak_bf16_tflops")
        row["fraction_of_peak"] = tput["tflops"] / peak if tput["tflops"] and peak else None
    return row, record


def run_kernel_bench(
    out_dir: Path,
    quick: bool = False,
    *,
    tasks: list[str] | None = None,
    trajectories_dir: Path | None = None,
    time_budget_s: float | None = None,
    warmup_ms: float = 10.0,
    rep_ms: float = 40.0,
    command: str,
) -> dict:
    """Tune every task on this machine's GPU; write kernels.json, kernels.md and trajectories.

    Args:
        out_dir: where kernels.json and kernels.md go.
        quick: one shape per task and at most 8 configurations each (a smoke run).
        tasks: catalogue names to run (default: all).
        trajectories_dir: where `<task>.jsonl` go (default: out_dir/<chip id>).
        time_budget_s: wall-clock budget for the sweeps; shapes share it evenly.
        warmup_ms, rep_ms: do_bench warm-up and repetition time per measurement.
        command: the command line that ran it, as the result records it.

    Returns:
        The report that kernels.json holds.
    """
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("the kernel benchmark needs an NVIDIA GPU with CUDA; none is visible")
    torch._dynamo.config.cache_size_limit = 64
    started = time.monotonic()
    device_name = torch.cuda.get_device_name()
    limits = hardware_limits(device_name)
    timing = (warmup_ms, rep_ms)
    copy = measure_copy_bandwidth(*timing)
    torch.cuda.empty_cache()
    names = tasks or task_names()
    budget = time_budget_s if time_budget_s is not None else (240.0 if quick else 1800.0)
    plan = [
        (get_task(n), c)
        for n in names
        for c in (get_task(n).shapes[:1] if quick else get_task(n).shapes)
    ]
    run_id = new_run_id()
    trajectories_dir = trajectories_dir or out_dir / limits["chip"]
    rows: list[dict[str, Any]] = []
    records: dict[str, list] = {n: [] for n in names}
    compiled_ops = {n: torch.compile(get_task(n).torch_op, dynamic=False) for n in names}
    for position, (task, case) in enumerate(plan):
        left = budget - (time.monotonic() - started)
        deadline = time.monotonic() + max(left, 0.0) / (len(plan) - position)
        print(f"[bench] {task.name} {case.name}: {left:.0f}s left", flush=True)
        try:
            row, record = bench_shape(
                task,
                case,
                compiled_ops[task.name],
                device_name=device_name,
                run_id=run_id,
                timing=timing,
                config_limit=8 if quick else None,
                deadline=deadline,
                limits=limits,
                copy=copy,
            )
        except Exception as exc:  # keep going: one broken shape must not lose the others
            rows.append(
                {"task": task.name, "shape": case.name, "error": f"{type(exc).__name__}: {exc}"}
            )
            print(f"[bench] {task.name} {case.name} failed: {exc}", flush=True)
            continue
        rows.append(row)
        records[task.name].append(record)
        print(
            f"[bench]   best {row['triton']['median_ms']} ms, x eager {row['speedup_vs_eager']}, "
            f"{row['configs_tried']} configs",
            flush=True,
        )
    files = []
    for name, recs in records.items():
        if recs:
            path = trajectories_dir / f"{name}.jsonl"
            write_trajectories(recs, path)
            files.append(str(path))
    result = {
        "benchmark": "kernels",
        "memory_held": memory_held("none", "the kernels are timed on their own"),
        "limits": {"descriptor": limits, "measured_copy": copy},
        "settings": {
            "quick": quick,
            "warmup_ms": warmup_ms,
            "rep_ms": rep_ms,
            "time_budget_s": budget,
            "dtype": "bfloat16",
            "run_id": run_id,
            "latency": "median of triton.testing.do_bench runs, L2 flushed per run",
        },
        **provenance(
            command,
            seeds=[0],  # timed, nothing drawn at random
            kind="measured",
            device={
                "gpu": device_name,
                **toolchain_versions(),
                "sms": torch.cuda.get_device_properties(0).multi_processor_count,
            },
        ),
        "rows": rows,
        "trajectory_files": files,
        "elapsed_s": time.monotonic() - started,
    }
    result["goals"] = goal_checks(result)
    write_result(out_dir, "kernels", result, render_markdown(result))
    return result


def merge_results(parts: list[dict[str, Any]], command: str) -> dict[str, Any]:
    """One report from several runs on the same machine (e.g. tasks split across calls).

    Rows keep the limits of the run that measured them; where two runs measured the same task
    and shape, the later run's row is kept. The report lists every run's copy measurement
    and command.
    """
    if not parts:
        raise ValueError("nothing to merge")
    gpus = {part["machine"]["gpu"] for part in parts}
    if len(gpus) > 1:
        raise ValueError(f"results come from different GPUs: {sorted(gpus)}")
    merged = json.loads(json.dumps(parts[0]))
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for part in parts:  # a later run of the same task and shape replaces an earlier one
        for row in part["rows"]:
            latest[(row["task"], row["shape"])] = row
    merged["rows"] = list(latest.values())
    merged["trajectory_files"] = [f for part in parts for f in part["trajectory_files"]]
    merged["elapsed_s"] = sum(part["elapsed_s"] for part in parts)
    merged.update(merged_provenance(parts, command))
    merged["runs"] = [
        {
            "run_id": part["settings"]["run_id"],
            "command": part["command"],
            "measured_copy": part["limits"]["measured_copy"],
            "elapsed_s": part["elapsed_s"],
        }
        for part in parts
    ]
    merged["goals"] = goal_checks(merged)
    return merged


def parser(name: str = prog("kernels", None)) -> argparse.ArgumentParser:
    """The options of `tunemem bench kernels` and `python -m tunemem.bench.kernels`."""
    p = argparse.ArgumentParser(prog=name, description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=RESULTS_OF["kernels"], help="results folder")
    p.add_argument("--trajectories", type=Path, default=None, help="where <task>.jsonl go")
    p.add_argument("--tasks", default=",".join(task_names()), help="kernels, comma-separated")
    p.add_argument("--quick", action="store_true", help="fewer shapes and timings (a smoke test)")
    p.add_argument("--budget-s", type=float, default=None, help="wall-clock budget, seconds")
    p.add_argument("--warmup-ms", type=float, default=10.0)
    p.add_argument("--rep-ms", type=float, default=40.0)
    p.add_argument(
        "--merge",
        action=Listed,
        item=Path,
        default=None,
        help="merge these kernels.json files into --out instead of running",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser(prog("kernels", argv)).parse_args(argv)
    if args.merge:
        parts = [json.loads(path.read_text()) for path in args.merge]
        result = merge_results(parts, command_line("kernels", argv))
        result.setdefault("memory_held", memory_held("none", "the kernels are timed on their own"))
        write_result(args.out, "kernels", result, render_markdown(result))
        return 0
    result = run_kernel_bench(
        args.out,
        args.quick,
        tasks=args.tasks.split(","),
        trajectories_dir=args.trajectories,
        time_budget_s=args.budget_s,
        warmup_ms=args.warmup_ms,
        rep_ms=args.rep_ms,
        command=command_line("kernels", argv),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
