"""Pure transfer statistics: ranks with ties, Spearman, pair lists, optimum fraction.

Every expected number is computed by hand in the comments next to it.
"""

from __future__ import annotations

import math

import pytest

from tunemem.retrieval.transfer import (
    ScopeValue,
    SearchSpace,
    average_ranks,
    config_key,
    optimum_fraction,
    pair_stats,
    spearman,
    transfer_matrix,
)


def test_tied_values_share_the_average_rank():
    assert average_ranks([10.0, 20.0, 20.0, 30.0]) == [1.0, 2.5, 2.5, 4.0]
    assert average_ranks([5.0, 5.0, 5.0]) == [2.0, 2.0, 2.0]
    assert average_ranks([3.0, 1.0, 2.0]) == [3.0, 1.0, 2.0]


def test_spearman_monotone_and_reversed():
    assert spearman([1, 2, 3, 4], [10, 20, 25, 100]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [9, 7, 5, -1]) == pytest.approx(-1.0)


def test_spearman_with_ties_matches_hand_computation():
    # x ranks [1, 2.5, 2.5, 4], y ranks [1, 3, 2, 4]; centred: dx = [-1.5, 0, 0, 1.5],
    # dy = [-1.5, .5, -.5, 1.5]; sxy = 4.5, sxx = 4.5, syy = 5 -> 4.5 / sqrt(22.5).
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(22.5))


def test_spearman_undefined_for_constant_or_tiny_samples():
    assert spearman([1.0], [2.0]) is None
    assert spearman([], []) is None
    assert spearman([0.3, 0.3, 0.3], [1.0, 2.0, 3.0]) is None
    with pytest.raises(ValueError):
        spearman([1, 2], [1])


def test_pair_lists_common_lessons_and_helped_then_hurt():
    source = {
        "a": ScopeValue(3, 0.657),
        "b": ScopeValue(1, 0.3),
        "c": ScopeValue(1, -0.3),
        "only-source": ScopeValue(4, 0.9),
        "unobserved": ScopeValue(0, 0.0),
    }
    target = {
        "a": ScopeValue(3, -0.657),
        "b": ScopeValue(2, 0.51),
        "c": ScopeValue(1, 0.3),
        "unobserved": ScopeValue(2, 0.5),
    }
    stats = pair_stats("a100", "mi250x", source, target)
    assert [c.lesson_id for c in stats.common] == ["a", "b", "c"]
    assert stats.n_common == 3
    # source ranks a=3, b=2, c=1; target ranks a=1, b=3, c=2 -> d = [2, -1, -1],
    # rho = 1 - 6 * 6 / (3 * 8) = -0.5.
    assert stats.spearman == pytest.approx(-0.5)
    assert [c.lesson_id for c in stats.helped_source_hurt_target] == ["a"]
    assert stats.helped_both == ["b"]
    # a disagrees, b agrees (both above 0), c disagrees.
    assert stats.sign_agreement == pytest.approx(1 / 3)
    assert stats.mean_source == pytest.approx((0.657 + 0.3 - 0.3) / 3)


def test_neutral_value_and_min_n_move_the_verdicts():
    source = {"a": ScopeValue(2, 0.2), "b": ScopeValue(1, 0.6)}
    target = {"a": ScopeValue(2, 0.1), "b": ScopeValue(5, 0.4)}
    assert pair_stats("s", "t", source, target).helped_source_hurt_target == []
    shifted = pair_stats("s", "t", source, target, neutral=0.15)
    assert [c.lesson_id for c in shifted.helped_source_hurt_target] == ["a"]
    strict = pair_stats("s", "t", source, target, min_n=2)
    assert [c.lesson_id for c in strict.common] == ["a"]
    assert strict.spearman is None


def test_matrix_holds_every_ordered_pair_of_distinct_scopes():
    values = {"x": {"l": ScopeValue(1, 1.0)}, "y": {"l": ScopeValue(1, -1.0)}}
    pairs = transfer_matrix(values, ["x", "y", "z"])
    assert [(p.source, p.target) for p in pairs] == [
        ("x", "y"),
        ("x", "z"),
        ("y", "x"),
        ("y", "z"),
        ("z", "x"),
        ("z", "y"),
    ]
    by_pair = {(p.source, p.target): p for p in pairs}
    assert [c.lesson_id for c in by_pair[("x", "y")].helped_source_hurt_target] == ["l"]
    assert by_pair[("y", "x")].helped_source_hurt_target == []
    assert by_pair[("x", "z")].n_common == 0


def test_optimum_fraction_of_feasible_infeasible_and_missing_configs():
    space = SearchSpace(
        latency={
            config_key({"bx": 32, "ty": 2}): 2.0,
            config_key({"bx": 64, "ty": 2}): 1.0,
            config_key({"bx": 128, "ty": 2}): None,  # recorded as failed
        }
    )
    assert space.optimum_ms == 1.0
    assert optimum_fraction({"bx": 32, "ty": 2}, space) == (0.5, 2.0)
    assert optimum_fraction({"ty": 2, "bx": 64}, space) == (1.0, 1.0)
    assert optimum_fraction({"bx": 128, "ty": 2}, space) == (0.0, None)
    assert optimum_fraction({"bx": 256, "ty": 2}, space) == (0.0, None)
    # JSON may carry 32.0 for 32: the same configuration.
    assert optimum_fraction({"bx": 32.0, "ty": 2}, space) == (0.5, 2.0)
    assert optimum_fraction({"bx": 32}, SearchSpace(latency={config_key({"bx": 32}): None})) == (
        0.0,
        None,
    )
