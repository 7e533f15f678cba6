"""The suggest proposer: the memory service's own search (`POST /v1/suggest`), one
configuration per attempt.

The service answers with the memory's exemplars first, then, once the run has outcomes and its
performance model predicts better, the model's configurations (expected improvement over every
stored search space of the family, refit to this run's outcomes), then search. The proposer sends
the run's own attempts as observations and nothing else it could not know. When the service
cannot be reached, it falls back to the structured proposer on the lessons already retrieved.
"""

from __future__ import annotations

import logging
from typing import Any

from tunemem.agent_client.proposers.base import (
    AttemptOutcome,
    Proposal,
    ProposalRequest,
    Proposer,
)
from tunemem.agent_client.proposers.structured import StructuredProposer

log = logging.getLogger(__name__)


def spread_of(attempt: AttemptOutcome) -> dict[str, Any]:
    """The spread of the timings behind a feasible attempt's latency, where it was measured:
    the model weighs a timing with a wide spread less."""
    if not attempt.feasible or attempt.latency_ms is None or attempt.latency_spread_ms is None:
        return {}
    return {"latency_spread_ms": attempt.latency_spread_ms, "repetitions": attempt.repetitions}


class SuggestProposer(Proposer):
    """Asks the memory service for the next configuration of the run."""

    name = "suggest"

    def __init__(self, client: Any = None, options: dict[str, Any] | None = None) -> None:
        """Args:
        client: a `MemoryClient` (anything with its `suggest`); None: structured only.
        options: ranking options sent with each request (as the agent's retrievals send)."""
        self.client = client
        self.options = options or {}
        self._fallback = StructuredProposer()

    def propose(self, request: ProposalRequest) -> Proposal:
        if self.client is None:
            return self._fallback.propose(request)
        task = request.task
        observations = [
            {
                "config": dict(a.config),
                "latency_ms": a.latency_ms if a.feasible else None,
                "feasible": bool(a.feasible and a.latency_ms is not None),
                **spread_of(a),
            }
            for a in request.history
        ]
        try:
            answer = self.client.suggest(
                task={
                    "op": task.op,
                    "signature": dict(task.signature),
                    **({"kernel": task.kernel} if task.kernel else {}),
                },
                context={"chip": task.chip, "backend": task.backend},
                space={"params": {name: list(values) for name, values in request.space.items()}},
                observations=observations,
                k=1,
                stage=request.stage,
                options=self.options or None,
                seed=request.seed * 1_000_003 + len(request.history),
            )
        except Exception as exc:  # the memory unreachable or refusing: never break the run
            log.warning("suggest failed (%s); the structured proposer takes over", exc)
            return self._fallback.propose(request)
        suggestions = answer.get("suggestions") or []
        if not suggestions:
            return self._fallback.propose(request)
        chosen = suggestions[0]
        # Only lessons of the agent's own retrieval can be credited on its report.
        shown = {lesson.id for lesson in request.lessons}
        used = tuple(
            lesson["id"] for lesson in chosen.get("lessons") or () if lesson["id"] in shown
        )
        source = str(chosen.get("source") or "search")
        return Proposal(
            config=dict(chosen["config"]),
            used=used,
            origin=source if source != "exemplar" else f"exemplar:{','.join(used)}",
            rationale=str(chosen.get("rationale") or "")[:400],
        )
