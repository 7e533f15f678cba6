"""Pluggable proposers, by name: `suggest` (the memory service's search, model included),
`structured`, `llm`, `random`."""

from __future__ import annotations

import importlib
from typing import Any

from tunemem.agent_client.proposers.base import (
    AttemptOutcome,
    Proposal,
    ProposalError,
    ProposalRequest,
    Proposer,
    TaskDescription,
)

# name -> (module, class), imported when first asked for (Kernel Tuner's strategy registry)
PROPOSER_CLASSES: dict[str, tuple[str, str]] = {
    "suggest": ("tunemem.agent_client.proposers.suggest", "SuggestProposer"),
    "structured": ("tunemem.agent_client.proposers.structured", "StructuredProposer"),
    "llm": ("tunemem.agent_client.proposers.llm", "LLMProposer"),
    "random": ("tunemem.agent_client.proposers.random_search", "RandomProposer"),
}
PROPOSERS = tuple(PROPOSER_CLASSES)


def create_proposer(name: str, **kwargs: Any) -> Proposer:
    """Build a proposer by name; kwargs go to its constructor (the LLM one needs url, model;
    the suggest one a memory client). An unknown name raises ValueError naming the valid ones."""
    if name not in PROPOSER_CLASSES:
        raise ValueError(f"unknown proposer {name!r}; valid: {', '.join(PROPOSERS)}")
    module_name, class_name = PROPOSER_CLASSES[name]
    proposer: Proposer = getattr(importlib.import_module(module_name), class_name)(**kwargs)
    return proposer


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
