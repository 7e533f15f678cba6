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


def test_proposers_key_and_size_spaces_as_the_suggest_search_does() -> None:
    """One definition of a configuration's key and a space's size (no copies to drift apart)."""
    from tunemem.agent_client.proposers import base
    from tunemem.search import hints as suggest_hints

    assert base.config_key is suggest_hints.config_key
    assert base.space_size is suggest_hints.space_size
    space = {"bx": (16, 32), "tx": (1,), "flag": ()}
    assert base.space_size(space) == 2
    assert base.config_key(space, {"tx": 1, "bx": 32}) == (32, 1, None)
