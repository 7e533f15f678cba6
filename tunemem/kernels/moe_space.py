"""vLLM's fused-MoE tuning vocabulary: the configuration space, batch sizes, file name, default.

Facts taken from vLLM (Apache-2.0; `benchmarks/kernels/benchmark_moe.py` and
`vllm/model_executor/layers/fused_moe/fused_moe.py`), restated here, no code copied: its tuner
times BLOCK_SIZE_M 16-256 x BLOCK_SIZE_N 32-256 x BLOCK_SIZE_K 64-256 x GROUP_SIZE_M 1-64 x
num_warps 4, 8 x num_stages 2-5 (1,920 configurations) at each batch size; the tuned file is
named `E=<experts>,N=<intermediate size per shard>,device_name=<device name, spaces as _>`
plus `,dtype=fp8_w8a8` for fp8 weights and activations, and maps each batch size (a string key)
to one configuration; a layer picks the entry whose batch size is nearest its own. Without a
file vLLM falls back to `get_default_config`: for bf16 and per-tensor fp8, BLOCK_SIZE_M 16,
BLOCK_SIZE_N 32, BLOCK_SIZE_K 64, GROUP_SIZE_M 1 when the batch has at most as many tokens as
there are experts, else 64, 64, 32, 8; num_warps and num_stages are left to Triton's own
defaults (4 and 3). Pure Python: no torch, so the tuner and its tests import it anywhere.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

PARAMS: tuple[str, ...] = (
    "BLOCK_SIZE_M",
    "BLOCK_SIZE_N",
    "BLOCK_SIZE_K",
    "GROUP_SIZE_M",
    "num_warps",
    "num_stages",
)
SPACE: dict[str, list[int]] = {
    "BLOCK_SIZE_M": [16, 32, 64, 128, 256],
    "BLOCK_SIZE_N": [32, 64, 128, 256],
    "BLOCK_SIZE_K": [64, 128, 256],
    "GROUP_SIZE_M": [1, 16, 32, 64],
    "num_warps": [4, 8],
    "num_stages": [2, 3, 4, 5],
}
# The batch sizes vLLM's tuner writes by default.
VLLM_BATCH_SIZES: tuple[int, ...] = (
    1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024, 1536, 2048, 3072, 4096,
)  # fmt: skip
# Triton's launch defaults, which vLLM's default configuration leaves in place.
TRITON_DEFAULT_WARPS = 4
TRITON_DEFAULT_STAGES = 3
DTYPES = ("bfloat16", "fp8_w8a8")
# The widest launch parameters vLLM's shipped files hold (its 232 files of 0.33.0) that this
# kernel takes: (least, most, powers of two only). A value outside is no configuration of
# vLLM's space, whoever sends it (a file, the memory, a caller's space).
BOUNDS: dict[str, tuple[int, int, bool]] = {
    "BLOCK_SIZE_M": (16, 256, True),
    "BLOCK_SIZE_N": (16, 256, True),
    "BLOCK_SIZE_K": (16, 256, True),
    "GROUP_SIZE_M": (1, 128, True),
    "num_warps": (1, 16, True),
    "num_stages": (1, 8, False),
}


def config_key(config: dict[str, Any]) -> tuple[int, ...]:
    """A configuration as a hashable tuple in `PARAMS` order."""
    return tuple(int(config[p]) for p in PARAMS)


def normalise(config: dict[str, Any]) -> dict[str, int]:
    """The six launch parameters of a configuration (vLLM's extra keys dropped), as ints;
    num_warps and num_stages default to Triton's when absent. Raises KeyError or ValueError
    when a block size is missing or not an integer."""
    out: dict[str, int] = {}
    for name in PARAMS:
        value = config.get(name)
        if value is None and name == "num_warps":
            value = TRITON_DEFAULT_WARPS
        if value is None and name == "num_stages":
            value = TRITON_DEFAULT_STAGES
        if value is None:
            raise KeyError(f"configuration has no {name}: {config}")
        if isinstance(value, bool) or int(value) != value:
            raise ValueError(f"{name} must be an integer, not {value!r}")
        out[name] = int(value)
    return out


def full_space() -> list[dict[str, int]]:
    """vLLM's 1,920 configurations in grid order."""
    values = [SPACE[p] for p in PARAMS]
    return [dict(zip(PARAMS, combo, strict=True)) for combo in itertools.product(*values)]


def in_space(config: dict[str, Any]) -> bool:
    """Whether every parameter takes one of the space's values."""
    return all(config.get(p) in SPACE[p] for p in PARAMS)


def sample_space(n: int, seed: int) -> list[dict[str, int]]:
    """A seeded random sample of `n` distinct configurations of the space (all when n >= 1920)."""
    space = full_space()
    if n >= len(space):
        return space
    return random.Random(seed).sample(space, n)


def default_config(m: int, experts: int, dtype: str = "bfloat16") -> dict[str, int]:
    """vLLM's configuration for batch size `m` when no tuned file exists (bf16 and per-tensor
    fp8 alike), with Triton's default warps and stages made explicit."""
    if dtype not in DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}; supported: {', '.join(DTYPES)}")
    if m <= experts:
        blocks = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1}
    else:
        blocks = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}
    return {**blocks, "num_warps": TRITON_DEFAULT_WARPS, "num_stages": TRITON_DEFAULT_STAGES}


