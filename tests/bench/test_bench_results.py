"""What every benchmark result carries: what the memory held while it was measured."""

from __future__ import annotations

import json

import pytest

from tunemem.bench.common.results import MEMORY_HELD, memory_held, with_memory_held, write_result


def test_memory_held_names_its_kind_and_refuses_an_unknown_one() -> None:
    held = memory_held("self-fed", "two earlier runs of 50 evaluations")
    assert held == {
        "kind": "self-fed",
        "meaning": MEMORY_HELD["self-fed"],
        "detail": "two earlier runs of 50 evaluations",
    }
    with pytest.raises(ValueError, match="valid: complete, self-fed, cold"):
        memory_held("warm")


def test_a_result_that_does_not_say_what_the_memory_held_is_not_written(tmp_path) -> None:
    with pytest.raises(ValueError, match="memory_held"):
        write_result(tmp_path, "r", {"benchmark": "x"}, "# Title\n\nbody\n")
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_the_markdown_says_it_under_the_title_once(tmp_path) -> None:
    held = memory_held("cold")
    write_result(tmp_path, "r", {"memory_held": held}, "# Title\n\nbody\n")
    text = (tmp_path / "r.md").read_text()
    line = f"Memory held: **cold**, {MEMORY_HELD['cold']}."
    assert text.splitlines()[:3] == ["# Title", "", line]
    assert text.count("Memory held:") == 1
    assert with_memory_held(text, held) == text
    assert json.loads((tmp_path / "r.json").read_text())["memory_held"]["kind"] == "cold"
