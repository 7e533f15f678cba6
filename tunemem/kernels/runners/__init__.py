"""Runners by name: `create_runner("cuda" | "cpu" | "replay", **kwargs)`.

Each runner module is imported only when asked for, so the replay runner needs no GPU stack
and the cpu runner can switch Triton to its interpreter before any kernel is decorated.
"""

from __future__ import annotations

import importlib
from typing import Any

from tunemem.kernels.runners.base import EvalResult, Runner

RUNNER_CLASSES: dict[str, tuple[str, str]] = {
    "cuda": ("tunemem.kernels.runners.cuda", "CudaRunner"),
    "cpu": ("tunemem.kernels.runners.cpu", "CpuRunner"),
    "replay": ("tunemem.kernels.runners.replay", "ReplayRunner"),
}


def runner_kinds() -> list[str]:
    """The valid runner kinds."""
    return list(RUNNER_CLASSES)


def create_runner(kind: str, **kwargs: Any) -> Runner:
    """Build a runner of this kind with its own keyword arguments.

    cuda and cpu take `task` (catalogue name), `shape` (a shape name or a dims dict) and
    `dtype`; replay takes what `ReplayRunner` takes. A wrong kind raises ValueError.
    """
    if kind not in RUNNER_CLASSES:
        raise ValueError(f"unknown runner kind {kind!r}; valid kinds: {', '.join(RUNNER_CLASSES)}")
    module_name, class_name = RUNNER_CLASSES[kind]
    runner_class = getattr(importlib.import_module(module_name), class_name)
    return runner_class(**kwargs)


__all__ = ["EvalResult", "Runner", "create_runner", "runner_kinds"]
