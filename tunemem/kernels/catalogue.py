"""The task catalogue: every real kernel task by name, imported lazily.

Importing a task module compiles nothing, but it does decorate Triton kernels, which fixes
whether they run interpreted; so the cpu runner sets TRITON_INTERPRET before calling here.
"""

from __future__ import annotations

import importlib

from tunemem.kernels.tasks.base import KernelTask

TASK_MODULES: dict[str, str] = {
    "softmax": "tunemem.kernels.tasks.softmax",
    "rmsnorm": "tunemem.kernels.tasks.rmsnorm",
    "gemm": "tunemem.kernels.tasks.gemm",
    "attention": "tunemem.kernels.tasks.attention",
    "decode_attention": "tunemem.kernels.tasks.decode_attention",
}


def task_names() -> list[str]:
    """Names of every task in the catalogue."""
    return list(TASK_MODULES)


def get_task(name: str) -> KernelTask:
    """The task of this name; a wrong name raises KeyError naming the valid ones."""
    if name not in TASK_MODULES:
        raise KeyError(f"unknown kernel task {name!r}; valid: {', '.join(TASK_MODULES)}")
    return importlib.import_module(TASK_MODULES[name]).TASK


def all_tasks() -> list[KernelTask]:
    """Every task, in catalogue order."""
    return [get_task(name) for name in TASK_MODULES]
