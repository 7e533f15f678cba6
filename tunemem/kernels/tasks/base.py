"""What every kernel task declares: reference, inputs, Triton launch, parameter space, shapes.

A `KernelTask` is plain data plus callables, so the harness, the runners, the sweep and the
benchmark treat every operator alike. Shapes are `ShapeCase`s: named dimensions, and the model
and scenario they come from where they come from one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

DTYPES: dict[str, torch.dtype] = {
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float32": torch.float32,
}
DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32"}

# Hopper's per-block shared-memory limit (227 KiB) is the tightest of the GPUs we target.
SHARED_MEMORY_LIMIT_BYTES = 227 * 1024
# Accumulator elements per thread above which Triton spills registers on these templates.
MAX_ACCUMULATORS_PER_THREAD = 128


def dtype_name(dtype: str | torch.dtype) -> str:
    """Canonical dtype name ("bfloat16", "float16", "float32") from a name, alias or torch dtype."""
    if isinstance(dtype, torch.dtype):
        for name, value in DTYPES.items():
            if value == dtype:
                return name
        raise ValueError(f"unsupported dtype {dtype}; supported: {sorted(DTYPES)}")
    name = DTYPE_ALIASES.get(dtype, dtype)
    if name not in DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}; supported: {sorted(DTYPES)}")
    return name


def torch_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """The torch dtype for a dtype name, alias or torch dtype."""
    return DTYPES[dtype_name(dtype)]


@dataclass(frozen=True)
class ShapeCase:
    """One problem size of a task, named, with the model and scenario it comes from."""

    name: str
    dims: dict[str, int]
    model: str | None = None
    scenario: str | None = None


@dataclass(frozen=True)
class ConfigViolation:
    """Why a configuration cannot run on a shape; category is an `ERROR_CATEGORIES` entry."""

    category: str
    reason: str


@dataclass(frozen=True)
class Tolerance:
    """Accepted error against the float32 reference: elementwise and relative-norm."""

    atol: float
    rtol: float
    rel_norm: float


DEFAULT_TOLERANCES: dict[str, Tolerance] = {
    "bfloat16": Tolerance(atol=2e-2, rtol=2e-2, rel_norm=1e-2),
    "float16": Tolerance(atol=5e-3, rtol=5e-3, rel_norm=2e-3),
    "float32": Tolerance(atol=1e-4, rtol=1e-4, rel_norm=1e-4),
}


@dataclass(frozen=True)
class KernelTask:
    """A kernel problem: what to compute, how to feed it and the Triton template to tune.

    Attributes:
        name: catalogue name, e.g. "softmax".
        op: operator family, as lessons name it.
        kernel: the Triton kernel's name.
        description: one line for people.
        parameter_space: tunable parameters and their candidate values.
        tuning_space: the pruned sub-grid that the H200 sweep walks (every value in it is also
            in `parameter_space`).
        make_inputs: (dims, dtype, device, seed) -> input tensors.
        reference: float32 ground truth of the inputs (upcasts internally).
        torch_op: the PyTorch eager implementation in the input dtype (the speed baseline).
        launch: (config, *inputs) -> output, running the Triton template.
        check: (config, dims) -> a violation, or None when the configuration fits the shape.
        flops: dims -> floating-point operations of one call.
        bytes_moved: (dims, element size) -> the fewest bytes one call must move.
        bound: "memory" or "compute": which hardware limit the benchmark compares against.
        shapes: realistic sizes for the GPU sweep.
        small_shapes: tiny sizes for interpreter checks on CPU.
        forbidden_ops: aten operator names the kernel must not call (it would be doing the
            work in PyTorch instead of Triton).
        default_dtype: dtype name tuned by default.
    """

    name: str
    op: str
    kernel: str
    description: str
    parameter_space: dict[str, list[Any]]
    tuning_space: dict[str, list[Any]]
    make_inputs: Callable[[dict[str, int], torch.dtype, str, int], tuple[torch.Tensor, ...]]
    reference: Callable[..., torch.Tensor]
    torch_op: Callable[..., torch.Tensor]
    launch: Callable[..., torch.Tensor]
    check: Callable[[dict[str, Any], dict[str, int]], ConfigViolation | None]
    flops: Callable[[dict[str, int]], float]
    bytes_moved: Callable[[dict[str, int], int], float]
    bound: str
    shapes: list[ShapeCase]
    small_shapes: list[ShapeCase]
    forbidden_ops: frozenset[str] = frozenset()
    default_dtype: str = "bfloat16"
    tolerances: dict[str, Tolerance] = field(default_factory=lambda: dict(DEFAULT_TOLERANCES))

    def valid(self, config: dict[str, Any], dims: dict[str, int]) -> bool:
        """Whether the configuration can run on a problem of these dimensions."""
        return self.check(config, dims) is None

    def shape(self, name: str) -> ShapeCase:
        """A declared shape (GPU or small) by its name."""
        for case in [*self.shapes, *self.small_shapes]:
            if case.name == name:
                return case
        known = [c.name for c in [*self.shapes, *self.small_shapes]]
        raise KeyError(f"task {self.name!r} has no shape {name!r}; known: {known}")

    def configs(self, space: dict[str, list[Any]] | None = None) -> Iterator[dict[str, Any]]:
        """Every configuration of a space (the declared one by default), in grid order."""
        grid = space if space is not None else self.parameter_space
        names = list(grid)
        for values in itertools.product(*(grid[n] for n in names)):
            yield dict(zip(names, values, strict=True))

    def tolerance(self, dtype: str | torch.dtype) -> Tolerance:
        """The accepted error for outputs of this dtype."""
        return self.tolerances[dtype_name(dtype)]


# Row kernels (softmax, RMSNorm) spill registers past this many row elements per thread.
MAX_ELEMENTS_PER_THREAD = 64


def row_block_violation(config: dict[str, Any], row_length: int) -> ConfigViolation | None:
    """Shared constraint of row-block kernels: no register spill, no mostly idle threads."""
    threads = 32 * config["num_warps"]
    per_thread = config["BLOCK_N"] / threads
    if per_thread > MAX_ELEMENTS_PER_THREAD:
        return ConfigViolation("resources", f"{per_thread:.0f} elements per thread spill")
    if config["BLOCK_N"] > max(next_power_of_2(row_length), 256):
        return ConfigViolation("other", "BLOCK_N past the row length rounded up")
    if per_thread < 1 and config["BLOCK_N"] >= 256:
        return ConfigViolation("other", "more threads than elements in a row block")
    return None


def next_power_of_2(n: int) -> int:
    """Smallest power of two >= n (n >= 1)."""
    return 1 << (max(int(n), 1) - 1).bit_length()


def random_normal(
    shape: tuple[int, ...], dtype: torch.dtype, device: str, seed: int
) -> torch.Tensor:
    """Standard-normal tensor drawn from its own seeded generator (never zeros)."""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dtype)
