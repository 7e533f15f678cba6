"""The structured proposer: lesson hints turned into configurations, then local search.

The logic lives in `search.suggest`, shared with the service's `POST /v1/suggest`; this
proposer hands it the request's lessons and its own past attempts and takes one configuration
per attempt (the memory's next, else the search's; see that module for the order).
"""

from __future__ import annotations

from tunemem.agent_client.models import RetrievedLesson
from tunemem.agent_client.proposers.base import Proposal, ProposalError, ProposalRequest, Proposer
from tunemem.search.suggest import (
    HintedLesson,
    Observation,
    SpaceExhausted,
    SuggestState,
    next_suggestion,
)

__all__ = ["StructuredProposer", "hinted"]


def hinted(lesson: RetrievedLesson) -> HintedLesson:
    """A retrieved lesson as `search.suggest` takes it."""
    return HintedLesson(
        id=lesson.id,
        hint=lesson.hint,
        chips=tuple(lesson.applicability.get("chips") or ()),
        score=lesson.score,
        transferred=lesson.transferred,
        text=lesson.text,
        avoid_applies=lesson.warning or lesson.kind != "failure",
    )


class StructuredProposer(Proposer):
    """Turns lesson hints into configurations; explores around the best when they run out."""

    name = "structured"

    def propose(self, request: ProposalRequest) -> Proposal:
        state = SuggestState(
            space=request.space,
            stage=request.stage,
            lessons=tuple(hinted(lesson) for lesson in request.lessons),
            seen_lessons=tuple(hinted(lesson) for lesson in request.seen_lessons),
            observations=tuple(
                Observation(a.config, a.feasible, a.latency_ms, a.used) for a in request.history
            ),
        )
        try:
            chosen = next_suggestion(state, request.rng())
        except SpaceExhausted as exc:
            raise ProposalError(str(exc)) from exc
        return Proposal(chosen.config, chosen.used, chosen.origin, chosen.rationale)
