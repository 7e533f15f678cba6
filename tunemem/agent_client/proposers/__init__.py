"""Pluggable proposers, by name: `suggest` (the memory service's search, model included),
`structured`, `llm`, `random`."""

from __future__ import annotations

from typing import Any

from tunemem.agent_client.proposers.base import (
    AttemptOutcome,
    Proposal,
    ProposalError,
    ProposalRequest,
    Proposer,
    TaskDescription,
)

PROPOSERS = ("suggest", "structured", "llm", "random")


def create_proposer(name: str, **kwargs: Any) -> Proposer:
    """Build a proposer by name; kwargs go to its constructor (the LLM one needs url, model;
    the suggest one a memory client)."""
    if name == "suggest":
        from tunemem.agent_client.proposers.suggest import SuggestProposer

        return SuggestProposer(**kwargs)
    if name == "structured":
        from tunemem.agent_client.proposers.structured import StructuredProposer

        return StructuredProposer(**kwargs)
    if name == "random":
        from tunemem.agent_client.proposers.random_search import RandomProposer

        return RandomProposer(**kwargs)
    if name == "llm":
        from tunemem.agent_client.proposers.llm import LLMProposer

        return LLMProposer(**kwargs)
    raise ValueError(f"unknown proposer {name!r}; valid: {', '.join(PROPOSERS)}")


__all__ = [
    "PROPOSERS",
    "AttemptOutcome",
    "Proposal",
    "ProposalError",
    "ProposalRequest",
    "Proposer",
    "TaskDescription",
    "create_proposer",
]
