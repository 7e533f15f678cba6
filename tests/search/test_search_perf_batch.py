"""The composition of the model's batch (`search.model.batch`): the stall, the shares, and a
stalled run that searches its best configuration's neighbours where the stored spaces predict
slow ones.

Every latency here is SYNTHETIC, made by hand so that the answer is known.
"""

from __future__ import annotations

import itertools

import pytest

from tunemem.search import model_search as perf_search
from tunemem.search.model.batch import STALL_FULL, STALL_START, batch_counts, stall_level
from tunemem.search.model.family import ChipSpace, build_family_model
from tunemem.search.model_search import fit_posterior, stall_of

PARAMS = ("a", "b", "c")
VALUES = {"a": list(range(10)), "b": list(range(10)), "c": list(range(5))}
KEYS = list(itertools.product(*(VALUES[p] for p in PARAMS)))


def stored_latency(key: tuple[int, ...], speed: float) -> float:
    """SYNTHETIC: both stored chips are fast at small a and b, slow at large ones."""
    a, b, c = key
    return speed * (1.0 + 0.3 * a + 0.2 * b + 0.05 * abs(c - 1))


def target_latency(key: tuple[int, ...]) -> float:
    """SYNTHETIC target: like the stored chips, except one narrow basin at a = 7, c = 2 whose
    best is (7, 7, 2), where the stored chips are among their slowest."""
    a, b, c = key
    if a == 7 and c == 2:
        return 0.5 + 0.1 * abs(b - 7)
    return stored_latency(key, 1.0)


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    # What tuning runs leave: a fifth of the space measured on each stored chip.
    spaces = [
        ChipSpace(chip, {key: stored_latency(key, speed) for key in KEYS[::5]})
        for chip, speed in (("chip-a", 1.0), ("chip-b", 2.0))
    ]
    built = build_family_model(PARAMS, spaces, seed=0)
    assert built is not None
    return built


def test_the_stall_counts_the_outcomes_after_the_best() -> None:
    assert stall_of([]) == 0
    assert stall_of([((0, 0, 0), None), ((1, 0, 0), None)]) == 2
    assert stall_of([((0, 0, 0), 2.0), ((1, 0, 0), 1.0), ((2, 0, 0), 3.0), ((3, 0, 0), None)]) == 2
    # A tie with the best does not reset it: the best was reached first earlier.
    assert stall_of([((0, 0, 0), 1.0), ((1, 0, 0), 1.0)]) == 1


def test_the_stall_driven_shares_grow_from_none_to_full() -> None:
    assert stall_level(STALL_START - 1) == 0.0
    assert 0.0 < stall_level(STALL_START) < stall_level(STALL_FULL - 1) < 1.0
    assert stall_level(STALL_FULL) == stall_level(10 * STALL_FULL) == 1.0
    # A sure memory whose run still improves: every pick exploits, as before.
    assert batch_counts(5, 1.0, 0, 0.99) == (0, 0)
    # A full stall: local and exploring picks, one exploit kept.
    local, explore = batch_counts(5, 1.0, STALL_FULL, 0.5)
    assert local >= 1 and explore >= 1 and local + explore <= 4
    assert sum(batch_counts(2, 0.0, STALL_FULL, 0.9)) <= 1
    # A memory of whole recorded spaces keeps its ranking however long the stall.
    assert batch_counts(5, 1.0, 10 * STALL_FULL, 0.5, coverage=1.0) == (0, 0)
    # A batch of one takes each kind with the share's probability (the draw rounds).
    kinds = {batch_counts(1, 1.0, STALL_FULL, d / 10) for d in range(10)}
    assert (0, 0) in kinds and len(kinds) >= 2


def test_an_unsure_memory_searches_the_runs_best_neighbours_before_any_stall() -> None:
    # A memory unsure of its ranking here, holding little of the space: from the first batch,
    # as at a stall, some picks search the run's best neighbours, some explore, one exploits.
    for draw in (0.0, 0.5, 0.99):
        local, explore = batch_counts(5, 0.0, 0, draw, coverage=0.0)
        assert local >= 1 and explore >= 1 and local + explore <= 4
    # Less sure, fewer local picks; a memory sure of its ranking exploits while it improves,
    # and one of whole recorded spaces keeps its ranking, sure or not.
    assert batch_counts(5, 0.8, 0, 0.5, coverage=0.0)[0] < batch_counts(5, 0.0, 0, 0.5)[0]
    assert batch_counts(5, 1.0, 0, 0.5, coverage=0.0) == (0, 0)
    assert batch_counts(5, 0.0, 0, 0.5, coverage=1.0)[0] == 0


def test_a_run_whose_outcomes_contradict_the_memory_searches_its_best_neighbours_at_once(
    model,
) -> None:  # type: ignore[no-untyped-def]
    """Self-fed memories (a few partial runs) rank another chip's space poorly: the run's own
    best is searched around from the next batch, not only once it has stalled."""
    found = (7, 5, 2)  # in the target's basin, which the stored chips rank among the slowest
    remembered = sorted(KEYS, key=lambda k: stored_latency(k, 1.0))[:4]
    observations: list[tuple[tuple[int, ...], float | None]] = [
        (key, target_latency(key)) for key in remembered
    ]
    observations.append((found, target_latency(found)))  # the best, just found: no stall
    posterior = fit_posterior(model, observations, {"chip-a": 0.5, "chip-b": 0.5}, valid=KEYS)
    assert posterior.stall == 0 and posterior.confidence < 0.5
    batch = posterior.suggest(5)
    local = [s for s in batch if s.purpose == "local"]
    assert local, "no pick searches the run's best neighbourhood"
    assert all(sum(x != y for x, y in zip(s.key, found, strict=True)) <= 2 for s in local)


def test_a_stalled_run_searches_its_best_configurations_neighbours(model, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # A shortlist far smaller than the space, as on the recorded spaces (4,000 and more
    # candidates against a shortlist of 2,000): the ensemble alone would leave out the basin.
    monkeypatch.setattr(perf_search, "SHORTLIST", 40)
    monkeypatch.setattr(perf_search, "SHORTLIST_SAMPLE", 10)
    found = (7, 5, 2)  # in the basin, 0.7 ms: the run's best, found early
    assert target_latency(found) < min(target_latency(k) for k in KEYS if k[0] != 7 or k[2] != 2)
    remembered = sorted(KEYS, key=lambda k: stored_latency(k, 1.0))[:20]
    observations: list[tuple[tuple[int, ...], float | None]] = [(found, target_latency(found))]
    observations += [(key, target_latency(key)) for key in remembered]
    assert min(KEYS, key=target_latency) == (7, 7, 2)
    prior = {"chip-a": 0.5, "chip-b": 0.5}
    first = fit_posterior(model, observations, prior, valid=KEYS, seed=0).suggest(5)
    differ = [sum(x != y for x, y in zip(s.key, found, strict=True)) for s in first]
    assert 1 in differ, "no neighbour of the run's best in the batch"
    assert any(s.purpose == "local" and s.stall == 20 for s in first)


@pytest.mark.parametrize("observed", [[], [((20, 0, 0), None)]])
def test_a_space_that_matches_no_stored_value_leaves_the_model_with_nothing_to_offer(
    model, observed
) -> None:  # type: ignore[no-untyped-def]
    """Issue 39, case 1: `a` values the store never measured (and no feasible outcome of the
    run) leave no candidate; the model offers nothing instead of raising."""
    posterior = fit_posterior(model, observed, {}, allowed={"a": [20, 21], "b": [0, 1]})
    assert len(posterior.keys) == 0
    assert posterior.suggest(4) == []
