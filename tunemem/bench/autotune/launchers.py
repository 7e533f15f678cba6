"""The project's Triton kernels under `triton.autotune`, and one arm of `bench autotune` run.

The tasks launch their kernels through `task.launch(config, *inputs)`, which picks the kernel
variant (pointer or TMA loads, persistent or not) and the grid from the configuration. A
`TaskLauncher` makes that launch a Triton `KernelInterface`, so Triton's own `Autotuner` wraps
it unchanged: its configurations are the task's tuning space, its key is the problem's
dimensions (passed as arguments the launch ignores), and its `early_config_prune` is the task's
own validity check, as a Triton user would write it. The Autotuner compiles (on first launch)
and times exactly as it does for a `@triton.jit` kernel.

`run_arm` is one arm in one process (`python -m tunemem.bench.autotune.launchers SPEC.json`):
Triton's
compile cache starts empty (the caller sets TRITON_CACHE_DIR), and the task's shapes are tuned
in order in that process, as the shapes of a model meet one serving process.
"""

from __future__ import annotations

import inspect
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from triton.runtime.jit import KernelInterface

from tunemem.kernels.tasks.base import KernelTask

LAUNCH_OPTIONS = ("num_warps", "num_stages")


def triton_configs(task: KernelTask) -> list[Any]:
    """The task's tuning space as `triton.Config`s (launch options as Config fields)."""
    import triton

    out = []
    for config in task.configs(task.tuning_space):
        kwargs = {k: v for k, v in config.items() if k not in LAUNCH_OPTIONS}
        options = {k: config[k] for k in LAUNCH_OPTIONS if k in config}
        out.append(triton.Config(kwargs, **options))
    return out


def task_config(task: KernelTask, meta: dict[str, Any]) -> dict[str, Any]:
    """The task's configuration dict from a launch's meta-parameters."""
    return {name: meta[name] for name in task.tuning_space}


class TaskLauncher(KernelInterface):
    """A task's launch as a kernel Triton's Autotuner can wrap: args = inputs then dims."""

    def __init__(self, task: KernelTask, dim_names: list[str]) -> None:
        self.task = task
        self.dim_names = list(dim_names)
        inputs = [p for p in inspect.signature(task.launch).parameters if p != "config"]
        self.n_inputs = len(inputs)
        self.arg_names = [*inputs, *self.dim_names]
        self.fn = task.launch  # Triton's Autotuner walks .fn down to a plain function
        self.__name__ = task.kernel

    def run(self, *args: Any, grid: Any = None, warmup: bool = False, **meta: Any) -> Any:
        return self.task.launch(task_config(self.task, meta), *args[: self.n_inputs])


def autotuned(task: KernelTask, dim_names: list[str], **autotune_kwargs: Any) -> Any:
    """`triton.autotune` over the task's tuning space, pruned by the task's check."""
    import triton

    def early_config_prune(configs: list[Any], named_args: dict[str, Any], **kwargs: Any):
        dims = {name: {**named_args, **kwargs}[name] for name in dim_names}
        keep = [c for c in configs if task.valid({**c.kwargs, **_options(c, task)}, dims)]
        return keep or configs

    launcher = TaskLauncher(task, dim_names)
    return triton.autotune(
        triton_configs(task),
        key=list(dim_names),
        prune_configs_by={"early_config_prune": early_config_prune},
        **autotune_kwargs,
    )(launcher)


def _options(config: Any, task: KernelTask) -> dict[str, Any]:
    return {k: getattr(config, k) for k in LAUNCH_OPTIONS if k in task.tuning_space}


