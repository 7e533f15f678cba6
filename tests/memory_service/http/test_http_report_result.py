"""An outcome that compiled must say whether it was correct (or how it failed): without it the
attempt would silently count as a failure, so it is refused and changes nothing."""

from __future__ import annotations

import pytest

LESSON = {
    "kind": "insight",
    "text": "keep the whole softmax row in one program",
    "applicability": {"op": "softmax"},
}


@pytest.fixture
def retrieval_id(client) -> str:
    client.post("/v1/lessons", json={"lessons": [LESSON]})
    body = {"query": "softmax", "stage": "draft", "task": {"op": "softmax"}}
    return client.post("/v1/retrieve", json=body).json()["retrieval_id"]


def test_a_compiled_outcome_without_a_result_is_refused(client, service, retrieval_id) -> None:
    response = client.post(
        "/v1/outcomes",
        json={"retrieval_id": retrieval_id, "outcome": {"compiled": True, "latency_ms": 1.0}},
    )
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "invalid_request" and "correct true or false" in body["message"]
    assert service.counts()["outcomes"] == 0


@pytest.mark.parametrize(
    ("outcome", "reward"),
    [
        ({"compiled": True, "correct": True}, 1.0),
        ({"compiled": True, "correct": False}, -1.0),
        ({"compiled": False}, -1.0),
        ({"compiled": True, "error": "illegal memory access"}, -1.0),
    ],
)
def test_an_outcome_with_its_result_is_recorded(client, retrieval_id, outcome, reward) -> None:
    response = client.post("/v1/outcomes", json={"retrieval_id": retrieval_id, "outcome": outcome})
    assert response.status_code == 200 and response.json()["reward"] == reward
