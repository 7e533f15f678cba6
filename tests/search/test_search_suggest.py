"""search.suggest: lessons turned into configurations of a space, then search; hand-made
lessons and spaces (synthetic), checked against what the module promises."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from tunemem.search.suggest import (
    HintedLesson,
    Observation,
    Suggestion,
    SuggestState,
    config_key,
    project,
    suggest,
)

SPACE = {"bx": (16, 32, 64, 128), "ty": (1, 2, 4), "shmem": (0, 1)}


def exemplar(lesson_id: str, config: dict, score: float = 1.0, **kw) -> HintedLesson:
    return HintedLesson(lesson_id, {"config": config}, score=score, **kw)


def state(lessons=(), observations=(), stage="draft", valid=None) -> SuggestState:
    return SuggestState(
        space=SPACE,
        stage=stage,
        lessons=tuple(lessons),
        observations=tuple(observations),
        valid=valid,
    )


def test_exemplars_come_first_in_rank_order_then_search():
    lessons = [
        exemplar("a", {"bx": 64, "ty": 2, "shmem": 1}),
        exemplar("b", {"bx": 128, "ty": 4, "shmem": 0}),
    ]
    out = suggest(state(lessons), k=4, seed=0)
    assert [s.config for s in out[:2]] == [
        {"bx": 64, "ty": 2, "shmem": 1},
        {"bx": 128, "ty": 4, "shmem": 0},
    ]
    assert [(s.source, s.used) for s in out[:2]] == [("exemplar", ("a",)), ("exemplar", ("b",))]
    assert [s.source for s in out[2:]] == ["search", "search"]


def test_draft_prefers_same_backend_exemplars_and_snaps_foreign_values():
    lessons = [
        exemplar("far", {"bx": 100, "ty": 4}, transferred=True),
        exemplar("near", {"bx": 32, "ty": 1, "shmem": 0}),
    ]
    out = suggest(state(lessons), k=2, seed=0)
    assert [s.used for s in out] == [("near",), ("far",)]
    # 100 snaps to 128, the missing shmem takes the first allowed value.
    assert out[1].config == {"bx": 128, "ty": 4, "shmem": 0}
    assert project({"other": 1}, SPACE, None) is None


def test_refine_skips_below_average_lessons_and_applies_preferences_to_the_best():
    best = Observation({"bx": 64, "ty": 2, "shmem": 0}, True, 1.0)
    lessons = [
        exemplar("weak", {"bx": 16, "ty": 1, "shmem": 0}, score=-0.5),
        HintedLesson("pref", {"param": "shmem", "value": 1}, score=0.8),
    ]
    out = suggest(state(lessons, [best], stage="refine"), k=3, seed=0)
    assert out[0] == Suggestion(
        {"bx": 64, "ty": 2, "shmem": 1}, ("pref",), "preference", "prefer:pref", "shmem=1"
    )
    assert {"bx": 16, "ty": 1, "shmem": 0} not in [s.config for s in out]
    # Local moves change one parameter of the best.
    for s in out[1:]:
        assert s.source == "search"
        assert sum(s.config[n] != best.config[n] for n in SPACE) == 1


def test_failure_hints_exclude_matching_configurations():
    avoid = HintedLesson("fail", {"avoid": {"shmem": 1}, "failure_rate": 0.9})
    out = suggest(state([avoid]), k=12, seed=3)
    assert len(out) == 12 and all(s.config["shmem"] == 0 for s in out)
    # Only excluded ones left: they come last, rather than nothing.
    more = suggest(state([avoid]), k=24, seed=3)
    assert len(more) == 24 and all(s.config["shmem"] == 1 for s in more[12:])


class FixedModel:
    """A stand-in model: fixed configurations, and whether it leads."""

    def __init__(self, leading: bool) -> None:
        self.leading = leading

    def __call__(self, current: SuggestState, n: int) -> list[Suggestion]:
        return [
            Suggestion({"bx": 64, "ty": 2, "shmem": 1}, (), "model", "model", "repeat"),
            Suggestion({"bx": 16, "ty": 4, "shmem": 1}, (), "model", "model", "", {"ms": 0.9}),
            Suggestion({"bx": 16, "ty": 4, "shmem": 0}, (), "model", "model", ""),
        ][: n + 1]

    def leads(self, current: SuggestState, memory: Suggestion | None) -> bool:
        return self.leading


def test_the_model_seam_comes_after_the_memory_and_before_the_search():
    out = suggest(state([exemplar("a", {"bx": 64, "ty": 2, "shmem": 1})]), 3, 0, FixedModel(False))
    assert [s.source for s in out] == ["exemplar", "model", "model"]
    assert out[1].prediction == {"ms": 0.9}  # the repeat of the exemplar was dropped


def test_a_leading_model_goes_before_the_memory():
    lessons = [exemplar("a", {"bx": 32, "ty": 1, "shmem": 0})]
    out = suggest(state(lessons), 4, 0, FixedModel(True))
    assert [s.source for s in out] == ["model", "model", "model", "exemplar"]


def test_a_valid_list_restricts_every_source_and_the_space_can_run_out():
    valid = [k for k in itertools.product(*SPACE.values()) if k[0] * k[1] <= 64]
    lessons = [exemplar("out", {"bx": 128, "ty": 4, "shmem": 1})]
    out = suggest(state(lessons, valid=valid), k=100, seed=1)
    assert sorted(config_key(SPACE, s.config) for s in out) == sorted(valid)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    n_observed=st.integers(0, 10),
    k=st.integers(1, 30),
    seed=st.integers(0, 10**6),
    data=st.data(),
)
def test_suggestions_are_fresh_distinct_and_in_the_space(sizes, n_observed, k, seed, data):
    space = {f"p{i}": tuple(range(0, 10 * n, 10)) for i, n in enumerate(sizes)}
    every = list(itertools.product(*space.values()))
    valid = data.draw(st.none() | st.lists(st.sampled_from(every), unique=True))
    observed = data.draw(st.lists(st.sampled_from(every), max_size=n_observed, unique=True))
    lessons = [
        HintedLesson(
            f"l{i}", {"config": dict(zip(space, data.draw(st.sampled_from(every)), strict=True))}
        )
        for i in range(data.draw(st.integers(0, 4)))
    ]
    observations = [
        Observation(
            dict(zip(space, key, strict=True)), bool(i % 3), float(i + 1) if i % 3 else None
        )
        for i, key in enumerate(observed)
    ]
    current = SuggestState(space, "draft", tuple(lessons), tuple(observations), valid=valid)
    out = suggest(current, k, seed)
    keys = [config_key(space, s.config) for s in out]
    allowed = set(valid) if valid is not None else set(every)
    assert len(set(keys)) == len(keys)
    assert set(keys) <= allowed - set(observed)
    assert len(out) == min(k, len(allowed - set(observed)))


def test_the_services_search_moves_two_parameters_within_a_valid_list():
    # Only "diagonal" configurations are valid (bx and ty grow together): no single-parameter
    # move from the best is valid, a two-parameter one is.
    from tunemem.search.steps import wide_search_step

    valid = [(16, 1, 0), (32, 2, 0), (64, 4, 0), (16, 1, 1), (32, 2, 1), (64, 4, 1)]
    best = Observation({"bx": 32, "ty": 2, "shmem": 0}, True, 1.0)
    current = state(observations=[best], stage="refine", valid=valid)
    out = suggest(current, k=2, seed=0, search=wide_search_step)
    assert [s.config for s in out][0] == {"bx": 32, "ty": 2, "shmem": 1}  # one parameter first
    assert sum(out[1].config[n] != best.config[n] for n in SPACE) == 2


def test_the_services_search_explores_once_the_best_has_stalled():
    from tunemem.search.steps import STALL, wide_search_step

    valid = list(itertools.product(*SPACE.values()))
    best = Observation({"bx": 16, "ty": 1, "shmem": 0}, True, 1.0)
    worse = [
        Observation(dict(zip(SPACE, key, strict=True)), True, 5.0) for key in valid[1 : STALL + 2]
    ]
    current = state(observations=[best, *worse], stage="refine", valid=valid)
    out = suggest(current, k=10, seed=4, search=wide_search_step)
    origins = {s.origin for s in out}
    assert "explore" in origins and "local" in origins
