"""Scoring of the live benchmark on hand-made SYNTHETIC attempts: charges, fractions, noise.

No GPU: these are the pure functions that turn recorded attempts into the report.
"""

from __future__ import annotations

import pytest

from tunemem.bench.live.markdown import render_markdown
from tunemem.bench.live.report import (
    SWEEP,
    charged_cost,
    compile_charges,
    curve,
    goals,
    merge,
    score,
    score_report,
    summarise,
    timing_noise,
)


def attempt(config: int, latency: float | None, cost: float, first: float | None = None) -> dict:
    metrics = {"cost_s": cost}
    if first is not None:
        metrics["cost_first_launch_s"] = first
    if latency is not None:
        metrics["latency_median_ms"] = latency
    return {
        "config": {"BLOCK": config},
        "feasible": latency is not None,
        "latency_ms": latency,
        "metrics": metrics,
    }


def test_compile_is_charged_to_every_attempt_of_a_configuration() -> None:
    cold = attempt(64, 1.0, cost=2.5, first=2.0)  # compiled here: 2.0 s of first launch
    warm = attempt(64, 1.0, cost=0.6, first=0.1)  # Triton had it cached
    charges = compile_charges(
        [("t", cold["config"], cold["metrics"]), ("t", warm["config"], warm["metrics"])]
    )
    assert charges == {"t:BLOCK=64": 2.0}
    assert charged_cost("t", cold, charges) == pytest.approx(2.5)
    assert charged_cost("t", warm, charges) == pytest.approx(0.6 - 0.1 + 2.0)
    failed = attempt(128, None, cost=0.7)  # failed before a first launch finished
    charges = compile_charges([("t", failed["config"], failed["metrics"])])
    assert charged_cost("t", failed, charges) == pytest.approx(0.7)


def test_curve_and_thresholds_follow_the_best_so_far() -> None:
    attempts = [attempt(1, None, 1.0, 0.5), attempt(2, 2.0, 1.0, 0.5), attempt(3, 1.05, 1.0, 0.5)]
    assert curve(attempts, 1.0, 4) == [0.0, 0.5, pytest.approx(1 / 1.05), pytest.approx(1 / 1.05)]
    charges = compile_charges([("t", a["config"], a["metrics"]) for a in attempts])
    scored = score("t", attempts, 1.0, charges, 10)
    assert scored["attempts_to_90"] == 3 and scored["attempts_to_95"] == 3
    assert scored["gpu_s_to_95"] == pytest.approx(3.0)
    assert scored["gpu_s_at"]["1"] == pytest.approx(1.0) and scored["gpu_s_at"]["5"] == 3.0
    assert scored["fraction_at"]["10"] == pytest.approx(1 / 1.05)
    never = score("t", attempts[:2], 1.0, charges, 10)
    assert never["attempts_to_90"] is None and never["gpu_s_to_95"] is None


def entry(task: str, shape: str, runs: dict, sweep: list, reference: float, recorded: float):
    return {
        "task": task,
        "shape": shape,
        "reference_ms": reference,
        "recorded_reference_ms": recorded,
        "sweep": {"attempts": sweep},
        "runs": {name: {"attempts": a} for name, a in runs.items()},
    }


def raw_report(shapes: list[dict]) -> dict:
    return {
        "budget": 3,
        "run_id": "synthetic",
        "date": "synthetic",
        "command": "synthetic",
        "elapsed_s": 1.0,
        "machine": {"gpu": "synthetic"},
        "service": "synthetic",
        "settings": {"warmup_ms": 1, "rep_ms": 1},
        "reference": "synthetic",
        "cost_rule": "synthetic",
        "shapes": shapes,
    }


