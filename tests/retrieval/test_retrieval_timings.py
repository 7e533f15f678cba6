"""Repeated timings: the relative error of a report's latency and the share of the learning
rate a refine update from it takes (hand-computed)."""

from __future__ import annotations

import math

import pytest

from tunemem.retrieval.timings import (
    SINGLE_TIMING_ERROR,
    summarise,
    timing_weight,
    update_weight,
)


def test_several_timings_summarise_to_median_spread_and_count() -> None:
    s = summarise([1.0, 1.2, 1.1], None, None, None)
    assert s is not None
    assert (s.latency_ms, s.repetitions) == (1.1, 3)
    assert s.spread_ms == pytest.approx(0.1)
    assert s.relative_error == pytest.approx(0.1 / 1.1 / math.sqrt(3))


def test_one_timing_without_a_spread_is_assumed_noisy() -> None:
    one = summarise(None, 2.0, None, None)
    assert one is not None and one.relative_error == SINGLE_TIMING_ERROR
    assert timing_weight(one) == pytest.approx(0.5)
    assert summarise([2.0], None, None, None) == one


def test_a_tight_repeated_timing_moves_a_value_more_than_a_noisy_one() -> None:
    tight = summarise([1.00, 1.01, 0.99, 1.00, 1.00], None, None, None)
    wide = summarise(None, 1.0, 0.5, 5)
    single = summarise(None, 1.0, None, None)
    weights = [timing_weight(t) for t in (tight, single, wide)]
    assert weights[0] > 0.99 and weights[0] > weights[1] > weights[2]


def test_only_refine_rewards_of_feasible_attempts_rest_on_the_timing() -> None:
    single = summarise(None, 1.0, None, None)
    assert update_weight("refine", True, single) == pytest.approx(0.5)
    assert update_weight("refine", False, single) == 1.0
    assert update_weight("draft", True, single) == 1.0
    assert update_weight("refine", True, None) == 1.0
