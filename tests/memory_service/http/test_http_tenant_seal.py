"""Tenants stay sealed in the paths issue 11 found open: trajectory ids (point 6), bundle
import into another tenant (point 7), and maintenance and health (point 11)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session
from typer.testing import CliRunner

from tunemem.cli.app import app as cli
from tunemem.memory_service.core.access.keys import create_key
from tunemem.memory_service.http.app import create_app

RUN = {
    "version": 1,
    "source_format": "synthetic",
    "source": "runs/softmax-a100",
    "task": {"op": "softmax", "signature": {"cols": 1024}},
    "context": {"chip": "a100", "backend": "cuda"},
    "attempts": [
        {"index": i, "params": {"BLOCK": 2**i}, "latency_ms": 1.0 + i} for i in range(4, 10)
    ],
}


def lesson(text: str) -> dict:
    return {"kind": "insight", "text": text, "applicability": {"op": "softmax"}}


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def tenants(service):
    keys = {}
    with Session(service.engine) as session:
        for name, role, tenant in (
            ("a_agent", "agent", "team-a"),
            ("a_admin", "admin", "team-a"),
            ("a_reader", "reader", "team-a"),
            ("b_agent", "agent", "team-b"),
            ("b_admin", "admin", "team-b"),
            ("operator", "operator", "ops"),
        ):
            keys[name] = bearer(create_key(session, role, tenant, name)[1])
    with TestClient(create_app(service)) as client:
        yield client, keys


def learn(client, key: dict, text: str) -> None:
    client.post("/v1/lessons", json={"lessons": [lesson(text)]}, headers=key)
    ask = {"query": text, "stage": "draft", "task": {"op": "softmax"}}
    retrieval = client.post("/v1/retrieve", json=ask, headers=key).json()["retrieval_id"]
    report = {"retrieval_id": retrieval, "outcome": {"compiled": True, "correct": True}}
    assert client.post("/v1/outcomes", json=report, headers=key).status_code == 200


def test_same_run_in_two_tenants_is_two_runs(tenants):
    client, keys = tenants
    first = client.post("/v1/trajectories", json={"trajectories": [RUN]}, headers=keys["a_agent"])
    assert (first.json()["added"], first.json()["skipped"]) == (1, 0)
    other = client.post("/v1/trajectories", json={"trajectories": [RUN]}, headers=keys["b_agent"])
    assert (other.json()["added"], other.json()["skipped"]) == (1, 0)
    assert other.json()["lessons_added"] == first.json()["lessons_added"] > 0
    again = client.post("/v1/trajectories", json={"trajectories": [RUN]}, headers=keys["b_agent"])
    assert (again.json()["added"], again.json()["skipped"]) == (0, 1)


def test_maintenance_is_scoped_to_the_keys_tenant(tenants, service):
    client, keys = tenants
    learn(client, keys["a_agent"], "Use 4 warps for short softmax rows")
    for text in ("Prefer 8 warps for long rows", "Two-pass softmax for 64k columns"):
        learn(client, keys["b_agent"], text)
    values_before = service.value_table()
    rebuilt = client.post("/v1/admin/values/rebuild", headers=keys["a_admin"]).json()
    assert rebuilt == {"outcomes_replayed": 1}
    assert service.value_table() == values_before
    assert client.post("/v1/admin/reindex", headers=keys["a_admin"]).json() == {
        "lessons_indexed": 1
    }
    ask = {"query": "softmax rows", "stage": "draft", "task": {"op": "softmax"}}
    b_found = client.post("/v1/retrieve", json=ask, headers=keys["b_agent"]).json()["lessons"]
    assert len(b_found) == 2  # team-b's index was left alone
    everything = client.post("/v1/admin/reindex", headers=keys["operator"]).json()
    assert everything == {"lessons_indexed": 3}
    assert client.post("/v1/admin/reindex", headers=keys["a_agent"]).status_code == 403


def test_health_shows_counts_only_to_keys_and_only_their_tenants(tenants):
    client, keys = tenants
    learn(client, keys["a_agent"], "Use 4 warps for short softmax rows")
    learn(client, keys["b_agent"], "Prefer 8 warps for long rows")
    anonymous = client.get("/healthz")
    assert anonymous.status_code == 200
    assert anonymous.json() == {"status": "ok", "index": "ok"}
    mine = client.get("/healthz", headers=keys["a_reader"]).json()
    assert mine["counts"]["lessons"] == 1 and mine["counts"]["outcomes"] == 1
    assert mine["active_lessons"] == mine["index_entries"] == 1
    everyone = client.get("/healthz", headers=keys["operator"]).json()
    assert everyone["counts"]["lessons"] == 2 and everyone["index_entries"] == 2


def test_import_into_another_tenant_of_the_store_is_refused(make_service, tmp_path):
    data_dir = tmp_path / "store"
    service = make_service(data_dir, tenant="team-a")
    with TestClient(create_app(service)) as client:
        for text in ("Use 4 warps for short rows", "Prefer 8 warps for long rows"):
            learn(client, {}, text)
    values_before = service.value_table()
    service.close()
    runner = CliRunner()
    bundle = tmp_path / "team-a.jsonl"
    env = {"TUNEMEM_TENANT": "team-a", "TUNEMEM_EMBEDDER": "hashing"}
    exported = runner.invoke(cli, ["export", str(bundle), "--data-dir", str(data_dir)], env=env)
    assert exported.exit_code == 0, exported.output
    env["TUNEMEM_TENANT"] = "team-b"
    imported = runner.invoke(cli, ["import", str(bundle), "--data-dir", str(data_dir)], env=env)
    assert imported.exit_code != 0
    assert "another tenant" in imported.output
    again = make_service(data_dir, tenant="team-a")
    assert again.value_table() == values_before
    assert again.counts("team-b") == dict.fromkeys(again.counts("team-b"), 0)
    again.rebuild_values()
    assert again.value_table() == values_before
