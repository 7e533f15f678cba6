"""What the live runners (cuda, cpu) share: a task, one shape, one dtype, a prepared problem.

The problem (two random inputs and their references) is built on the first evaluation and
reused, so a sweep pays for the reference once per shape. The space a proposer sees is the
task's pruned tuning space by default (the grid the H200 sweep walked) or its whole declared
parameter space. Every evaluation carries its wall time (`cost_s`, compile included).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from tunemem.ingest.provenance import Provenance
from tunemem.ingest.records import ContextSpec, TaskSpec
from tunemem.kernels import harness
from tunemem.kernels.catalogue import get_task
from tunemem.kernels.evidence import template_hash, toolchain_versions
from tunemem.kernels.runners.base import EvalResult, Runner
from tunemem.kernels.tasks.base import KernelTask, ShapeCase, dtype_name

SPACES = ("tuning", "full")


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


def _dims_violation(task: KernelTask, dims: dict[str, int]) -> str | None:
    """Why explicit dims cannot describe a problem of this task (missing or unknown names)."""
    expected = set(task.shapes[0].dims)
    missing, unknown = sorted(expected - set(dims)), sorted(set(dims) - expected)
    if missing or unknown:
        return (
            f"dims for {task.name} need {sorted(expected)}"
            + (f"; missing {missing}" if missing else "")
            + (f"; unknown {unknown}" if unknown else "")
        )
    bad = sorted(name for name, value in dims.items() if value < 0)
    return f"dims must not be negative: {bad}" if bad else None


class LiveRunner(Runner):
    """Evaluates configurations of one task at one shape and dtype by running the kernel."""

    device: str = "cpu"

    def __init__(
        self,
        task: str | KernelTask,
        shape: str | dict[str, int] | ShapeCase | None = None,
        dtype: str | None = None,
        seed: int = 0,
        space: str = "tuning",
    ) -> None:
        if space not in SPACES:
            raise ValueError(f"unknown space {space!r}; valid: {', '.join(SPACES)}")
        self.task = get_task(task) if isinstance(task, str) else task
        self.shape = resolve_shape(self.task, shape, self.default_shape())
        violation = _dims_violation(self.task, self.shape.dims)
        if violation:
            raise ValueError(violation)
        self.dtype = dtype_name(dtype or self.default_dtype())
        self.seed = seed
        self.space = space
        self._problem: harness.Problem | None = None
        self._evidence: dict[str, Any] | None = None
        self._space: dict[str, list[Any]] | None = None

    def device_name(self) -> str:
        """The name of the device the kernels run on."""
        return self.device

    def provenance(self) -> Provenance:
        """Timed here: measured, on the device the runtime names."""
        return Provenance(origin="measured", coverage="partial", device_reported=self.device_name())

    def chip(self) -> tuple[str, str, str]:
        """(chip id, backend, raw device name) of where the kernels run."""
        from tunemem.kernels.evidence import chip_identity

        raw = self.device_name()
        return (*chip_identity(raw), raw)

    def description(self) -> tuple[TaskSpec, ContextSpec]:
        chip, backend, raw = self.chip()
        task = TaskSpec(
            op=self.task.op,
            kernel=self.task.kernel,
            signature={**self.shape.dims, "dtype": self.dtype},
            dtype=self.dtype,
        )
        context = ContextSpec(
            chip=chip,
            backend=backend,
            chip_raw=raw,
            model=self.shape.model,
            scenario=self.shape.scenario,
            toolchain=toolchain_versions(),
        )
        return task, context

    def evidence(self) -> dict[str, Any]:
        if self._evidence is None:
            self._evidence = {
                "runner": self.name,
                "harness_version": harness.HARNESS_VERSION,
                "template_hash": template_hash(self.task),
                "toolchain": toolchain_versions(),
                "device": self.device_name(),
                "task": self.task.name,
                "shape_name": self.shape.name,
                "dtype": self.dtype,
                "space": self.space,
                "timed": self.timing() is not None,
            }
        return dict(self._evidence)

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
        """The grid, less the values no valid configuration of this shape uses.

        Which configurations fit a shape is the template's declared constraint (`task.check`),
        not a measurement; dropping values that can never run here lets a lesson's value from
        another shape snap to the nearest one that can (a 32768-wide row block becomes 8192 on
        8192-wide rows) instead of costing an attempt.
        """
        if self._space is None:
            grid = self.task.tuning_space if self.space == "tuning" else self.task.parameter_space
            used: dict[str, set[Any]] = {name: set() for name in grid}
            for config in self.task.configs(grid):
                if self.task.valid(config, self.shape.dims):
                    for name, value in config.items():
                        used[name].add(value)
            self._space = {
                name: [v for v in values if v in used[name]] or list(values)
                for name, values in grid.items()
            }
        return {name: list(values) for name, values in self._space.items()}

    def evaluate(self, config: dict[str, Any]) -> EvalResult:
        missing = [name for name in self.task.parameter_space if name not in config]
        if missing:
            return EvalResult(
                compiled=False,
                correct=None,
                error_category="other",
                error=f"config lacks parameters {missing}",
            )
        problem = self.problem  # inputs and references are prepared once, outside the cost
        started = time.perf_counter()
        result = harness.evaluate(self.task, problem, config, timing=self.timing())
        cost = {"cost_s": time.perf_counter() - started}
        return dataclasses.replace(result, metrics={**result.metrics, **cost})

    def release(self) -> None:
        """Drop the prepared inputs (frees device memory between shapes)."""
        self._problem = None
