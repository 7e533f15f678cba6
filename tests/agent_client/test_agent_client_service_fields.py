"""The Python client keeps what the service says: a retrieval's warnings (an unrecognised chip,
with the names it may have meant), its chip and scope chain, and a report's `duplicate`."""

from __future__ import annotations

import warnings

import httpx
import pytest

from tunemem.agent_client import MemoryClient, Outcome, ServiceWarning

LESSON = {
    "kind": "insight",
    "text": "tile the convolution 4 high on AMD GPUs",
    "applicability": {"op": "convolution"},
}


@pytest.fixture
def memory(client) -> MemoryClient:
    """A MemoryClient whose requests go to an in-process server on a fresh store."""

    def forward(request: httpx.Request) -> httpx.Response:
        answer = client.request(
            request.method, request.url.path, content=request.content, headers=request.headers
        )
        return httpx.Response(answer.status_code, content=answer.content, headers=answer.headers)

    assert client.post("/v1/lessons", json={"lessons": [LESSON]}).status_code == 201
    return MemoryClient("http://memory", transport=httpx.MockTransport(forward))


def test_an_unrecognised_chip_reaches_the_caller(memory: MemoryClient) -> None:
    with pytest.warns(ServiceWarning, match="did you mean.*mi300x"):
        retrieval = memory.retrieve({"op": "convolution"}, {"chip": "MI300XX"}, k=1)
    (warning,) = retrieval.warnings
    assert "unknown chip 'MI300XX'" in warning and "mi300x" in warning
    assert retrieval.chip is None and retrieval.scope_chain[-1] == "global"
    assert retrieval.stage == "draft"


def test_a_known_chip_warns_nothing_and_keeps_its_scope_chain(memory: MemoryClient) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ServiceWarning)
        retrieval = memory.retrieve({"op": "convolution"}, {"chip": "MI300X"}, k=1)
    assert retrieval.warnings == [] and retrieval.chip == "mi300x"
    assert retrieval.scope_chain[0] == "chip:mi300x" and retrieval.scope_chain[-1] == "global"


def test_a_retried_report_says_it_was_a_duplicate(memory: MemoryClient) -> None:
    retrieval = memory.retrieve({"op": "convolution"}, {"chip": "MI300X"}, k=1)
    used = [lesson.id for lesson in retrieval.lessons]
    outcome = Outcome(compiled=True, correct=True, latency_ms=1.0, best_before_ms=2.0)
    first = memory.report(retrieval.retrieval_id, outcome, used=used, idempotency_key="run-1/1")
    again = memory.report(retrieval.retrieval_id, outcome, used=used, idempotency_key="run-1/1")
    assert first.duplicate is False and again.duplicate is True
    assert again.outcome_id == first.outcome_id and again.reward == first.reward
    assert again.rewards == first.rewards
