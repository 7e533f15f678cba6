"""One result from runs of one benchmark with different seeds: mean and range of each figure."""

from __future__ import annotations

import json

import pytest

from tunemem.bench.common.results import memory_held, provenance
from tunemem.bench.common.seeds import combine_runs, main


def run(seed: int, speed: float, code: str = "abc", **summary: object) -> dict:
    return {
        **provenance(f"tunemem bench moe --seed {seed}", [seed], "replayed"),
        "code_version": code,
        "memory_held": memory_held("shipped"),
        "summary": {"arms": {"tool": {"mean_speed": speed, "name": "x"}}, **summary},
    }


def test_each_figure_becomes_its_mean_and_range_over_the_runs(tmp_path) -> None:
    paths = []
    for seed, speed in enumerate([0.990, 0.996, 0.993]):
        paths.append(tmp_path / f"s{seed}.json")
        paths[-1].write_text(json.dumps(run(seed, speed, only_here=seed)))
    assert main([*map(str, paths), "--name", "replay", "--out", str(tmp_path / "out")]) == 0
    result = json.loads((tmp_path / "out" / "replay.json").read_text())
    figure = result["summary"]["arms"]["tool"]["mean_speed"]
    assert figure == {"mean": pytest.approx(0.993), "low": 0.990, "high": 0.996}
    assert "name" not in result["summary"]["arms"]["tool"]  # not a number
    assert result["seeds"] == [0, 1, 2] and result["code_version"] == "abc"
    assert [r["command"] for r in result["runs"]][0] == "tunemem bench moe --seed 0"
    text = (tmp_path / "out" / "replay.md").read_text()
    assert "| arms / tool / mean_speed | 0.993 | 0.990 | 0.996 |" in text


def test_runs_of_other_code_or_the_same_seed_are_not_one_result() -> None:
    with pytest.raises(ValueError, match="code_version"):
        combine_runs([run(0, 0.9), run(1, 0.9, code="def")], "combine")
    with pytest.raises(ValueError, match="repeat seeds"):
        combine_runs([run(0, 0.9), run(0, 0.9)], "combine")


def test_a_run_without_its_provenance_is_refused(tmp_path) -> None:
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"summary": {"a": 1.0}}))
    assert main([str(bare), "--name", "x", "--out", str(tmp_path / "out")]) == 2
    assert not (tmp_path / "out").exists()
