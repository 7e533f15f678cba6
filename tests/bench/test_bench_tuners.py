"""`bench tuners` on SYNTHETIC caches (invented times, see conftest.py): scoring by hand, an
old-layout cache in Kernel Tuner's simulation mode, and the whole command end to end."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tunemem.bench.tuners.simulation import (
    best_so_far,
    evals_to,
    fraction_at,
    methodology_score,
    random_expectation,
    run_strategy,
    simulation_cache,
)
from tunemem.kernels.runners.replay import Recording

pytest.importorskip("kernel_tuner", reason="needs kernel_tuner (make install)")


def test_fractions_and_evaluations_to_a_level():
    trace = [None, 4.0, 2.0, 1.0]
    assert best_so_far(trace, 5) == [float("inf"), 4.0, 2.0, 1.0, 1.0]
    assert fraction_at(trace, 1.0, 1) == 0.0
    assert fraction_at(trace, 1.0, 3) == 0.5
    assert evals_to(trace, 1.0, 0.5) == 3 and evals_to(trace, 1.0, 0.95) == 4
    assert evals_to(trace[:3], 1.0, 0.95) is None


def test_random_expectation_is_exact():
    # Three configurations (1, 2, 4 ms): one draw finds the best with probability 1/3.
    expected = random_expectation([1.0, 2.0, 4.0], [1, 2, 3])
    assert expected["1"] == pytest.approx((1 + 0.5 + 0.25) / 3)
    # Two draws miss the best only as the pair (2, 4): its best is 2 ms.
    assert expected["2"] == pytest.approx((2 * 1 + 0.5) / 3)
    assert expected["3"] == pytest.approx(1.0)


def test_methodology_score_is_one_at_the_optimum_and_low_for_the_worst():
    times = [1.0 + i / 10 for i in range(50)]
    assert methodology_score(times, [1.0] * 10) == pytest.approx(1.0)
    assert methodology_score(times, [max(times)] * 10) < 0


def test_an_old_layout_cache_replays_in_simulation_mode(tmp_path: Path):
    # Older Kernel Tuner caches: no problem_size, parameters only in the keys, a failure marker.
    cache = {
        f"{bx},{t}": {"time": 1.0 + abs(bx - 64) / 32 + t / 10}
        for bx in (32, 64, 128)
        for t in (1, 2)
    }
    cache["128,2"] = {"time": "CompilationFailedConfig"}
    old = tmp_path / "OLD_A100.json.gz"
    with gzip.open(old, "wt") as handle:
        json.dump(
            {
                "device_name": "NVIDIA A100-PCIE-40GB",
                "kernel_name": "old_kernel",
                "tune_params_keys": ["block_size_x", "tile"],
                "tune_params": {"block_size_x": [32, 64, 128], "tile": [1, 2]},
                "cache": cache,
            },
            handle,
        )
    recording = Recording(old)
    sim = simulation_cache(recording, tmp_path / "sim.json")
    assert json.loads(sim.read_text())["problem_size"] == [1]
    trace = run_strategy(sim, recording.param_names, "random_sample", 10, 0)
    assert sorted(trace) == sorted(recording.feasible().values())  # the failure is not in it


def test_a_kernel_tuner_run_is_the_same_for_the_same_seed(tmp_path: Path):
    """Kernel Tuner's strategies draw from the process's global random state (its `seed`
    reaches no strategy but pymoo's): the bench seeds that state per run, so a published Kernel
    Tuner figure is reproduced by its command, whatever ran before it in the process."""
    import random

    import numpy as np

    cache = {
        f"{bx},{t},{u}": {"time": 1.0 + abs(bx - 64) / 32 + t / 10 + u / 7}
        for bx in (16, 32, 64, 128, 256)
        for t in (1, 2, 3, 4)
        for u in (0, 1, 2)
    }
    old = tmp_path / "KT_A100.json"
    old.write_text(
        json.dumps(
            {
                "device_name": "NVIDIA A100-PCIE-40GB",
                "kernel_name": "k",
                "tune_params_keys": ["block_size_x", "tile", "unroll"],
                "tune_params": {
                    "block_size_x": [16, 32, 64, 128, 256],
                    "tile": [1, 2, 3, 4],
                    "unroll": [0, 1, 2],
                },
                "cache": cache,
            }
        )
    )
    recording = Recording(old)
    sim = simulation_cache(recording, tmp_path / "sim.json")
    for strategy in ("random_sample", "genetic_algorithm", "simulated_annealing"):
        runs = []
        for moved in (1, 2):  # the global state moved differently before each run
            np.random.seed(100 + moved)
            random.seed(100 + moved)
            runs.append(run_strategy(sim, recording.param_names, strategy, 12, 3))
        assert runs[0] == runs[1], strategy
        other = run_strategy(sim, recording.param_names, strategy, 12, 4)
        assert len(other) == len(runs[0])


def test_bench_tuners_command_writes_json_markdown_and_plot(synthetic_caches: Path, tmp_path):
    from tunemem.cli.app import app

    out = tmp_path / "tuners.json"
    args = [
        "bench",
        "tuners",
        "--caches",
        str(synthetic_caches / "alpha_kernel"),
        "--sources",
        str(synthetic_caches / "beta_kernel"),
        "--budgets",
        "2",
        "4",
        "--seeds",
        "2",
        "--strategies",
        "random_sample",
        "--k",
        "2",
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert set(data["summary"]) == {"tunemem", "random_sample", "random_exact"}
    for arm in ("tunemem", "random_sample"):
        assert set(data["summary"][arm]) >= {"2", "4", "score", "evals_to_90", "evals_to_95"}
        assert 0.0 < data["summary"][arm]["4"] <= 1.0
    assert len(data["tasks"]) == 3
    for task in data["tasks"].values():
        memory = task["arms"]["tunemem"]["memory"][0]["memory"]
        assert any(name.startswith("beta/") for name in memory)  # --sources went in
    own = {
        name: task["arms"]["tunemem"]["memory"][0]["memory"] for name, task in data["tasks"].items()
    }
    assert all(name not in memory for name, memory in own.items())  # never the task's own
    assert out.with_suffix(".md").read_text().startswith("# bench tuners")
    assert data["memory_held"]["kind"] == "complete"  # the sources' whole caches went in
    assert "Memory held: **complete**" in out.with_suffix(".md").read_text()
    assert out.with_suffix(".png").stat().st_size > 0
    # How to reproduce it, and each seed's whole-run mean kept for the range.
    assert data["seeds"] == [0, 1] and data["measurement"] == "replayed"
    assert data["command"].startswith("tunemem bench tuners --caches") and data["code_version"]
    for arm in ("tunemem", "random_sample"):
        low, high = data["summary"][arm]["range"]["4"]
        assert low <= data["summary"][arm]["4"] <= high
    assert "Reproduce: `tunemem bench tuners --caches" in out.with_suffix(".md").read_text()
    bad = CliRunner().invoke(app, ["bench", "tuners", "--budgets", "0", "--out", str(out)])
    assert bad.exit_code == 2


def test_merge_joins_task_sets_and_refuses_other_settings(tmp_path: Path):
    from tunemem.bench.tuners.run import merge_results

    def part(name: str, seeds: int, fraction: float, code: str = "abc") -> Path:
        arm = {
            "fraction_at": {"5": {"mean": fraction, "std": 0.0, "by_seed": [fraction] * seeds}},
            "evals_to": {
                "90": {"median": 3, "reached": 1, "of": 1},
                "95": {"median": None, "reached": 0, "of": 1},
            },
            "score": fraction,
        }
        result = {
            "command": f"run {name}",
            "code_version": code,
            "machine": {"cpu": "test", "cores": 1},
            "settings": {
                "budgets": [5],
                "seeds": seeds,
                "k": 5,
                "source_budget": 5,
                "strategies": ["tunemem"],
                "sources": [],
                "caches": [name],
                "failed_configurations": "-",
                "score": "-",
            },
            "tasks": {name: {"random_exact": {"5": 0.5}, "arms": {"tunemem": arm}}},
            "warnings": [],
            "wall_s": 1.0,
        }
        path = tmp_path / f"{name}-{seeds}.json"
        path.write_text(json.dumps(result))
        return path

    out = tmp_path / "merged.json"
    merged = merge_results([part("a", 1, 0.6), part("b", 1, 0.8)], out, "merge")
    assert set(merged["tasks"]) == {"a", "b"}
    assert merged["summary"]["tunemem"]["5"] == pytest.approx(0.7)
    assert merged["summary"]["tunemem"]["evals_to_90"] == 3
    assert merged["summary"]["tunemem"]["evals_to_95"] is None
    assert out.with_suffix(".md").exists() and out.with_suffix(".png").exists()
    assert merged["code_version"] == "abc" and merged["summary"]["tunemem"]["range"]["5"] == [
        pytest.approx(0.7),
        pytest.approx(0.7),
    ]
    with pytest.raises(ValueError, match="settings"):
        merge_results([part("a", 1, 0.6), part("c", 2, 0.8)], tmp_path / "x.json", "merge")
    with pytest.raises(ValueError, match="code versions"):
        merge_results([part("a", 1, 0.6), part("d", 1, 0.8, "def")], tmp_path / "y.json", "merge")


@pytest.mark.parametrize("mode", ["self-fed", "kt-runs"])
def test_a_memory_filled_only_by_tuning_runs_holds_only_what_they_evaluated(
    synthetic_caches: Path, tmp_path: Path, mode: str
):
    from tunemem.cli.app import app

    out = tmp_path / f"{mode}.json"
    args = [
        "bench",
        "tuners",
        "--caches",
        str(synthetic_caches / "alpha_kernel"),
        "--budgets",
        "2",
        "4",
        "--seeds",
        "1",
        "--strategies",
        "--k",
        "2",
        "--source-budget",
        "3",
        "--memory",
        mode,
        "--source-strategy",
        "random_sample",
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["settings"]["memory"] == mode
    for task in data["tasks"].values():
        fill = task["arms"]["tunemem"]["memory"][0]
        counts = fill["memory_counts"]
        # Two other chips, each one run of 3 evaluations (of 12 configurations), and the
        # target's own run is not in it yet: never a whole cache.
        assert counts["trajectories"] == 2
        assert counts["attempts"] == 6
    # Both modes hold only what earlier runs timed, and the result and its Markdown say so.
    assert data["memory_held"]["kind"] == "self-fed"
    assert "Memory held: **self-fed**" in out.with_suffix(".md").read_text()
    bad = CliRunner().invoke(app, [*args[:-2], "--memory", "everything", "--out", str(out)])
    assert bad.exit_code == 2
