"""The doors stay thin (issue 28): an upload and a file ingest are one behaviour, admin routes
and /healthz answer declared models, and maintenance takes the tenant at every door.

The trajectories are synthetic, written for these tests.
"""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient
from sqlmodel import Session, select

from tunemem.ingest.readers import read_any
from tunemem.memory_service.core.access.keys import create_key
from tunemem.memory_service.core.sql.tables import Trajectory
from tunemem.memory_service.http.app import create_app
from tunemem.memory_service.http.deps import Caller, caller_if_any
from tunemem.memory_service.remote import RemoteService


def run_on(chip: str, backend: str, source: str) -> dict:
    """A synthetic native trajectory on `chip` (as a user would write it)."""
    return {
        "version": 1,
        "source_format": "synthetic",
        "source": source,
        "task": {"op": "softmax", "signature": {"cols": 2048}},
        "context": {"chip": chip, "backend": backend},
        "attempts": [
            {"index": i, "params": {"BLOCK": 2**i}, "latency_ms": 1.0 + i} for i in range(5, 9)
        ],
    }


def test_an_upload_accepts_an_unknown_chip_as_file_ingest_does(
    client, service, make_service, tmp_path
):
    """Seen failing first: the route refused (422) a device the registry does not know on a
    backend it cannot name (what `tunemem ingest --url` sends for such a device), which
    `tunemem ingest` of the same line stores; both now store it as `unknown:<slug>` and list
    it among the summary's unknown chips, and settle a known vendor name to its chip id."""
    runs = [
        run_on("Acme Tensor 7", "unknown", "upload/acme"),
        run_on("NVIDIA H200", "cuda", "upload/h200"),
    ]
    uploaded = client.post("/v1/trajectories", json={"trajectories": runs})
    assert uploaded.status_code == 201, uploaded.text
    assert uploaded.json()["unknown_chips"] == ["Acme Tensor 7"]
    assert uploaded.json()["added"] == 2

    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(run) + "\n" for run in runs))
    from_file = make_service(tmp_path / "file-store").ingest(read_any([path], fmt="native"))
    assert from_file.unknown_chips == uploaded.json()["unknown_chips"]
    assert from_file.added == 2

    with Session(service.engine) as session:
        stored = {(t.chip, t.backend) for t in session.exec(select(Trajectory))}
    assert stored == {("unknown:acme-tensor-7", "unknown"), ("h200", "cuda")}
    again = client.post("/v1/trajectories", json={"trajectories": runs}).json()
    assert again["skipped"] == 2 and again["added"] == 0  # one id per run, as ingest gives


def test_a_bad_upload_still_names_the_readers_reason(client, service):
    bad = run_on("h200", "cuda", "up/bad")
    bad["attempts"] = []
    refused = client.post("/v1/trajectories", json={"trajectories": [bad]})
    assert refused.status_code == 422 and refused.json()["code"] == "invalid_trajectory"
    assert refused.json()["message"] == "trajectories[0]: a trajectory needs at least one attempt"
    assert service.counts()["trajectories"] == 0


def test_admin_routes_and_healthz_declare_their_answers(client):
    """Seen failing first: the admin routes returned bare dicts with no response model."""
    spec = client.get("/openapi.json").json()["paths"]

    def answer_of(path: str, method: str) -> str:
        content = spec[path][method]["responses"]["200"]["content"]["application/json"]
        return content["schema"]["$ref"].rsplit("/", 1)[-1]

    assert answer_of("/v1/admin/values/rebuild", "post") == "ValuesRebuilt"
    assert answer_of("/v1/admin/reindex", "post") == "IndexRebuilt"
    assert answer_of("/v1/admin/import", "post") == "BundleCounts"
    assert answer_of("/healthz", "get") == "HealthPublic"
    tenant = {p["name"] for p in spec["/v1/admin/reindex"]["post"]["parameters"]}
    assert "tenant" in tenant


def test_healthz_takes_its_caller_from_a_dependency(service):
    """Seen failing first: /healthz authenticated inline, so no override could stand in."""
    app = create_app(service)
    with TestClient(app) as client:
        app.dependency_overrides[caller_if_any] = lambda: None  # no key
        assert client.get("/healthz").json() == {"status": "ok", "index": "ok"}
        app.dependency_overrides[caller_if_any] = lambda: Caller("default", "reader")
        shown = client.get("/healthz").json()
    assert shown["counts"]["lessons"] == 0 and shown["active_lessons"] == 0


def test_maintenance_takes_the_tenant_at_every_door(service):
    """Seen failing first: `MemoryAPI.rebuild_values()` and `reindex()` took no tenant. An
    operator names one tenant; an admin key may name only its own."""
    with Session(service.engine) as session:
        operator = create_key(session, "operator", "ops", "doors")[1]
        admin_a = create_key(session, "admin", "team-a", "doors")[1]
        agent_b = create_key(session, "agent", "team-b", "doors")[1]
    with TestClient(create_app(service)) as client:
        lesson = {"kind": "insight", "text": "Use 8 warps for long rows", "applicability": {}}
        added = client.post(
            "/v1/lessons",
            json={"lessons": [lesson]},
            headers={"Authorization": f"Bearer {agent_b}"},
        )
        assert added.status_code == 201
        as_operator = RemoteService("http://testserver", api_key=operator)
        as_operator._client = client
        as_operator._client.headers["Authorization"] = f"Bearer {operator}"
        assert as_operator.reindex(tenant="team-b") == 1
        assert as_operator.reindex(tenant="team-a") == 0
        assert as_operator.rebuild_values(tenant="team-b") == 0
        own = client.post(
            "/v1/admin/reindex",
            params={"tenant": "team-b"},
            headers={"Authorization": f"Bearer {admin_a}"},
        )
        assert own.status_code == 403 and own.json()["code"] == "tenant_forbidden"


def test_remote_and_embedded_audits_take_one_query(service, client, tmp_path: Path):
    """The remote client sends the `TransferQuery` the embedded service takes: same answer."""
    from tunemem.memory_service.core.schemas.audit import TransferQuery

    remote = RemoteService("http://testserver")
    remote._client = client
    query = TransferQuery(chips=["h200", "a100"], stage="refine", min_n=2, toolchain=["triton=3.6"])
    assert remote.audit_transfer(query) == service.audit_transfer(query)
    assert remote.audit_transfer(query).toolchain == {"triton": "3.6"}
