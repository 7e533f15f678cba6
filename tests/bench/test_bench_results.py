"""What every benchmark result carries: what the memory held while it was measured, and how to
reproduce it (code version, command, machine, replayed or measured, seeds)."""

from __future__ import annotations

import json
import re

import pytest

from tunemem.bench.common.results import (
    MEMORY_HELD,
    code_version,
    memory_held,
    provenance,
    with_memory_held,
    write_result,
)


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
    write_result(tmp_path, "r", _complete(memory_held=held), "# Title\n\nbody\n")
    text = (tmp_path / "r.md").read_text()
    line = f"Memory held: **cold**, {MEMORY_HELD['cold']}."
    assert text.splitlines()[:3] == ["# Title", "", line]
    assert text.count("Memory held:") == 1
    assert with_memory_held(text, held) == text
    assert json.loads((tmp_path / "r.json").read_text())["memory_held"]["kind"] == "cold"


def _complete(**overrides: object) -> dict:
    """A result with every field `write_result` asks for."""
    result = {
        "memory_held": memory_held("none"),
        **provenance("python -m tunemem.bench.studies.model_speed", seeds=[0], kind="measured"),
    }
    result.update(overrides)
    return result


@pytest.mark.parametrize("field", ["code_version", "command", "machine", "measurement", "seeds"])
def test_a_result_without_its_provenance_is_refused_and_nothing_is_written(tmp_path, field) -> None:
    result = _complete()
    del result[field]
    with pytest.raises(ValueError, match=field):
        write_result(tmp_path, "r", result, "# Title\n")
    assert not list(tmp_path.iterdir())


def test_a_result_with_an_empty_seed_list_or_an_unknown_measurement_is_refused(tmp_path) -> None:
    with pytest.raises(ValueError, match="seeds"):
        write_result(tmp_path, "r", _complete(seeds=[]), "# Title\n")
    with pytest.raises(ValueError, match="replayed, measured"):
        write_result(tmp_path, "r", _complete(measurement="simulated"), "# Title\n")


def test_a_command_naming_a_module_that_does_not_exist_is_refused(tmp_path) -> None:
    # bench.autotune_replay moved to tunemem.bench.autotune.replay: the recorded command of the
    # old cold replay could not be run as recorded.
    stale = _complete(command="python -m bench.autotune_replay --cold --out x.json")
    with pytest.raises(ValueError, match="bench.autotune_replay"):
        write_result(tmp_path, "r", stale, "# Title\n")


def test_the_provenance_is_recorded_and_said_under_the_title(tmp_path) -> None:
    write_result(tmp_path, "r", _complete(), "# Title\n\nbody\n")
    saved = json.loads((tmp_path / "r.json").read_text())
    assert re.fullmatch(r"[0-9a-f]{40}(\+uncommitted)?|tunemem .+", saved["code_version"])
    assert saved["seeds"] == [0] and saved["measurement"] == "measured"
    text = (tmp_path / "r.md").read_text()
    assert text.startswith("# Title\n")
    assert f"Code: `{saved['code_version']}`" in text
    assert "`python -m tunemem.bench.studies.model_speed`" in text
    assert "measured" in text and "seeds 0" in text


def test_code_version_says_when_the_tree_had_uncommitted_changes(tmp_path) -> None:
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "tunemem").mkdir()
    (tmp_path / "tunemem" / "a.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a")
    clean = code_version(tmp_path)
    assert re.fullmatch(r"[0-9a-f]{40}", clean)
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "r.json").write_text("{}")  # a new result is not code
    (tmp_path / "README.md").write_text("a page is not code either\n")
    git("add", "README.md")
    assert code_version(tmp_path) == clean
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a page")
    assert code_version(tmp_path) == clean  # still the commit of the code
    (tmp_path / "tunemem" / "a.py").write_text("x = 2\n")
    assert code_version(tmp_path) == clean + "+uncommitted"
