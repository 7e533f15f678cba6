"""The suggest proposer: the service's search as the agent's proposer, over the client only."""

from __future__ import annotations

from typing import Any

import httpx

from tunemem.agent_client.models import RetrievedLesson
from tunemem.agent_client.proposers import (
    AttemptOutcome,
    ProposalRequest,
    TaskDescription,
    create_proposer,
)

SPACE = {"bx": (16, 32, 64), "tx": (1, 2)}
TASK = TaskDescription(op="synthetic", chip="a100", backend="cuda", signature={"n": 8})
LESSON = RetrievedLesson(id="l1", kind="exemplar", text="l1", hint={"config": {"bx": 64}})


class RecordingClient:
    """Answers suggest with one configuration and keeps what it was sent."""

    def __init__(self, answer: dict[str, Any] | Exception) -> None:
        self.answer = answer
        self.sent: list[dict[str, Any]] = []

    def suggest(self, **body: Any) -> dict[str, Any]:
        self.sent.append(body)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def _request(history: tuple[AttemptOutcome, ...] = ()) -> ProposalRequest:
    return ProposalRequest(TASK, SPACE, "refine", (LESSON,), (), history, seed=3)


def test_the_proposer_sends_the_run_and_takes_the_first_suggestion() -> None:
    client = RecordingClient(
        {
            "suggestions": [
                {
                    "config": {"bx": 32, "tx": 2},
                    "source": "model",
                    "lessons": [{"id": "not-shown"}],
                    "rationale": "predicted 0.97 of the optimum",
                    "prediction": {"fraction": 0.97},
                }
            ]
        }
    )
    history = (
        AttemptOutcome(0, {"bx": 64, "tx": 1}, True, 2.0),
        AttemptOutcome(1, {"bx": 16, "tx": 1}, False, None),
    )
    proposal = create_proposer("suggest", client=client).propose(_request(history))
    assert proposal.config == {"bx": 32, "tx": 2}
    assert proposal.origin == "model" and proposal.used == ()  # only shown lessons are credited
    (sent,) = client.sent
    assert sent["k"] == 1 and sent["task"]["op"] == "synthetic"
    assert sent["context"] == {"chip": "a100", "backend": "cuda"}
    assert sent["space"] == {"params": {"bx": [16, 32, 64], "tx": [1, 2]}}
    assert sent["observations"] == [
        {"config": {"bx": 64, "tx": 1}, "latency_ms": 2.0, "feasible": True},
        {"config": {"bx": 16, "tx": 1}, "latency_ms": None, "feasible": False},
    ]
    assert sent["seed"] == 3 * 1_000_003 + 2


def test_an_exemplar_suggestion_credits_its_lesson() -> None:
    client = RecordingClient(
        {
            "suggestions": [
                {"config": {"bx": 64, "tx": 1}, "source": "exemplar", "lessons": [{"id": "l1"}]}
            ]
        }
    )
    proposal = create_proposer("suggest", client=client).propose(_request())
    assert proposal.used == ("l1",) and proposal.origin == "exemplar:l1"


def test_an_unreachable_memory_falls_back_to_the_structured_proposer() -> None:
    client = RecordingClient(httpx.ConnectError("refused"))
    proposal = create_proposer("suggest", client=client).propose(_request())
    assert proposal.config == {"bx": 64, "tx": 1} and proposal.used == ("l1",)
    assert create_proposer("suggest").propose(_request()).config == {"bx": 64, "tx": 1}
