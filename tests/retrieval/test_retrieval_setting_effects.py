"""Recorded effects of parameter-setting lessons, and their term in the generalised value:
hand-computed numbers on SYNTHETIC spaces."""

from __future__ import annotations

import math

import pytest

from tunemem.retrieval.generalised import generalised_estimate
from tunemem.retrieval.generalised_settings import GeneralisedSettings
from tunemem.retrieval.generalised_terms import GeneralisedInputs
from tunemem.retrieval.recorded import RecordedSpace, SettingLesson, setting_effect, setting_effects
from tunemem.retrieval.transfer import SearchSpace, config_key


def _space(latencies: dict[tuple[int, int], float | None]) -> SearchSpace:
    return SearchSpace({config_key({"a": a, "b": b}): v for (a, b), v in latencies.items()})


# a=1 configurations are fast, a=2 slow; one infeasible configuration is ignored.
FAST_A1 = _space({(1, 1): 1.0, (1, 2): 2.0, (2, 1): 4.0, (2, 2): 8.0, (2, 3): None})


def test_prefer_effect_is_tanh_log_of_median_ratio() -> None:
    prefer = SettingLesson("p", "x", "op", "a", 1, prefer=True)
    # timed medians: all {1, 2, 4, 8} -> 3.0; following (a=1) {1, 2} -> 1.5
    assert setting_effect(prefer, FAST_A1) == pytest.approx(math.tanh(math.log(3.0 / 1.5)))


def test_avoid_effect_counts_the_configurations_without_the_setting() -> None:
    avoid = SettingLesson("v", "x", "op", "a", 2, prefer=False)
    # following = not carrying a=2 -> {1, 2}, the same speed-up as preferring a=1
    assert setting_effect(avoid, FAST_A1) == pytest.approx(math.tanh(math.log(2.0)))
    wrong = SettingLesson("w", "x", "op", "a", 1, prefer=False)  # avoids the fast value
    assert setting_effect(wrong, FAST_A1) == pytest.approx(math.tanh(math.log(3.0 / 6.0)))


def test_values_compare_as_text_and_unobservable_effects_are_none() -> None:
    assert setting_effect(SettingLesson("s", None, "op", "a", "1", True), FAST_A1) == (
        pytest.approx(math.tanh(math.log(2.0)))
    )
    # no configuration carries a=5, every one carries b in {1,2,3}: nothing to compare
    assert setting_effect(SettingLesson("n", None, "op", "a", 5, True), FAST_A1) is None
    assert setting_effect(SettingLesson("m", None, "op", "c", 1, True), FAST_A1) is None


def test_setting_effects_average_a_chips_spaces_and_skip_other_ops() -> None:
    reversed_space = _space({(1, 1): 8.0, (1, 2): 4.0, (2, 1): 2.0, (2, 2): 1.0})
    spaces = [
        RecordedSpace("t1", "x", "op", frozenset("ab"), FAST_A1),
        RecordedSpace("t2", "y", "op", frozenset("ab"), FAST_A1),
        RecordedSpace("t3", "y", "op", frozenset("ab"), reversed_space),
        RecordedSpace("t4", "z", "other", frozenset("ab"), FAST_A1),
    ]
    lesson = SettingLesson("p", "x", "op", "a", 1, prefer=True)
    cache: dict = {}
    effects = setting_effects([lesson], spaces, cache)
    up = math.tanh(math.log(2.0))
    # on y the setting holds on t2 (+up) and reverses on t3 (medians 3.0 vs 6.0: -up)
    assert effects == {"p": pytest.approx({"x": up, "y": 0.0})}
    assert set(cache) == {"t1", "t2", "t3"}  # the other op's space is never parsed
    assert setting_effects([lesson], spaces, cache) == effects


def test_effect_term_in_the_generalised_value() -> None:
    inputs = GeneralisedInputs(
        target="t",
        affinity={"x": 0.5, "y": 1.0},
        effects={"p": {"x": {"s1": 0.6}, "y": {"s2": -0.2}, "w": {"s3": 0.9}}},  # w: no affinity
    )
    est = generalised_estimate("p", inputs, GeneralisedSettings())
    # terms (value, weight): prior (0, 2), effect:x (0.6, 0.5), effect:y (-0.2, 1.0)
    total = 2 + 0.5 + 1.0
    assert est.value == pytest.approx((0.3 - 0.2) / total)
    assert est.weights == pytest.approx(
        {"prior": 2 / total, "effect:chip:x": 0.5 / total, "effect:chip:y": 1.0 / total}
    )
