"""SYNTHETIC keys of a GEMM-like kernel for the suggest tests: a bowl over BLOCK_M and BLOCK_N
whose best BLOCK_M doubles with every fourfold M, and one whole sweep of a key as a trajectory."""

from __future__ import annotations

import itertools
import math

from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, TrajectoryRecord

PARAMS = {"BLOCK_M": [16, 32, 64, 128, 256], "BLOCK_N": [32, 64, 128], "num_warps": [4, 8]}


def latency(m: int, block_m: int, block_n: int, warps: int) -> float:
    """SYNTHETIC: the best BLOCK_M doubles with every fourfold m."""
    best = 4.0 + math.log2(m) / 2.0
    return 1.0 + (math.log2(block_m) - best) ** 2 + 0.2 * (math.log2(block_n) - 6) ** 2 + warps / 40


def sweep(m: int) -> TrajectoryRecord:
    return TrajectoryRecord(
        source_format="native",
        source=f"synthetic/m{m}",
        task=TaskSpec(op="synthetic_gemm", signature={"M": m, "N": 4096, "dtype": "float16"}),
        context=ContextSpec(chip="NVIDIA H200", backend="cuda"),
        attempts=[
            AttemptRecord(
                index=i, params=dict(zip(PARAMS, c, strict=True)), latency_ms=latency(m, *c)
            )
            for i, c in enumerate(itertools.product(*PARAMS.values()))
        ],
        synthetic=True,
    )
