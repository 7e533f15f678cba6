"""Shared fixtures of the agent tests: a small SYNTHETIC Kernel Tuner cache (invented times)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

SYNTHETIC_SPACE = {"block_size_x": [16, 32, 64, 128], "tile_size_x": [1, 2, 4], "use_shmem": [0, 1]}


def synthetic_latency(bx: int, tx: int, shmem: int) -> float:
    """Invented, smooth landscape: best at block 64, tile 2, shared memory on."""
    return 1.0 + abs(bx - 64) / 32 + abs(tx - 2) * 0.4 + (0 if shmem else 0.5)


def write_synthetic_cache(path: Path, device: str = "NVIDIA A100-PCIE-40GB") -> Path:
    cache = {}
    for bx in SYNTHETIC_SPACE["block_size_x"]:
        for tx in SYNTHETIC_SPACE["tile_size_x"]:
            for shmem in SYNTHETIC_SPACE["use_shmem"]:
                if bx == 128 and tx == 4:
                    continue  # restricted: absent from the recording
                entry = {"block_size_x": bx, "tile_size_x": tx, "use_shmem": shmem}
                if bx == 16 and tx == 4 and shmem == 1:
                    entry["time"] = "CompilationFailedConfig"
                elif bx == 16 and tx == 1 and shmem == 1:
                    entry["time"] = "RuntimeFailedConfig"
                else:
                    t = synthetic_latency(bx, tx, shmem)
                    entry.update({"time": t, "times": [t, t * 1.01], "GFLOP/s": 100 / t})
                cache[f"{bx},{tx},{shmem}"] = entry
    data = {
        "device_name": device,
        "kernel_name": "synthetic_kernel",
        "problem_size": [256, 256],
        "tune_params_keys": list(SYNTHETIC_SPACE),
        "tune_params": SYNTHETIC_SPACE,
        "objective": "time",
        "cache": cache,
    }
    with gzip.open(path, "wt") as handle:
        json.dump(data, handle)
    return path


@pytest.fixture
def synthetic_cache(tmp_path: Path) -> Path:
    return write_synthetic_cache(tmp_path / "SYNTH_A100.json.gz")


@pytest.fixture
def make_synthetic_cache():
    """The writer itself, for tests that need caches of several (synthetic) chips."""
    return write_synthetic_cache
