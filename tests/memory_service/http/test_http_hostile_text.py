"""Text that cannot be stored and read back is refused at every door (issue #22, defects 4 and
6): hostile strings (lone UTF-16 surrogates, NUL) are written through every route that takes
text (HTTP, MCP, ingest, import), each is refused, and then every read route still answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
from fastapi.testclient import TestClient
from mcp.server.mcpserver.exceptions import ToolError

from tunemem.ingest.readers import read_any
from tunemem.memory_service.http.app import create_app
from tunemem.memory_service.mcp.server import build_mcp_server

H200 = Path(__file__).resolve().parents[3] / "bench/results/h200/rmsnorm.jsonl"
HOSTILE = ["\ud800", "tail \udfff", "a\x00b", "\x00"]
LESSON = {
    "kind": "insight",
    "text": "Keep an RMSNorm row in registers when it fits in one block",
    "applicability": {"op": "rmsnorm", "chips": ["h200"]},
}
JSON = {"content-type": "application/json"}
RETRIEVE = {"query": "rmsnorm", "task": {"op": "rmsnorm"}, "context": {"chip": "h200"}}


def _with(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of `base` with the dotted `path` set to `value`."""
    body = json.loads(json.dumps(base))
    *parents, last = path.split(".")
    node = body
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return body


def _lesson_bodies(bad: str) -> list[dict[str, Any]]:
    return [
        _with(LESSON, "text", f"softmax {bad}"),
        _with(LESSON, "code", bad),
        _with(LESSON, "hint", {"note": bad}),
        _with(LESSON, "hint", {bad: 1}),
        _with(LESSON, "hint", {"deep": [{"deeper": bad}]}),
        _with(LESSON, "provenance", {"creator": bad}),
        _with(LESSON, "applicability.signature", {"rows": bad}),
        _with(LESSON, "applicability.chips", ["h200", bad]),
        _with(LESSON, "applicability.op", bad),
    ]


def _hostile_writes(client: TestClient, lesson_id: str, retrieval_id: str) -> list[str]:
    """Every write with every hostile string; returns what was not refused with a 4xx."""
    accepted = []
    good_run = json.loads(H200.read_text().splitlines()[0])
    for bad in HOSTILE:
        attempts: list[tuple[str, str, Any]] = [
            ("POST", "/v1/lessons", {"lessons": [body]}) for body in _lesson_bodies(bad)
        ]
        attempts += [
            ("PATCH", f"/v1/lessons/{lesson_id}", {"text": bad}),
            ("PATCH", f"/v1/lessons/{lesson_id}", {"hint": {"x": bad}}),
            ("POST", "/v1/retrieve", {**RETRIEVE, "stage": "draft", "query": bad}),
            (
                "POST",
                "/v1/retrieve",
                _with({**RETRIEVE, "stage": "draft"}, "task.signature", {"n": bad}),
            ),
            ("POST", "/v1/retrieve", _with({**RETRIEVE, "stage": "draft"}, "context.model", bad)),
            (
                "POST",
                "/v1/outcomes",
                {"retrieval_id": retrieval_id, "outcome": {"compiled": False, "error": bad}},
            ),
            (
                "POST",
                "/v1/outcomes",
                {
                    "retrieval_id": retrieval_id,
                    "outcome": {"compiled": True, "correct": True},
                    "reporter": bad,
                },
            ),
            ("POST", "/v1/suggest", {"space": {"params": {"layout": ["row", bad]}}}),
            ("POST", "/v1/suggest", {"space": {"params": {bad: [1, 2]}}}),
            ("POST", "/v1/trajectories", {"trajectories": [{**good_run, "source": bad}]}),
            (
                "POST",
                "/v1/trajectories",
                {"trajectories": [_with(good_run, "task.signature", {"n": bad})]},
            ),
        ]
        for method, url, body in attempts:
            # ASCII JSON: "\ud800" goes as the escape a hostile client sends
            response = client.request(method, url, content=json.dumps(body), headers=JSON)
            if response.status_code != 422 or response.json()["code"] != "invalid_text":
                accepted.append(f"{method} {url} {body!r}: {response.status_code}")
        raw = quote(bad.encode("utf-8", "surrogatepass"))  # what a URL can carry of it
        urls = [f"/v1/lessons?{name}={raw}" for name in ("q", "op", "chip")]
        urls += [f"/v1/audit/transfer?op={raw}", f"/v1/lessons/{raw}", f"/ui/lessons/{raw}"]
        for url in urls:
            response = client.get(url)
            # A NUL is refused; a surrogate's bytes are no UTF-8, so the URL decoder makes
            # them U+FFFD, which is text: then the filter must be whole (match nothing).
            matched = url.startswith("/v1/lessons?") and (
                response.status_code == 200 and response.json()["count"] > 0
            )
            if (
                response.status_code not in (200, 404, 422)
                or matched
                or ("00" in raw and response.status_code != 422)
            ):
                accepted.append(f"GET {url}: {response.status_code}")
    return accepted


