"""Record a fused-MoE timing landscape on a GPU: every configuration of a plan, per batch size.

`python -m tunemem.kernels.moe_sweep PLAN.json OUT_DIR [--workers 16]` reads a plan
({"cases": [{"name", "E", "N", "hidden", "topk", "dtype", "batch_sizes", "configs"}]}),
compiles every (dtype, configuration) first in parallel processes on tiny problems of the same
specialisation (Triton's on-disk cache then serves the real shapes, since batch size, top-k
and the routed-weight switch are runtime arguments), then times each case's configurations at
each batch size with `kernels.moe_timing` and appends one JSON line per timing to
OUT_DIR/<case>.jsonl as it goes, so a run stopped early keeps what it measured.
Self-contained on purpose: it needs torch, triton and `kernels/` only (no web stack).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

# Tiny shapes that Triton specialises like the real ones (every size a multiple of 16).
_TINY = {"E": 4, "N": 64, "K": 128, "topk": 2, "M": 32}


def _compile_chunk(job: tuple[str, list[dict[str, int]]]) -> dict[str, str | None]:
    import torch

    from tunemem.kernels.moe_timing import MoeProblem

    dtype, configs = job
    problem = MoeProblem(_TINY["E"], _TINY["N"], _TINY["K"], _TINY["topk"], dtype)
    inputs, _ = problem.batch(_TINY["M"])
    errors: dict[str, str | None] = {}
    for config in configs:
        key = json.dumps(config, sort_keys=True)
        violation = problem.task.check(config, {**problem.dims, "M": _TINY["M"]})
        if violation is not None:
            errors[key] = f"invalid: {violation.reason}"
            continue
        try:
            problem.task.launch(config, *inputs)
            torch.cuda.synchronize()
            errors[key] = None
        except Exception as exc:  # the error is the outcome; the sweep goes on
            text = str(exc).strip().splitlines()
            errors[key] = f"{type(exc).__name__}: {text[-1] if text else ''}"[:300]
    return errors


def compile_all(plan: dict[str, Any], workers: int) -> dict[tuple[str, str], str | None]:
    """Compile every distinct (dtype, configuration) of the plan; the compile error of each."""
    todo: dict[str, dict[str, dict[str, int]]] = {}
    for case in plan["cases"]:
        for config in case["configs"]:
            todo.setdefault(case["dtype"], {})[json.dumps(config, sort_keys=True)] = config
    jobs = []
    for dtype, configs in todo.items():
        values = list(configs.values())
        size = max(1, len(values) // (workers * 3) + 1)
        jobs += [(dtype, values[i : i + size]) for i in range(0, len(values), size)]
    context = multiprocessing.get_context("spawn")
    errors: dict[tuple[str, str], str | None] = {}
    with context.Pool(workers) as pool:
        for (dtype, _), result in zip(jobs, pool.map(_compile_chunk, jobs), strict=True):
            errors.update({(dtype, key): err for key, err in result.items()})
    return errors


def time_case(
    case: dict[str, Any],
    compiled: dict[tuple[str, str], str | None],
    out_dir: Path,
    deadline: float = float("inf"),
) -> int:
    """Time one case's configurations at each batch size; returns the timings written.
    Batch sizes not started by `deadline` (a `time.perf_counter` value) are left out."""
    from tunemem.kernels.moe_timing import MoeProblem

    problem = MoeProblem(case["E"], case["N"], case["hidden"], case["topk"], case["dtype"])
    written = 0
    path = out_dir / f"{case['name']}.jsonl"
    with path.open("a") as sink:
        for m in case["batch_sizes"]:
            started = time.perf_counter()
            if started > deadline:
                print(f"{case['name']} M={m}: not started, past the deadline", flush=True)
                continue
            for config in case["configs"]:
                key = json.dumps(config, sort_keys=True)
                error = compiled.get((case["dtype"], key))
                if error is not None:
                    row = {"m": m, "config": config, "us": None, "error": error}
                else:
                    timing = problem.time_config(config, m)
                    row = {
                        "m": m,
                        "config": config,
                        "us": timing.us,
                        "error": timing.error,
                        "rel_err": timing.rel_err,
                        "replays_us": timing.replays_us,
                    }
                sink.write(json.dumps(row) + "\n")
                written += 1
            sink.flush()
            print(
                f"{case['name']} M={m}: {len(case['configs'])} configs "
                f"in {time.perf_counter() - started:.1f} s",
                flush=True,
            )
    return written


def check_tasks(out_dir: Path) -> list[dict[str, Any]]:
    """The harness's checks (reference, guard, two inputs) and timing of both MoE tasks on
    their GPU shapes, two configurations each; one JSON line per evaluation."""
    from tunemem.kernels.harness import evaluate, prepare_problem
    from tunemem.kernels.tasks.fused_moe import TASK as BF16
    from tunemem.kernels.tasks.fused_moe_fp8 import TASK as FP8

    configs = [
        {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1,
         "num_warps": 4, "num_stages": 3},
        {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 16,
         "num_warps": 8, "num_stages": 4},
    ]  # fmt: skip
    rows = []
    for task in (BF16, FP8):
        for shape in task.shapes:
            problem = prepare_problem(task, shape.dims, "bfloat16", "cuda", seed=11)
            for config in configs:
                result = evaluate(task, problem, config, timing=(25, 100))
                row = {"task": task.name, "shape": shape.name, "config": config,
                       "correct": result.correct, "error": result.error,
                       "latency_ms": result.latency_ms, "metrics": result.metrics}  # fmt: skip
                print(json.dumps(row), flush=True)
                rows.append(row)
    (out_dir / "check.json").write_text(json.dumps(rows, indent=1))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plan", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--check", action="store_true", help="run the harness checks first")
    parser.add_argument("--cases", nargs="*", help="only these cases of the plan")
    parser.add_argument("--deadline-s", type=float, default=float("inf"))
    args = parser.parse_args(argv)
    plan = json.loads(args.plan.read_text())
    if args.cases:
        plan["cases"] = [c for c in plan["cases"] if c["name"] in args.cases]
    args.out.mkdir(parents=True, exist_ok=True)
    if args.check:
        check_tasks(args.out)
    started = time.perf_counter()
    compiled = compile_all(plan, args.workers)
    failed = sum(1 for err in compiled.values() if err is not None)
    compile_s = time.perf_counter() - started
    print(f"compiled {len(compiled)} (dtype, config) pairs, {failed} failed, {compile_s:.1f} s")
    summary: dict[str, Any] = {"compile_s": compile_s, "compiled": len(compiled), "cases": {}}
    for case in plan["cases"]:
        case_started = time.perf_counter()
        count = time_case(case, compiled, args.out, started + args.deadline_s)
        summary["cases"][case["name"]] = {
            "timings": count,
            "wall_s": time.perf_counter() - case_started,
        }
        (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
