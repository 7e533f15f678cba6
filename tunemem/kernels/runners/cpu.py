"""The cpu runner: compile and check Triton kernels on any machine through the interpreter.

It reports compiled/correct and the anti-hacking verdict but no latency: interpreted timings
say nothing about a GPU. Importing this module switches Triton to its interpreter
(`TRITON_INTERPRET=1`); a task module imported before that keeps its compiled kernel, so the
runner then refuses to start. The default dtype is float32 (see `CpuRunner.default_dtype`)
and the default space the whole declared one (the pruned tuning grid is sized for GPU shapes,
not the tiny ones used here).
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TRITON_INTERPRET", "1")

from typing import Any  # noqa: E402

from tunemem.kernels.catalogue import TASK_MODULES  # noqa: E402
from tunemem.kernels.evidence import host_chip  # noqa: E402
from tunemem.kernels.runners.live import LiveRunner  # noqa: E402
from tunemem.kernels.tasks.base import KernelTask, ShapeCase  # noqa: E402


def interpreter_active() -> bool:
    """Whether Triton kernels decorated from now on run in the interpreter."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def compiled_task_modules() -> list[str]:
    """Task modules already loaded whose kernels were decorated for a GPU, not interpreted."""
    stale = []
    for module_name in TASK_MODULES.values():
        module = sys.modules.get(module_name)
        if module is None:
            continue
        kernel = getattr(module, module.TASK.kernel)
        if type(kernel).__name__ != "InterpretedFunction":
            stale.append(module_name)
    return stale


class CpuRunner(LiveRunner):
    """Compile and correctness on CPU under TRITON_INTERPRET=1; no latency."""

    name = "cpu"
    device = "cpu"

    def __init__(
        self,
        task: str | KernelTask,
        shape: str | dict[str, int] | ShapeCase | None = None,
        dtype: str | None = None,
        seed: int = 0,
        space: str = "full",
    ) -> None:
        if not interpreter_active():
            raise RuntimeError("cpu runner needs TRITON_INTERPRET=1 before Triton kernels load")
        stale = compiled_task_modules()
        if stale:
            raise RuntimeError(
                f"{', '.join(stale)} imported before TRITON_INTERPRET=1 was set; import "
                "tunemem.kernels.runners.cpu first, or set TRITON_INTERPRET=1 in the environment"
            )
        super().__init__(task, shape, dtype, seed, space)

    def device_name(self) -> str:
        return "cpu (Triton interpreter)"

    def chip(self) -> tuple[str, str, str]:
        chip, backend, raw = host_chip()
        return chip, backend, f"{raw} (Triton interpreter)"

    def evidence(self) -> dict[str, Any]:
        return {
            **super().evidence(),
            "interpreter": True,
            "latency": "none: the Triton interpreter decides feasibility only",
        }

    def default_shape(self) -> ShapeCase:
        return self.task.small_shapes[0]

    def default_dtype(self) -> str:
        # Triton 3.9's interpreter computes bf16 tl.dot wrongly (numpy has no bf16), so
        # checks default to float32; float16 and bf16 without dot products are fine too.
        return "float32"
