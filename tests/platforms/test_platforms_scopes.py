"""Tests of scope chains and scope parsing."""

from __future__ import annotations

import pytest

from tunemem.platforms import SCOPE_LEVELS, parse_scope, resolve, scope_chain
from tunemem.platforms.scopes import format_scope


def test_known_chip_chain() -> None:
    assert scope_chain("h200") == ["chip:h200", "family:nvidia-hopper", "backend:cuda", "global"]
    assert scope_chain(resolve("AMD Instinct MI250X")) == [
        "chip:mi250x",
        "family:amd-cdna2",
        "backend:hip",
        "global",
    ]


def test_device_name_is_resolved() -> None:
    assert scope_chain("NVIDIA A100-PCIE-40GB")[0] == "chip:a100"


def test_unknown_chip_chain_has_backend_and_global_only() -> None:
    assert scope_chain(resolve("AMD Instinct MI999")) == ["backend:hip", "global"]
    assert scope_chain(resolve("Frobnicator", backend="cpu")) == ["backend:cpu", "global"]


def test_chain_levels_are_ordered() -> None:
    levels = [parse_scope(scope)[0] for scope in scope_chain("ascend-910b")]
    assert levels == list(SCOPE_LEVELS)


def test_parse_scope() -> None:
    assert parse_scope("family:nvidia-hopper") == ("family", "nvidia-hopper")
    assert parse_scope("chip:unknown:foo") == ("chip", "unknown:foo")
    assert parse_scope("global") == ("global", None)
    for scope in scope_chain("mi300x"):
        assert format_scope(*parse_scope(scope)) == scope


@pytest.mark.parametrize("bad", ["", "chip", "chip:", "planet:earth", "global:x", "h200"])
def test_parse_scope_rejects(bad: str) -> None:
    with pytest.raises(ValueError, match="bad scope"):
        parse_scope(bad)
