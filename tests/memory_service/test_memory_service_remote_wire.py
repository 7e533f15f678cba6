"""`RemoteService` (the CLI's and MCP's client) sends what the agent's `MemoryClient` sends: both
build their requests with `tunemem.wire`, so for each call the service reads the same request from
either. SYNTHETIC requests; no service runs (each request is recorded, then refused with 418).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
from pydantic import BaseModel

from tunemem.agent_client import MemoryAPIError, MemoryClient, Outcome, RetryPolicy
from tunemem.memory_service.core.errors import ServiceError
from tunemem.memory_service.core.schemas.ingest import TrajectoriesIn
from tunemem.memory_service.core.schemas.learning import RetrieveRequest
from tunemem.memory_service.core.schemas.lessons import LessonCreate, LessonFilter, LessonsCreate
from tunemem.memory_service.core.schemas.outcomes import ReportRequest
from tunemem.memory_service.core.schemas.suggest import SuggestRequest
from tunemem.memory_service.remote import RemoteService

TASK = {"op": "convolution", "kernel": "conv2d", "signature": {"n": 4096}}
CONTEXT = {"chip": "a100", "backend": "cuda"}
LESSON = {"kind": "exemplar", "text": "BLOCK 64 on a100", "hint": {"config": {"BLOCK": 64}}}
OUTCOME = Outcome(True, True, 1.5, 2.0, config={"BLOCK": 16}, timings_ms=[1.4, 1.5, 1.6])


def _filter(query: dict[str, Any]) -> LessonFilter:
    return LessonFilter.model_validate(query)


# name: (the client's call, the remote's call given the request as the service read it, and the
# schema (or, for the listing, the query) the service reads it with)
CASES: dict[str, tuple[Callable[[MemoryClient], Any], Callable[..., Any], Any]] = {
    "retrieve": (
        lambda c: c.retrieve(TASK, CONTEXT, "refine", 2, "tiles", {"lam": 0.0}),
        lambda r, request: r.retrieve(request),
        RetrieveRequest,
    ),
    "suggest": (
        lambda c: c.suggest(
            TASK, CONTEXT, {"BLOCK": [16, 32]}, [{"config": {"BLOCK": 16}, "latency_ms": 1.5}], 2
        ),
        lambda r, request: r.suggest(request),
        SuggestRequest,
    ),
    "report": (
        lambda c: c.report("r1", OUTCOME, used=["l1"], idempotency_key="run:1"),
        lambda r, request: r.report(request, idempotency_key="run:1"),
        ReportRequest,
    ),
    "add_lessons": (
        lambda c: c.add_lessons([LESSON]),
        lambda r, request: r.add_lessons(request.lessons),
        LessonsCreate,
    ),
    "upload_trajectories": (
        lambda c: c.upload_trajectories([{"task": TASK, "context": CONTEXT, "attempts": []}]),
        lambda r, request: r.upload_trajectories(request),
        TrajectoriesIn,
    ),
    "list_lessons": (
        lambda c: c.list_lessons(op="convolution", kind="exemplar", limit=5, chip=None),
        lambda r, request: r.list_lessons(request),
        _filter,
    ),
}


def _recorder(seen: list[dict[str, Any]]) -> httpx.MockTransport:
    def record(request: httpx.Request) -> httpx.Response:
        parts = urlsplit(str(request.url))
        seen.append(
            {
                "method": request.method,
                "path": parts.path,
                "query": dict(parse_qsl(parts.query)),
                "body": json.loads(request.content) if request.content else None,
                "idempotency-key": request.headers.get("idempotency-key"),
            }
        )
        return httpx.Response(418, json={"code": "recorded", "message": "recorded"})

    return httpx.MockTransport(record)


def _read(schema: Any, seen: dict[str, Any]) -> BaseModel:
    """The request as the service reads it: its body, or its query for a listing."""
    return schema(seen["query"]) if schema is _filter else schema.model_validate(seen["body"])


@pytest.mark.parametrize("name", list(CASES))
def test_the_remote_service_sends_what_the_agents_client_sends(name: str) -> None:
    by_client: list[dict[str, Any]] = []
    by_remote: list[dict[str, Any]] = []
    client_call, remote_call, schema = CASES[name]
    client = MemoryClient(
        "http://memory", retry=RetryPolicy(attempts=1), transport=_recorder(by_client)
    )
    with pytest.raises(MemoryAPIError):
        client_call(client)
    request = _read(schema, by_client[0])
    remote = RemoteService("http://memory")
    remote._client = httpx.Client(base_url="http://memory", transport=_recorder(by_remote))
    with pytest.raises(ServiceError):
        remote_call(remote, request)
    (sent,), (received,) = by_client, by_remote
    assert (received["method"], received["path"]) == (sent["method"], sent["path"])
    assert received["idempotency-key"] == sent["idempotency-key"]
    assert _read(schema, received) == request


def test_every_field_of_a_lesson_reaches_the_service_from_the_remote() -> None:
    """`add_lessons` sends each lesson's whole JSON (a field the wire dropped would read back as
    its default, and the comparison above could not see it)."""
    seen: list[dict[str, Any]] = []
    remote = RemoteService("http://memory")
    remote._client = httpx.Client(base_url="http://memory", transport=_recorder(seen))
    lesson = LessonCreate.model_validate({**LESSON, "code": "x = 1", "provenance": {"run": "r"}})
    with pytest.raises(ServiceError):
        remote.add_lessons([lesson])
    assert seen[0]["body"] == {"lessons": [lesson.model_dump(mode="json")]}
