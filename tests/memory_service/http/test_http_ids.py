"""Ids round-trip: any unique prefix of a lesson or retrieval id is accepted everywhere; an
ambiguous prefix is a clear error listing the matches; tables print ids whole."""

from __future__ import annotations

import json
from pathlib import Path

from sqlmodel import Session
from typer.testing import CliRunner

from tunemem.cli.app import app as cli_app
from tunemem.memory_service.core.sql.tables import Lesson

TEXT = "Use one program per row and a BLOCK_SIZE of the next power of two for a row softmax"


def _lesson(text: str) -> dict:
    return {"kind": "insight", "text": text, "applicability": {"op": "softmax"}}


def _twins(service, prefix: str) -> list[str]:
    """Two lessons whose ids share `prefix` (stored directly: real ids rarely collide)."""
    ids = []
    with Session(service.engine) as session:
        for n, tail in enumerate(("0000-4000-8000-000000000001", "1111-4000-8000-000000000002")):
            lesson_id = f"{prefix}{tail}"
            session.add(
                Lesson(
                    id=lesson_id,
                    kind="insight",
                    text=f"synthetic twin {n}",
                    content_hash=f"twin-{n}",
                    applicability={"op": "softmax"},
                )
            )
            ids.append(lesson_id)
        session.commit()
    return ids


def test_lesson_prefixes_resolve_everywhere(client):
    lesson_id = client.post("/v1/lessons", json={"lessons": [_lesson(TEXT)]}).json()["ids"][0]
    for prefix in (lesson_id[:8], lesson_id[:4], lesson_id.upper()[:12], lesson_id):
        got = client.get(f"/v1/lessons/{prefix}")
        assert got.status_code == 200 and got.json()["id"] == lesson_id, prefix
    history = client.get(f"/v1/lessons/{lesson_id[:8]}/history").json()
    assert history["lesson_id"] == lesson_id
    edited = client.patch(f"/v1/lessons/{lesson_id[:8]}", json={"text": TEXT + " (edited)"})
    assert edited.status_code == 200 and edited.json()["id"] == lesson_id
    short = client.get(f"/v1/lessons/{lesson_id[:3]}")
    assert short.status_code == 404 and "at least 4 characters" in short.json()["message"]


def test_ambiguous_prefix_lists_the_matches(client, service):
    twins = _twins(service, "abcd")
    response = client.get("/v1/lessons/abcd")
    body = response.json()
    assert response.status_code == 409 and body["code"] == "ambiguous_id"
    assert all(twin in body["message"] for twin in twins)
    assert client.get("/v1/lessons/abcd0").json()["id"] == twins[0]


def test_report_accepts_a_retrieval_prefix(client):
    client.post("/v1/lessons", json={"lessons": [_lesson(TEXT)]})
    retrieval = client.post(
        "/v1/retrieve",
        json={
            "query": "row softmax",
            "task": {"op": "softmax"},
            "context": {"chip": "a100"},
            "stage": "draft",
        },
    ).json()
    report = client.post(
        "/v1/outcomes",
        json={
            "retrieval_id": retrieval["retrieval_id"][:8],
            "outcome": {"compiled": True, "correct": True},
        },
    )
    assert report.status_code == 200, report.text
    missing = client.post(
        "/v1/outcomes",
        json={"retrieval_id": "ffffffff", "outcome": {"compiled": True, "correct": True}},
    )
    assert missing.status_code == 404 and missing.json()["code"] == "retrieval_not_found"


def test_cli_tables_print_ids_that_show_accepts(tmp_path: Path):
    data = ["--data-dir", str(tmp_path / "store")]
    env = {"TUNEMEM_EMBEDDER": "hashing"}
    runner = CliRunner()
    lessons = tmp_path / "lessons.json"
    long_text = TEXT + " " + " ".join(f"word{i}" for i in range(60))
    lessons.write_text(json.dumps({"lessons": [_lesson(long_text)]}))
    added = runner.invoke(cli_app, ["lessons", "add", str(lessons), *data], env=env)
    lesson_id = json.loads(added.output)["ids"][0]
    listed = runner.invoke(cli_app, ["lessons", "list", *data], env=env)
    assert listed.exit_code == 0 and lesson_id in listed.output  # whole, on one line
    row = next(line for line in listed.output.splitlines() if lesson_id in line)
    assert "…" in row and "word59" not in row
    shown = runner.invoke(cli_app, ["lessons", "show", lesson_id[:8], *data], env=env)
    assert shown.exit_code == 0 and json.loads(shown.output)["id"] == lesson_id
    retrieved = runner.invoke(
        cli_app, ["retrieve", "--op", "softmax", "--chip", "a100", "-q", TEXT, *data], env=env
    )
    assert retrieved.exit_code == 0 and lesson_id in retrieved.output
