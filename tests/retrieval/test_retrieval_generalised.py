"""Generalised values and recorded reach: hand-computed numbers."""

from __future__ import annotations

import pytest

from tunemem.retrieval.generalised import affinities, chip_affinity, generalised_estimate
from tunemem.retrieval.generalised_settings import GeneralisedSettings
from tunemem.retrieval.generalised_terms import GeneralisedInputs, source_prior
from tunemem.retrieval.recorded import (
    ConfigLesson,
    RecordedSpace,
    SourceReach,
    chip_agreement,
    lesson_reaches,
    reach_reward,
    source_reaches,
)
from tunemem.retrieval.transfer import SearchSpace, config_key
from tunemem.retrieval.values import ScopeStats

SETTINGS = GeneralisedSettings()  # q0 0, kappa 2, weights 1, source 2, affinity kappa 5


def test_reach_reward_maps_fraction_to_reward_scale() -> None:
    assert reach_reward(1.0) == 1.0 and reach_reward(0.0) == -1.0
    assert reach_reward(0.75) == pytest.approx(0.5)
    assert reach_reward(1.3) == 1.0 and reach_reward(-0.2) == -1.0


def test_chip_affinity_moves_from_descriptors_to_agreement() -> None:
    assert chip_affinity(0.2, None, 0, 5.0) == 0.2
    assert chip_affinity(0.2, 0.8, 5, 5.0) == pytest.approx((5 * 0.8 + 5 * 0.2) / 10)
    # disagreement counts as no affinity, not as negative
    assert chip_affinity(0.2, -0.5, 5, 5.0) == pytest.approx((0 + 5 * 0.2) / 10)


def test_source_prior_pools_over_chips_like_the_target() -> None:
    reaches = {
        "s": SourceReach(5, 5.0),  # the source's own spaces: no transfer, skipped
        "a": SourceReach(2, 1.0),
        "b": SourceReach(4, -1.0),
        "c": SourceReach(3, 3.0),  # affinity 0: ignored
    }
    mean, weight, pooled = source_prior("s", reaches, {"a": 1.0, "b": 0.5}, SETTINGS)
    # weighted sum 1*1.0 + 0.5*(-1.0) = 0.5 over weighted count 1*2 + 0.5*4 = 4
    assert mean == pytest.approx(0.125)
    assert weight == pytest.approx(2.0 * 4 / (4 + 2))
    assert pooled == 6
    assert source_prior("s", {"s": SourceReach(5, 5.0)}, {"s": 1.0}, SETTINGS) == (0.0, 0.0, 0)


def test_generalised_estimate_by_hand() -> None:
    inputs = GeneralisedInputs(
        target="t",
        affinity={"x": 0.5, "y": 0.25},
        stats={"l": {"t": ScopeStats(n=2, q=0.5, sumsq=0.5), "x": ScopeStats(3, -0.5, 0.75)}},
        reaches={"l": {"y": {"space": 0.9}}},
        sources={"l": "s"},
        # affinity 0.25 x 8 lessons: W = 2, weight 2 W / (W + 2) = 1, mean 0.25 x 3.2 / 2 = 0.4
        pooled={"s": {"y": SourceReach(8, 3.2)}},
    )
    est = generalised_estimate("l", inputs, SETTINGS)
    # terms (value, weight): prior (0, 2), own (0.5, 2), outcomes:x (-0.5, 0.5*3),
    # recorded:y (2*0.9-1 = 0.8, 0.25), source (0.4, 1)
    total = 2 + 2 + 1.5 + 0.25 + 1
    assert est.value == pytest.approx((0 + 1.0 - 0.75 + 0.2 + 0.4) / total)
    assert est.weights == pytest.approx(
        {
            "prior": 2 / total,
            "chip:t": 2 / total,
            "outcomes:chip:x": 1.5 / total,
            "recorded:chip:y": 0.25 / total,
            "source:chip:s": 1 / total,
        }
    )
    assert est.scope == "chip:t"  # ties with the prior go to the evidence
    assert est.n_local == 2 and est.n_total == 5
    assert est.ci_low < est.value < est.ci_high


def test_generalised_estimate_without_evidence_is_the_prior() -> None:
    est = generalised_estimate("l", GeneralisedInputs(target="t"), SETTINGS)
    assert est.value == 0.0 and est.scope == "prior" and est.weights == {"prior": 1.0}


def _space(latencies: dict[tuple[int, int], float | None]) -> SearchSpace:
    return SearchSpace({config_key({"a": a, "b": b}): v for (a, b), v in latencies.items()})