def config_dict(task: KernelTask, config: Any) -> dict[str, Any]:
    """A `triton.Config` of the task as the task's configuration dict."""
    return {**config.kwargs, **_options(config, task)}


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def tune_shape(
    task: KernelTask,
    case: Any,
    arm: str,
    device: str,
    url: str | None = None,
    top_k: int | float = 5,
    explore: float = 0.2,
    do_bench: Any = None,
    seed: int = 0,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Autotune one shape with one arm ("full": triton.autotune; "memory": the drop-in).

    Returns the wall seconds of the first call (prune, suggest, compile, timing and the
    launch), the chosen configuration, every timing and, for the memory arm, its decision and
    the trajectory it reported.
    """
    from tunemem.kernels.tasks.base import torch_dtype

    dims = dict(case.dims)
    names = list(dims)
    inputs = task.make_inputs(dims, torch_dtype(task.default_dtype), device, seed)
    kwargs = {"do_bench": do_bench} if do_bench is not None else {}
    kernel = autotuned(task, names, **kwargs)
    tuning = None
    if arm == "memory":
        from tunemem.agent_client.tuners.triton.autotune import hook

        assert url is not None, "the memory arm needs a memory URL"
        kernel = hook(
            kernel,
            url,
            top_k=top_k,
            explore=explore,
            op=task.op,
            kernel=task.kernel,
            options=options,
            seed=seed,
            # The benchmark measures the memory's choices, not its deadline: a suggest may wait
            # for the model trained on what the previous shape reported.
            timeout_s=60.0,
        )
        tuning = kernel._tunemem
    _sync(device)
    started = time.perf_counter()
    kernel[(1,)](*inputs, *[dims[n] for n in names])
    _sync(device)
    wall_s = time.perf_counter() - started
    timings = {
        json.dumps(config_dict(task, c), sort_keys=True): _median(t)
        for c, t in (getattr(kernel, "configs_timings", None) or {}).items()
    }
    entry: dict[str, Any] = {
        "task": task.name,
        "shape": case.name,
        "dims": dims,
        "arm": arm,
        "wall_s": wall_s,
        # The drop-in's rounds benchmark inside the prune; Triton's own pass then reuses them.
        "bench_s": (tuning.last_decision or {}).get("bench_s") if tuning else None,
        "chosen": config_dict(task, kernel.best_config),
        "timed": len(timings),
        "timings": timings,
    }
    if tuning is None or entry["bench_s"] is None:
        entry["bench_s"] = getattr(kernel, "bench_time", None)
    if tuning is not None:
        sent = tuning.flush(30.0)
        entry["decision"] = tuning.last_decision
        entry["reported"] = [
            {"sent": r["sent"], "error": r["error"], "outcomes": len(r["outcomes"])}
            for r in tuning.reports
        ]
        entry["reports_flushed"] = sent
        entry["trajectories"] = [r["trajectory"] for r in tuning.reports]
    return entry


def _median(timing: Any) -> float | None:
    value = timing[0] if isinstance(timing, list | tuple) else timing
    return float(value) if value is not None and math.isfinite(value) else None


def retime(
    task: KernelTask, case: Any, configs: dict[str, dict[str, Any]], rounds: int, device: str
) -> dict[str, list[float]]:
    """Re-time each named configuration, interleaved round by round (median of do_bench)."""
    import triton

    from tunemem.kernels.tasks.base import torch_dtype

    inputs = task.make_inputs(dict(case.dims), torch_dtype(task.default_dtype), device, 0)
    bench = _bench_fn(device) or (
        lambda fn: float(triton.testing.do_bench(fn, return_mode="median"))
    )
    out: dict[str, list[float]] = {name: [] for name in configs}
    names = list(configs)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            config = configs[name]
            out[name].append(bench(lambda c=config: task.launch(c, *inputs)))
    return out


def _cpu_do_bench(device: str) -> Any:
    if device != "cpu":
        return None
    from tunemem.agent_client.tuners.triton.autotune import interpreter_bench

    return interpreter_bench


def _bench_fn(device: str) -> Any:
    """The interpreter's timer on the CPU (Triton has no benchmarker there), else None."""
    if device != "cpu":
        return None
    from tunemem.agent_client.tuners.triton.autotune import interpreter_bench

    return lambda fn, quantiles=None: interpreter_bench(fn)[0]


def run_arm(spec: dict[str, Any]) -> dict[str, Any]:
    """One arm over the shapes of one task in this process (see the module docstring)."""
    from tunemem.kernels.catalogue import get_task

    task = get_task(spec["task"])
    results = []
    for item in spec["shapes"]:
        case = task.shape(item["shape"])
        if spec.get("deadline") and time.time() > spec["deadline"]:
            print(f"[autotune] {task.name} {case.name}: skipped (time budget spent)", flush=True)
            continue
        results.append(
            tune_shape(
                task,
                case,
                spec["arm"],
                spec.get("device", "cuda"),
                url=item.get("url"),
                top_k=spec.get("top_k", 5),
                explore=spec.get("explore", 0.2),
                seed=spec.get("seed", 0),
                do_bench=_cpu_do_bench(spec.get("device", "cuda")),
                options=spec.get("options"),
            )
        )
        print(
            f"[autotune] {task.name} {case.name} {spec['arm']}: {results[-1]['wall_s']:.2f}s, "
            f"{results[-1]['timed']} timed",
            flush=True,
        )
    return {"task": task.name, "arm": spec["arm"], "shapes": results}


def run_retime(spec: dict[str, Any]) -> dict[str, Any]:
    """Interleaved re-timing of each shape's chosen configurations."""
    from tunemem.kernels.catalogue import get_task

    task = get_task(spec["task"])
    out = []
    for item in spec["shapes"]:
        case = task.shape(item["shape"])
        runs = retime(
            task, case, item["configs"], spec.get("rounds", 5), spec.get("device", "cuda")
        )
        out.append({"shape": case.name, "retimed_ms": runs})
    return {"task": task.name, "retime": out}


def main(argv: list[str] | None = None) -> int:
    """`python -m tunemem.bench.autotune.launchers SPEC.json OUT.json`: one arm, or a re-timing."""
    args = sys.argv[1:] if argv is None else argv
    spec = json.loads(Path(args[0]).read_text())
    result = run_retime(spec) if spec.get("arm") == "retime" else run_arm(spec)
    Path(args[1]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
