"""Timing one fused-MoE launch configuration on the GPU, the way vLLM's `benchmark_config` does.

`MoeProblem` holds one layer shape (E, N, hidden size, top-k, dtype) with its weights drawn
once; `time_config(config, m)` builds the batch of `m` tokens (kept per batch size), checks the
kernel's output against the float32 reference, then captures several layer calls in a CUDA
graph and replays it, returning microseconds per call. `benchmark_config` has vLLM's argument
order, so this project's kernel is the default timing function of `tunemem tune moe`.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

import torch

from tunemem.kernels.harness import compare

# Replays long enough that launch gaps and event resolution do not matter (microseconds).
GRAPH_TARGET_US = 300.0
MAX_CALLS_PER_GRAPH = 10
REPLAYS = 5


@dataclass
class Timing:
    """One configuration at one batch size: microseconds per call, or why there is none."""

    us: float | None
    error: str | None = None
    rel_err: float | None = None
    replays_us: list[float] = field(default_factory=list)


class MoeProblem:
    """One MoE layer shape on one device, with inputs and references kept per batch size."""

    def __init__(
        self,
        experts: int,
        n: int,
        hidden: int,
        top_k: int,
        dtype: str = "bfloat16",
        device: str = "cuda",
        seed: int = 0,
    ) -> None:
        if dtype == "fp8_w8a8":
            from tunemem.kernels.tasks.fused_moe_fp8 import TASK
        elif dtype == "bfloat16":
            from tunemem.kernels.tasks.fused_moe import TASK
        else:
            raise ValueError(f"unsupported dtype {dtype!r}; supported: bfloat16, fp8_w8a8")
        self.task = TASK
        self.dims = {"E": experts, "N": n, "K": hidden, "topk": top_k}
        self.dtype = dtype
        self.device = device
        self.seed = seed
        self._batches: dict[int, tuple[tuple[torch.Tensor, ...], torch.Tensor]] = {}

    def batch(self, m: int) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
        """The inputs for `m` tokens and their float32 reference output (drawn once)."""
        if m not in self._batches:
            self._batches.clear()  # one batch size at a time keeps memory flat
            dims = {**self.dims, "M": m}
            inputs = self.task.make_inputs(dims, torch.bfloat16, self.device, self.seed)
            with torch.no_grad():
                expected = self.task.reference(*inputs)
            self._batches[m] = (inputs, expected)
        return self._batches[m]

    def time_config(self, config: dict[str, Any], m: int) -> Timing:
        """Check, then time one configuration at batch size `m` (CUDA graph replays)."""
        violation = self.task.check(config, {**self.dims, "M": m})
        if violation is not None:
            return Timing(None, f"invalid: {violation.reason}")
        inputs, expected = self.batch(m)
        tol = self.task.tolerance("bfloat16")
        try:
            out = self.task.launch(config, *inputs)
            torch.cuda.synchronize()
        except Exception as exc:  # a failing configuration is an outcome, not a crash
            return Timing(None, _brief(exc))
        ok, reason, metrics = compare(out, expected, tol.atol, tol.rtol, tol.rel_norm)
        rel = metrics.get("rel_norm_error")
        if not ok:
            return Timing(None, f"incorrect: {reason}", rel)
        try:
            return self._replay(config, inputs, rel)
        except Exception as exc:
            return Timing(None, _brief(exc), rel)

    def _replay(self, config: dict[str, Any], inputs: tuple[Any, ...], rel: float | None) -> Timing:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        self.task.launch(config, *inputs)
        end.record()
        end.synchronize()
        single_us = start.elapsed_time(end) * 1e3
        calls = int(max(1, min(MAX_CALLS_PER_GRAPH, GRAPH_TARGET_US // max(single_us, 1.0))))
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            self.task.launch(config, *inputs)  # warm the graph pool outside capture
        torch.cuda.current_stream().wait_stream(stream)
        with torch.cuda.graph(graph):
            for _ in range(calls):
                self.task.launch(config, *inputs)
        graph.replay()
        torch.cuda.synchronize()
        replays = []
        for _ in range(REPLAYS if single_us < 20_000 else 2):
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            replays.append(start.elapsed_time(end) * 1e3 / calls)
        graph.reset()
        return Timing(statistics.median(replays), None, rel, replays)


_PROBLEMS: dict[tuple[Any, ...], MoeProblem] = {}


def benchmark_config(
    config: dict[str, int],
    num_tokens: int,
    num_experts: int,
    shard_intermediate_size: int,
    hidden_size: int,
    topk: int,
    dtype: Any = torch.bfloat16,
    use_fp8_w8a8: bool = False,
    use_int8_w8a16: bool = False,
    num_iters: int = 100,
) -> float:
    """vLLM's `benchmark_config` signature over this project's kernel: microseconds per call.

    `shard_intermediate_size` is 2N, as in vLLM. Raises RuntimeError for a configuration that
    fails to compile, run or match the reference (vLLM's tuner skips those)."""
    if use_int8_w8a16:
        raise ValueError("int8_w8a16 is not implemented by this project's kernel")
    key = (num_experts, shard_intermediate_size, hidden_size, topk, use_fp8_w8a8)
    if key not in _PROBLEMS:
        name = "fp8_w8a8" if use_fp8_w8a8 else "bfloat16"
        _PROBLEMS.clear()
        _PROBLEMS[key] = MoeProblem(
            num_experts, shard_intermediate_size // 2, hidden_size, topk, name
        )
    timing = _PROBLEMS[key].time_config(config, num_tokens)
    if timing.us is None:
        raise RuntimeError(timing.error or "configuration failed")
    return timing.us


def _brief(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}"[:300]
