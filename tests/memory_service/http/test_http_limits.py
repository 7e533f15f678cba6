"""Plausible but hostile input gets a 4xx with a JSON code and changes nothing (issue 11,
points 2, 8, 13 and 14), through HTTP as a client would send it."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from tunemem.memory_service.core.schemas.lessons import LessonFilter
from tunemem.memory_service.http.app import create_app

GOOD = {"kind": "insight", "text": "Use 4 warps for short rows", "applicability": {"op": "softmax"}}


def nested(depth: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"x": value}
    return value


def snapshot(service):
    counts = service.counts()
    counts.pop("retrievals")
    return (
        counts,
        service.value_table(),
        service.list_lessons(LessonFilter(status="all")).model_dump(),
    )


@pytest.fixture
def retrieval_id(client) -> str:
    client.post("/v1/lessons", json={"lessons": [GOOD]})
    body = {"query": "softmax", "stage": "refine", "context": {"chip": "a100"}}
    return client.post("/v1/retrieve", json=body).json()["retrieval_id"]


def raw(body: str) -> dict:
    return {"content": body.encode(), "headers": {"content-type": "application/json"}}


CASES = [
    # point 2: free JSON bounded in depth and size at the door
    ("deep hint", "POST", "/v1/lessons", {"json": {"lessons": [GOOD | {"hint": nested(260)}]}}),
    (
        "deep signature",
        "POST",
        "/v1/lessons",
        {"json": {"lessons": [GOOD | {"applicability": {"signature": nested(40)}}]}},
    ),
    (
        "deep provenance",
        "POST",
        "/v1/lessons",
        {"json": {"lessons": [GOOD | {"provenance": nested(40)}]}},
    ),
    (
        "huge hint",
        "POST",
        "/v1/lessons",
        {"json": {"lessons": [GOOD | {"hint": {"blob": "x" * 70_000}}]}},
    ),
    (
        "deep task signature",
        "POST",
        "/v1/retrieve",
        {"json": {"stage": "draft", "task": {"signature": nested(40)}}},
    ),
    # point 14: NaN and Infinity are not JSON numbers here; bools are not numbers
    (
        "hint with Infinity",
        "POST",
        "/v1/lessons",
        raw('{"lessons": [{"kind": "insight", "text": "t", "hint": {"x": Infinity}}]}'),
    ),
    (
        "kappa Infinity",
        "POST",
        "/v1/retrieve",
        raw('{"stage": "draft", "options": {"kappa": Infinity}}'),
    ),
    ("kappa NaN", "POST", "/v1/retrieve", raw('{"stage": "draft", "options": {"kappa": NaN}}')),
    (
        "kappa false",
        "POST",
        "/v1/retrieve",
        {"json": {"stage": "draft", "options": {"kappa": False}}},
    ),
    (
        "huge exploration",
        "POST",
        "/v1/retrieve",
        {"json": {"stage": "draft", "options": {"exploration_c": 1e308}}},
    ),
    # point 8: a backend that contradicts the chip, an unknown one
    (
        "backend contradicts chip",
        "POST",
        "/v1/retrieve",
        {"json": {"stage": "draft", "context": {"chip": "A100", "backend": "hip"}}},
    ),
    ("offset past 64 bits", "GET", f"/v1/lessons?offset={2**70}", {}),
]


@pytest.mark.parametrize("name,method,path,kwargs", CASES, ids=[c[0] for c in CASES])
def test_hostile_input_is_a_4xx_and_changes_nothing(
    client, service, retrieval_id, name, method, path, kwargs
):
    before = snapshot(service)
    response = client.request(method, path, **kwargs)
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["code"] and body["message"]
    assert snapshot(service) == before


def test_depth_limit_is_named_and_what_is_accepted_reads_back(client):
    response = client.post("/v1/lessons", json={"lessons": [GOOD | {"hint": nested(260)}]})
    assert "16 levels" in response.json()["message"]
    deepest = GOOD | {
        "text": "deepest allowed hint",
        "hint": nested(15),
    }  # 15 objects and a leaf: 16 levels
    lesson_id = client.post("/v1/lessons", json={"lessons": [deepest]}).json()["ids"][0]
    assert client.get(f"/v1/lessons/{lesson_id}").status_code == 200
    assert client.get("/v1/lessons").status_code == 200
    found = client.post("/v1/retrieve", json={"query": "deepest allowed hint", "stage": "draft"})
    assert found.status_code == 200 and lesson_id in [x["id"] for x in found.json()["lessons"]]


def test_backend_spelling_is_normalised(client):
    for backend in ("CUDA", "", " cuda "):
        body = {"stage": "draft", "context": {"chip": "a100", "backend": backend}}
        response = client.post("/v1/retrieve", json=body)
        assert response.status_code == 200, (backend, response.text)
    conflict = {"stage": "draft", "context": {"chip": "A100", "backend": "hip"}}
    assert client.post("/v1/retrieve", json=conflict).json()["code"] == "context_conflict"


def test_empty_idempotency_key_is_refused_every_time(client, service, retrieval_id):
    report = {"retrieval_id": retrieval_id, "outcome": {"compiled": True, "correct": True}}
    before = service.counts()["outcomes"]
    for _ in range(2):
        response = client.post("/v1/outcomes", json=report, headers={"Idempotency-Key": ""})
        assert response.status_code == 422 and response.json()["code"] == "invalid_request"
    assert service.counts()["outcomes"] == before
    assert client.post("/v1/outcomes", json=report).status_code == 200
    with pytest.raises(Exception, match="must not be empty"):
        from tunemem.memory_service.core.schemas.outcomes import ReportRequest

        service.report(ReportRequest.model_validate(report), idempotency_key=" ")


@pytest.mark.parametrize(
    "outcome",
    [
        {"compiled": True, "correct": True, "latency_ms": 1e308, "best_before_ms": 1e-300},
        {"compiled": True, "correct": True, "latency_ms": 1.0, "best_before_ms": 1e-300},
        {"compiled": True, "correct": True, "latency_ms": 0.0, "best_before_ms": 1.0},
    ],
)
def test_refine_latencies_outside_any_measurement_are_422(client, service, retrieval_id, outcome):
    before = snapshot(service)
    response = client.post("/v1/outcomes", json={"retrieval_id": retrieval_id, "outcome": outcome})
    assert response.status_code == 422 and response.json()["code"] == "invalid_request"
    infinite = (
        '{"retrieval_id": "%s", "outcome": '
        '{"compiled": true, "correct": true, "latency_ms": Infinity}}'
    )
    response = client.post("/v1/outcomes", **raw(infinite % retrieval_id))
    assert response.status_code == 422
    assert snapshot(service) == before


@pytest.mark.parametrize("patch", [{"kind": None}, {"text": None}, {"applicability": None}])
def test_patch_with_null_for_a_required_field_is_422(client, service, patch):
    lesson_id = client.post("/v1/lessons", json={"lessons": [GOOD]}).json()["ids"][0]
    before = snapshot(service)
    response = client.patch(f"/v1/lessons/{lesson_id}", json=patch)
    assert response.status_code == 422, response.text
    assert "not null" in response.json()["message"]
    assert snapshot(service) == before
    assert client.patch(f"/v1/lessons/{lesson_id}", json={"hint": None}).status_code == 200


def test_like_wildcards_are_literal_in_text_filters(client):
    client.post(
        "/v1/lessons", json={"lessons": [GOOD, GOOD | {"text": "Occupancy of 50% is enough"}]}
    )
    assert client.get("/v1/lessons", params={"q": "%"}).json()["count"] == 1
    assert client.get("/v1/lessons", params={"q": "_"}).json()["count"] == 0
    assert client.get("/v1/lessons", params={"q": "50%"}).json()["count"] == 1
    assert client.get("/v1/lessons", params={"q": "warps"}).json()["count"] == 1


def test_chunked_body_over_the_limit_is_413(make_service):
    service = make_service(max_body_bytes=2048)
    with TestClient(create_app(service)) as client:
        body = json.dumps({"lessons": [GOOD | {"text": "x" * 5000}]}).encode()

        def chunks():
            for start in range(0, len(body), 512):
                yield body[start : start + 512]

        response = client.post(
            "/v1/lessons", content=chunks(), headers={"content-type": "application/json"}
        )
        assert response.status_code == 413, response.text
        assert response.json()["code"] == "payload_too_large"
        assert service.counts()["lessons"] == 0


def test_openapi_lists_error_responses_and_405_says_allow(client):
    spec = client.get("/openapi.json").json()
    responses = spec["paths"]["/v1/lessons"]["post"]["responses"]
    for status in ("400", "401", "403", "404", "413", "422", "429"):
        assert status in responses, status
    error_schema = responses["422"]["content"]["application/json"]["schema"]["$ref"]
    assert error_schema.endswith("/ErrorBody")
    response = client.put("/v1/lessons")
    assert response.status_code == 405 and response.json()["code"] == "method_not_allowed"
    assert "POST" in response.headers["allow"]