def test_lesson_reaches_sources_and_agreement_by_hand() -> None:
    """SYNTHETIC spaces: two chips, one with two spaces, and a space of other parameters."""
    spaces = [
        RecordedSpace("t1", "x", "op", frozenset("ab"), _space({(1, 1): 1.0, (1, 2): 2.0})),
        RecordedSpace("t2", "y", "op", frozenset("ab"), _space({(1, 1): 4.0, (1, 2): 2.0})),
        RecordedSpace("t3", "y", "op", frozenset("ab"), _space({(1, 1): 1.0, (1, 2): None})),
        RecordedSpace("t4", "y", "op", frozenset("abc"), _space({(1, 1): 1.0})),
        RecordedSpace("t5", "z", "other", frozenset("ab"), _space({(1, 1): 1.0})),
    ]
    lessons = [
        ConfigLesson("l1", "x", "op", {"a": 1, "b": 1}),
        ConfigLesson("l2", "x", "op", {"a": 1, "b": 2}),
        ConfigLesson("l3", "y", "op", {"a": 2, "b": 2}),  # recorded nowhere: reaches 0
    ]
    reaches = lesson_reaches(lessons, spaces)
    # l1 on y: t2 reaches 2/4, t3 reaches 1/1 -> mean 0.75; l2 on y: t2 1.0, t3 infeasible 0
    assert reaches["l1"] == pytest.approx({"x": 1.0, "y": 0.75})
    assert reaches["l2"] == pytest.approx({"x": 0.5, "y": 0.5})
    assert reaches["l3"] == {"x": 0.0, "y": 0.0}
    pooled = source_reaches(lessons, reaches)
    assert pooled["x"]["y"].n == 2
    assert pooled["x"]["y"].reward_sum == pytest.approx(0.5 + 0.0)
    assert "x" not in pooled["x"]
    assert pooled["y"] == {"x": SourceReach(1, -1.0)}
    rho, n = chip_agreement(reaches, "x", "y")
    assert n == 3 and rho == pytest.approx(1.0)  # both rank l1 > l2 > l3
    assert chip_agreement(reaches, "x", "y", min_common=4) == (None, 3)


def test_affinities_use_agreement_where_recorded() -> None:
    reaches = {
        "l1": {"x": 1.0, "t": 1.0},
        "l2": {"x": 0.5, "t": 0.4},
        "l3": {"x": 0.0, "t": 0.1},
    }
    out = affinities("t", ["t", "x", "w"], reaches, SETTINGS, descriptor=lambda a, b: 0.1)
    assert out["t"] == 1.0 and out["w"] == 0.1
    assert out["x"] == pytest.approx((3 * 1.0 + 5 * 0.1) / 8)


def test_affinity_floor_gives_every_other_chip_a_least_weight() -> None:
    reaches = {"l1": {"x": 1.0, "t": 0.0}, "l2": {"x": 0.0, "t": 1.0}, "l3": {"x": 0.5, "t": 0.5}}
    floored = GeneralisedSettings(affinity_floor=0.1)
    out = affinities("t", ["t", "x", "w"], reaches, floored, descriptor=lambda a, b: 0.01)
    # x disagrees with t (rho -1, counted as 0): (3*0 + 5*0.01)/8 = 0.00625, floored to 0.1;
    # w has no common lessons: its descriptor 0.01, floored; the target stays 1
    assert out == pytest.approx({"t": 1.0, "x": 0.1, "w": 0.1})
    high = affinities("t", ["w"], {}, floored, descriptor=lambda a, b: 0.4)
    assert high == pytest.approx({"w": 0.4})  # above the floor: unchanged


def test_the_interval_stays_within_the_reward_range() -> None:
    """One outcome of +1 (or -1) on the target: its 95 % interval reached 1.18 (-1.18), past
    the reward range [-1, 1]; it is clipped there (issue 31), as the chain estimate's is."""
    for reward in (1.0, -1.0):
        inputs = GeneralisedInputs(target="t", stats={"l": {"t": ScopeStats(1, reward, 1.0)}})
        est = generalised_estimate("l", inputs, SETTINGS)
        assert est.value == pytest.approx(reward / 3)  # shrunk toward the global term's 0
        assert -1.0 <= est.ci_low <= est.value <= est.ci_high <= 1.0
        assert (est.ci_high if reward > 0 else -est.ci_low) == 1.0


def test_every_term_is_weighed_by_a_generalised_knob_and_named_by_its_prefix() -> None:
    from tunemem.retrieval.generalised_terms import TERMS
    from tunemem.retrieval.knobs import KNOBS

    for term in TERMS:
        assert term.weight is None or "generalised" in KNOBS[term.weight].feeds
    inputs = GeneralisedInputs(
        target="t",
        affinity={"x": 1.0},
        stats={"l": {"t": ScopeStats(1, 0.5), "x": ScopeStats(1, 0.5)}},
        reaches={"l": {"x": {"s": 0.5}}},
        effects={"l": {"x": {"s": 0.5}}},
        sources={"l": "x"},
        pooled={"x": {"t": SourceReach(1, 1.0)}},
    )
    for term in TERMS:
        names = [entry.name for entry in term.values("l", inputs, SETTINGS)]
        assert names and all(name.split(":")[0] == term.prefix for name in names)


def test_affinities_are_worked_out_when_a_term_asks_for_them() -> None:
    from tunemem.retrieval.generalised import Affinities

    reaches = {"l1": {"x": 1.0, "t": 1.0}, "l2": {"x": 0.5, "t": 0.4}, "l3": {"x": 0.0, "t": 0.1}}
    lazy = Affinities("t", reaches, SETTINGS, descriptor=lambda a, b: 0.1)
    assert len(lazy) == 0
    table = affinities("t", ["t", "x", "w"], reaches, SETTINGS, descriptor=lambda a, b: 0.1)
    assert lazy.get("x", 0.0) == table["x"] and lazy["w"] == table["w"] and lazy["t"] == 1.0
    assert list(lazy) == ["x", "w", "t"]
