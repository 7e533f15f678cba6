"""Bad input gets a 4xx with a JSON code and message, and leaves the store unchanged."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tunemem.memory_service.core.schemas.lessons import LessonFilter
from tunemem.memory_service.http.app import create_app

GOOD = {"kind": "insight", "text": "Use 4 warps for short rows", "applicability": {"op": "softmax"}}


@pytest.fixture
def seeded(client):
    lesson_id = client.post("/v1/lessons", json={"lessons": [GOOD]}).json()["ids"][0]
    retrieval = client.post(
        "/v1/retrieve", json={"query": "softmax", "stage": "draft", "context": {"chip": "a100"}}
    ).json()
    client.post(
        "/v1/outcomes",
        json={
            "retrieval_id": retrieval["retrieval_id"],
            "outcome": {"compiled": True, "correct": True},
        },
    )
    return lesson_id, retrieval["retrieval_id"]


def snapshot(service):
    counts = service.counts()
    counts.pop("retrievals")  # a successful retrieve is logged; none of the bad calls below is
    return (
        counts,
        service.value_table(),
        service.list_lessons(LessonFilter(status="all")).model_dump(),
    )


CASES = [
    (
        "malformed json",
        "POST",
        "/v1/lessons",
        {"content": b'{"lessons": [', "headers": {"content-type": "application/json"}},
        400,
        "malformed_json",
    ),
    ("body is a list", "POST", "/v1/retrieve", {"json": [1, 2]}, 422, "invalid_request"),
    (
        "wrong type",
        "POST",
        "/v1/lessons",
        {"json": {"lessons": [{**GOOD, "text": 42}]}},
        422,
        "invalid_request",
    ),
    (
        "one bad lesson in a batch",
        "POST",
        "/v1/lessons",
        {"json": {"lessons": [GOOD | {"text": "fresh"}, {**GOOD, "kind": "rumour"}]}},
        422,
        "invalid_request",
    ),
    (
        "unknown applicability key",
        "POST",
        "/v1/lessons",
        {"json": {"lessons": [{**GOOD, "applicability": {"opp": "x"}}]}},
        422,
        "invalid_request",
    ),
    (
        "unknown stage",
        "POST",
        "/v1/retrieve",
        {"json": {"query": "x", "stage": "polish"}},
        422,
        "invalid_request",
    ),
    (
        "unknown chip without backend",
        "POST",
        "/v1/retrieve",
        {"json": {"query": "x", "stage": "draft", "context": {"chip": "Quantum Frobnicator 9000"}}},
        422,
        "unknown_chip",
    ),
    (
        "unknown backend",
        "POST",
        "/v1/retrieve",
        {"json": {"query": "x", "stage": "draft", "context": {"backend": "opencl9"}}},
        422,
        "unknown_backend",
    ),
    (
        "k out of range",
        "POST",
        "/v1/retrieve",
        {"json": {"query": "x", "stage": "draft", "k": 0}},
        422,
        "invalid_request",
    ),
    (
        "unknown retrieval",
        "POST",
        "/v1/outcomes",
        {"json": {"retrieval_id": "nope", "outcome": {"compiled": True, "correct": True}}},
        404,
        "retrieval_not_found",
    ),
    (
        "negative latency",
        "POST",
        "/v1/outcomes",
        {
            "json": {
                "retrieval_id": "nope",
                "outcome": {"compiled": True, "correct": True, "latency_ms": -1},
            }
        },
        422,
        "invalid_request",
    ),
    ("unknown lesson", "GET", "/v1/lessons/not-a-lesson", {}, 404, "lesson_not_found"),
    (
        "patch unknown lesson",
        "PATCH",
        "/v1/lessons/not-a-lesson",
        {"json": {"text": "x"}},
        404,
        "lesson_not_found",
    ),
    ("archive unknown lesson", "DELETE", "/v1/lessons/not-a-lesson", {}, 404, "lesson_not_found"),
    (
        "history of unknown lesson",
        "GET",
        "/v1/lessons/not-a-lesson/history",
        {},
        404,
        "lesson_not_found",
    ),
    ("bad paging", "GET", "/v1/lessons?limit=0", {}, 422, "invalid_request"),
    ("unknown route", "GET", "/v1/nothing", {}, 404, "not_found"),
    (
        "bad trajectory",
        "POST",
        "/v1/trajectories",
        {"json": {"trajectories": [{"source": "x"}]}},
        422,
        "invalid_trajectory",
    ),
]


@pytest.mark.parametrize("name,method,path,kwargs,status,code", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_rejected_and_changes_nothing(
    client, service, seeded, name, method, path, kwargs, status, code
):
    before = snapshot(service)
    response = client.request(method, path, **kwargs)
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code and body["message"]
    assert snapshot(service) == before


def test_credit_to_a_lesson_not_returned_is_rejected(client, service, seeded):
    lesson_id, retrieval_id = seeded
    other = client.post(
        "/v1/lessons",
        json={
            "lessons": [
                {
                    **GOOD,
                    "text": "Something unrelated about GEMM tiles",
                    "applicability": {"op": "gemm"},
                }
            ]
        },
    ).json()["ids"][0]
    before = snapshot(service)
    response = client.post(
        "/v1/outcomes",
        json={
            "retrieval_id": retrieval_id,
            "used": [lesson_id, other],
            "outcome": {"compiled": True, "correct": True},
        },
    )
    assert response.status_code == 422 and response.json()["code"] == "lesson_not_in_retrieval"
    assert snapshot(service) == before


def test_oversize_payload_is_rejected(make_service):
    service = make_service(max_body_bytes=2048)
    with TestClient(create_app(service)) as c:
        before = snapshot(service)
        big = {"lessons": [{**GOOD, "text": "x" * 5000}]}
        response = c.post("/v1/lessons", json=big)
        assert response.status_code == 413 and response.json()["code"] == "payload_too_large"
        assert snapshot(service) == before
