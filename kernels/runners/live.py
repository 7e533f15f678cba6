"""What the live runners (cuda, cpu) share: a task, one shape, one dtype, a prepared problem.

The problem (two random inputs and their references) is built on the first evaluation and
reused, so a sweep pays for the reference once per shape.
"""

from __future__ import annotations

from typing import Any

from kernels import harness
from kernels.catalogue import get_task
from kernels.runners.base import EvalResult, Runner
from kernels.tasks.base import KernelTask, ShapeCase, dtype_name


def resolve_shape(
    task: KernelTask, shape: str | dict[str, int] | ShapeCase | None, default: ShapeCase
) -> ShapeCase:
    """A ShapeCase from a declared name, explicit dims, a ShapeCase, or the default."""
    if shape is None:
        return default
    if isinstance(shape, ShapeCase):
        return shape
    if isinstance(shape, str):
        return task.shape(shape)
    dims = {key: int(value) for key, value in shape.items()}
    name = "x".join(f"{key}{value}" for key, value in dims.items())
    return ShapeCase(name, dims)


class LiveRunner(Runner):
    """Evaluates configurations of one task at one shape and dtype by running the kernel."""

    device: str = "cpu"

    def __init__(
        self,
        task: str | KernelTask,
        shape: str | dict[str, int] | ShapeCase | None = None,
        dtype: str | None = None,
        seed: int = 0,
    ) -> None:
        self.task = get_task(task) if isinstance(task, str) else task
        self.shape = resolve_shape(self.task, shape, self.default_shape())
        self.dtype = dtype_name(dtype or self.default_dtype())
        self.seed = seed
        self._problem: harness.Problem | None = None

    def default_shape(self) -> ShapeCase:
        return self.task.small_shapes[0]

    def default_dtype(self) -> str:
        return self.task.default_dtype

    def timing(self) -> tuple[float, float] | None:
        """(warm-up ms, repetition ms) for do_bench, or None where this runner does not time."""
        return None

    @property
    def problem(self) -> harness.Problem:
        if self._problem is None:
            self._problem = harness.prepare_problem(
                self.task, self.shape.dims, self.dtype, self.device, self.seed
            )
        return self._problem

    def parameter_space(self) -> dict[str, list[Any]]:
        return {name: list(values) for name, values in self.task.parameter_space.items()}

    def evaluate(self, config: dict[str, Any]) -> EvalResult:
        missing = [name for name in self.task.parameter_space if name not in config]
        if missing:
            return EvalResult(
                compiled=False,
                correct=None,
                error_category="other",
                error=f"config lacks parameters {missing}",
            )
        return harness.evaluate(self.task, self.problem, config, timing=self.timing())

    def release(self) -> None:
        """Drop the prepared inputs (frees device memory between shapes)."""
        self._problem = None
