"""MemoryClient.suggest / AsyncMemoryClient.suggest: the body they send and the dict they
return (a recorded service answer, through httpx's mock transport)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from tunemem.agent_client import AsyncMemoryClient, MemoryAPIError, MemoryClient

ANSWER = {
    "retrieval_id": "r1",
    "stage": "draft",
    "chip": "a100",
    "suggestions": [
        {
            "config": {"bx": 64},
            "source": "exemplar",
            "lessons": [{"id": "l1", "value": 0.4, "value_scope": "chip:a100", "n": 2}],
            "rationale": "exemplar:l1",
            "prediction": None,
        }
    ],
    "warnings": [],
    "settings": {},
}


def handler(seen: list[dict]):
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/suggest" and request.method == "POST"
        seen.append(json.loads(request.content))
        if seen[-1]["k"] > 100:
            return httpx.Response(422, json={"code": "invalid_request", "message": "k: too big"})
        return httpx.Response(200, json=ANSWER)

    return answer


def test_sync_client_sends_the_contract_body_and_returns_the_answer():
    seen: list[dict] = []
    with MemoryClient("http://memory", transport=httpx.MockTransport(handler(seen))) as client:
        got = client.suggest(
            {"op": "convolution"},
            {"chip": "A100"},
            {"bx": [32, 64]},
            observations=[{"config": {"bx": 32}, "latency_ms": 2.0, "feasible": True}],
            k=3,
            seed=5,
        )
        assert got == ANSWER
        with pytest.raises(MemoryAPIError) as error:
            client.suggest({}, {}, {"params": {"bx": [32]}}, k=101)
        assert error.value.status == 422 and error.value.code == "invalid_request"
    assert seen[0] == {
        "task": {"op": "convolution"},
        "context": {"chip": "A100"},
        "space": {"params": {"bx": [32, 64]}},
        "observations": [{"config": {"bx": 32}, "latency_ms": 2.0, "feasible": True}],
        "k": 3,
        "stage": None,
        "seed": 5,
    }
    assert seen[1]["space"] == {"params": {"bx": [32]}}


def test_async_client_suggests_alike():
    seen: list[dict] = []

    async def main() -> dict:
        transport = httpx.MockTransport(handler(seen))
        async with AsyncMemoryClient("http://memory", transport=transport) as client:
            return await client.suggest({"op": "gemm"}, {"chip": "H200"}, {"BLOCK": [64]}, k=1)

    assert asyncio.run(main()) == ANSWER
    assert seen[0]["space"] == {"params": {"BLOCK": [64]}} and seen[0]["k"] == 1
