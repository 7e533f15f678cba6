"""Evaluate one configuration of a task: did it compile, is it right, did it do the work, how fast.

Correctness compares against the task's float32 reference with the dtype's tolerance, on two
independent random inputs. "Did the work" has two checks: the kernel runs under a guard that
makes the reference and the PyTorch operators that would do the task's computation raise
(a kernel that hands the work back to PyTorch is rejected), and outputs on the two inputs must
differ (a kernel that returns a constant is rejected). Timing uses `triton.testing.do_bench`
(warm-up, repetitions, L2 flushed between runs) and keeps the latency distribution. What each
evaluation cost is kept too, as wall seconds: `cost_first_launch_s` (the first guarded call:
compilation unless Triton had the kernel cached, and one run), `cost_check_s` (the rest of the
checks) and `cost_timing_s` (do_bench).
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tunemem.kernels.runners.base import EvalResult
from tunemem.kernels.tasks.base import KernelTask, torch_dtype

HARNESS_VERSION = "1.0"

# Operators that do the arithmetic of any of our tasks; a Triton kernel calls none of them.
GENERIC_FORBIDDEN_OPS = frozenset(
    {
        "mm",
        "bmm",
        "addmm",
        "baddbmm",
        "matmul",
        "dot",
        "mv",
        "einsum",
        "linear",
        "_softmax",
        "softmax",
        "_log_softmax",
        "log_softmax",
        "logsumexp",
        "exp",
        "exp2",
        "sum",
        "mean",
        "amax",
        "rsqrt",
        "sqrt",
        "pow",
        "mul",
        "div",
        "_fused_rms_norm",
        "rms_norm",
        "native_layer_norm",
        "linalg_vector_norm",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_flash_attention_for_cpu",
        "_flash_attention_forward",
        "_efficient_attention_forward",
    }
)


class WorkDelegatedError(RuntimeError):
    """Raised inside a guarded kernel call that reached the reference or a forbidden operator."""


class _ForbiddenOpsMode(TorchDispatchMode):
    """Raises on any aten operator whose name is forbidden; lets allocation and copies through."""

    def __init__(self, forbidden: frozenset[str]) -> None:
        super().__init__()
        self.forbidden = forbidden

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        name = func.overloadpacket.__name__
        if name in self.forbidden or name.rstrip("_") in self.forbidden:
            raise WorkDelegatedError(f"kernel called torch operator aten.{name}")
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def reference_guard(task: KernelTask) -> Iterator[None]:
    """Within the block, the task's reference and torch op raise, as do forbidden operators."""

    def refuse(*_args: Any, **_kwargs: Any) -> torch.Tensor:
        raise WorkDelegatedError(f"kernel called the {task.name} reference")

    saved = (task.reference, task.torch_op)
    object.__setattr__(task, "reference", refuse)
    object.__setattr__(task, "torch_op", refuse)
    try:
        with _ForbiddenOpsMode(GENERIC_FORBIDDEN_OPS | task.forbidden_ops):
            yield
    finally:
        object.__setattr__(task, "reference", saved[0])
        object.__setattr__(task, "torch_op", saved[1])


@dataclass
class Problem:
    """Two independent random inputs of one shape and their float32 reference outputs."""

    dims: dict[str, int]
    dtype: torch.dtype
    device: str
    inputs: tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]
    expected: tuple[torch.Tensor, torch.Tensor]


def prepare_problem(
    task: KernelTask, dims: dict[str, int], dtype: str | torch.dtype, device: str, seed: int = 0
) -> Problem:
    """Draw the two inputs and compute their references once, for many configurations."""
    tdtype = torch_dtype(dtype)
    inputs = (
        task.make_inputs(dims, tdtype, device, seed),
        task.make_inputs(dims, tdtype, device, seed + 1),
    )
    with torch.no_grad():
        expected = (task.reference(*inputs[0]), task.reference(*inputs[1]))
    return Problem(dict(dims), tdtype, device, inputs, expected)


def compare(
    out: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float, rel_norm: float
) -> tuple[bool, str | None, dict[str, float]]:
    """Whether `out` matches `expected` within tolerance; the reason if not; error metrics."""
    if not isinstance(out, torch.Tensor):
        return False, f"returned {type(out).__name__}, not a tensor", {}
    if tuple(out.shape) != tuple(expected.shape):
        return False, f"shape {tuple(out.shape)} != {tuple(expected.shape)}", {}
    got = out.float()
    if not torch.isfinite(got).all():
        return False, "output has NaN or Inf", {}
    diff = (got - expected).abs()
    max_abs = float(diff.max()) if diff.numel() else 0.0
    denom = float(torch.linalg.vector_norm(expected)) or 1.0
    rel = float(torch.linalg.vector_norm(got - expected)) / denom
    metrics = {"max_abs_error": max_abs, "rel_norm_error": rel}
    if rel > rel_norm:
        return False, f"relative error {rel:.2e} > {rel_norm:.0e}", metrics
    worst = float((diff - rtol * expected.abs()).max()) if diff.numel() else 0.0
    if worst > atol:
        return False, f"elementwise error {max_abs:.2e} past atol {atol} + rtol {rtol}", metrics
    return True, None, metrics


@dataclass(frozen=True)
class LatencyStats:
    """A latency distribution in milliseconds."""

    mean: float
    minimum: float
    median: float
    p10: float
    p90: float
    std: float
    repetitions: int

    def as_metrics(self) -> dict[str, float]:
        return {
            "latency_median_ms": self.median,
            "latency_p10_ms": self.p10,
            "latency_p90_ms": self.p90,
            "latency_std_ms": self.std,
        }


