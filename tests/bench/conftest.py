"""SYNTHETIC Kernel Tuner caches for the learning benchmark's tests (invented times).

Two kernel families on three chips: each chip's landscape has its optimum somewhere else, so
what transfers between chips is partial, as on real hardware; the times are invented.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

SPACES = {
    "alpha_kernel": {"block_size_x": [16, 32, 64, 128], "tile": [1, 2, 4]},
    "beta_kernel": {"block_size_x": [32, 64, 128, 256], "unroll": [0, 1]},
}
CHIPS = {  # device name -> preferred block size (the synthetic optimum moves with the chip)
    "NVIDIA A100-PCIE-40GB": 64,
    "NVIDIA RTX A4000": 32,
    "NVIDIA GeForce RTX 3090": 128,
}


def write_cache(path: Path, kernel: str, device: str) -> Path:
    space = SPACES[kernel]
    best = CHIPS[device]
    other = [k for k in space if k != "block_size_x"][0]
    cache = {}
    for bx in space["block_size_x"]:
        for value in space[other]:
            t = 1.0 + abs(bx - best) / 32 + 0.3 * abs(value - space[other][1])
            cache[f"{bx},{value}"] = {"block_size_x": bx, other: value, "time": t, "times": [t]}
    data = {
        "device_name": device,
        "kernel_name": kernel,
        "problem_size": [256],
        "tune_params_keys": list(space),
        "tune_params": space,
        "objective": "time",
        "cache": cache,
    }
    with gzip.open(path, "wt") as handle:
        json.dump(data, handle)
    return path


@pytest.fixture(name="write_cache")
def write_cache_fixture():
    """The SYNTHETIC cache writer itself, for tests that build their own folders."""
    return write_cache


@pytest.fixture
def synthetic_caches(tmp_path: Path) -> Path:
    """A folder of SYNTHETIC caches: two families x three chips."""
    root = tmp_path / "synthetic_caches"
    for kernel in SPACES:
        (root / kernel).mkdir(parents=True)
        for device in CHIPS:
            name = device.split()[-1].replace("-PCIE-40GB", "")
            write_cache(root / kernel / f"{name}.json.gz", kernel, device)
    return root
