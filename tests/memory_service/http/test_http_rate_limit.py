"""The per-key write quota (issue 11): lesson adds, outcome reports and run uploads past the
quota get 429 with Retry-After and change nothing; other keys and reads are not affected."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlmodel import Session

from tunemem.memory_service.core.access.keys import create_key
from tunemem.memory_service.core.access.quota import SharedWriteQuota
from tunemem.memory_service.http.app import create_app


def lesson(text: str) -> dict:
    return {"lessons": [{"kind": "insight", "text": text, "applicability": {"op": "softmax"}}]}


def test_writes_past_the_quota_are_429_with_retry_after(make_service):
    service = make_service(write_rate_per_minute=3)
    with Session(service.engine) as session:
        runaway = {"Authorization": f"Bearer {create_key(session, 'agent', 'lab')[1]}"}
        calm = {"Authorization": f"Bearer {create_key(session, 'agent', 'lab')[1]}"}
    with TestClient(create_app(service)) as client:
        for i in range(3):
            response = client.post("/v1/lessons", json=lesson(f"lesson {i}"), headers=runaway)
            assert response.status_code == 201
        before = service.counts()
        refused = client.post("/v1/lessons", json=lesson("one too many"), headers=runaway)
        assert refused.status_code == 429
        assert (
            refused.json()["code"] == "rate_limited" and "3 per minute" in refused.json()["message"]
        )
        assert int(refused.headers["retry-after"]) >= 1
        report = {"retrieval_id": "x", "outcome": {"compiled": True, "correct": True}}
        assert client.post("/v1/outcomes", json=report, headers=runaway).status_code == 429
        assert service.counts() == before
        ask = {"query": "lesson", "stage": "draft"}
        assert client.post("/v1/retrieve", json=ask, headers=runaway).status_code == 200
        assert client.post("/v1/lessons", json=lesson("calm"), headers=calm).status_code == 201
        spec = client.get("/openapi.json").json()
        assert "429" in spec["paths"]["/v1/outcomes"]["post"]["responses"]


def test_keyless_local_use_is_not_limited(make_service):
    service = make_service(write_rate_per_minute=1)
    with TestClient(create_app(service)) as client:
        for i in range(3):
            assert client.post("/v1/lessons", json=lesson(f"local {i}")).status_code == 201


def test_quota_refills_at_its_rate(service):
    now = [0.0]
    quota = SharedWriteQuota(service.engine, 60, clock=lambda: now[0])
    assert all(quota.take("k") == 0.0 for _ in range(60))
    wait = quota.take("k")
    assert 0.9 < wait <= 1.0
    now[0] += 1.0
    assert quota.take("k") == 0.0 and quota.take("k") > 0
    assert quota.take("other") == 0.0