def device_file_name(device_name: str) -> str:
    """A torch device name as vLLM spells it in file names (spaces as underscores)."""
    return device_name.strip().replace(" ", "_")


def file_name(experts: int, n: int, device_name: str, dtype: str = "bfloat16") -> str:
    """vLLM's tuned-config file name for (E, N, device, dtype)."""
    if dtype not in DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}; supported: {', '.join(DTYPES)}")
    suffix = ",dtype=fp8_w8a8" if dtype == "fp8_w8a8" else ""
    return f"E={experts},N={n},device_name={device_file_name(device_name)}{suffix}.json"


def nearest_entry(entries: dict[int, Any], m: int) -> Any:
    """The entry vLLM uses for batch size `m`: the one whose batch size is nearest."""
    if not entries:
        raise ValueError("no batch size entry")
    return entries[min(entries, key=lambda key: abs(key - m))]


def shape_problem(experts: Any, n: Any) -> str | None:
    """What makes (E, N) no MoE layer's shape (None: a shape): both positive integers."""
    for name, value in (("E", experts), ("N", n)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"{name} must be a positive integer, not {value!r}"
    return None


def shape_distance(experts: int, n: int, other_experts: int, other_n: int) -> float:
    """How far two MoE layer shapes are: octaves apart in E plus octaves apart in N; infinite
    when either is no shape (`shape_problem`)."""
    import math

    if shape_problem(experts, n) or shape_problem(other_experts, other_n):
        return math.inf
    return abs(math.log2(experts / other_experts)) + abs(math.log2(n / other_n))


def config_problem(config: Any) -> str | None:
    """What puts a configuration outside vLLM's space (`BOUNDS`; None: inside): exactly the
    six parameters, each an integer within its bounds, a power of two where vLLM's are."""
    if not isinstance(config, dict) or set(config) != set(PARAMS):
        return f"a configuration names exactly {', '.join(PARAMS)}"
    for name in PARAMS:
        value = config[name]
        least, most, powers = BOUNDS[name]
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{name} must be an integer, not {value!r}"
        if not least <= value <= most or (powers and value & (value - 1)):
            kind = "a power of two " if powers else ""
            return f"{name} must be {kind}from {least} to {most}, not {value}"
    return None


def kernel_accepts(config: dict[str, int]) -> bool:
    """Whether the configuration is of vLLM's space (`config_problem`), which this project's
    kernel takes."""
    return config_problem(config) is None


def sglang_version_dir(triton_version: str) -> str:
    """SGLang's folder for files tuned with a Triton version: `triton_<x_y_z>` under its
    `configs/` (SGLang's `get_moe_configs`: the version with dots as underscores)."""
    if not triton_version or "/" in triton_version or triton_version.startswith("."):
        raise ValueError(f"not a Triton version: {triton_version!r}")
    return "triton_" + triton_version.replace(".", "_")
