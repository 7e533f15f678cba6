"""The cuda runner: compile, check and time Triton kernels live on an NVIDIA GPU."""

from __future__ import annotations

from typing import Any

import torch

from tunemem.kernels.runners.live import LiveRunner
from tunemem.kernels.tasks.base import KernelTask, ShapeCase


class CudaRunner(LiveRunner):
    """Evaluates configurations on a CUDA device, timed with do_bench (L2 flushed per run)."""

    name = "cuda"

    def __init__(
        self,
        task: str | KernelTask,
        shape: str | dict[str, int] | ShapeCase | None = None,
        dtype: str | None = None,
        seed: int = 0,
        device: str = "cuda",
        warmup_ms: float = 25.0,
        rep_ms: float = 100.0,
        space: str = "tuning",
    ) -> None:
        if not torch.cuda.is_available():
            raise RuntimeError("cuda runner needs an NVIDIA GPU with CUDA; none is visible")
        self.device = device
        self.warmup_ms = warmup_ms
        self.rep_ms = rep_ms
        super().__init__(task, shape, dtype, seed, space)

    def default_shape(self) -> ShapeCase:
        return self.task.shapes[0]

    def device_name(self) -> str:
        return torch.cuda.get_device_name(torch.device(self.device))

    def evidence(self) -> dict[str, Any]:
        props = torch.cuda.get_device_properties(torch.device(self.device))
        return {
            **super().evidence(),
            "gpu": self.device_name(),
            "sms": props.multi_processor_count,
            "warmup_ms": self.warmup_ms,
            "rep_ms": self.rep_ms,
            "latency_ms": "mean of do_bench runs (L2 flushed per run); metrics hold the median "
            "and percentiles",
        }

    def timing(self) -> tuple[float, float] | None:
        return (self.warmup_ms, self.rep_ms)
