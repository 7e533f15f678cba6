"""The LLM proposer against a local OpenAI-compatible test server (no network, no real model)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tunemem.agent_client.models import RetrievedLesson
from tunemem.agent_client.proposers import AttemptOutcome, ProposalRequest, TaskDescription
from tunemem.agent_client.proposers.llm import LLMProposer

SPACE = {"bx": (32, 64), "tx": (1, 2)}


class ChatServer:
    """A local /chat/completions endpoint that replays scripted assistant replies."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions":
                    self.send_response(404)
                    self.end_headers()
                    return
                content = server.replies.pop(0) if server.replies else "{}"
                payload = json.dumps(
                    {
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": content}}
                        ]
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def chat() -> Iterator[Any]:
    servers: list[ChatServer] = []

    def start(replies: list[str]) -> ChatServer:
        servers.append(ChatServer(replies))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _request() -> ProposalRequest:
    lesson = RetrievedLesson(
        id="L1",
        kind="exemplar",
        text="block 64 with tile 2 was fastest on a100",
        rendered_text="block 64 with tile 2 was fastest on a100 (rendered)",
        hint={"config": {"bx": 64, "tx": 2}},
        score=1.0,
    )
    history = (AttemptOutcome(0, {"bx": 32, "tx": 1}, True, 3.5),)
    return ProposalRequest(
        TaskDescription(op="conv", chip="w6600", backend="hip"),
        SPACE,
        "refine",
        (lesson,),
        (),
        history,
    )


def test_request_carries_task_lessons_and_own_outcomes(chat: Any) -> None:
    server = chat(['{"config": {"bx": 64, "tx": 2}, "used": ["L1", "bogus"], "rationale": "hint"}'])
    proposer = LLMProposer(server.url, model="test-model", api_key="sk-test")
    proposal = proposer.propose(_request())
    assert proposal.config == {"bx": 64, "tx": 2}
    assert proposal.used == ("L1",)  # ids the proposer was not offered are dropped
    assert proposal.origin == "llm" and proposal.rationale == "hint"
    body = server.requests[0]
    assert body["model"] == "test-model"
    assert server.headers[0]["Authorization"] == "Bearer sk-test"
    prompt = body["messages"][1]["content"]
    assert "w6600" in prompt and "(rendered)" in prompt and "[L1]" in prompt
    assert "3.5 ms" in prompt  # its own outcome, and nothing it did not earn
    assert body["messages"][0]["role"] == "system"


def test_unusable_answer_gets_one_repair_round(chat: Any) -> None:
    server = chat(
        [
            '```json\n{"config": {"bx": 48, "tx": 2}}\n```',
            'Sure! {"config": {"bx": 64, "tx": 1}, "used": []}',
        ]
    )
    proposal = LLMProposer(server.url, model="m").propose(_request())
    assert proposal.config == {"bx": 64, "tx": 1} and proposal.used == ()
    repair = server.requests[1]["messages"]
    assert repair[-1]["role"] == "user" and "not allowed" in repair[-1]["content"]


def test_repeated_garbage_falls_back_to_structured(chat: Any) -> None:
    server = chat(["no json here", '{"config": {"bx": 32, "tx": 1}}'])  # 2nd repeats a tried one
    proposal = LLMProposer(server.url, model="m").propose(_request())
    assert proposal.origin.startswith("llm-fallback:")
    assert proposal.config == {"bx": 64, "tx": 2}  # the structured proposer's exemplar pick
    assert len(server.requests) == 2


def test_unreachable_endpoint_falls_back() -> None:
    proposer = LLMProposer("http://127.0.0.1:9/v1", model="m", timeout_s=0.5)
    proposal = proposer.propose(_request())
    assert proposal.origin.startswith("llm-fallback:") and "endpoint error" in proposal.rationale


def test_prompt_spells_out_the_glossary_and_staleness() -> None:
    from tunemem.agent_client.prompts import render_lessons

    lesson = RetrievedLesson.from_json(
        {
            "id": "L2",
            "kind": "insight",
            "text": "each warp of 32 threads reads a 128-byte segment",
            "transferred": True,
            "rendered_text": "each warp of 32 threads reads a 128-byte segment",
            "stale": True,
            "glossary": [
                {
                    "term": "warp",
                    "counterpart": "wavefront",
                    "note": "a wavefront on mi300x is 64 lanes",
                    "caveat": "a warp on cuda is 32 lanes; a wavefront on mi300x is 64 lanes",
                }
            ],
        }
    )
    request = ProposalRequest(
        TaskDescription(op="conv", chip="mi300x", backend="hip"), SPACE, "draft", (lesson,), (), ()
    )
    text = render_lessons(request)
    assert "STALE" in text
    assert "warp -> wavefront (a warp on cuda is 32 lanes; a wavefront on mi300x is 64" in text
