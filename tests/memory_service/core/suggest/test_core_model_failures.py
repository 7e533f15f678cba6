"""The performance model's batch and the memory's failures: a configuration a remembered
failure excludes is never one of the model's picks, and the model still fills its share of the
round. Latencies are SYNTHETIC (a bowl over BLOCK_M and BLOCK_N)."""

from __future__ import annotations

from tests.memory_service.core.suggest.synthetic_keys import PARAMS, sweep
from tunemem.search.suggest import HintedLesson, SuggestState


def model_search(service, m: int):  # type: ignore[no-untyped-def]
    """The service's model for key m (`ModelSearch`), built from the stored sweeps."""
    from tunemem.memory_service.core.schemas.learning import ContextIn, TaskIn
    from tunemem.memory_service.core.schemas.suggest import SpaceIn, SuggestRequest
    from tunemem.memory_service.core.suggest.model_suggester import ModelSuggester

    request = SuggestRequest(
        task=TaskIn(op="synthetic_gemm", signature={"M": m, "N": 4096, "dtype": "float16"}),
        context=ContextIn(chip="NVIDIA H200", backend="cuda"),
        space=SpaceIn(params=PARAMS),
        k=4,
        seed=0,
    )
    found = ModelSuggester(service._models, "default")(request, "h200", None)
    assert found is not None, "the model was never built"
    return found


def state_of(lessons: tuple[HintedLesson, ...] = ()) -> SuggestState:
    space = {name: tuple(values) for name, values in PARAMS.items()}
    return SuggestState(space=space, stage="draft", lessons=lessons, observations=())


def test_the_model_never_picks_what_a_failure_excludes_and_still_fills_its_share(
    make_service,
) -> None:  # type: ignore[no-untyped-def]
    """Failed before (seen): the model chose its batch among every candidate and the picks a
    remembered failure excluded were dropped afterwards, so the round got fewer of the model's
    configurations than it asked for (and the search filled in)."""
    service = make_service(model_wait_s=60.0)
    service.ingest([sweep(m) for m in (1, 2, 4, 8)])
    favourite = model_search(service, 8)(state_of(), 1)[0].config["BLOCK_M"]
    failure = HintedLesson(
        id="f1",
        hint={"avoid": {"BLOCK_M": favourite}, "failure_rate": 1.0},
        chips=("h200",),
        score=1.0,
        text=f"BLOCK_M {favourite} fails",
    )
    state = state_of((failure,))
    picks = model_search(service, 8)(state, 4)
    assert len(picks) == 4
    assert all(s.config["BLOCK_M"] != favourite and state.fresh(s.config) for s in picks)


def test_a_failure_that_fails_less_often_than_not_excludes_nothing(make_service) -> None:  # type: ignore[no-untyped-def]
    service = make_service(model_wait_s=60.0)
    service.ingest([sweep(m) for m in (1, 2, 4, 8)])
    plain = model_search(service, 8)(state_of(), 4)
    rare = HintedLesson(
        id="f2",
        hint={"avoid": {"BLOCK_M": plain[0].config["BLOCK_M"]}, "failure_rate": 0.2},
        chips=("h200",),
        score=1.0,
    )
    hinted = model_search(service, 8)(state_of((rare,)), 4)
    assert [s.config for s in hinted] == [s.config for s in plain]
