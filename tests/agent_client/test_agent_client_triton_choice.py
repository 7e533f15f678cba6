"""`triton.choice.choose` through its `KeyTuning` protocol alone: a SYNTHETIC tuning object
(no Triton, no `MemoryTuning`, no memory service) answers the questions, and the choice hands
back what it decided through `record`, never by writing the caller's members."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from tunemem.agent_client.tuners.triton.choice import KeyTuning, choose
from tunemem.agent_client.tuners.triton.records import Pending
from tunemem.agent_client.tuners.triton.rounds import RoundPolicy


def config(block: int) -> Any:
    """A SYNTHETIC stand-in for `triton.Config` (kwargs, num_warps, num_stages)."""
    return SimpleNamespace(kwargs={"BLOCK": block}, num_warps=4, num_stages=2)


@dataclass
class FakeTuning:
    """A SYNTHETIC `KeyTuning`: the memory ranks the largest blocks first."""

    answer: bool = True
    memory_url: str = "http://memory.invalid"
    policy: RoundPolicy = field(default_factory=RoundPolicy)
    seed: int = 0
    asked: list[int] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    recorded: list[tuple[Pending, dict[str, Any]]] = field(default_factory=list)

    def task_of(self, named: dict[str, Any], keys: list[str]) -> dict[str, Any]:
        return {"op": "fake", "kernel": "fake", "signature": {k: named[k] for k in keys}}

    def budget(self, given: int) -> int:
        return 2

    def suggest(
        self,
        task: dict[str, Any],
        valid: list[dict[str, Any]],
        k: int,
        observations: list[dict[str, Any]],
    ) -> dict[str, Any] | None:
        self.asked.append(k)
        if not self.answer:
            return None
        ranked = sorted(valid, key=lambda c: -c["BLOCK"])[:k]
        return {
            "retrieval_id": "r1",
            "suggestions": [
                {"config": c, "source": "exemplar", "lessons": [{"id": "l1"}]} for c in ranked
            ],
        }

    def warn(self, message: str) -> None:
        self.said.append(message)

    def record(self, pending: Pending, decision: dict[str, Any]) -> None:
        self.recorded.append((pending, decision))


def test_choose_asks_and_records_through_the_protocol_only() -> None:
    tuning = FakeTuning()
    protocol: KeyTuning = tuning  # mypy holds the fake to the protocol, as MemoryTuning
    configs = [config(b) for b in (16, 32, 64, 128)]
    chosen = choose(protocol, configs, {"n": 1024}, ["n"], None)
    assert [c.kwargs["BLOCK"] for c in chosen] == [128]  # the opening round, no benchmarking
    ((pending, decision),) = tuning.recorded
    assert pending.key == {"n": 1024} and pending.retrieval_id == "r1"
    assert decision["how"] == "memory" and decision["given"] == 4 and decision["timed"] == 1
    assert tuning.said == []


def test_no_answer_is_every_configuration_recorded_once() -> None:
    tuning = FakeTuning(answer=False)
    configs = [config(b) for b in (16, 32, 64)]
    assert choose(tuning, configs, {"n": 8}, ["n"], None) == configs
    ((pending, decision),) = tuning.recorded
    assert decision["how"].startswith("the memory could not help")
    assert set(pending.origins.values()) == {"given"}