def test_report_averages_goals_and_noisy_shapes() -> None:
    sweep = [attempt(c, 1.0 + c / 10, 1.0, 0.5) for c in range(4)]  # best 1.0 at config 0
    good = [attempt(0, 1.0, 0.2, 0.1), attempt(1, 1.1, 0.2, 0.1), attempt(2, 1.2, 0.2, 0.1)]
    slow = [attempt(3, 1.3, 0.2, 0.1), attempt(2, 1.2, 0.2, 0.1), attempt(0, 1.0, 0.2, 0.1)]
    stable = entry(
        "softmax",
        "big",
        {"same_task/value_backoff": good, "same_task/similarity": slow},
        sweep,
        1.0,
        1.0,
    )
    noisy_sweep = [attempt(0, 3.0, 1.0, 0.5), attempt(1, 3.2, 1.0, 0.5)]
    noisy = entry(
        "rmsnorm",
        "tiny",
        {"same_task/value_backoff": [attempt(0, 1.0, 0.2, 0.1)]},
        noisy_sweep,
        3.0,
        1.0,
    )
    assert timing_noise(stable)["noisy"] is False
    assert timing_noise(noisy)["noisy"] is True and timing_noise(noisy)["reference_drift"] == 3.0
    report = score_report(raw_report([stable, noisy]))
    assert report["noisy_shapes"] == ["rmsnorm/tiny"]
    vb = report["summary"]["same_task/value_backoff"]
    assert vb["shapes"] == 1 and vb["fraction_at"]["1"] == 1.0
    # each arm attempt: its own 0.2 - 0.1 s plus the 0.5 s first launch the sweep measured
    assert vb["gpu_s_at_5_over_sweep_mean"] == pytest.approx(3 * 0.6 / 4.0)
    assert report["summary"][SWEEP]["attempts"] == 4.0
    assert report["summary_all_shapes"]["same_task/value_backoff"]["shapes"] == 2
    met = report["goals"]
    assert met["value_backoff_reaches_0.95_within_5"]["met"]
    assert met["value_backoff_5_attempts_cost_at_most_a_tenth_of_sweep"]["met"] is False
    assert met["value_backoff_not_worse_than_similarity"]["met"]
    text = render_markdown(report)
    assert "rmsnorm/tiny" in text and "| same_task/value_backoff | 1 | 1.000" in text


def test_merge_rescores_each_part_and_keeps_every_shape() -> None:
    sweep = [attempt(c, 1.0 + c, 1.0, 0.5) for c in range(3)]
    part = raw_report([entry("gemm", "a", {"random": [attempt(2, 3.0, 0.1, 0.1)]}, sweep, 1, 1)])
    other = raw_report([entry("gemm", "b", {"random": [attempt(0, 1.0, 0.1, 0.1)]}, sweep, 1, 1)])
    merged = merge([part, other])
    assert [e["shape"] for e in merged["shapes"]] == ["a", "b"]
    assert merged["summary"]["random"]["fraction_at"]["1"] == pytest.approx((1 / 3 + 1) / 2)


def test_goals_flag_value_arm_worse_than_similarity() -> None:
    rows = {
        "same_task/value_backoff": {
            "fraction_at": {"5": 0.9},
            "gpu_s_at_5_over_sweep_mean": 0.05,
            "mean_curve": [0.5, 0.9],
        },
        "same_task/similarity": {"mean_curve": [0.6, 0.9]},
    }
    result = goals(rows, 2)
    assert result["value_backoff_not_worse_than_similarity"]["budgets_where_worse"] == [1]
    assert result["value_backoff_reaches_0.95_within_5"]["met"] is False
    assert summarise([], 2) == {}


def test_arms_are_scored_in_their_own_measuring_conditions() -> None:
    # SYNTHETIC: the sweep measured every configuration 10% slower than the arms did.
    sweep = [attempt(c, 1.1 * (1.0 + c / 10), 1.0, 0.5) for c in range(6)]
    arm = [attempt(c, 1.0 + c / 10, 0.2, 0.1) for c in (5, 4, 3, 2, 1, 0)]
    shape = entry("gemm", "big", {"same_task/similarity": arm}, sweep, 1.1, 1.1)
    raw = raw_report([shape])
    raw["budget"] = 6
    scored = score_report(raw)["shapes"][0]
    assert scored["condition_ratio"] == pytest.approx(1.1)
    assert scored["reference_ms_arm_conditions"] == pytest.approx(1.0)
    run = scored["runs"]["same_task/similarity"]
    assert run["score"]["best_fraction"] == pytest.approx(1.0)  # found the reference
    assert run["score_uncorrected"]["best_fraction"] == pytest.approx(1.1)  # would flatter
