"""Every ranking knob walked through all three doors of the table: set from the environment
(TUNEMEM_<NAME>), overridden per request (`options`, or the request's own `k`), and echoed in the
retrieve answer's `settings`; it also reaches each settings object it feeds."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tunemem.memory_service.core.embedding.factory import create_embedder
from tunemem.memory_service.core.schemas.learning import RetrieveRequest
from tunemem.memory_service.core.schemas.lessons import LessonCreate
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.service import MemoryService
from tunemem.retrieval.knobs import KNOBS, Knob


def _other(knob: Knob, step: int) -> object:
    """A valid value other than the default (a different one for step 1 and step 2): a step
    towards the upper bound, or towards the lower one for knobs that reach below zero (so the
    similarity floor still admits the lesson)."""
    if knob.choices:
        return [c for c in knob.choices if c != knob.default][0]
    if knob.kind is bool:
        return not knob.default
    assert knob.low is not None and knob.high is not None, "every numeric knob is bounded"
    end = knob.low if knob.low < 0 else knob.high
    value = float(knob.default) + (end - float(knob.default)) * step / 4
    return int(value) if knob.kind is int else round(value, 3)


def _env(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@pytest.fixture
def walked(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    for name, knob in KNOBS.items():
        monkeypatch.setenv(f"TUNEMEM_{name.upper()}", _env(_other(knob, 1)))
    settings = Settings(data_dir=tmp_path, index="memory", embedder="hashing")
    service = MemoryService(settings, embedder=create_embedder("hashing"))
    lesson = {"kind": "insight", "text": "softmax block size: use 4 warps for short rows"}
    service.add_lessons([LessonCreate.model_validate(lesson)])
    yield service
    service.close()


def _retrieve(service: MemoryService, **request: object) -> dict[str, object]:
    body = {"query": "softmax block size", "context": {"chip": "h100"}, "stage": "draft"}
    answer = service.retrieve(RetrieveRequest.model_validate({**body, **request}))
    assert answer.lessons, "the walk needs a ranking, not an empty pool"
    return answer.settings


def test_every_knob_from_the_environment_is_used_and_echoed(walked) -> None:  # type: ignore[no-untyped-def]
    ranking = walked.settings.ranking()
    echoed = _retrieve(walked, k=None)
    for name, knob in KNOBS.items():
        expected = _other(knob, 1)
        assert echoed[name] == expected, name
        if "ranking" in knob.feeds:
            assert getattr(ranking, name) == expected, name
        if "generalised" in knob.feeds:
            assert getattr(ranking.generalised, name) == expected, name


@pytest.mark.parametrize("name", list(KNOBS))
def test_every_knob_per_request_or_refused_there(walked, name: str) -> None:  # type: ignore[no-untyped-def]
    knob = KNOBS[name]
    value = _other(knob, 2) if knob.kind is not bool and not knob.choices else knob.default
    if name == "k":
        request: dict[str, object] = {"k": value}
    else:
        request = {"options": {name: value}}
    if not knob.per_request:
        with pytest.raises(ValidationError):
            RetrieveRequest.model_validate({"stage": "draft", **request})
        return
    echoed = _retrieve(walked, **request)
    assert echoed[name] == value, name
    for other, other_knob in KNOBS.items():
        if other != name:
            assert echoed[other] == _other(other_knob, 1), (name, other)


def test_a_per_request_value_out_of_bounds_is_refused() -> None:
    for name, knob in KNOBS.items():
        if not knob.per_request or knob.high is None or name == "k":
            continue
        with pytest.raises(ValidationError):
            RetrieveRequest.model_validate({"stage": "draft", "options": {name: knob.high + 1}})


def test_an_environment_value_out_of_bounds_stops_the_settings(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TUNEMEM_CLAIM_KAPPA", "0")
    with pytest.raises(ValidationError, match="claim_kappa"):
        Settings(data_dir=tmp_path)
