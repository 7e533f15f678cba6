"""The harness rejects kernels that do not do the work, and judges correctness by tolerance."""

from __future__ import annotations

import torch

import tunemem.kernels.runners.cpu  # noqa: F401  (switches Triton to the interpreter first)
from tunemem.kernels import harness
from tunemem.kernels.catalogue import get_task

SOFTMAX_CONFIG = {"BLOCK_N": 256, "num_warps": 2, "ROWS_PER_PROGRAM": 1, "NUM_STAGES": 1}
GEMM_CONFIG = {
    "BLOCK_M": 16,
    "BLOCK_N": 16,
    "BLOCK_K": 16,
    "GROUP_M": 1,
    "num_warps": 4,
    "num_stages": 2,
    "LOAD": "pointer",
    "PERSISTENT": False,
}


def _problem(name: str):
    task = get_task(name)
    return task, harness.prepare_problem(task, task.small_shapes[0].dims, "float32", "cpu")


def test_kernel_calling_the_reference_is_rejected():
    task, problem = _problem("softmax")
    result = harness.evaluate(
        task, problem, SOFTMAX_CONFIG, launch=lambda config, x: task.reference(x).to(x.dtype)
    )
    assert result.error_category == "rejected"
    assert not result.feasible


def test_kernel_calling_torch_ops_is_rejected():
    task, problem = _problem("gemm")
    result = harness.evaluate(task, problem, GEMM_CONFIG, launch=lambda config, a, b: a @ b)
    assert result.error_category == "rejected"
    assert "aten" in result.error


def test_kernel_calling_captured_reference_function_is_rejected():
    from tunemem.kernels.tasks import rmsnorm

    task, problem = _problem("rmsnorm")
    captured = rmsnorm.reference  # a direct reference, not through the task object
    config = {"BLOCK_N": 256, "num_warps": 2, "ROWS_PER_PROGRAM": 1, "NUM_STAGES": 1}
    result = harness.evaluate(task, problem, config, launch=lambda c, x, w: captured(x, w))
    assert result.error_category == "rejected"


def test_constant_kernel_is_rejected():
    task, problem = _problem("softmax")
    rows, cols = problem.dims["rows"], problem.dims["cols"]
    result = harness.evaluate(
        task, problem, SOFTMAX_CONFIG, launch=lambda config, x: torch.full((rows, cols), 1.0 / cols)
    )
    assert result.error_category in {"rejected", "incorrect"}
    assert not result.feasible


def test_constant_matching_a_degenerate_reference_is_rejected_as_constant():
    # A one-column softmax is all ones, so a constant is "correct": only the two-input check
    # can tell that the kernel did no work.
    task = get_task("softmax")
    problem = harness.prepare_problem(task, {"rows": 4, "cols": 1}, "float32", "cpu")
    result = harness.evaluate(
        task, problem, SOFTMAX_CONFIG, launch=lambda config, x: torch.ones((4, 1))
    )
    assert result.error_category == "rejected"
    assert "constant" in result.error


def test_wrong_kernel_is_incorrect_and_real_kernel_passes():
    task, problem = _problem("softmax")
    wrong = harness.evaluate(
        task, problem, SOFTMAX_CONFIG, launch=lambda config, x: task.launch(config, x.flip(0))
    )
    assert wrong.error_category == "incorrect" and wrong.correct is False
    right = harness.evaluate(task, problem, SOFTMAX_CONFIG)
    assert right.feasible and right.correct is True


def test_guard_is_lifted_after_the_call():
    task, problem = _problem("softmax")
    harness.evaluate(task, problem, SOFTMAX_CONFIG, launch=lambda c, x: task.reference(x))
    x = problem.inputs[0][0]
    assert torch.allclose(task.reference(x), torch.softmax(x, -1))


def test_compare_flags_nan_and_shape():
    ref = torch.ones(4)
    assert not harness.compare(torch.tensor([1.0, float("nan"), 1.0, 1.0]), ref, 1, 1, 1)[0]
    assert not harness.compare(torch.ones(3), ref, 1, 1, 1)[0]
    ok, reason, metrics = harness.compare(ref + 1e-6, ref, 1e-4, 1e-4, 1e-4)
    assert ok and reason is None and metrics["max_abs_error"] < 1e-5


def test_latency_stats_keep_the_distribution():
    stats = harness.latency_stats([3.0, 1.0, 2.0, 4.0, 10.0])
    assert stats.minimum == 1.0 and stats.median == 3.0 and stats.repetitions == 5
    assert stats.mean == 4.0 and stats.p90 == 10.0 and stats.p10 == 1.0
