"""The memory API client: retries with backoff, one idempotency key per report, typed errors."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from tunemem.agent_client import (
    AsyncMemoryClient,
    MemoryAPIError,
    MemoryClient,
    Outcome,
    RetryPolicy,
    TransientAPIError,
)

FAST = RetryPolicy(attempts=4, backoff_s=0.001, max_backoff_s=0.002)
RETRIEVAL = {
    "retrieval_id": "r1",
    "lessons": [
        {
            "id": "l1",
            "kind": "exemplar",
            "text": "block 64 works",
            "hint": {"config": {"block_size_x": 64}},
            "score": 1.2,
            "breakdown": {"similarity": 0.8, "value": 0.4, "value_scope": "backend:cuda", "n": 3},
        }
    ],
    "settings": {"lam": 0.5},
}


class FlakyService:
    """Answers `failures` times with 503 (or drops the connection), then succeeds."""

    def __init__(self, failures: int, drop: bool = False) -> None:
        self.failures = failures
        self.drop = drop
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if len(self.requests) <= self.failures:
            if self.drop:
                raise httpx.ConnectError("connection reset", request=request)
            return httpx.Response(503, json={"detail": {"code": "busy", "message": "try later"}})
        if request.url.path == "/v1/retrieve":
            return httpx.Response(200, json=RETRIEVAL)
        if request.url.path == "/v1/outcomes":
            return httpx.Response(200, json={"rewards": {"l1": 0.5}, "values": {"l1": {"q": 0.2}}})
        return httpx.Response(404, json={"detail": {"code": "not_found", "message": "no route"}})


def test_retrieve_parses_ranked_lessons_after_transient_failures() -> None:
    service = FlakyService(failures=2)
    client = MemoryClient("http://memory", retry=FAST, transport=httpx.MockTransport(service))
    retrieval = client.retrieve(
        {"op": "convolution"}, {"chip": "a100"}, stage="refine", k=2, options={"lam": 0.0}
    )
    assert len(service.requests) == 3
    assert retrieval.retrieval_id == "r1"
    lesson = retrieval.lessons[0]
    assert lesson.hint == {"config": {"block_size_x": 64}} and lesson.value == 0.4
    body = json.loads(service.requests[-1].content)
    assert body["stage"] == "refine" and body["k"] == 2 and body["options"] == {"lam": 0.0}


@pytest.mark.parametrize("drop", [False, True])
def test_report_retries_keep_one_idempotency_key(drop: bool) -> None:
    service = FlakyService(failures=2, drop=drop)
    client = MemoryClient("http://memory", retry=FAST, transport=httpx.MockTransport(service))
    receipt = client.report("r1", Outcome(True, True, 1.0, 2.0), used=["l1"])
    keys = {request.headers["Idempotency-Key"] for request in service.requests}
    assert len(service.requests) == 3 and len(keys) == 1
    assert receipt.rewards == {"l1": 0.5}


def test_caller_fixed_idempotency_key_is_sent() -> None:
    service = FlakyService(failures=0)
    client = MemoryClient("http://memory", retry=FAST, transport=httpx.MockTransport(service))
    client.report("r1", Outcome(False, False, error="compile"), used=[], idempotency_key="run:3")
    assert service.requests[0].headers["Idempotency-Key"] == "run:3"
    assert json.loads(service.requests[0].content)["used"] == []


def test_client_errors_are_not_retried() -> None:
    calls = []

    def bad_request(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(422, json={"detail": {"code": "invalid", "message": "bad stage"}})

    client = MemoryClient("http://memory", retry=FAST, transport=httpx.MockTransport(bad_request))
    with pytest.raises(MemoryAPIError) as caught:
        client.retrieve({"op": "x"}, {"chip": "a100"})
    assert len(calls) == 1
    assert caught.value.status == 422 and caught.value.code == "invalid"
    assert not isinstance(caught.value, TransientAPIError)


def test_gives_up_after_the_policy_and_reraises() -> None:
    service = FlakyService(failures=100)
    client = MemoryClient("http://memory", retry=FAST, transport=httpx.MockTransport(service))
    with pytest.raises(TransientAPIError):
        client.retrieve({"op": "x"}, {"chip": "a100"})
    assert len(service.requests) == FAST.attempts


def test_async_client_retries_and_keeps_the_key() -> None:
    service = FlakyService(failures=1)

    async def go() -> tuple[str, float]:
        async with AsyncMemoryClient(
            "http://memory", retry=FAST, transport=httpx.MockTransport(service)
        ) as client:
            retrieval = await client.retrieve({"op": "x"}, {"chip": "a100"})
            receipt = await client.report(retrieval.retrieval_id, Outcome(True, True, 1.0))
            return retrieval.retrieval_id, receipt.rewards["l1"]

    assert asyncio.run(go()) == ("r1", 0.5)
    report_keys = {
        r.headers["Idempotency-Key"] for r in service.requests if r.url.path == "/v1/outcomes"
    }
    assert len(report_keys) == 1
