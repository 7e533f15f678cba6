"""Through HTTP: dedup, listing, editing, archiving, idempotent reports, restart."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tunemem.memory_service.http.app import create_app


def softmax_lesson(text: str, chips=("a100",), **extra) -> dict:
    return {
        "kind": "insight",
        "text": text,
        "applicability": {
            "op": "softmax",
            "chips": list(chips),
            "backends": ["cuda"],
            "dtypes": ["bf16"],
        },
        **extra,
    }


TEXT = "For a row softmax use one program per row and a BLOCK_SIZE of the next power of two"


def test_same_lesson_twice_is_stored_once(client):
    first = client.post("/v1/lessons", json={"lessons": [softmax_lesson(TEXT)]})
    assert first.status_code == 201 and first.json()["merged"] == []
    again = client.post("/v1/lessons", json={"lessons": [softmax_lesson(TEXT)]})
    assert again.status_code == 201
    assert first.json()["created"] == first.json()["ids"]
    assert again.json() == {
        "ids": first.json()["ids"],
        "merged": first.json()["ids"],
        "created": [],
    }
    assert client.get("/v1/lessons").json()["count"] == 1


def test_near_duplicate_merges_only_with_same_applicability(client):
    original = client.post("/v1/lessons", json={"lessons": [softmax_lesson(TEXT)]}).json()["ids"][0]
    near = client.post("/v1/lessons", json={"lessons": [softmax_lesson(TEXT + ".")]}).json()
    assert near == {"ids": [original], "merged": [original], "created": []}
    other_hint = client.post(
        "/v1/lessons",
        json={"lessons": [softmax_lesson(TEXT + ".", hint={"config": {"BLOCK": 1024}})]},
    ).json()
    assert other_hint["merged"] == [], "same words, different structured hint: different knowledge"
    elsewhere = client.post(
        "/v1/lessons", json={"lessons": [softmax_lesson(TEXT + ".", chips=("mi250x",))]}
    ).json()
    assert elsewhere["merged"] == [] and elsewhere["ids"] != [original]
    different = client.post(
        "/v1/lessons",
        json={"lessons": [softmax_lesson("Fuse the scale into the exponent to save a multiply")]},
    ).json()
    assert different["merged"] == []
    assert client.get("/v1/lessons").json()["count"] == 4


def test_near_duplicates_within_one_request_merge(client):
    body = {"lessons": [softmax_lesson(TEXT), softmax_lesson(TEXT + ".")]}
    result = client.post("/v1/lessons", json=body).json()
    assert result["ids"][0] == result["ids"][1] and result["merged"] == [result["ids"][0]]


def test_list_filters_and_paging(client):
    texts = [
        "Rows shorter than 1024 elements fit one warp-sized block",
        "Online softmax keeps a running maximum and avoids a second read",
        "Store the output in bf16 but accumulate the sum in fp32",
        "Two rows per program help when rows have only 128 columns",
        "num_stages above 2 does not help a bandwidth-bound softmax",
    ]
    lessons = [softmax_lesson(t) for t in texts]
    lessons.append(
        {
            "kind": "failure",
            "text": "GEMM with BLOCK_K=256 and 4 stages runs out of shared memory",
            "applicability": {"op": "gemm", "chips": ["mi250x"], "backends": ["hip"]},
        }
    )
    client.post("/v1/lessons", json={"lessons": lessons})
    page = client.get("/v1/lessons", params={"op": "softmax", "limit": 2, "offset": 2}).json()
    assert page["count"] == 5 and len(page["data"]) == 2
    assert client.get("/v1/lessons", params={"kind": "failure"}).json()["count"] == 1
    assert client.get("/v1/lessons", params={"backend": "hip"}).json()["count"] == 1
    assert client.get("/v1/lessons", params={"chip": "AMD Instinct MI250X"}).json()["count"] == 1
    assert client.get("/v1/lessons", params={"q": "SHARED MEMORY"}).json()["count"] == 1


def test_patch_and_archive_keep_history(client, service):
    lesson_id = client.post("/v1/lessons", json={"lessons": [softmax_lesson(TEXT)]}).json()["ids"][
        0
    ]
    patched = client.patch(
        f"/v1/lessons/{lesson_id}",
        json={
            "text": TEXT + " (checked on H100 too)",
            "applicability": {"op": "softmax", "chips": ["a100", "h100"]},
        },
    )
    assert patched.status_code == 200 and patched.json()["applicability"]["chips"] == [
        "a100",
        "h100",
    ]
    assert client.get("/v1/lessons", params={"chip": "h100"}).json()["count"] == 1
    archived = client.delete(f"/v1/lessons/{lesson_id}")
    assert archived.status_code == 200 and archived.json()["status"] == "archived"
    assert client.get(f"/v1/lessons/{lesson_id}").json()["status"] == "archived"
    assert client.get("/v1/lessons").json()["count"] == 0
    retrieved = client.post(
        "/v1/retrieve", json={"query": TEXT, "stage": "draft", "context": {"chip": "a100"}}
    ).json()
    assert lesson_id not in [item["id"] for item in retrieved["lessons"]]
    from sqlmodel import Session, select

    from tunemem.memory_service.core.sql.tables import LessonRevision

    with Session(service.engine) as session:
        changes = [
            r.change
            for r in session.exec(
                select(LessonRevision).where(LessonRevision.lesson_id == lesson_id)
            )
        ]
    assert changes == ["edit", "archive"]


def test_retried_report_with_idempotency_key_counts_once(client):
    lesson_id = client.post("/v1/lessons", json={"lessons": [softmax_lesson(TEXT)]}).json()["ids"][
        0
    ]
    r = client.post(
        "/v1/retrieve", json={"query": TEXT, "stage": "draft", "context": {"chip": "a100"}}
    ).json()
    body = {"retrieval_id": r["retrieval_id"], "outcome": {"compiled": True, "correct": True}}
    first = client.post("/v1/outcomes", json=body, headers={"Idempotency-Key": "attempt-1"}).json()
    second = client.post("/v1/outcomes", json=body, headers={"Idempotency-Key": "attempt-1"}).json()
    assert first["duplicate"] is False and second["duplicate"] is True
    assert second["outcome_id"] == first["outcome_id"]
    assert len(client.get(f"/v1/lessons/{lesson_id}/history").json()["outcomes"]) == 1


def test_restarted_service_keeps_everything(make_service, tmp_path):
    data_dir = tmp_path / "persist"
    first = make_service(data_dir)
    with TestClient(create_app(first)) as c:
        ids = c.post(
            "/v1/lessons",
            json={
                "lessons": [
                    softmax_lesson(TEXT),
                    softmax_lesson("Use num_warps=8 for rows over 8k"),
                ]
            },
        ).json()["ids"]
        r = c.post(
            "/v1/retrieve", json={"query": TEXT, "stage": "draft", "context": {"chip": "a100"}}
        ).json()
        c.post(
            "/v1/outcomes",
            json={
                "retrieval_id": r["retrieval_id"],
                "used": [ids[0]],
                "outcome": {"compiled": False},
            },
        )
        ranking = [
            i["id"]
            for i in c.post(
                "/v1/retrieve", json={"query": TEXT, "stage": "draft", "context": {"chip": "a100"}}
            ).json()["lessons"]
        ]
    counts, values = first.counts(), first.value_table()
    first.close()
    first.index = None  # the embedded Chroma directory is owned by one process at a time

    second = make_service(data_dir)
    assert second.value_table() == values
    assert {k: v for k, v in second.counts().items() if k != "retrievals"} == {
        k: v for k, v in counts.items() if k != "retrievals"
    }
    with TestClient(create_app(second)) as c:
        again = c.post(
            "/v1/retrieve", json={"query": TEXT, "stage": "draft", "context": {"chip": "a100"}}
        ).json()
        assert [i["id"] for i in again["lessons"]] == ranking
        assert c.get(f"/v1/lessons/{ids[0]}/history").json()["outcomes"][0]["reward"] == -1.0


def test_upload_trajectories_over_http_is_idempotent(client):
    """Real H200 sweep trajectories (bench/results/h200) through POST /v1/trajectories."""
    import json
    from pathlib import Path

    lines = (
        (Path(__file__).resolve().parents[3] / "bench/results/h200/rmsnorm.jsonl")
        .read_text()
        .splitlines()[:2]
    )
    body = {"trajectories": [json.loads(line) for line in lines]}
    first = client.post("/v1/trajectories", json=body)
    assert first.status_code == 201, first.text
    summary = first.json()
    assert summary["added"] == 2 and summary["attempts"] > 0 and summary["lessons_added"] > 0
    again = client.post("/v1/trajectories", json=body).json()
    assert again["added"] == 0 and again["skipped"] == 2 and again["lessons_added"] == 0
    listed = client.get("/v1/lessons", params={"chip": "h200", "op": "rmsnorm"}).json()
    assert listed["count"] == summary["lessons_added"]
