"""Compressed uploads (issue 39, case 6): POST /v1/trajectories takes a body sent with
`Content-Encoding: gzip` (what `tunemem ingest --url` sends for a run too large for one plain
upload), bounded on the wire by TUNEMEM_MAX_BODY_BYTES and after inflating by
TUNEMEM_MAX_INFLATED_BODY_BYTES; a bomb past that bound, a broken stream, another encoding or
gzip on another route is a 4xx with a JSON code that stores nothing.

The runs are synthetic, written by the test.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tunemem.memory_service.http.app import create_app

LIMIT = 64 * 1024


def synthetic_run(n: int) -> dict[str, Any]:
    return {
        "version": 1,
        "source_format": "synthetic",
        "source": "runs/inflate",
        "task": {"op": "softmax", "kernel": "softmax_rows"},
        "context": {"chip": "a100", "backend": "cuda"},
        "attempts": [
            {"index": i, "params": {"BLOCK": 16 * (i + 1), "W": i % 4}, "latency_ms": 1.0 + i}
            for i in range(n)
        ],
    }


@pytest.fixture
def small(make_service):  # type: ignore[no-untyped-def]
    service = make_service(max_body_bytes=LIMIT, max_inflated_body_bytes=8 * LIMIT)
    with TestClient(create_app(service)) as client:
        yield client


def _post(client: TestClient, path: str, body: bytes, encoding: str = "gzip"):  # type: ignore[no-untyped-def]
    headers = {"Content-Type": "application/json", "Content-Encoding": encoding}
    return client.post(path, content=body, headers=headers)


def test_a_compressed_upload_past_the_body_limit_is_stored_whole(small: TestClient):
    plain = json.dumps({"trajectories": [synthetic_run(1500)]}).encode()
    assert LIMIT < len(plain) < 8 * LIMIT
    assert small.post("/v1/trajectories", content=plain).status_code == 413
    answer = _post(small, "/v1/trajectories", gzip.compress(plain))
    assert answer.status_code == 201, answer.text
    assert answer.json()["added"] == 1 and answer.json()["attempts"] == 1500
    assert small.get("/healthz").status_code == 200


@pytest.mark.parametrize(
    ("body", "encoding", "path", "status", "code"),
    [
        # a bomb: 10 MiB of zeros in some 10 KiB, under the body limit
        (gzip.compress(b"0" * 10 * 2**20), "gzip", "/v1/trajectories", 413, "payload_too_large"),
        (b"\x1f\x8b not gzip at all", "gzip", "/v1/trajectories", 400, "malformed_body"),
        (
            gzip.compress(b'{"trajectories": []}')[:-6],
            "gzip",
            "/v1/trajectories",
            400,
            "malformed_body",
        ),
        (b"{}", "br", "/v1/trajectories", 415, "unsupported_encoding"),
        (gzip.compress(b'{"lessons": []}'), "gzip", "/v1/lessons", 415, "unsupported_encoding"),
    ],
    ids=["bomb", "not-gzip", "cut-short", "brotli", "other-route"],
)
def test_what_cannot_be_inflated_is_refused_with_a_code(  # type: ignore[no-untyped-def]
    small: TestClient, body, encoding, path, status, code
):
    answer = _post(small, path, body, encoding)
    assert answer.status_code == status, answer.text
    assert answer.json()["code"] == code
    if code == "payload_too_large":
        assert "TUNEMEM_MAX_INFLATED_BODY_BYTES" in answer.json()["message"]
    assert small.get("/v1/lessons").json()["count"] == 0
