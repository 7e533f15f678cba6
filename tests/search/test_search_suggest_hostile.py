"""The suggester against inputs a hostile client or a bad store hands it: spaces whose values
Python calls equal but the service does not (0 and false, 1 and true), hints whose parts are
not what a hint holds, and a search that must stop at its deadline.

Synthetic spaces and hints, written for these tests (issue 30, cases 1, 3 and 4).
"""

from __future__ import annotations

import random
import threading
import time

import pytest

from tunemem.search.steps import wide_search_step
from tunemem.search.suggest import (
    HintedLesson,
    Hints,
    Observation,
    SpaceExhausted,
    SuggestState,
    random_untried,
    snap,
    suggest,
)


def _answer(state: SuggestState, k: int, deadline_s: float | None = None, wait_s: float = 10.0):
    """suggest() in a thread, so that a search that never returns fails the test instead of
    hanging it."""
    result: list = []
    extra = {"deadline": time.monotonic() + deadline_s} if deadline_s is not None else {}
    thread = threading.Thread(
        target=lambda: result.append(suggest(state, k, 0, None, wide_search_step, **extra)),
        daemon=True,
    )
    thread.start()
    thread.join(wait_s)
    assert not thread.is_alive(), "suggest did not return"
    return result[0]


@pytest.mark.parametrize(
    "space",
    [
        {"a": (0, False), "b": (1, True)},
        {"a": (0, False, 1, True, 2)},
        {"flag": (True, 1), "x": (1.5, 2, False)},
        {f"p{i}": (0, False) for i in range(6)},  # the random draw used to spin for good here
    ],
)
def test_values_python_calls_equal_are_distinct_configurations(space):
    state = SuggestState(space=space, stage="draft", lessons=(), observations=())
    size = 1
    for values in space.values():
        size *= len(values)
    chosen = _answer(state, size + 3)
    keys = {tuple((type(v) is bool, v) for v in s.config.values()) for s in chosen}
    assert len(chosen) == size and len(keys) == size


def test_an_observed_false_does_not_hide_the_untried_zero():
    space = {"a": (0, False), "b": (1, 2)}
    observed = (Observation({"a": False, "b": 1}, True, 1.0),)
    state = SuggestState(space=space, stage="refine", lessons=(), observations=observed)
    configs = [s.config for s in _answer(state, 5)]
    assert len(configs) == 3
    assert {"a": 0, "b": 1} in configs
    assert not any(c["a"] is False and c["b"] == 1 for c in configs)


def test_the_search_stops_at_its_deadline_and_says_so():
    space = {f"p{i}": tuple(range(10)) for i in range(6)}
    state = SuggestState(space=space, stage="draft", lessons=(), observations=())
    chosen = _answer(state, 100, deadline_s=0.0)
    assert chosen == [] and state.timed_out


def test_a_random_draw_gives_up_instead_of_spinning():
    # A space listing one value twice (a Kernel Tuner space can) has fewer configurations than
    # its size says: the draw must end.
    space = {"a": (1, 1, 1, 1, 1, 1, 1, 1, 1, 1)}
    state = SuggestState(space=space, stage="draft", lessons=(), observations=())
    state.offered.add(((False, 1),))
    with pytest.raises(SpaceExhausted):
        random_untried(state, random.Random(0))


def test_a_boolean_hint_is_not_offered_for_an_integer_parameter():
    assert snap(True, (1, 2)) is None
    assert snap(1.0, (1, 2)) == 1 and snap(3, (True, False)) is None
    lesson = HintedLesson("L1", {"config": {"BLOCK": True}}, score=1.0)
    state = SuggestState(space={"BLOCK": (1, 2)}, stage="draft", lessons=(lesson,), observations=())
    for s in _answer(state, 2):
        assert type(s.config["BLOCK"]) is int
        assert s.source != "exemplar"


BAD_HINTS = [
    {"config": {"BLOCK": [64, 128]}},
    {"config": {"BLOCK": {"nested": 1}}},
    {"config": [1, 2]},
    {"param": "BLOCK", "value": 64, "median_speedup": "fast"},
    {"param": "BLOCK", "value": [64], "median_speedup": 2.0},
    {"avoid": {"BLOCK": 64}, "failure_rate": "often"},
    {"avoid": {"BLOCK": [64]}, "failure_rate": 0.9},
    {"param": ["BLOCK"], "value": 64},
]


@pytest.mark.parametrize("hint", BAD_HINTS)
def test_a_hint_part_that_cannot_be_used_is_skipped_and_reported(hint):
    good = HintedLesson("good", {"config": {"BLOCK": 128}}, score=1.0)
    bad = HintedLesson("bad", hint, score=2.0)
    state = SuggestState(
        space={"BLOCK": (64, 128, 256)}, stage="draft", lessons=(bad, good), observations=()
    )
    chosen = _answer(state, 3)
    assert chosen[0].config == {"BLOCK": 128} and chosen[0].used == ("good",)
    assert len(chosen) == 3
    assert [lesson_id for lesson_id, _ in Hints([bad, good]).skipped] == ["bad"]


def test_a_hint_that_is_not_an_object_is_ignored():
    lesson = HintedLesson("odd", ["not", "an", "object"])  # type: ignore[arg-type]
    assert Hints([lesson]).exemplars == []
