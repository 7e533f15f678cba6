"""`bench moe`'s arms on the committed H200 landscape, and its report's arithmetic on
SYNTHETIC rows (hand-computed figures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tunemem.bench.moe.landscape import default_arm, load_case, nearest_file, sample_arm
from tunemem.bench.moe.report import markdown, summarise
from tunemem.kernels.moe_plan import CASES, HELD_OUT

REPO = Path(__file__).resolve().parents[2]
LANDSCAPE = REPO / "bench" / "results" / "moe" / "h200-landscape"
SHIPPED = REPO.parent / "shared" / "data" / "vllm_fused_moe"


@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_arms_read_the_recorded_landscape(name: str) -> None:
    case = load_case(LANDSCAPE, name)
    for m in case.batch_sizes:
        reference, _ = case.best(m)
        sample = sample_arm(case, m)
        assert sample["timed"] == 384 and sample["us"] >= reference
        assert sample["gpu_s"] > 0
        default = default_arm(case, m)
        assert default["us"] is not None and default["us"] >= reference


@pytest.mark.skipif(not SHIPPED.is_dir(), reason="needs ../shared/data/vllm_fused_moe")
def test_the_nearest_file_is_the_most_alike_gpus() -> None:
    expected = {
        "mixtral-8x7b-tp2-bf16": "E=8,N=7168,device_name=NVIDIA_H100_80GB_HBM3.json",
        "qwen3-30b-a3b-tp1-bf16": "E=128,N=768,device_name=NVIDIA_H20.json",
        "mixtral-8x7b-tp1-fp8": "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8.json",
    }
    for name, file in expected.items():
        assert nearest_file(load_case(LANDSCAPE, name), SHIPPED)["name"] == file


def _row(m: int, ref: float, tool: float, other: float | None) -> dict:
    arm = {"timed": 4, "gpu_s": 1.0, "found_by": "local", "found_in_round": 2}
    return {
        "m": m,
        "reference_us": ref,
        "tool": {**arm, "us": tool},
        "tool_no_memory": {**arm, "us": tool},
        "sample384": {**arm, "us": ref, "timed": 384, "gpu_s": 10.0},
        "copy_nearest": {**arm, "us": other, "timed": 0, "gpu_s": 0.0},
        "vllm_default": {**arm, "us": 2 * ref, "timed": 0, "gpu_s": 0.0},
    }


def test_report_arithmetic_on_synthetic_rows() -> None:
    case = {
        "case": HELD_OUT[0],
        "model": "m",
        "E": 8,
        "N": 64,
        "hidden": 128,
        "topk": 2,
        "dtype": "bfloat16",
        "recorded_configs": 10,
        "nearest_file": "f",
        "tool_distinct_configs": 8,
        "rows": [_row(1, 10.0, 10.0, 20.0), _row(2, 10.0, 12.5, None)],
    }
    summary = summarise([case])
    tool = summary["arms"]["tool"]
    assert tool["mean_speed"] == pytest.approx((1.0 + 0.8) / 2)
    assert tool["share_at_goal"] == 0.5 and tool["gpu_s"] == 2.0
    copy = summary["arms"]["copy_nearest"]
    assert copy["failed"] == 1 and copy["mean_speed"] == pytest.approx(0.25)
    e2e = summary["cases"][HELD_OUT[0]]["end_to_end_speed"]
    assert e2e["tool"] == pytest.approx(20 / 22.5) and e2e["copy_nearest"] is None
    assert summary["goals"]["gpu_fraction_of_full"] == pytest.approx(2.0 / (20.0 * 5))
    assert summary["development"] is None and summary["held_out"]["tool"]["batch_sizes"] == 2
    text = markdown(
        {
            "command": "c",
            "machine": {"cpu": "x"},
            "memory": {"shipped_folder": "s"},
            "budget": 4,
            "seed": 0,
            "compile_core_s_per_config": 1.1,
            "cases": [case],
            "summary": summary,
        }
    )
    assert "(held out)" in text and "| 2 | 10.0 | 0.800" in text
