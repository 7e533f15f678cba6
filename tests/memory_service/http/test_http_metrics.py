"""/metrics counts requests per route and status (the plain-ASGI metrics middleware), and
`serve --workers` refuses an embedded store, which has one owning process."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from tunemem.cli.app import app


def _count(text: str, route: str, status: str) -> float:
    pattern = (
        r'tunemem_requests_total\{route="'
        + re.escape(route)
        + r'",status="'
        + status
        + r'"\} ([0-9.e+]+)'
    )
    found = re.search(pattern, text)
    return float(found.group(1)) if found else 0.0


def test_metrics_count_requests_per_route_and_status(client) -> None:
    body = {"query": "tile the softmax", "task": {"op": "softmax"}, "stage": "draft"}
    assert client.post("/v1/retrieve", json=body).status_code == 200
    assert client.post("/v1/retrieve", json=body).status_code == 200
    assert client.post("/v1/retrieve", json={"stage": "nonsense"}).status_code == 422
    assert client.get("/no/such/page").status_code == 404
    text = client.get("/metrics").text
    assert _count(text, "/v1/retrieve", "200") == 2
    assert _count(text, "/v1/retrieve", "422") == 1
    assert _count(text, "unmatched", "404") == 1
    assert 'tunemem_request_seconds_count{route="/v1/retrieve"} 3.0' in text


def test_serve_with_workers_needs_the_server_mode(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("TUNEMEM_DATABASE_URL", raising=False)
    result = CliRunner().invoke(
        app, ["serve", "--workers", "2", "--data-dir", str(tmp_path / "store")]
    )
    assert result.exit_code != 0
    assert "server mode" in result.output
    assert not (tmp_path / "store").exists()


def test_metrics_of_a_keyed_server_need_a_key(service) -> None:
    """Issue 39, case 8: /metrics answered 200 without a key on a keyed server."""
    from fastapi.testclient import TestClient

    from tunemem.memory_service.http.app import create_app

    _, secret = service.create_key("reader", name="prometheus")
    with TestClient(create_app(service)) as client:
        assert client.get("/metrics").status_code == 401
        keyed = client.get("/metrics", headers={"Authorization": f"Bearer {secret}"})
        assert keyed.status_code == 200 and "tunemem_requests_total" in keyed.text