def latency_stats(times_ms: list[float]) -> LatencyStats:
    """Summary of a list of per-run times."""
    ordered = sorted(times_ms)
    n = len(ordered)

    def quantile(q: float) -> float:
        return ordered[min(n - 1, max(0, round(q * (n - 1))))]

    return LatencyStats(
        mean=statistics.fmean(ordered),
        minimum=ordered[0],
        median=statistics.median(ordered),
        p10=quantile(0.1),
        p90=quantile(0.9),
        std=statistics.pstdev(ordered) if n > 1 else 0.0,
        repetitions=n,
    )


def time_call(fn: Callable[[], Any], warmup_ms: float = 25, rep_ms: float = 100) -> LatencyStats:
    """Time `fn` on the GPU with `triton.testing.do_bench`, keeping every run's time."""
    import triton.testing

    try:
        times = triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="all")
    except (AssertionError, TypeError):  # Triton before "all": rebuild from its summaries
        p10, median, p90 = triton.testing.do_bench(
            fn, warmup=warmup_ms, rep=rep_ms, quantiles=[0.1, 0.5, 0.9]
        )
        mean = triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="mean")
        minimum = triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="min")
        return LatencyStats(mean, minimum, median, p10, p90, float("nan"), 0)
    return latency_stats([float(t) for t in times])


def throughput_metrics(
    task: KernelTask, dims: dict[str, int], element_size: int, seconds: float
) -> dict[str, float]:
    """Achieved GB/s and TFLOP/s of one call that took `seconds`."""
    return {
        "gbps": task.bytes_moved(dims, element_size) / seconds / 1e9,
        "tflops": task.flops(dims) / seconds / 1e12,
    }


def _error_category(exc: BaseException) -> str:
    kind = type(exc).__name__
    if kind == "OutOfResources" or "out of resource" in str(exc).lower():
        return "resources"
    if kind in {"CompilationError", "CompileTimeAssertionFailure", "PTXASError"}:
        return "compile"
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return "resources"
    return "runtime"


def _failed(exc: BaseException) -> EvalResult:
    category = _error_category(exc)
    message = (
        f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
    )
    return EvalResult(
        compiled=category != "compile", correct=None, error_category=category, error=message[:500]
    )


def evaluate(
    task: KernelTask,
    problem: Problem,
    config: dict[str, Any],
    *,
    launch: Callable[..., torch.Tensor] | None = None,
    timing: tuple[float, float] | None = None,
) -> EvalResult:
    """Check one configuration on a prepared problem and, with `timing`, time it.

    Args:
        task: the kernel task.
        problem: inputs and references from `prepare_problem`.
        config: one value per parameter of the task's space.
        launch: the kernel to judge (default: the task's Triton template); tests pass bad ones.
        timing: (warm-up ms, repetition ms) for `do_bench`, or None for no timing.

    Returns:
        The outcome; an invalid, failing, wrong or rejected kernel is an infeasible result.
    """
    violation = task.check(config, problem.dims)
    if violation is not None:
        return EvalResult(
            compiled=False,
            correct=None,
            error_category=violation.category,
            error=f"invalid for shape: {violation.reason}",
        )
    run = launch or task.launch
    outputs: list[torch.Tensor] = []
    metrics: dict[str, float] = {}
    tol = task.tolerance(problem.dtype)
    started = time.perf_counter()
    for inputs, expected in zip(problem.inputs, problem.expected, strict=True):
        try:
            with reference_guard(task), torch.no_grad():
                out = run(config, *inputs)
            if problem.device.startswith("cuda"):
                torch.cuda.synchronize()
            if not outputs:  # the first call compiles (unless cached) and runs once
                metrics["cost_first_launch_s"] = time.perf_counter() - started
        except WorkDelegatedError as exc:
            return EvalResult(
                compiled=True, correct=None, error_category="rejected", error=str(exc)
            )
        except Exception as exc:  # a kernel failure is an outcome, not a crash of the sweep
            return _failed(exc)
        ok, reason, errors = compare(out, expected, tol.atol, tol.rtol, tol.rel_norm)
        for key, value in errors.items():
            metrics[key] = max(metrics.get(key, 0.0), value)
        if not ok:
            return EvalResult(
                compiled=True,
                correct=False,
                error_category="incorrect",
                error=reason,
                metrics=metrics,
            )
        outputs.append(out)
    if torch.equal(outputs[0], outputs[1]):
        return EvalResult(
            compiled=True,
            correct=None,
            error_category="rejected",
            error="same output for two different inputs (constant kernel)",
            metrics=metrics,
        )
    checked = time.perf_counter()
    metrics["cost_check_s"] = checked - started - metrics.get("cost_first_launch_s", 0.0)
    if timing is None:
        return EvalResult(compiled=True, correct=True, metrics=metrics)
    inputs = problem.inputs[0]
    try:
        stats = time_call(lambda: run(config, *inputs), warmup_ms=timing[0], rep_ms=timing[1])
    except Exception as exc:
        return _failed(exc)
    metrics["cost_timing_s"] = time.perf_counter() - checked
    metrics.update(stats.as_metrics())
    element_size = torch.empty((), dtype=problem.dtype).element_size()
    if stats.median > 0 and math.isfinite(stats.median):
        metrics.update(throughput_metrics(task, problem.dims, element_size, stats.median / 1e3))
    return EvalResult(
        compiled=True,
        correct=True,
        latency_ms=stats.mean,
        latency_min_ms=stats.minimum,
        repetitions=stats.repetitions,
        metrics=metrics,
    )
