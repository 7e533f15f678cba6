"""The proposers' registry: every name resolves, lazily, to a proposer class, and an unknown
name is refused with the valid ones."""

from __future__ import annotations

import importlib
import inspect

import pytest

from tunemem.agent_client.proposers import (
    PROPOSER_CLASSES,
    PROPOSERS,
    Proposer,
    create_proposer,
)


@pytest.mark.parametrize("name", PROPOSERS)
def test_every_registered_proposer_is_a_proposer_class(name: str) -> None:
    module_name, class_name = PROPOSER_CLASSES[name]
    found = getattr(importlib.import_module(module_name), class_name)
    assert inspect.isclass(found) and issubclass(found, Proposer)


def test_registered_proposers_build_by_name() -> None:
    assert type(create_proposer("structured")).__name__ == "StructuredProposer"
    assert type(create_proposer("random")).__name__ == "RandomProposer"


def test_an_unknown_proposer_is_refused_with_the_valid_names() -> None:
    with pytest.raises(ValueError, match="valid: suggest, structured, llm, random"):
        create_proposer("bayesian")
