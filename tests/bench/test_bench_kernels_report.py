"""Report rendering and goal verdicts, on a SYNTHETIC result dict (no measured numbers)."""

from __future__ import annotations

from tunemem.bench.kernels.report import goal_checks, render_markdown
from tunemem.bench.kernels.run import merge_results


def _synthetic_result(run_id: str, copy_gbps: float) -> dict:
    # Synthetic: invented figures that exercise the arithmetic of the report, nothing more.
    softmax = {
        "task": "softmax",
        "op": "softmax",
        "shape": "big",
        "dims": {"rows": 1, "cols": 1},
        "model": None,
        "scenario": "prefill",
        "bound": "memory",
        "configs_tried": 3,
        "configs_feasible": 2,
        "configs_planned": 3,
        "best_config": {"BLOCK_N": 4096},
        "triton": {"median_ms": 1.0, "mean_ms": 1.1, "min_ms": 0.9, "gbps": 500.0, "tflops": 0.1},
        "eager": {"median_ms": 2.0, "gbps": 250.0, "tflops": 0.05},
        "compile": {"median_ms": 1.0, "gbps": 500.0, "tflops": 0.1},
        "speedup_vs_eager": 2.0,
        "speedup_vs_compile": 1.0,
        "copy_gbps": copy_gbps,
        "fraction_of_copy_bw": 500.0 / copy_gbps,
        "fraction_of_peak": 0.1,
    }
    gemm = dict(
        softmax,
        task="gemm",
        op="gemm",
        shape="square-4096",
        bound="compute",
        speedup_vs_eager=0.9,
        fraction_of_peak=0.5,
    )
    return {
        "machine": {"gpu": "synthetic GPU", "torch": "x", "triton": "y", "sms": 1},
        "limits": {
            "descriptor": {
                "chip": "synthetic",
                "mem_bandwidth_gbs": 1000.0,
                "peak_bf16_tflops": 10.0,
            },
            "measured_copy": {"gbps": copy_gbps, "bytes_copied": 2 << 30},
        },
        "settings": {
            "quick": True,
            "warmup_ms": 1,
            "rep_ms": 1,
            "dtype": "bfloat16",
            "run_id": run_id,
            "latency": "median",
        },
        "command": f"tunemem bench kernels --tasks softmax,gemm,attention  # {run_id}",
        "code_version": f"sha-{run_id}",
        "measurement": "measured",
        "seeds": [0],
        "rows": [softmax, gemm, {"task": "attention", "shape": "s", "error": "boom"}],
        "trajectory_files": [f"{run_id}.jsonl"],
        "elapsed_s": 1.0,
    }


def test_goal_checks_judge_large_memory_shapes_and_gemm():
    goals = goal_checks(_synthetic_result("a", 520.0))
    by_task = {g["task"]: g for g in goals}
    assert by_task["softmax"]["met"] is True  # 500 / 520 >= 0.90
    assert by_task["gemm"]["met"] is False  # 0.9 < 0.95
    assert "attention" not in by_task  # an errored row is no evidence


def test_markdown_has_a_row_per_shape_and_the_errors():
    text = render_markdown(_synthetic_result("a", 600.0))
    assert "| softmax | big | prefill |" in text
    assert "error: boom" in text
    assert "600 GB/s" in text and "## Goals" in text


def test_merge_keeps_every_row_and_run():
    parts = [_synthetic_result("a", 600.0), _synthetic_result("b", 610.0)]
    merged = merge_results(parts, "tunemem bench kernels --merge a.json b.json")
    assert len(merged["rows"]) == 3 and len(merged["runs"]) == 2  # same shapes: later wins
    assert merged["command"].endswith(" ; tunemem bench kernels --merge a.json b.json")
    assert merged["code_version"] == "sha-a, sha-b" and merged["seeds"] == [0]
    assert merged["rows"][0]["copy_gbps"] == 610.0
    assert "Run b" in render_markdown(merged)
