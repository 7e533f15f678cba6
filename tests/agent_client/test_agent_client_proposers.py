"""Proposers: hints become configurations, no repeats, and no path to the recording."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

from tunemem.agent_client.graph import proposal_request
from tunemem.agent_client.models import RetrievedLesson
from tunemem.agent_client.proposers import (
    AttemptOutcome,
    ProposalRequest,
    TaskDescription,
    create_proposer,
)
from tunemem.agent_client.proposers.base import Proposal, Proposer
from tunemem.agent_client.run import run_graph
from tunemem.kernels.runners.replay import RecordedMeasurement, Recording, ReplayRunner

SPACE = {"bx": (16, 32, 64, 128), "tx": (1, 2, 4)}
TASK = TaskDescription(op="synthetic", chip="a100", backend="cuda")


def _lesson(
    lesson_id: str,
    hint: dict[str, Any],
    warning: bool = False,
    score: float = 1.0,
    transferred: bool = False,
) -> RetrievedLesson:
    return RetrievedLesson(
        id=lesson_id,
        kind="exemplar",
        text=lesson_id,
        hint=hint,
        warning=warning,
        score=score,
        transferred=transferred,
    )


def _request(lessons=(), history=(), seen=()) -> ProposalRequest:
    return ProposalRequest(TASK, SPACE, "refine", tuple(lessons), tuple(seen), tuple(history))


def test_structured_tries_top_ranked_exemplar_and_credits_it_alone() -> None:
    lessons = [_lesson("a", {"config": {"bx": 64, "tx": 2}}), _lesson("b", {"config": {"bx": 32}})]
    proposal = create_proposer("structured").propose(_request(lessons))
    assert proposal.config == {"bx": 64, "tx": 2}
    assert proposal.used == ("a",)


def test_structured_skips_tried_and_snaps_foreign_values() -> None:
    tried = AttemptOutcome(0, {"bx": 64, "tx": 2}, True, 1.0)
    lessons = [_lesson("a", {"config": {"bx": 64, "tx": 2}}), _lesson("b", {"config": {"bx": 100}})]
    proposal = create_proposer("structured").propose(_request(lessons, [tried]))
    # bx=100 is not allowed here: snapped to 128; tx comes from the best so far.
    assert proposal.config == {"bx": 128, "tx": 2} and proposal.used == ("b",)


def test_structured_applies_preferences_then_explores_locally() -> None:
    best = AttemptOutcome(0, {"bx": 32, "tx": 1}, True, 2.0)
    prefer = _lesson("p", {"param": "tx", "value": 4, "effect": "prefer", "median_speedup": 1.3})
    proposer = create_proposer("structured")
    first = proposer.propose(_request([prefer], [best]))
    assert first.config == {"bx": 32, "tx": 4} and first.used == ("p",)
    after = AttemptOutcome(1, first.config, True, 3.0)
    second = proposer.propose(_request([prefer], [best, after]))
    assert second.origin == "local" and second.used == ()
    changed = [k for k in SPACE if second.config[k] != best.config[k]]
    assert len(changed) == 1


def test_structured_explores_instead_of_below_average_lessons() -> None:
    best = AttemptOutcome(0, {"bx": 32, "tx": 1}, True, 2.0)
    weak = _lesson("w", {"config": {"bx": 128, "tx": 4}}, score=-0.5)
    proposal = create_proposer("structured").propose(_request([weak], [best]))
    assert proposal.origin == "local" and proposal.used == ()
    # Before anything works, any configuration is worth trying.
    first = create_proposer("structured").propose(_request([weak]))
    assert first.config == {"bx": 128, "tx": 4}


def test_draft_prefers_same_backend_configurations() -> None:
    foreign = _lesson("f", {"config": {"bx": 16, "tx": 1}}, score=2.0, transferred=True)
    local = _lesson("l", {"config": {"bx": 64, "tx": 2}}, score=0.5)
    request = ProposalRequest(TASK, SPACE, "draft", (foreign, local), (), ())
    assert create_proposer("structured").propose(request).used == ("l",)


def test_structured_honours_failure_warnings() -> None:
    avoid = _lesson("f", {"avoid": {"bx": 16}, "failure_rate": 1.0, "n": 4}, warning=True)
    proposer = create_proposer("structured")
    history: list[AttemptOutcome] = []
    for index in range(len(SPACE["bx"]) * len(SPACE["tx"]) - len(SPACE["tx"])):
        proposal = proposer.propose(_request([avoid], history))
        assert proposal.config["bx"] != 16
        history.append(AttemptOutcome(index, proposal.config, True, 1.0 + index))


def test_random_never_repeats_and_covers_the_space() -> None:
    proposer = create_proposer("random")
    history: list[AttemptOutcome] = []
    for index in range(12):
        proposal = proposer.propose(_request(history=history))
        history.append(AttemptOutcome(index, proposal.config, False, None, "rejected"))
    assert len({tuple(a.config.values()) for a in history}) == 12


def _reachable(root: object, limit: int = 200_000) -> list[object]:
    seen: set[int] = set()
    found: list[object] = []
    stack = [root]
    while stack and len(seen) < limit:
        item = stack.pop()
        if id(item) in seen or isinstance(item, type):
            continue
        seen.add(id(item))
        found.append(item)
        stack.extend(gc.get_referents(item))
    return found


class SpyProposer(Proposer):
    """Records what it is handed and checks that the recording is not reachable from it."""

    name = "spy"

    def __init__(self) -> None:
        self.inner = create_proposer("structured")
        self.requests: list[ProposalRequest] = []
        self.leaks: list[str] = []

    def propose(self, request: ProposalRequest) -> Proposal:
        self.requests.append(request)
        for thing in _reachable(request) + _reachable(self):
            if isinstance(thing, Recording | ReplayRunner | RecordedMeasurement):
                self.leaks.append(type(thing).__name__)
        return self.inner.propose(request)


def test_proposer_cannot_reach_the_recording(synthetic_cache: Path) -> None:
    runner = ReplayRunner(path=synthetic_cache)
    spy = SpyProposer()
    result = run_graph(runner, spy, None, budget=6, seed=1)
    assert len(spy.requests) == 6 and spy.leaks == []
    # It only learns latencies of configurations it chose, in the order it chose them.
    for i, request in enumerate(spy.requests):
        assert [a.config for a in request.history] == [a["config"] for a in result.attempts[:i]]
    assert all(isinstance(request.space["block_size_x"], tuple) for request in spy.requests)


def test_proposal_request_is_built_from_state_alone() -> None:
    state = {
        "run_id": "r",
        "task": {"op": "x", "chip": "a100", "backend": "cuda", "kernel": None, "signature": {}},
        "space": {"bx": [1, 2]},
        "budget": 3,
        "seed": 0,
        "history": [
            {"index": 0, "config": {"bx": 1}, "feasible": True, "latency_ms": 1.0, "used": []}
        ],
    }
    request = proposal_request(state)  # type: ignore[arg-type]
    assert request.best() is not None and request.best().latency_ms == 1.0
    assert request.tried() == {(1,)}
