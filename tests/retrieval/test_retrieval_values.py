"""Value update and shrinkage estimate, checked against hand-computed numbers."""

import math

import pytest

from tunemem.retrieval.values import PRIOR_SCOPE, ScopeStats, update_stats, value_estimate

CHAIN = ["chip:a100", "family:nvidia-ampere", "backend:cuda", "global"]


def test_update_moves_q_towards_reward_by_alpha():
    s = update_stats(None, -1.0, alpha=0.3, q0=0.0)
    assert (s.n, s.q, s.sumsq) == (1, pytest.approx(-0.3), 1.0)
    s = update_stats(s, 1.0, alpha=0.3, q0=0.0)
    # -0.3 + 0.3 * (1 - (-0.3)) = 0.09
    assert s.n == 2 and s.q == pytest.approx(0.09) and s.sumsq == 2.0


def test_unseen_lesson_is_the_prior():
    est = value_estimate(CHAIN, {}, q0=0.25, kappa=2.0)
    assert est.value == 0.25 and est.scope == PRIOR_SCOPE and est.n_local == 0


def test_shrinkage_down_the_chain_matches_hand_computation():
    stats = {"global": ScopeStats(4, 0.5, 1.0), "chip:a100": ScopeStats(2, -0.5, 0.5)}
    est = value_estimate(CHAIN, stats, q0=0.0, kappa=2.0)
    v_global = (4 * 0.5 + 2 * 0.0) / 6
    v_chip = (2 * -0.5 + 2 * v_global) / 4
    assert est.value == pytest.approx(v_chip)
    assert est.scope == "chip:a100"
    assert est.weights["chip:a100"] == pytest.approx(0.5)
    assert est.weights["global"] == pytest.approx(0.5 * 4 / 6)
    assert est.n_local == 2 and est.n_total == 6
    assert est.ci_low < est.value < est.ci_high


def test_without_backoff_only_the_local_scope_counts():
    stats = {"global": ScopeStats(10, 0.9, 9.0)}
    assert value_estimate(CHAIN, stats, q0=0.0, kappa=2.0, backoff=False).value == 0.0
    assert value_estimate(CHAIN, stats, q0=0.0, kappa=2.0, backoff=True).value == pytest.approx(
        0.75
    )


def test_interval_narrows_with_observations():
    few = value_estimate(CHAIN, {"chip:a100": ScopeStats(2, 0.5, 0.6)}, q0=0.0, kappa=2.0)
    many = value_estimate(CHAIN, {"chip:a100": ScopeStats(50, 0.5, 15.0)}, q0=0.0, kappa=2.0)
    assert (many.ci_high - many.ci_low) < (few.ci_high - few.ci_low)
    assert math.isfinite(many.ci_low)


def test_interval_is_clipped_to_the_reward_range():
    unseen = value_estimate(["chip:a100", "global"], {}, q0=0.0, kappa=2.0)
    assert (unseen.ci_low, unseen.ci_high) == (-1.0, 1.0)  # 0 ± 1.13 before clipping
    high = value_estimate(
        ["chip:a100", "global"],
        {"chip:a100": ScopeStats(n=2, q=0.9, sumsq=1.62)},
        q0=0.0,
        kappa=2.0,
    )
    assert high.ci_high == 1.0 and -1.0 <= high.ci_low < high.value
    low = value_estimate(
        ["chip:a100"], {"chip:a100": ScopeStats(n=1, q=-1.0, sumsq=1.0)}, q0=0.0, kappa=0.5
    )
    assert low.ci_low == -1.0 and low.value < low.ci_high <= 1.0
