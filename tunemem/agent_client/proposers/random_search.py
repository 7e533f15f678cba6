"""Random search: the no-memory baseline. Uniform over the declared space, never repeating."""

from __future__ import annotations

from tunemem.agent_client.proposers.base import Proposal, ProposalRequest, Proposer, random_untried


class RandomProposer(Proposer):
    """Ignores lessons; samples untried configurations uniformly at random."""

    name = "random"

    def propose(self, request: ProposalRequest) -> Proposal:
        config = random_untried(request, request.rng())
        return Proposal(config=config, used=(), origin="random", rationale="uniform sample")
