"""The Helion seeds report on the committed H100 runs: its numbers and replay come out of the
logs and results as recorded, and the committed summary is what the report writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tunemem.bench.helion.report import analyse, main, markdown

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "helion"
RUNS = [RESULTS / "h100-run1-softmax", RESULTS / "h100-run2-rmsnorm", RESULTS / "h100-run3-matmul"]


def shape(run: dict, kernel: str, size: list[int]) -> dict:
    (found,) = [s for s in run["shapes"] if s["kernel"] == kernel and s["shape"] == size]
    return found


def test_the_rmsnorm_run_as_recorded() -> None:
    run = analyse(RUNS[1])
    assert run["device"] == "NVIDIA H100 80GB HBM3"
    second = shape(run, "rms_norm", [16384, 2048])
    g1 = second["arms"]["quick+mem/g1"]
    assert g1["speed"] == pytest.approx(0.050054 / 0.049283, abs=2e-3)
    assert g1["wall_ratio"] == pytest.approx(42.743 / 58.576, abs=1e-3)
    assert g1["bar_met"] is False  # fast enough, not half the wall time
    assert second["memory_before"]["timings"] == 60
    # Replayed on the CPU: the package's ranking picks the seeds the run used.
    assert second["replay"]["seeds_match_run"] is True
    assert second["replay"]["seeds_alone_speed"] == pytest.approx(0.989, abs=1e-3)
    third = shape(run, "rms_norm", [8192, 8192])
    assert third["replay"]["memory_timings"] == 238 and third["replay"]["seeds_match_run"]
    assert third["arms"]["quick+mem/g1"]["not_run"] == "deadline"


def test_the_matmul_run_misses_the_speed_bar() -> None:
    run = analyse(RUNS[2])
    second = shape(run, "matmul", [2048, 2048, 2048])
    assert list(second["arms"]) == ["quick+mem/g1", "quick"]
    g1 = second["arms"]["quick+mem/g1"]
    assert g1["speed"] == pytest.approx(0.814, abs=1e-3) and g1["bar_met"] is False
    assert second["replay"]["seeds_match_run"] is True


def test_the_softmax_run_says_what_was_not_returned() -> None:
    run = analyse(RUNS[0])
    second = shape(run, "softmax", [16384, 1024])
    assert second["replay"]["seeds_match_run"] is True
    assert second["replay"]["seeded_logs_returned"] is False
    assert "not returned" in markdown([run], "x")


def test_the_committed_summary_is_the_reports(tmp_path: Path) -> None:
    committed = (RESULTS / "summary.md").read_text()
    sha = committed.split("at commit `", 1)[1].split("`", 1)[0]
    main([*map(str, RUNS), "--out", str(tmp_path / "summary"), "--sha", sha])
    assert (tmp_path / "summary.md").read_text() == committed
    assert json.loads((tmp_path / "summary.json").read_text()) == json.loads(
        (RESULTS / "summary.json").read_text()
    )


FIRST_RUNS = [
    RESULTS / "h100-run4-rmsnorm-softmax",
    RESULTS / "h100-run5-matmul-full",
    RESULTS / "h100-run6-matmul",
]


def test_memory_first_meets_the_bar_on_rmsnorm_and_softmax() -> None:
    run = analyse(FIRST_RUNS[0])
    met = [
        (s["kernel"], s["shape"])
        for s in run["shapes"]
        if s["arms"].get("mem-first", {}).get("bar_met")
    ]
    assert met == [
        ("rms_norm", [16384, 2048]),
        ("rms_norm", [8192, 8192]),
        ("softmax", [16384, 1024]),
    ]
    second = shape(run, "rms_norm", [16384, 2048])["arms"]
    assert second["mem-first"]["mode"] == "memory" and second["mem-first"]["configs_timed_ok"] == 8
    assert second["quick+mem"]["bar_met"] is False  # as fast, not in half the wall time


def test_the_full_effort_arm_is_the_reference_where_it_ran() -> None:
    """Run 5 timed Helion's full effort at matmul 1024x4096x1024 and ran out of time before
    Helion alone at quick effort there: the arms are scored against the full search."""
    run = analyse(FIRST_RUNS[1])
    arms = shape(run, "matmul", [1024, 4096, 1024])["arms"]
    full_ms = arms["full"]["median_ms"]
    assert arms["mem-first"]["speed_vs_full"] == pytest.approx(
        full_ms / arms["mem-first"]["median_ms"]
    )
    assert arms["mem-first"]["speed_vs_full"] < 0.3  # trusted, and wrong
    assert 0.85 < arms["quick+mem"]["speed_vs_full"] < 0.9
    assert "speed" not in arms["mem-first"]  # no quick arm to compare with
    text = markdown([run], "x")
    assert "Against Helion's full effort" in text and "mem-first 0.26" in text


def test_the_committed_memory_first_summary_is_the_reports(tmp_path: Path) -> None:
    committed = (RESULTS / "summary-memory-first.md").read_text()
    sha = committed.split("at commit `", 1)[1].split("`", 1)[0]
    main([*map(str, FIRST_RUNS), "--out", str(tmp_path / "s"), "--sha", sha])
    assert (tmp_path / "s.md").read_text() == committed
