"""One wire for the agent's clients (`agent_client.calls`, `tunemem.wire`): the sync and async
clients are built from one table of calls and send the same requests, and the tuners' link sends
the same requests as the client. SYNTHETIC answers; no service runs.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import typing
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest

from tunemem.agent_client import AsyncMemoryClient, MemoryClient, Outcome, RetryPolicy
from tunemem.agent_client.calls import CALLS
from tunemem.agent_client.tuners.memory_link import MemoryLink

TASK = {"op": "convolution", "kernel": "conv2d", "signature": {"n": 4096}}
CONTEXT = {"chip": "a100", "backend": "cuda"}
OUTCOME = Outcome(True, True, 1.5, 2.0, config={"BLOCK": 16}, timings_ms=[1.4, 1.5, 1.6])
OBSERVATIONS = [{"config": {"BLOCK": 16}, "latency_ms": 1.5}]

# Arguments for every call of the table: a call added to it needs a line here (a test says so).
EXAMPLES: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "health": ((), {}),
    "retrieve": (
        (TASK, CONTEXT),
        {"stage": "refine", "k": 2, "query": "tiles", "options": {"lam": 0.0}},
    ),
    "suggest": (
        (TASK, CONTEXT, {"BLOCK": [16, 32, 64]}),
        {"observations": OBSERVATIONS, "k": 2, "stage": "draft", "options": {"lam": 1}, "seed": 7},
    ),
    "report": (("r1", OUTCOME), {"used": ["l1", "l2"], "idempotency_key": "run:1"}),
    "add_lessons": (([{"kind": "exemplar", "text": "BLOCK 64 on a100"}],), {}),
    "upload_trajectories": (([{"task": TASK, "context": CONTEXT, "attempts": []}],), {}),
    "list_lessons": ((), {"op": "convolution", "kind": None, "limit": 5, "offset": 10}),
}

ANSWERS: dict[str, dict[str, Any]] = {
    "/v1/retrieve": {
        "retrieval_id": "r1",
        "lessons": [{"id": "l1", "kind": "exemplar", "text": "BLOCK 64", "score": 1.0}],
        "settings": {"lam": 0.0},
        "stage": "refine",
        "chip": "a100",
    },
    "/v1/outcomes": {"outcome_id": 3, "reward": 0.5, "rewards": {"l1": 0.5}, "values": {}},
}
OTHER_ANSWER = {"ok": True, "count": 0, "data": []}
FAST = RetryPolicy(attempts=1)


def _seen(method: str, url: str, headers: Any, body: bytes) -> dict[str, Any]:
    """What a request carried, as a service reads it."""
    parts = urlsplit(url)
    return {
        "method": method,
        "path": parts.path,
        "query": sorted(parse_qsl(parts.query)),
        "body": json.loads(body) if body else None,
        "authorization": headers.get("authorization"),
        "content-type": headers.get("content-type"),
        "idempotency-key": headers.get("idempotency-key"),
    }


def _answer(path: str) -> dict[str, Any]:
    return ANSWERS.get(path, OTHER_ANSWER)


def test_every_call_of_the_table_has_an_example() -> None:
    assert set(EXAMPLES) == {call.__name__ for call in CALLS}


@pytest.mark.parametrize("client_class", [MemoryClient, AsyncMemoryClient])
def test_the_clients_are_built_from_the_one_table_of_calls(client_class: type) -> None:
    """Each call of the table is a method of both clients with the call's signature and the
    type its answer is read into, and neither client has a call of its own beside them."""
    own = {"close", "aclose"}
    methods = {
        name
        for name, member in inspect.getmembers(client_class, inspect.isfunction)
        if not name.startswith("_")
    }
    assert methods - own == {call.__name__ for call in CALLS}
    for call in CALLS:
        method = getattr(client_class, call.__name__)
        called, made = inspect.signature(call), inspect.signature(method)
        assert list(made.parameters)[0] == "self"
        assert list(made.parameters.values())[1:] == list(called.parameters.values())
        (answer,) = typing.get_args(typing.get_type_hints(call)["return"])
        assert made.return_annotation == answer  # Retrieval, OutcomeReceipt, dict[str, Any]
        assert inspect.iscoroutinefunction(method) == (client_class is AsyncMemoryClient)
        assert method.__doc__ == call.__doc__


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_the_sync_and_async_clients_send_the_same_request_and_read_the_same_answer(name):
    seen: list[dict[str, Any]] = []

    def service(request: httpx.Request) -> httpx.Response:
        seen.append(_seen(request.method, str(request.url), request.headers, request.content))
        return httpx.Response(200, json=_answer(request.url.path))

    args, kwargs = EXAMPLES[name]
    with MemoryClient(
        "http://memory", "key", retry=FAST, transport=httpx.MockTransport(service)
    ) as client:
        answer = getattr(client, name)(*args, **kwargs)

    async def go() -> Any:
        async with AsyncMemoryClient(
            "http://memory", "key", retry=FAST, transport=httpx.MockTransport(service)
        ) as aio:
            return await getattr(aio, name)(*args, **kwargs)

    assert asyncio.run(go()) == answer
    assert len(seen) == 2 and seen[0] == seen[1]
    assert seen[0]["authorization"] == "Bearer key"


class RecordingMemory:
    """A loopback HTTP server that records every request and answers the SYNTHETIC `ANSWERS`."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        memory = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _record(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                seen = _seen(self.command, self.path, self.headers, body)
                memory.seen.append(seen)
                answer = json.dumps(_answer(seen["path"])).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            do_GET = do_POST = _record  # noqa: N815 (the stdlib's names)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def memory() -> Iterator[RecordingMemory]:
    server = RecordingMemory()
    yield server
    server.close()


@pytest.mark.parametrize("name", ["suggest", "report", "upload_trajectories", "list_lessons"])
def test_the_tuners_link_sends_the_same_requests_as_the_client(memory: RecordingMemory, name):
    args, kwargs = EXAMPLES[name]
    if name == "report":  # the link makes a key of its own for every report
        kwargs = {k: v for k, v in kwargs.items() if k != "idempotency_key"}
    with MemoryClient(memory.url, "key", retry=FAST) as client:
        getattr(client, name)(*args, **kwargs)
    link = MemoryLink(memory.url, "key", timeout_s=5.0)
    try:
        getattr(link, name)(*args, **kwargs)
    finally:
        link.close()
    by_client, by_link = memory.seen
    if name == "report":
        keys = [seen.pop("idempotency-key") for seen in (by_client, by_link)]
        assert all(isinstance(key, str) and len(key) == 32 for key in keys)
        assert keys[0] != keys[1]
    assert by_link == by_client
    assert by_link["authorization"] == "Bearer key"
