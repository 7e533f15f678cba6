"""Every Triton template compiles and matches its reference under the interpreter (small shapes)."""

from __future__ import annotations

import pytest

import tunemem.kernels.runners.cpu  # noqa: F401  (switches Triton to the interpreter first)
from tunemem.kernels.catalogue import get_task, task_names
from tunemem.kernels.runners import create_runner

# Two configurations per task that fit its small shapes; softmax/rmsnorm cover the single-pass
# path (BLOCK_N >= row) and the two-pass path (BLOCK_N < row) on the 300-wide shape.
SMALL_CONFIGS = {
    "softmax": [
        {"BLOCK_N": 256, "num_warps": 2, "ROWS_PER_PROGRAM": 2, "NUM_STAGES": 1},
        {"BLOCK_N": 512, "num_warps": 4, "ROWS_PER_PROGRAM": 1, "NUM_STAGES": 2},
    ],
    "rmsnorm": [
        {"BLOCK_N": 256, "num_warps": 2, "ROWS_PER_PROGRAM": 2, "NUM_STAGES": 1},
        {"BLOCK_N": 512, "num_warps": 4, "ROWS_PER_PROGRAM": 1, "NUM_STAGES": 2},
    ],
    "gemm": [
        {
            "BLOCK_M": 16,
            "BLOCK_N": 16,
            "BLOCK_K": 16,
            "GROUP_M": 4,
            "num_warps": 4,
            "num_stages": 2,
            "LOAD": "pointer",
            "PERSISTENT": False,
        },
        {
            "BLOCK_M": 16,  # 3 x 3 tiles on 48 x 40 over 4 programs: each walks several
            "BLOCK_N": 16,
            "BLOCK_K": 32,
            "GROUP_M": 1,
            "num_warps": 4,
            "num_stages": 3,
            "LOAD": "tma",
            "PERSISTENT": True,
        },
        {
            "BLOCK_M": 16,
            "BLOCK_N": 32,
            "BLOCK_K": 16,
            "GROUP_M": 8,
            "num_warps": 4,
            "num_stages": 2,
            "LOAD": "tma",
            "PERSISTENT": False,
        },
    ],
    "attention": [
        {
            "BLOCK_M": 32,
            "BLOCK_N": 16,
            "num_warps": 4,
            "num_stages": 2,
            "LOAD": "pointer",
            "ORDER": "ascending",
        },
        {
            "BLOCK_M": 16,
            "BLOCK_N": 16,
            "num_warps": 4,
            "num_stages": 1,
            "LOAD": "tma",
            "ORDER": "ascending",
        },
    ],
    "decode_attention": [  # one chunk per KV block, and several blocks per chunk (2 splits)
        {"BLOCK_N": 32, "SPLITS": 2, "num_warps": 2, "num_stages": 2},
        {"BLOCK_N": 16, "SPLITS": 1, "num_warps": 4, "num_stages": 1},
    ],
}

CASES = [
    (name, shape.name, i)
    for name in task_names()
    for shape in get_task(name).small_shapes
    for i in range(len(SMALL_CONFIGS[name]))
]


def test_small_configs_cover_every_task():
    assert set(SMALL_CONFIGS) == set(task_names())


@pytest.mark.parametrize(("task", "shape", "which"), CASES)
def test_template_matches_reference(task: str, shape: str, which: int):
    config = SMALL_CONFIGS[task][which]
    runner = create_runner("cpu", task=task, shape=shape)
    if not get_task(task).valid(config, runner.shape.dims):
        pytest.skip(f"config {config} does not fit {shape} by the task's own constraint")
    result = runner.evaluate(config)
    assert result.feasible, result
    assert result.correct is True
    assert result.metrics["rel_norm_error"] < 1e-4
    assert result.latency_ms is None  # the interpreter never reports latency


@pytest.mark.parametrize("task", ["softmax", "gemm"])
def test_half_precision_within_tolerance(task: str):
    shape = get_task(task).small_shapes[1].name
    result = create_runner("cpu", task=task, shape=shape, dtype="float16").evaluate(
        SMALL_CONFIGS[task][0]
    )
    assert result.feasible, result
    assert 0 < result.metrics["rel_norm_error"] < 2e-3


def test_declared_spaces_hold_tuning_spaces():
    for name in task_names():
        task = get_task(name)
        for param, values in task.tuning_space.items():
            assert set(values) <= set(task.parameter_space[param]), (name, param)
        assert task.shapes and task.small_shapes


def test_invalid_config_is_infeasible_not_an_exception():
    runner = create_runner("cpu", task="attention", shape="tiny-b2-h1-s64-d32-causal")
    config = {
        "BLOCK_M": 16,
        "BLOCK_N": 32,
        "num_warps": 4,
        "num_stages": 2,
        "LOAD": "pointer",
        "ORDER": "ascending",
    }
    result = runner.evaluate(config)
    assert not result.feasible
    assert result.error_category == "other"
    assert "multiple" in result.error


def test_gemm_resource_limits_are_declared():
    gemm = get_task("gemm")
    big = {
        "BLOCK_M": 256,
        "BLOCK_N": 256,
        "BLOCK_K": 128,
        "GROUP_M": 8,
        "num_warps": 8,
        "num_stages": 5,
        "LOAD": "tma",
        "PERSISTENT": True,
    }
    violation = gemm.check(big, {"M": 4096, "N": 4096, "K": 4096})
    assert violation is not None and violation.category == "resources"


def test_persistent_schedule_needs_tma():
    gemm = get_task("gemm")
    config = dict(SMALL_CONFIGS["gemm"][0], PERSISTENT=True)
    violation = gemm.check(config, {"M": 64, "N": 64, "K": 64})
    assert violation is not None and "TMA" in violation.reason


def test_heavy_first_order_matches_reference_on_causal_only():
    causal = create_runner("cpu", task="attention", shape="tiny-b2-h1-s64-d32-causal")
    config = {
        "BLOCK_M": 16,
        "BLOCK_N": 16,
        "num_warps": 4,
        "num_stages": 2,
        "LOAD": "pointer",
        "ORDER": "heavy_first",
    }
    assert causal.evaluate(config).feasible
    full = create_runner("cpu", task="attention", shape="tiny-b1-h2-s64-d32")
    assert full.evaluate(config).error_category == "other"