def _mcp_writes(service: Any) -> list[str]:
    """The MCP tools, given the arguments a client's JSON `"\\ud800"` decodes to (the SDK's
    own client cannot send them); each must be refused with a tool error."""
    accepted: list[str] = []
    server = build_mcp_server(service)

    async def scenario() -> None:
        for bad in HOSTILE:
            calls = [
                ("add_lesson", {**LESSON, "text": f"softmax {bad}"}),
                ("add_lesson", {**LESSON, "hint": {bad: 1}}),
                ("retrieve_lessons", {"stage": "draft", "op": "rmsnorm", "query": bad}),
                ("retrieve_lessons", {"stage": "draft", "signature": {"n": bad}}),
                ("list_lessons", {"q": bad}),
                ("suggest", {"space": {"params": {"layout": ["row", bad]}}}),
            ]
            for tool, arguments in calls:
                try:
                    await server.call_tool(tool, arguments)
                except ToolError:
                    continue
                accepted.append(f"mcp {tool} {arguments!r}")

    anyio.run(scenario)
    return accepted


def _reads(client: TestClient, service: Any) -> list[str]:
    """Every read route; returns those that did not answer 200."""
    failed = []
    urls = [
        "/v1/lessons?status=all",
        "/v1/lessons?q=rmsnorm",
        "/v1/audit/transfer",
        "/ui",
        "/ui/transfer",
    ]
    for lesson in client.get("/v1/lessons?status=all&limit=500").json()["data"]:
        urls += [f"/v1/lessons/{lesson['id']}", f"/v1/lessons/{lesson['id']}/history"]
        urls.append(f"/ui/lessons/{lesson['id']}")
    for url in urls:
        response = client.get(url)
        if response.status_code != 200:
            failed.append(f"GET {url}: {response.status_code}")
    for stage in ("draft", "refine"):
        response = client.post("/v1/retrieve", json={**RETRIEVE, "stage": stage, "k": 20})
        if response.status_code != 200:
            failed.append(f"retrieve {stage}: {response.status_code}")
    if client.get("/v1/admin/export").status_code != 200:
        failed.append("export")
    if client.post("/v1/admin/values/rebuild").status_code != 200:
        failed.append("values rebuild")
    return failed


def test_hostile_text_is_refused_at_every_door_and_every_read_still_answers(service, tmp_path):
    with TestClient(create_app(service)) as client:
        created = client.post("/v1/lessons", json={"lessons": [LESSON]})
        assert created.status_code == 201
        lesson_id = created.json()["ids"][0]
        retrieval = client.post("/v1/retrieve", json={**RETRIEVE, "stage": "draft"}).json()
        before = service.counts()
        accepted = _hostile_writes(client, lesson_id, retrieval["retrieval_id"])
        accepted += _mcp_writes(service)
        assert accepted == [], "\n".join(accepted)
        # Ingest: a file whose runs carry hostile strings has them rejected with the reason;
        # the good run beside them is stored.
        good = json.loads(H200.read_text().splitlines()[0])
        lines = [json.dumps(good)]
        for bad in HOSTILE:
            lines.append(json.dumps({**good, "source": f"run {bad}"}))
            lines.append(
                json.dumps(_with(good, "attempts", [{**good["attempts"][0], "error": bad}]))
            )
        path = tmp_path / "runs.jsonl"
        path.write_text("\n".join(lines) + "\n")
        summary = service.ingest(read_any([path]))
        assert summary.rejected == 2 * len(HOSTILE), summary.rejects
        assert all("NUL" in r["reason"] or "surrogate" in r["reason"] for r in summary.rejects)
        assert service.counts()["trajectories"] == before["trajectories"] + 1
        failed = _reads(client, service)
        assert failed == [], "\n".join(failed)
