"""Export and import of a tenant over HTTP and through `tunemem export/import --url --tenant`:
the bundle moves lessons, retrievals and the outcome log; a key moves only its own tenant."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from fastapi.testclient import TestClient
from sqlmodel import Session
from typer.testing import CliRunner

from tunemem.cli.app import app as cli_app
from tunemem.memory_service.core.access.keys import create_key
from tunemem.memory_service.http.app import create_app

LESSON = {
    "kind": "insight",
    "text": "For a row softmax keep the whole row in one program when it fits in SRAM",
    "applicability": {"op": "softmax", "chips": ["a100"]},
}
RETRIEVE = {
    "query": "row softmax",
    "task": {"op": "softmax"},
    "context": {"chip": "a100"},
    "stage": "draft",
}


def _fill(client: TestClient) -> None:
    assert client.post("/v1/lessons", json={"lessons": [LESSON]}).status_code == 201
    retrieval = client.post("/v1/retrieve", json=RETRIEVE).json()
    body = {
        "retrieval_id": retrieval["retrieval_id"],
        "outcome": {"compiled": True, "correct": True},
    }
    assert client.post("/v1/outcomes", json=body).status_code == 200


def test_export_and_import_routes_move_a_tenant(client, make_service, tmp_path):
    _fill(client)
    exported = client.get("/v1/admin/export")
    assert exported.status_code == 200 and exported.content[:2] == b"\x1f\x8b"
    counts = json.loads(exported.headers["X-Tunemem-Counts"])
    assert counts["lesson"] == 1 and counts["retrieval"] == 1 and counts["outcome"] == 1
    lines = gzip.decompress(exported.content).decode().splitlines()
    assert json.loads(lines[0])["tenant"] == "default"
    other = make_service(tmp_path / "other")
    with TestClient(create_app(other)) as target:
        imported = target.post("/v1/admin/import?tenant=team-x", content=exported.content)
        assert imported.status_code == 200 and imported.json()["outcome"] == 1
        again = target.post("/v1/admin/import?tenant=team-x", content=exported.content).json()
        assert set(again.values()) == {0}  # idempotent
        assert target.get("/v1/lessons").json()["count"] == 0  # default tenant untouched
    assert other.list_lessons(tenant="team-x").count == 1
    bad = client.post("/v1/admin/import", content=b"not a bundle\n")
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_bundle"


def test_a_key_moves_only_its_own_tenant(service):
    with Session(service.engine) as session:
        admin = create_key(session, "admin", "team-a", "admin of a")[1]
        agent = create_key(session, "agent", "team-a", "agent of a")[1]
    with TestClient(create_app(service)) as client:
        own = client.get("/v1/admin/export", headers={"Authorization": f"Bearer {admin}"})
        assert own.status_code == 200
        assert json.loads(gzip.decompress(own.content).splitlines()[0])["tenant"] == "team-a"
        other = client.get(
            "/v1/admin/export?tenant=team-b", headers={"Authorization": f"Bearer {admin}"}
        )
        assert other.status_code == 403 and other.json()["code"] == "tenant_forbidden"
        weak = client.get("/v1/admin/export", headers={"Authorization": f"Bearer {agent}"})
        assert weak.status_code == 403


def test_cli_export_and_import_with_url_and_tenant(service, make_service, serve, tmp_path: Path):
    with TestClient(create_app(service)) as client:
        _fill(client)
    source = serve(create_app(service))
    target_service = make_service(tmp_path / "target")
    target = serve(create_app(target_service))
    runner = CliRunner()
    for name in ("bundle.jsonl.gz", "bundle.jsonl"):
        bundle = tmp_path / name
        exported = runner.invoke(cli_app, ["export", str(bundle), "--url", source])
        assert exported.exit_code == 0, exported.output
        assert "1 outcome" in exported.output and bundle.exists()
        imported = runner.invoke(
            cli_app, ["import", str(bundle), "--url", target, "--tenant", "team-x"]
        )
        assert imported.exit_code == 0, imported.output
    assert target_service.list_lessons(tenant="team-x").count == 1
    assert target_service.counts()["outcomes"] == 1  # the second import added nothing
    local = tmp_path / "local.jsonl"
    from_store = runner.invoke(
        cli_app,
        ["export", str(local), "--tenant", "team-x", "--data-dir", str(tmp_path / "target")],
    )
    assert from_store.exit_code == 0 and "1 lesson," in from_store.output
