"""A recorded fused-MoE timing landscape, and the arms that need no tuning run.

The landscape is what `kernels.moe_sweep` wrote on the GPU: per case, one row per (batch size,
configuration) with microseconds per layer call or the error. The arms read it: the reference
(the best recorded), the full-search stand-in (the best of the seeded random sample), "copy
the nearest GPU's shipped file" and vLLM's default configuration.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tunemem.kernels.moe_plan import CASES, SAMPLE_SEED, SAMPLE_SIZE, shipped_files
from tunemem.kernels.moe_space import config_key, default_config, nearest_entry, sample_space

# vLLM's benchmark_config while tuning: one JIT call, a graph of 10 calls captured, 5 warm-up
# replays and 10 timed replays (num_iters=10): 161 layer calls per timed configuration.
CALLS_PER_TIMING = 161
# Compilation measured on the H200 machine: 516 configurations in 35.5 s on 16 cores.
COMPILE_CORE_S = 35.5 * 16 / 516


@dataclass
class Case:
    """One layer shape's recorded timings: {batch size: {config key: us or None}}."""

    name: str
    experts: int
    n: int
    hidden: int
    top_k: int
    dtype: str
    model: str
    times: dict[int, dict[tuple[int, ...], float | None]]
    configs: dict[tuple[int, ...], dict[str, int]]

    @property
    def batch_sizes(self) -> list[int]:
        return sorted(self.times)

    def us(self, m: int, config: dict[str, Any]) -> float | None:
        """The recorded time; KeyError when the configuration was not recorded."""
        return self.times[m][config_key(config)]

    def best(self, m: int) -> tuple[float, dict[str, int]]:
        key, us = min(
            ((k, v) for k, v in self.times[m].items() if v is not None), key=lambda kv: kv[1]
        )
        return us, self.configs[key]

    def timing_s(self, m: int, config: dict[str, Any]) -> float:
        """GPU seconds vLLM's tuner spends timing this configuration at this batch size (a
        failing configuration costs its compile only)."""
        us = self.us(m, config)
        return CALLS_PER_TIMING * us / 1e6 if us is not None else 0.0


def load_case(folder: Path, name: str) -> Case:
    meta = next(c for c in CASES if c[0] == name)
    _, experts, n, hidden, top_k, dtype, model = meta
    path = folder / f"{name}.jsonl.gz"
    if not path.exists():
        raise FileNotFoundError(f"no recorded landscape {path}")
    times: dict[int, dict[tuple[int, ...], float | None]] = {}
    configs: dict[tuple[int, ...], dict[str, int]] = {}
    with gzip.open(path, "rt") as handle:
        for line in handle:
            row = json.loads(line)
            key = config_key(row["config"])
            configs[key] = row["config"]
            times.setdefault(int(row["m"]), {})[key] = row["us"]
    return Case(name, experts, n, hidden, top_k, dtype, model, times, configs)


def sample_arm(case: Case, m: int) -> dict[str, Any]:
    """The best of the seeded random sample of vLLM's space (the full search's stand-in)."""
    sample = sample_space(SAMPLE_SIZE, SAMPLE_SEED)
    timed = [(case.us(m, c), c) for c in sample]
    us, config = min(((u, c) for u, c in timed if u is not None), key=lambda uc: uc[0])
    gpu_s = sum(case.timing_s(m, c) for c in sample)
    return {"us": us, "config": config, "timed": len(sample), "gpu_s": gpu_s}


def default_arm(case: Case, m: int) -> dict[str, Any]:
    config = default_config(m, case.experts, case.dtype)
    return {"us": case.us(m, config), "config": config, "timed": 0, "gpu_s": 0.0}


def nearest_file(case: Case, shipped_dir: Path, target: str = "NVIDIA H200") -> dict[str, Any]:
    """The shipped file of the same (E, N, dtype) from the GPU most alike the target."""
    from tunemem.ingest.chip_context import chip_context
    from tunemem.platforms.similarity import chip_similarity

    same = [
        f
        for f in shipped_files(shipped_dir)
        if f["E"] == case.experts
        and f["N"] == case.n
        and f["dtype"] == case.dtype
        and not f["block_shape"]
        and f["entries"]
    ]
    if not same:
        raise LookupError(f"no shipped file for E={case.experts}, N={case.n}, {case.dtype}")

    def alike(f: dict[str, Any]) -> float:
        try:
            return chip_similarity(target, chip_context(f["device"].replace("_", " ")).chip)
        except Exception:
            return 0.0

    return max(same, key=lambda f: (alike(f), f["name"]))


def copy_arm(case: Case, m: int, shipped: dict[str, Any]) -> dict[str, Any]:
    """vLLM's lookup in the copied file: the entry of the nearest batch size."""
    config = nearest_entry(shipped["entries"], m)
    try:
        us = case.us(m, config)
    except KeyError:
        us = None
    return {"us": us, "config": config, "timed": 0, "gpu_s": 0.0, "file": shipped["name"]}
