"""Every read of a tenant whose store was damaged by hand (issue 39, case 7, the reads before
`tunemem doctor --fix`): a lesson hint that is a JSON list, text or no JSON at all, an
applicability that is a list, has chips as text or a field the API does not have, attempt
parameters that are a list or no JSON, a text latency, an outcome's reward, latency or timings
as text, and columns doctor has no repair of its own for (a run's task, a retrieval's results,
an outcome's configuration, a lesson's provenance). Each read answers (200, or a 4xx with a
JSON `code`), never 500; a value it could not read as stored is read as empty, and retrieve and
suggest say so in their `warnings`, naming `tunemem doctor`, which lists the damage and repairs
it, after which the same reads answer with no such warning.

The runs, lessons and the damage are synthetic, written by the test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlmodel import Session

from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.http.app import create_app
from tunemem.memory_service.service import MemoryService

TASK = {"op": "softmax", "kernel": "softmax_rows"}
SPACE = {"BLOCK": [64, 128, 256], "WARPS": [1, 2, 4]}
DAMAGE = {
    "hint a list": "UPDATE lesson SET hint = '[1, 2]'",
    "hint text": "UPDATE lesson SET hint = '\"fast\"'",
    "hint no JSON": "UPDATE lesson SET hint = '{not json'",
    "applicability a list": "UPDATE lesson SET applicability = '[1]'",
    "applicability chips text": "UPDATE lesson SET applicability = "
    "json_set(applicability, '$.chips', 'a100')",
    "applicability unknown field": "UPDATE lesson SET applicability = "
    "json_set(applicability, '$.zzz', 7)",
    "params a list": "UPDATE attempt SET params = '[1, 2]' WHERE \"index\" = 0",
    "params no JSON": "UPDATE attempt SET params = 'BLOCK=64' WHERE \"index\" = 0",
    "latency text": "UPDATE attempt SET latency_ms = 'fast' WHERE \"index\" = 1",
    "outcome reward text": "UPDATE outcome SET reward = 'x'",
    "outcome latency text": "UPDATE outcome SET latency_ms = 'fast'",
    "outcome timings text": "UPDATE outcome SET timings_ms = '[\"fast\"]'",
    "outcome config a list": "UPDATE outcome SET config = '[1]'",
    "run task a list": "UPDATE trajectory SET task = '[1]'",
    "run baseline text": "UPDATE trajectory SET baseline_latency_ms = 'fast'",
    "retrieval results no JSON": "UPDATE retrieval SET results = '{not json'",
    "lesson provenance a list": "UPDATE lesson SET provenance = '[1]'",
}
# The damage retrieve and suggest read (the lessons' own columns).
READ_BY_RETRIEVE = {
    "hint a list",
    "hint text",
    "hint no JSON",
    "applicability a list",
    "applicability chips text",
    "applicability unknown field",
}


def _run() -> dict[str, Any]:
    configs = [(b, w) for b in SPACE["BLOCK"] for w in SPACE["WARPS"]]
    return {
        "version": 1,
        "source_format": "synthetic",
        "source": "runs/damaged",
        "task": TASK,
        "context": {"chip": "a100", "backend": "cuda"},
        "attempts": [
            {"index": i, "params": {"BLOCK": b, "WARPS": w}, "latency_ms": 1.0 + i * 0.1}
            for i, (b, w) in enumerate(configs)
        ],
    }


def _reads(lesson_id: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    retrieve = {"task": TASK, "context": {"chip": "a100"}, "stage": "draft", "k": 5}
    suggest = {"task": TASK, "context": {"chip": "a100"}, "space": {"params": SPACE}, "k": 4}
    observed = {"config": {"BLOCK": 64, "WARPS": 1}, "latency_ms": 1.0}
    return [
        ("GET", "/v1/lessons", None),
        ("GET", "/v1/lessons?op=softmax", None),
        ("GET", "/v1/lessons?sort=value", None),
        ("GET", "/v1/lessons?unreproduced=true", None),
        ("GET", f"/v1/lessons/{lesson_id}", None),
        ("GET", f"/v1/lessons/{lesson_id}/history", None),
        ("POST", "/v1/retrieve", retrieve),
        ("POST", "/v1/retrieve", {**retrieve, "context": {"chip": "h100"}, "stage": "refine"}),
        ("POST", "/v1/suggest", suggest),
        (
            "POST",
            "/v1/suggest",
            {**suggest, "context": {"chip": "h100"}, "observations": [observed]},
        ),
        ("GET", "/v1/audit/transfer", None),
        ("GET", "/v1/audit/transfer?format=html", None),
        ("GET", "/healthz", None),
        ("GET", "/ui", None),
        ("GET", f"/ui/lessons/{lesson_id}", None),
        ("GET", "/ui/transfer", None),
        ("GET", "/v1/admin/export", None),
        ("POST", "/v1/admin/values/rebuild", {}),
    ]


def _doctor_warnings(answer: Any) -> list[str]:
    return [w for w in answer.json().get("warnings", []) if "tunemem doctor" in w]


def _read_everything(client: TestClient, lesson_id: str) -> dict[str, list[str]]:
    """Every read, asserting none fails; the doctor warnings of retrieve and suggest."""
    said: dict[str, list[str]] = {}
    for method, path, body in _reads(lesson_id):
        answer = client.request(method, path, json=body)
        assert answer.status_code < 500, f"{method} {path}: {answer.status_code} {answer.text}"
        if answer.status_code >= 400:
            assert answer.json().get("code"), f"{method} {path}: {answer.text}"
        if path in ("/v1/retrieve", "/v1/suggest"):
            said.setdefault(path, []).extend(_doctor_warnings(answer))
    return said


@pytest.fixture
def damaged_store(tmp_path: Path):
    service = MemoryService(
        Settings(data_dir=tmp_path / "store", embedder="hashing", index="memory")
    )
    client = TestClient(create_app(service), raise_server_exceptions=False)
    stored = client.post("/v1/trajectories", json={"trajectories": [_run()]})
    assert stored.status_code == 201, stored.text
    lesson = {
        "kind": "insight",
        "text": "BLOCK 128 is fastest for softmax rows on the A100",
        "applicability": {"op": "softmax", "chips": ["a100"]},
        "hint": {"config": {"BLOCK": 128, "WARPS": 2}},
    }
    added = client.post("/v1/lessons", json={"lessons": [lesson]})
    assert added.status_code == 201, added.text
    got = client.post(
        "/v1/retrieve", json={"task": TASK, "context": {"chip": "a100"}, "stage": "draft", "k": 5}
    ).json()
    used = [each["id"] for each in got["lessons"]]
    outcome = {"compiled": True, "correct": True, "latency_ms": 1.0}
    reported = client.post(
        "/v1/outcomes", json={"retrieval_id": got["retrieval_id"], "used": used, "outcome": outcome}
    )
    assert reported.status_code == 200, reported.text
    try:
        yield service, client, added.json()["ids"][0]
    finally:
        client.close()
        service.close()


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_every_read_of_a_damaged_store_answers_and_doctor_repairs_it(damaged_store, damage):
    service, client, lesson_id = damaged_store
    with Session(service.engine) as session:
        session.execute(text(DAMAGE[damage]))
        session.commit()

    said = _read_everything(client, lesson_id)
    if damage in READ_BY_RETRIEVE:
        assert said["/v1/retrieve"] and said["/v1/suggest"], said

    found = service.doctor()
    assert found.problems >= 1, f"doctor found nothing for {damage}"
    service.doctor(fix=True)
    assert service.doctor().problems == 0
    assert _read_everything(client, lesson_id) == {"/v1/retrieve": [], "/v1/suggest": []}
