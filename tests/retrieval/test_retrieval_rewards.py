"""Stage rewards and their per-task normalisation."""

import math

import pytest

from tunemem.retrieval.rewards import (
    RewardStats,
    draft_reward,
    raw_refine_reward,
    refine_reward,
    stage_reward,
)


def test_draft_reward_is_plus_minus_one():
    assert draft_reward(True) == 1.0 and draft_reward(False) == -1.0


def test_raw_refine_reward_is_tanh_log_ratio():
    assert raw_refine_reward(True, 1.0, 2.0) == pytest.approx(math.tanh(math.log(2.0)))
    assert raw_refine_reward(True, 2.0, 1.0) == pytest.approx(-math.tanh(math.log(2.0)))
    assert raw_refine_reward(False, 1.0, 2.0) == -1.0


def test_refine_reward_uses_raw_until_enough_history_then_normalises():
    stats = RewardStats()
    for _ in range(5):
        reward, stats = refine_reward(True, 1.0, 1.1, stats, min_count=5)
    assert reward == pytest.approx(math.tanh(math.log(1.1)))
    # History is constant: std floors at min_std, the same gain normalises to zero.
    reward, stats = refine_reward(True, 1.0, 1.1, stats, min_count=5)
    assert reward == pytest.approx(0.0, abs=1e-9)
    # A bigger gain than usual is positive, clipped to 1.
    reward, _ = refine_reward(True, 1.0, 3.0, stats, min_count=5)
    assert reward == 1.0


def test_infeasible_refine_does_not_touch_statistics():
    stats = RewardStats(n=3, mean=0.1, m2=0.02)
    reward, after = refine_reward(False, None, 1.0, stats)
    assert reward == -1.0 and after == stats


def test_unknown_stage_is_an_error():
    with pytest.raises(ValueError, match="unknown stage"):
        stage_reward("polish", True, 1.0, 1.0, RewardStats())
