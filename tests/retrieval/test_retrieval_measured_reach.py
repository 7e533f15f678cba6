"""`measured_reach`: a configuration's optimum fraction over only the spaces that measured it
(hand-computed numbers, SYNTHETIC spaces)."""

from __future__ import annotations

import pytest

from tunemem.retrieval.transfer import SearchSpace, config_key, measured_reach

A, B, C = {"x": 1}, {"x": 2}, {"x": 3}


def space(**latency: float | None) -> SearchSpace:
    return SearchSpace({config_key({"x": int(k[1:])}): v for k, v in latency.items()})


def test_a_complete_recording_is_used_and_partial_runs_beside_it_are_not() -> None:
    whole = space(x1=2.0, x2=4.0, x3=None)
    ten_evaluations = space(x2=5.0)  # a partial run whose best is 5.0 and never timed x1
    reach = measured_reach(B, [("run", ten_evaluations, False), ("cache", whole, True)])
    assert reach is not None
    assert reach.fraction == pytest.approx(0.5) and reach.coverage == "complete"
    assert reach.space_id == "cache" and reach.n_spaces == 1
    # x1 is the recording's optimum; the partial run that never timed it changes nothing
    assert (
        measured_reach(A, [("run", ten_evaluations, False), ("cache", whole, True)]).fraction == 1.0
    )


def test_failed_where_measured_is_zero_and_unmeasured_is_none() -> None:
    whole = space(x1=2.0, x3=None)
    assert measured_reach(C, [("cache", whole, True)]).fraction == 0.0  # failed there
    assert measured_reach(B, [("cache", whole, True)]) is None  # not measured, not infeasible
    assert measured_reach(B, []) is None


def test_partial_runs_count_what_they_timed_against_their_own_best() -> None:
    one, two = space(x1=3.0, x2=6.0), space(x2=4.0, x3=2.0)
    reach = measured_reach(B, [("one", one, False), ("two", two, False)])
    assert reach is not None and reach.coverage == "partial" and reach.n_spaces == 2
    assert reach.fraction == pytest.approx((3.0 / 6.0 + 2.0 / 4.0) / 2)
    assert measured_reach(C, [("one", one, False)]) is None
