"""The performance model and its search, on small labelled-synthetic spaces with known optima.

Every latency here is SYNTHETIC: a smooth function of the parameters per chip, each chip with
its own optimum, so the right answer is known exactly.
"""

from __future__ import annotations

import itertools
import math

import pytest

from tunemem.search.model.family import ChipSpace, ParamEncoding, build_family_model
from tunemem.search.model_search import fit_posterior

PARAMS = ("block", "tile", "unroll", "vector")
VALUES = {
    "block": [1, 2, 4, 8, 16, 32],
    "tile": [1, 2, 4, 8, 16],
    "unroll": [0, 1],
    "vector": ["none", "x2", "x4"],
}
# Per chip: where block and tile are best (log2), how much unrolling helps, its speed.
CHIPS = {
    "chip-a": (1.0, 0.0, 0.10, 1.0),
    "chip-b": (2.0, 1.0, 0.20, 0.5),
    "chip-t": (4.0, 3.0, 0.30, 2.0),  # the target: its optimum is no source's best
}


def synthetic_latency(chip: str, key: tuple[object, ...]) -> float | None:
    """SYNTHETIC latency in ms; None for a combination the kernel rejects (block*tile > 256)."""
    block, tile, unroll, vector = key
    assert isinstance(block, int) and isinstance(tile, int) and isinstance(unroll, int)
    if block * tile > 256:
        return None
    b0, t0, gain, speed = CHIPS[chip]
    shape = 1.0 + 0.4 * (math.log2(block) - b0) ** 2 + 0.3 * (math.log2(tile) - t0) ** 2
    return speed * shape * (1.0 - gain * unroll) * (1.0 + 0.05 * ["none", "x2", "x4"].index(vector))


def space_of(chip: str) -> ChipSpace:
    keys = itertools.product(*(VALUES[p] for p in PARAMS))
    measured = {key: synthetic_latency(chip, key) for key in keys}
    return ChipSpace(chip, {k: v for k, v in measured.items() if v is not None})


def valid_keys() -> list[tuple[object, ...]]:
    return [k for k in itertools.product(*(VALUES[p] for p in PARAMS)) if k[0] * k[1] <= 256]


def optimum(chip: str) -> tuple[object, ...]:
    return min(valid_keys(), key=lambda k: synthetic_latency(chip, k) or math.inf)


def top_configs(chip: str, n: int) -> list[tuple[object, ...]]:
    return sorted(valid_keys(), key=lambda k: synthetic_latency(chip, k) or math.inf)[:n]


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    built = build_family_model(PARAMS, [space_of("chip-a"), space_of("chip-b")], seed=0)
    assert built is not None
    return built


def run(model, budget: int, seed: int = 0):  # type: ignore[no-untyped-def]
    observations: list[tuple[tuple[object, ...], float | None]] = []
    for _ in range(budget):
        posterior = fit_posterior(
            model, observations, {"chip-a": 0.5, "chip-b": 0.5}, allowed=VALUES, seed=seed
        )
        (suggestion,) = posterior.suggest(1)
        observations.append((suggestion.key, synthetic_latency("chip-t", suggestion.key)))
    return observations


def test_finds_an_optimum_no_remembered_configuration_holds(model) -> None:  # type: ignore[no-untyped-def]
    target = optimum("chip-t")
    remembered = set(top_configs("chip-a", 10) + top_configs("chip-b", 10))
    assert target not in remembered
    observations = run(model, 25)
    assert target in [key for key, _ in observations]


def test_finds_the_optimum_of_a_chip_unlike_every_stored_one(model) -> None:  # type: ignore[no-untyped-def]
    # SYNTHETIC chip-u: fastest at the largest block and the smallest tile, where both stored
    # chips are slow, and unrolling hurts it where it helps them.
    CHIPS["chip-u"] = (5.0, 0.0, -0.2, 1.0)
    try:
        target = optimum("chip-u")
        assert target not in set(top_configs("chip-a", 20) + top_configs("chip-b", 20))
        observations: list[tuple[tuple[object, ...], float | None]] = []
        for _ in range(25):  # random search needs about 87 of the 174 valid ones on average
            posterior = fit_posterior(
                model, observations, {"chip-a": 0.5, "chip-b": 0.5}, allowed=VALUES
            )
            (suggestion,) = posterior.suggest(1)
            observations.append((suggestion.key, synthetic_latency("chip-u", suggestion.key)))
        assert target in [key for key, _ in observations]
    finally:
        del CHIPS["chip-u"]


def test_search_never_repeats_and_stays_valid(model) -> None:  # type: ignore[no-untyped-def]
    observations = run(model, 40)
    keys = [key for key, _ in observations]
    assert len(set(keys)) == len(keys)
    assert all(k in set(valid_keys()) for k in keys)


def test_two_builds_give_the_same_suggestions_for_a_seed() -> None:
    spaces = [space_of("chip-a"), space_of("chip-b")]
    first = build_family_model(PARAMS, spaces, seed=0)
    second = build_family_model(PARAMS, list(reversed(spaces)), seed=0)
    assert first is not None and second is not None
    observations = [(k, synthetic_latency("chip-t", k)) for k in valid_keys()[:7:2]]
    a = fit_posterior(first, observations, {"chip-a": 1.0}, seed=3).suggest(5)
    b = fit_posterior(second, observations, {"chip-a": 1.0}, seed=3).suggest(5)
    assert [s.key for s in a] == [s.key for s in b]
    assert [s.fraction for s in a] == [s.fraction for s in b]


