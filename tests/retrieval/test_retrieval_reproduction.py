"""Claims and reproductions: recorded spaces checked against re-measured outcomes, the trust
that follows, and the generalised value's discounted terms; hand-computed numbers."""

from __future__ import annotations

import pytest

from tunemem.retrieval.generalised import generalised_estimate
from tunemem.retrieval.generalised_settings import GeneralisedSettings
from tunemem.retrieval.generalised_terms import GeneralisedInputs
from tunemem.retrieval.recorded import ConfigLesson, RecordedSpace, lesson_space_reaches, per_chip
from tunemem.retrieval.reproduction import (
    ClaimCheck,
    Remeasurement,
    chip_trust,
    claim_checks,
    reproduction_ratio,
    space_trust,
)
from tunemem.retrieval.transfer import SearchSpace, config_key


def _space(tid: str, chip: str, times: dict[int, float | None], problem: str | None = None):
    latency = {config_key({"b": b}): t for b, t in times.items()}
    return RecordedSpace(tid, chip, "gemm", frozenset({"b"}), SearchSpace(latency), problem)


LESSONS = {
    "l16": ConfigLesson("l16", "x", "gemm", {"b": 16}),
    "l32": ConfigLesson("l32", "x", "gemm", {"b": 32}),
    "l64": ConfigLesson("l64", "x", "gemm", {"b": 64}),
}


def test_reproduction_ratio() -> None:
    assert reproduction_ratio(1.0, 0.8) == 1.0  # faster than claimed: reproduced
    assert reproduction_ratio(1.0, 1.0) == 1.0
    assert reproduction_ratio(1.0, 2.5) == pytest.approx(0.4)
    assert reproduction_ratio(1.0, None) == 0.0 and reproduction_ratio(1.0, 0.0) == 0.0


def test_claim_checks_pool_reproductions_per_space() -> None:
    honest = _space("honest", "a", {16: 2.0, 32: 1.0, 64: 4.0}, "[256]")
    wrong = _space("wrong", "a", {16: 1.0, 32: 0.5, 64: None}, "[256]")  # claims b=64 fails
    elsewhere = _space("other-chip", "c", {16: 1.0, 32: 1.0, 64: 1.0})
    other_size = _space("other-size", "a", {16: 1.0, 32: 1.0, 64: 1.0}, "[512]")
    measured = [
        Remeasurement("a", "l32", 1.0, "[256]"),  # honest: 1/1 -> 1; wrong: 0.5/1 -> 0.5
        Remeasurement("a", "l16", 4.0, "[256]"),  # honest: 2/4 -> 0.5; wrong: 1/4 -> 0.25
        Remeasurement("a", "l64", None, "[256]"),  # honest: 0 (infeasible); wrong: no claim
        Remeasurement("a", "unknown", 1.0, "[256]"),  # not a configuration lesson: ignored
    ]
    checks = claim_checks(measured, LESSONS, [honest, wrong, elsewhere, other_size])
    assert set(checks) == {"honest", "wrong"}
    assert checks["honest"].n == 3
    assert checks["honest"].ratio_sum == pytest.approx(1.0 + 0.5 + 0.0)
    # claimed reach: optimum 1.0 over 1.0, 2.0, 4.0; measured: over 1.0, 4.0, infeasible
    assert checks["honest"].claimed_reach_sum == pytest.approx(1.0 + 0.5 + 0.25)
    assert checks["honest"].measured_reach_sum == pytest.approx(1.0 + 0.25 + 0.0)
    assert checks["wrong"] == ClaimCheck(2, 0.75, 0.5 + 1.0, 0.5 + 0.125)
    assert checks["wrong"].mean_ratio == pytest.approx(0.375)
    # a report that names no problem size matches every space of the chip
    anywhere = claim_checks([Remeasurement("a", "l32", 1.0)], LESSONS, [honest, other_size])
    assert set(anywhere) == {"honest", "other-size"}


def test_space_trust_starts_at_one_and_falls_with_contradictions() -> None:
    assert space_trust(None, 2.0, 2.0) == 1.0
    assert space_trust(ClaimCheck(4, 4.0), 2.0, 2.0) == 1.0  # every claim held
    # (0.75 + 2) / (2 + 2) = 0.6875, squared
    assert space_trust(ClaimCheck(2, 0.75), 2.0, 2.0) == pytest.approx(0.6875**2)
    assert space_trust(ClaimCheck(2, 0.75), 2.0, 0.0) == 1.0  # power 0: never discounted
    assert space_trust(ClaimCheck(18, 0.0), 2.0, 1.0) == pytest.approx(0.1)


def test_trust_weighs_a_chips_spaces_and_its_recorded_term() -> None:
    honest = _space("honest", "a", {16: 2.0, 32: 1.0})
    wrong = _space("wrong", "a", {16: 1.0, 32: 4.0})
    rows = lesson_space_reaches([LESSONS["l16"]], [honest, wrong])["l16"]
    assert rows == {"a": {"honest": 0.5, "wrong": 1.0}}
    assert per_chip(rows) == {"a": pytest.approx(0.75)}
    # trust 1 and 0.25: (1 * 0.5 + 0.25 * 1.0) / 1.25
    trust = {"wrong": 0.25}
    assert per_chip(rows, trust) == {"a": pytest.approx(0.6)}
    assert chip_trust({"a": ["honest", "wrong"]}, trust) == {"a": pytest.approx(0.625)}
    settings = GeneralisedSettings(claim_power=2.0)
    reaches = {"l": {"a": {"sa": 0.75}, "b": {"sb": 0.5}}}
    affinity = {"a": 1.0, "b": 0.5}
    plain = generalised_estimate(
        "l", GeneralisedInputs(target="t", affinity=affinity, reaches=reaches), settings
    )
    # terms: prior 0 (w 2), recorded a 2*0.75-1 = 0.5 (w 1), recorded b 0.0 (w 0.5)
    assert plain.value == pytest.approx(0.5 / 3.5)
    assert plain.trust == {}
    held = generalised_estimate(
        "l",
        GeneralisedInputs(target="t", affinity=affinity, reaches=reaches, space_trust={"sa": 0.4}),
        settings,
    )
    # recorded a weighs 1 * 0.4: value 0.4 * 0.5 / (2 + 0.4 + 0.5)
    assert held.value == pytest.approx(0.2 / 2.9)
    assert held.weights["recorded:chip:a"] == pytest.approx(0.4 / 2.9)
    assert held.trust == {"recorded:chip:a": 0.4}


def test_a_log_read_in_parts_pools_exactly_as_read_whole() -> None:
    spaces = [_space("s", "a", {16: 0.3, 32: 0.7, 64: 1.1})]
    log = [Remeasurement("a", lid, t) for lid, t in [("l16", 0.9), ("l32", 0.71), ("l64", 1.3)]]
    whole = claim_checks(log, LESSONS, spaces)
    first = claim_checks(log[:1], LESSONS, spaces)
    assert claim_checks(log[1:], LESSONS, spaces, first) == whole
    assert whole["s"].n == 3
