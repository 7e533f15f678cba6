"""Bodies that are not JSON answer 400 `malformed_json`, whatever made them so (issue #22,
defect 10): invalid UTF-8 and nesting too deep to parse included. And an import refused for
stored state names the bundle's line, never the server's scratch file."""

from __future__ import annotations

import gzip
import json

import pytest

JSON = {"content-type": "application/json"}


@pytest.mark.parametrize(
    "body",
    [
        b'{"lessons": [{"kind": "insight", "text": "\xff\xfe"}]}',
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
        b'{"lessons": [',
    ],
    ids=["invalid UTF-8", "deep lists", "deep objects", "truncated"],
)
@pytest.mark.parametrize("url", ["/v1/lessons", "/v1/retrieve", "/v1/outcomes"])
def test_a_body_that_is_not_json_is_malformed_json(client, service, url, body):
    before = service.counts()
    response = client.post(url, content=body, headers=JSON)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "malformed_json"
    assert service.counts() == before


def test_an_import_refused_for_another_tenants_rows_shows_no_server_path(client, service):
    lesson = {"kind": "insight", "text": "tenant b's lesson", "applicability": {"op": "softmax"}}
    assert client.post("/v1/lessons", json={"lessons": [lesson]}).status_code == 201
    bundle = client.get("/v1/admin/export").content
    refused = client.post("/v1/admin/import?tenant=team-x", content=bundle)
    assert refused.status_code == 409
    body = refused.json()
    assert body["code"] == "bundle_of_another_tenant"
    assert "bundle line 2" in body["message"]
    assert "/tmp" not in body["message"] and "tunemem-bundle" not in body["message"]
    lines = gzip.decompress(bundle).decode().splitlines()
    assert json.loads(lines[1])["kind"] == "lesson"
