"""API keys: roles, tenants, hashing, and the keyless loopback-only default."""

from __future__ import annotations

import sqlite3

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from tunemem.memory_service.core.access.keys import create_key, revoke_key
from tunemem.memory_service.http.app import create_app

LESSON = {
    "kind": "insight",
    "text": "Use BLOCK_SIZE 1024 for rows of 1000 elements",
    "applicability": {"op": "softmax"},
}
ASK = {
    "query": "softmax block size",
    "task": {"op": "softmax"},
    "stage": "draft",
    "context": {"chip": "a100"},
}


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def keyed(service):
    secrets = {}
    with Session(service.engine) as session:
        for role in ("reader", "agent", "admin"):
            secrets[role] = create_key(session, role, "team-a", f"{role} of a")[1]
        secrets["other"] = create_key(session, "agent", "team-b", "agent of b")[1]
    with TestClient(create_app(service)) as client:
        yield client, secrets


def test_keyless_store_serves_only_loopback(service):
    with TestClient(create_app(service)) as local:
        assert local.post("/v1/lessons", json={"lessons": [LESSON]}).status_code == 201
    with TestClient(create_app(service), client=("10.1.2.3", 4000)) as remote:
        response = remote.get("/v1/lessons")
        assert response.status_code == 401 and response.json()["code"] == "unauthorized"


def test_once_keys_exist_every_request_needs_one(keyed):
    client, secrets = keyed
    assert client.get("/v1/lessons").json()["code"] == "unauthorized"
    assert client.get("/v1/lessons", headers=bearer("tm_nope_nope")).status_code == 401
    assert client.get("/v1/lessons", headers={"Authorization": "Basic abc"}).status_code == 401


def test_roles(keyed):
    client, secrets = keyed
    reader, agent, admin = (bearer(secrets[r]) for r in ("reader", "agent", "admin"))
    assert client.post("/v1/lessons", json={"lessons": [LESSON]}, headers=reader).status_code == 403
    lesson_id = client.post("/v1/lessons", json={"lessons": [LESSON]}, headers=agent).json()["ids"][
        0
    ]
    assert client.get(f"/v1/lessons/{lesson_id}", headers=reader).status_code == 200
    assert client.post("/v1/retrieve", json=ASK, headers=reader).status_code == 403
    retrieval = client.post("/v1/retrieve", json=ASK, headers=agent).json()
    reported = client.post(
        "/v1/outcomes",
        headers=agent,
        json={
            "retrieval_id": retrieval["retrieval_id"],
            "outcome": {"compiled": True, "correct": True},
        },
    )
    assert reported.status_code == 200
    denied = client.delete(f"/v1/lessons/{lesson_id}", headers=agent)
    assert denied.status_code == 403 and denied.json()["code"] == "forbidden"
    assert client.post("/v1/admin/reindex", headers=agent).status_code == 403
    assert client.delete(f"/v1/lessons/{lesson_id}", headers=admin).json()["status"] == "archived"


def test_tenants_do_not_see_each_other(keyed):
    client, secrets = keyed
    a, b = bearer(secrets["agent"]), bearer(secrets["other"])
    lesson_id = client.post("/v1/lessons", json={"lessons": [LESSON]}, headers=a).json()["ids"][0]
    assert client.get("/v1/lessons", headers=b).json()["count"] == 0
    assert client.get(f"/v1/lessons/{lesson_id}", headers=b).status_code == 404
    assert client.post("/v1/retrieve", json=ASK, headers=b).json()["lessons"] == []
    retrieval_a = client.post("/v1/retrieve", json=ASK, headers=a).json()
    assert [item["id"] for item in retrieval_a["lessons"]] == [lesson_id]
    stolen = client.post(
        "/v1/outcomes",
        headers=b,
        json={
            "retrieval_id": retrieval_a["retrieval_id"],
            "outcome": {"compiled": True, "correct": True},
        },
    )
    assert stolen.status_code == 404
    # The same text in tenant b is a separate lesson.
    other_id = client.post("/v1/lessons", json={"lessons": [LESSON]}, headers=b).json()["ids"][0]
    assert other_id != lesson_id


def test_keys_are_stored_hashed_and_revocable(keyed, service):
    client, secrets = keyed
    db = service.settings.data_dir / "tunemem.db"
    with sqlite3.connect(db) as conn:
        stored = [row[0] for row in conn.execute("select key_hash from apikey")]
    assert len(stored) == 4 and all(secret not in stored for secret in secrets.values())
    key_id = secrets["reader"].split("_")[1]
    with Session(service.engine) as session:
        revoke_key(session, key_id)
    assert client.get("/v1/lessons", headers=bearer(secrets["reader"])).status_code == 401
