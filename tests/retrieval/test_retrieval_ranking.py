"""Blending of similarity and value, exploration bonus and gating."""

import math

import pytest

from tunemem.retrieval.gating import Query, exclusion_reason, gate
from tunemem.retrieval.ranking import (
    Candidate,
    RankingSettings,
    exploration_bonus,
    rank,
    recall_size,
    zscores,
)
from tunemem.retrieval.values import ValueEstimate


def est(value: float, n: int = 0) -> ValueEstimate:
    return ValueEstimate(
        value=value, scope="chip:x", n_local=n, n_total=n, ci_low=value - 1, ci_high=value + 1
    )


def test_zscores_standardise_and_clip():
    assert zscores([1.0, 1.0], 3.0) == [0.0, 0.0]
    z = zscores([0.0, 1.0], 3.0)
    assert z == pytest.approx([-1.0, 1.0])
    assert max(zscores([0.0] * 99 + [100.0], 3.0)) == 3.0


def test_lambda_zero_is_similarity_order_and_lambda_one_is_value_order():
    cands = [
        Candidate("a", 0.9, est(-0.5)),
        Candidate("b", 0.6, est(0.8)),
        Candidate("c", 0.5, est(0.0)),
    ]
    by_sim = rank(cands, RankingSettings(lam=0.0, k=3, exploration_c=0.0))
    by_val = rank(cands, RankingSettings(lam=1.0, k=3, exploration_c=0.0))
    assert [r.lesson_id for r in by_sim] == ["a", "b", "c"]
    assert [r.lesson_id for r in by_val] == ["b", "c", "a"]


def test_blended_score_is_the_documented_formula():
    cands = [Candidate("a", 0.9, est(-0.5)), Candidate("b", 0.6, est(0.8))]
    ranked = rank(cands, RankingSettings(lam=0.5, k=2, exploration_c=0.0))
    for r in ranked:
        assert r.score == pytest.approx(0.5 * r.z_sim + 0.5 * r.z_value)


def test_exploration_bonus_shrinks_with_count():
    assert (
        exploration_bonus(0.3, 0, 10)
        > exploration_bonus(0.3, 5, 10)
        > exploration_bonus(0.3, 50, 10)
    )
    assert exploration_bonus(0.3, 0, 0) == 0.0
    assert exploration_bonus(1.0, 0, 10) == pytest.approx(math.sqrt(math.log(11)))


def test_untried_lesson_gets_a_bonus_over_a_tried_one():
    cands = [Candidate("tried", 0.7, est(0.0, n=20)), Candidate("new", 0.7, est(0.0, n=0))]
    ranked = rank(cands, RankingSettings(lam=0.5, k=2, exploration_c=0.3))
    assert ranked[0].lesson_id == "new" and ranked[0].exploration > ranked[1].exploration


def test_recall_size_scales_with_memory():
    s = RankingSettings(k=3)
    assert recall_size(s, 0) == 5
    assert recall_size(s, 10_000) == 100
    assert recall_size(RankingSettings(k=3, k_recall=7), 10_000) == 7


def test_gating_hard_filters():
    q = Query(op="softmax", dtype="bf16", backend="hip")
    assert exclusion_reason({"op": "gemm"}, False, q) is not None
    assert exclusion_reason({"op": "softmax", "dtypes": ["fp32"]}, False, q) is not None
    assert exclusion_reason({"backends": ["cuda"]}, True, q) is not None  # code for CUDA only
    assert exclusion_reason({"backends": ["cuda"]}, False, q) is None  # text travels
    assert exclusion_reason({}, True, q) is None
    admitted = gate(
        [("a", 0.9, {}, False), ("b", 0.05, {}, False), ("c", 0.8, {"op": "gemm"}, False)], q, 0.1
    )
    assert admitted == [("a", 0.9)]
