"""The drop-in's search in rounds (`triton.rounds.RoundSearch`) on SYNTHETIC landscapes.

Configurations are integers 0..n-1 with invented latencies; `ask` plays a memory that answers
from a fixed ranking and, once it has observations, with the untimed neighbours of the best so
far (as the service's search does), saying how confident its model is of the key. The tests
are about how the ceiling is spent.
"""

from __future__ import annotations

import math

import pytest

from tunemem.agent_client.tuners.triton.rounds import Pick, RoundPolicy, RoundSearch


def landscape(best: int, n: int = 40) -> dict[int, float]:
    """SYNTHETIC: latency grows with the distance from `best`."""
    return {c: 1.0 + 0.1 * abs(c - best) for c in range(n)}


class NeighbourMemory:
    """Answers the opening from `ranking`, later rounds with the best's untimed neighbours."""

    def __init__(self, ranking: list[int], confidence: float | None = None) -> None:
        self.ranking = ranking
        self.confidence = confidence  # what the model says of this key in later rounds
        self.questions: list[tuple[list[tuple[int, float]], int]] = []

    def __call__(self, observed: list[tuple[int, float]], k: int) -> list[Pick] | None:
        self.questions.append((list(observed), k))
        if not observed:
            return [Pick(c, "memory:exemplar", ("lesson-1",), "r1") for c in self.ranking[:k]]
        timed = {c for c, _ in observed}
        best = min(observed, key=lambda o: o[1])[0]
        out: list[Pick] = []
        for step in range(1, 40):
            for c in (best - step, best + step):
                if 0 <= c < 40 and c not in timed and len(out) < k:
                    out.append(Pick(c, "memory:model", (), "r2", self.confidence))
        return out


def bench_of(times: dict[int, float], log: list[list[int]]):
    def bench(configs: list[int]) -> dict[int, float]:
        log.append(list(configs))
        return {c: times[c] for c in configs}

    return bench


def test_a_far_key_spends_the_ceiling_walking_to_its_best():
    times = landscape(best=30)
    memory = NeighbourMemory(
        ranking=[22, 10, 5, 6], confidence=0.9
    )  # remembered from a key whose best was 10
    batches: list[list[int]] = []
    result = RoundSearch(range(40), 8, memory, bench_of(times, batches)).run()
    assert len(result.timings) == 8  # the whole ceiling, never more
    assert [len(b) for b in batches] == [4, 2, 2]  # opening half, then quarters
    assert result.best == 25  # walked from 22 towards 30 with each round
    assert result.stopped == "the ceiling is spent"
    # Every later question carries every timing of the key so far.
    assert [len(obs) for obs, _ in memory.questions] == [0, 4, 6]


def test_a_key_next_to_a_remembered_one_stops_early():
    times = landscape(best=10)
    # The memory's best is this key's best, and its model ranks the key's timings right.
    memory = NeighbourMemory(ranking=[10, 11, 9, 12], confidence=0.9)
    result = RoundSearch(range(40), 8, memory, bench_of(times, [])).run()
    assert result.best == 10
    assert len(result.timings) == 6  # opening and one round that found nothing faster
    assert result.stopped.startswith("the memory is sure of this key")
    assert result.rounds[1].gain == pytest.approx(0.0)
    assert result.rounds[1].confidence == 0.9


@pytest.mark.parametrize("confidence", [None, 0.3])
def test_a_stalled_key_the_memory_is_unsure_of_spends_the_ceiling(confidence):
    times = landscape(best=10)
    memory = NeighbourMemory(ranking=[10, 11, 9, 12], confidence=confidence)
    result = RoundSearch(range(40), 8, memory, bench_of(times, [])).run()
    assert len(result.timings) == 8
    assert result.stopped == "the ceiling is spent"


def test_min_gain_zero_always_spends_the_ceiling():
    times = landscape(best=10)
    memory = NeighbourMemory(ranking=[10, 11, 9, 12], confidence=0.9)
    result = RoundSearch(range(40), 8, memory, bench_of(times, []), RoundPolicy(min_gain=0)).run()
    assert len(result.timings) == 8


def test_a_memory_that_stops_answering_leaves_the_rest_to_chance():
    times = landscape(best=30)
    calls = []

    def ask(observed, k):
        calls.append(k)
        return [Pick(c, "memory:exemplar") for c in (1, 2, 3, 4)][:k] if not observed else None

    result = RoundSearch(range(40), 8, ask, bench_of(times, []), seed=3).run()
    assert len(result.timings) == 8
    assert [p.origin for p in result.picks.values()].count("explore") == 4
    assert len(set(result.timings)) == 8  # nothing timed twice


def test_suggestions_outside_the_given_list_or_timed_already_are_skipped():
    times = landscape(best=5, n=10)

    def ask(observed, k):
        return [Pick(99, "memory:exemplar"), Pick(5, "memory:exemplar"), Pick(5, "memory:model")]

    result = RoundSearch(range(10), 4, ask, bench_of(times, [])).run()
    assert list(result.timings) == [5]  # 99 is not given; 5 once; then nothing new
    assert result.stopped == "the memory had nothing new"


def test_a_failed_configuration_is_an_infeasible_observation():
    times = {**landscape(best=3, n=10), 3: math.inf}
    memory = NeighbourMemory(ranking=[3, 4])
    result = RoundSearch(range(10), 4, memory, bench_of(times, [])).run()
    assert result.best == 4 and math.isinf(result.timings[3])
    assert (3, math.inf) in memory.questions[1][0]


def test_exploration_share_of_later_rounds():
    times = landscape(best=10)
    memory = NeighbourMemory(ranking=[10, 11, 9, 12])
    policy = RoundPolicy(min_gain=0, explore=0.5)
    result = RoundSearch(range(40), 8, memory, bench_of(times, []), policy).run()
    origins = [p.origin for p in result.picks.values()]
    assert origins[:4] == ["memory:exemplar"] * 4
    assert origins[4:].count("explore") == 2  # one of each later round of two


def test_bad_policies_and_ceilings_are_refused():
    with pytest.raises(ValueError, match="opening"):
        RoundPolicy(opening=1.5)
    with pytest.raises(ValueError, match="min_gain"):
        RoundPolicy(min_gain=-0.1)
    with pytest.raises(ValueError, match="ceiling"):
        RoundSearch(range(3), 0, lambda o, k: [], lambda c: {})
