"""The memory's ranked fused-MoE candidates as SGLang's `--search-space-file`.

SGLang's tuner (`benchmark/kernels/fused_moe_triton/tuning_fused_moe_triton.py --tune
--search-space-file FILE`) reads a JSON list of configurations (objects with BLOCK_SIZE_M/N/K,
GROUP_SIZE_M, num_warps, num_stages) and times each of them at every batch size, in place of
its own 1,920. `search_space` ranks, for one layer shape and GPU, what other GPUs chose for the
same and nearby shapes (the shipped files the memory holds, `memory.rank_shipped`, nearest
shape, batch size and GPU first), taking the batch sizes in turn (each one's best before any
one's second), then vLLM's default configuration of each batch size, up to `size`.

The memory unreachable, erring or holding no shipped file: one warning, then the documented
fallback of `tune_moe` (vLLM's defaults, then a seeded random sample of vLLM's 1,920).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from tunemem.agent_client.tuners.moe.memory import MoeMemory, chip_similarities, rank_shipped
from tunemem.agent_client.tuners.moe.rounds import FALLBACK_SEED, MoeShape
from tunemem.kernels.moe_space import (
    PARAMS,
    VLLM_BATCH_SIZES,
    config_key,
    default_config,
    full_space,
)

DEFAULT_SIZE = 64


@dataclass
class SearchSpace:
    """The ranked configurations, where each came from, and whether the memory answered."""

    configs: list[dict[str, int]]
    origins: list[str]
    memory_used: bool
    warnings: list[str] = field(default_factory=list)

    def sglang_file(self) -> list[dict[str, int]]:
        """The `--search-space-file` body: a JSON list of configurations, best first."""
        return [{p: int(c[p]) for p in PARAMS} for c in self.configs]


def search_space(
    shape: MoeShape,
    device_name: str,
    batch_sizes: list[int] | tuple[int, ...] = VLLM_BATCH_SIZES,
    *,
    memory_url: str | None = None,
    client: Any | None = None,
    api_key: str | None = None,
    size: int = DEFAULT_SIZE,
    seed: int = FALLBACK_SEED,
    timeout_s: float = 10.0,
) -> SearchSpace:
    """At most `size` configurations for SGLang's tuner, the memory's best first (see the
    module)."""
    sizes = sorted({int(m) for m in batch_sizes})
    if not sizes or sizes[0] < 1:
        raise ValueError(f"batch sizes must be positive integers, not {list(batch_sizes)}")
    if size < 1:
        raise ValueError(f"size must be at least 1, not {size}")
    # The tuners' untrusted-memory policy (`memory`): one deadline per request, no retry.
    memory = MoeMemory(
        memory_url if memory_url is not None or client is None else "client",
        client,
        api_key=api_key,
        timeout_s=timeout_s,
    )
    try:
        shipped = memory.shipped()
    finally:
        memory.close()
    if not memory.down and not shipped:
        memory.warnings.append("tunemem: the memory holds no shipped fused-MoE file")
    picked: dict[tuple[int, ...], str] = {}
    configs: list[dict[str, int]] = []

    def take(config: dict[str, int], origin: str) -> None:
        key = config_key(config)
        if len(configs) < size and key not in picked:
            picked[key] = origin
            configs.append(dict(config))

    if shipped:
        sims = chip_similarities(device_name, {e.chip for e in shipped})
        ranked = {
            m: rank_shipped(shipped, shape.experts, shape.n, shape.dtype, m, sims) for m in sizes
        }
        for rank in range(max(len(r) for r in ranked.values())):
            for m in sizes:
                if rank < len(ranked[m]):
                    entry = ranked[m][rank][1]
                    take(entry.config, f"shipped:{entry.chip}:M={entry.m}")
    for m in sizes:
        take(default_config(m, shape.experts, shape.dtype), f"vllm-default:M={m}")
    if not shipped:
        pool = full_space()
        for config in random.Random(f"{seed}:search-space").sample(pool, len(pool)):
            take(config, "sample")
    return SearchSpace(
        configs, [picked[config_key(c)] for c in configs], bool(shipped), list(memory.warnings)
    )