def test_the_runs_observations_decide_the_chip_weights(model) -> None:  # type: ignore[no-untyped-def]
    # The target agrees with chip-b's ordering; the prior favours chip-a 9 to 1.
    agreeing = {"chip-a": 0.9, "chip-b": 0.1}
    keys = valid_keys()[::7]
    observations = [(k, synthetic_latency("chip-b", k)) for k in keys]
    posterior = fit_posterior(model, observations, agreeing, seed=0)
    (suggestion,) = posterior.suggest(1)
    assert suggestion.chips["chip-b"] > 0.7
    assert suggestion.n_observations == len(keys)
    # Before any observation the prior rules.
    (first,) = fit_posterior(model, [], agreeing, seed=0).suggest(1)
    assert first.chips["chip-a"] == pytest.approx(0.9)
    assert first.predicted_ms is None


def test_a_suggestion_says_what_it_rests_on(model) -> None:  # type: ignore[no-untyped-def]
    observations = [(k, synthetic_latency("chip-t", k)) for k in valid_keys()[::11]]
    suggestions = fit_posterior(model, observations, {}, seed=0).suggest(3)
    assert len(suggestions) == 3
    for s in suggestions:
        low, high = s.interval
        assert 0.0 < low <= s.fraction <= high <= 1.0
        assert s.predicted_ms is not None and s.predicted_ms > 0
        assert s.expected_improvement >= 0.0
        assert s.drivers and all(name in PARAMS for name, _, _ in s.drivers)
        assert sum(s.chips.values()) == pytest.approx(1.0, abs=0.02)
    # Unrolling helps on every chip: the model says so through the importance of its splits.
    assert model.importance["vector"] < max(model.importance.values())


def test_suggestions_keep_to_the_callers_space_and_valid_list(model) -> None:  # type: ignore[no-untyped-def]
    allowed = {**VALUES, "unroll": [0]}
    suggestions = fit_posterior(model, [], {}, allowed=allowed, seed=0).suggest(20)
    assert suggestions and all(s.key[2] == 0 for s in suggestions)
    # A valid list wins over the stored candidates, including configurations never measured.
    unseen = (64, 1, 1, "none")
    valid = [unseen, (1, 1, 0, "none"), (2, 2, 1, "x2")]
    chosen = fit_posterior(model, [((1, 1, 0, "none"), 3.0)], {}, valid=valid, seed=0)
    keys = [s.key for s in chosen.suggest(5)]
    assert sorted(keys, key=repr) == sorted([unseen, (2, 2, 1, "x2")], key=repr)


def test_closed_candidates_are_left_out_and_the_batch_is_filled_without_them(model) -> None:  # type: ignore[no-untyped-def]
    posterior = fit_posterior(model, [], {}, allowed=VALUES, seed=0)
    first = [s.key for s in posterior.suggest(3)]
    positions = [posterior.keys.locate(key) for key in first]
    posterior.close(i for i in positions if i is not None)
    after = [s.key for s in posterior.suggest(3)]
    assert len(after) == 3 and not set(after) & set(first)


def test_no_feasible_measurement_means_no_model() -> None:
    assert build_family_model(PARAMS, [ChipSpace("chip-a", {(1, 1, 0, "none"): None})]) is None


def test_encoding_maps_values_into_the_unit_interval() -> None:
    numbers = ParamEncoding.of("block", [1, 4, 16])
    assert [numbers.encode(v) for v in (1, 4, 16)] == [0.0, 0.5, 1.0]
    words = ParamEncoding.of("vector", ["x4", "none", "x2"])
    assert [words.encode(v) for v in ("none", "x2", "x4")] == [0.0, 0.5, 1.0]
    assert words.encode("unknown") == 0.0


def test_a_long_run_is_fitted_on_a_bounded_subsample(model) -> None:  # type: ignore[no-untyped-def]
    """3,000 observations (a suggest accepts 10,000) cost what FIT_OBSERVATIONS do: chips x n x
    n rank matrices and n x n GP matrices would take hundreds of MB here (issue 30, case 2)."""
    import random
    import tracemalloc

    from tunemem.search.model_search import FIT_OBSERVATIONS

    rng = random.Random(0)
    wide = {"block": [2**i for i in range(7)], "tile": list(range(1, 129)), "unroll": [0, 1]}
    wide["vector"] = VALUES["vector"]
    keys = list(itertools.product(*(wide[p] for p in PARAMS)))
    observed = rng.sample(keys, 3000)
    observations = [
        (key, 1.0 + 0.4 * (math.log2(key[0]) - 4) ** 2 + 0.01 * key[1]) for key in observed
    ]
    tracemalloc.start()
    try:
        posterior = fit_posterior(model, observations, {"chip-a": 0.5, "chip-b": 0.5}, seed=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, f"peak {peak / 2**20:.0f} MB"
    assert posterior.n_observations == 3000 and posterior.n_fit == FIT_OBSERVATIONS
    # The fastest observation is in the fit, and nothing observed is suggested again.
    assert posterior.best == pytest.approx(math.log(min(ms for _, ms in observations)))
    tried = set(observed)
    assert all(s.key not in tried for s in posterior.suggest(10))
