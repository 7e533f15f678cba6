"""The cold drop-in replayed on the recorded fused-MoE H200 landscapes (bench/results/moe)."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from tunemem.bench.autotune.landscape_cold import LANDSCAPE, LandscapeKey, given_configs, main
from tunemem.bench.moe.landscape import load_case

pytest.importorskip("triton")


def test_random_k_is_exact_over_every_draw_with_failures_as_zero() -> None:
    case = load_case(LANDSCAPE, "mixtral-8x7b-tp2-bf16")
    key = LandscapeKey(case, 64, given_configs(6))
    times = [key.ms(c) for c in key.given]
    assert key.random_k(len(times)) == pytest.approx(1.0)
    alone = [key.best_ms / t if t != float("inf") else 0.0 for t in times]
    assert key.random_k(1) == pytest.approx(sum(alone) / len(alone))


def test_the_first_key_is_timed_in_full_and_the_others_within_top_k(tmp_path) -> None:
    out = tmp_path / "cold.json"
    argv = ["--cases", "qwen3-30b-a3b-tp1-bf16", "--configs", "24", "--top-k", "6"]
    argv += ["--orders", "0", "--out", str(out)]
    assert main(argv) == 0
    result = json.loads(out.read_text())
    rows = result["rows"]
    assert len(rows) == 8 and [r["position"] for r in rows] == list(range(8))
    assert rows[0]["timed"] == 24 and rows[0]["speed"] == 1.0
    assert all(r["timed"] <= 6 and 0.0 < r["speed"] <= 1.0 for r in rows[1:])
    assert all(r["confidence"] is not None for r in rows[1:])
    assert result["summary"]["all"]["keys"] == 7
    assert result["memory_held"]["kind"] == "cold" and result["machine"]
    markdown = out.with_suffix(".md").read_text()
    assert "Memory held: **cold**" in markdown and "qwen3-30b-a3b-tp1-bf16/M=" in markdown
    # written by write_result: how to make it again
    command = "python -m tunemem.bench.autotune.landscape_cold " + shlex.join(argv)
    assert result["command"] == command and f"Reproduce: `{command}`" in markdown
    assert result["measurement"] == "replayed" and result["seeds"] == [0]
    assert re.fullmatch(r"[0-9a-f]{40}(\+uncommitted)?|tunemem .+", result["code_version"])
    assert result["machine"]["cpu"]


def test_the_result_has_each_key_order_apart_and_its_range(tmp_path) -> None:
    """Each key order's summary apart, so a figure comes with its range over the orders, in the
    JSON and in the Markdown's table."""
    out = tmp_path / "cold.json"
    argv = ["--cases", "qwen3-30b-a3b-tp1-bf16", "--configs", "12", "--top-k", "4"]
    assert main([*argv, "--orders", "0", "1", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["seeds"] == [0, 1]
    each = result["by_seed"]["each"]
    assert sorted(each) == ["0", "1"] and each["1"]["all"]["keys"] == 7
    low, high = result["by_seed"]["range"]["all"]["speed_mean"]
    assert low <= result["summary"]["all"]["speed_mean"] <= high
    low_share, high_share = result["by_seed"]["range"]["all"]["share_speed_within_goal"]
    assert f"[{low_share:.3f} – {high_share:.3f}]" in out.with_suffix(".md").read_text()
