"""Dirty-memory streams (`--partial`, `--replayed`, `--single-timings`) on the SYNTHETIC caches
(invented times, see conftest.py): seeded, added beside the runs, and scored on true times."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tunemem.bench.learning.dirty import (
    PARTIAL_ATTEMPTS,
    PARTIAL_RUNS,
    Dirt,
    SingleTimingRunner,
    true_curve,
)
from tunemem.bench.learning.noise import MemoryNoise
from tunemem.bench.learning.tasks import Task, discover_tasks


@pytest.fixture
def tasks(synthetic_caches: Path) -> list[Task]:
    return discover_tasks([synthetic_caches])


def test_partial_runs_and_replays_are_added_beside_the_run(tasks: list[Task]) -> None:
    dirt = Dirt(partial=0.5, replayed=0.5)
    memory = MemoryNoise(dirt=dirt).plan(tasks, seed=3)
    again = MemoryNoise(dirt=dirt).plan(tasks, seed=3)
    assert memory.dirty() == again.dirty()
    assert len(memory.dirty()["partial"]) == 3 and len(memory.dirty()["replayed"]) == 3
    told = {t.name: memory.trajectories(t) for t in tasks}
    for task in tasks:
        run, *extra = told[task.name]
        assert run is task.trajectory()  # the run itself is told as recorded
        partial = [r for r in extra if "#partial-" in r.source]
        replays = [r for r in extra if "#replay-as-" in r.source]
        chosen = task.name in memory.dirty()["partial"]
        assert len(partial) == (PARTIAL_RUNS if chosen else 0)
        for upload in partial:
            assert len(upload.attempts) == min(PARTIAL_ATTEMPTS, len(run.attempts))
            assert upload.context == run.context and upload.id != run.id
        if task.name in memory.dirty()["replayed"]:
            (replay,) = replays
            assert replay.context.chip == memory.dirty()["replayed"][task.name] != run.context.chip
            assert replay.context.backend == run.context.backend
            assert replay.attempts == run.attempts
        else:
            assert replays == []


def test_single_timings_replace_a_seeded_share_of_measurements(tasks: list[Task]) -> None:
    task = tasks[0]
    configs = [
        dict(zip(task.recording.param_names, k, strict=True)) for k in task.recording.feasible()
    ]

    def results(seed: str) -> list[Any]:
        runner = SingleTimingRunner(task.recording, 0.5, 0.2, seed)
        return [runner.evaluate(c) for c in configs]

    first, again = results("s"), results("s")
    assert first == again
    noisy = [r for r in first if r.latency_min_ms is None]  # a single timing has no minimum
    assert 0 < len(noisy) < len(first)
    for config, result in zip(configs, first, strict=True):
        true = task.recording.latency_of(config)
        assert (result.latency_ms == true) == (result.latency_min_ms is not None)
        if result.latency_min_ms is None:
            assert result.repetitions == 1 and "latency_std_ms" not in result.metrics
    attempts = [
        {"config": c, "feasible": True, "latency_ms": r.latency_ms}
        for c, r in zip(configs, first, strict=True)
    ]
    assert true_curve(task.recording, attempts) == [task.recording.latency_of(c) for c in configs]


@pytest.mark.parametrize(
    "option", ["--partial", "--replayed", "--single-timings", "--timing-noise"]
)
def test_bad_dirt_is_refused(option: str) -> None:
    from tunemem.cli.app import app

    result = CliRunner().invoke(app, ["bench", "learning", option, "4"])
    assert result.exit_code == 2 and "must be in" in result.output


@pytest.mark.slow
def test_lifelong_on_a_dirty_memory_is_scored_on_true_times(
    synthetic_caches: Path, tmp_path: Path
) -> None:
    from tunemem.bench.learning.run import run_learning_bench

    report = run_learning_bench(
        [synthetic_caches / "alpha_kernel"],
        protocol="lifelong",
        seeds=1,
        budget=4,
        out=tmp_path / "dirty.json",
        arms=["default"],
        embedder="hashing",
        log=lambda _: None,
        noise=MemoryNoise(dirt=Dirt(partial=0.5, replayed=0.5, single_timings=1.0)),
    )
    assert report["noise"]["single_timings"] == 1.0 and len(report["dirty"]) == 1
    tasks = {t.name: t for t in discover_tasks([synthetic_caches / "alpha_kernel"])}
    for name, entry in report["tasks"].items():
        true_times = {a.latency_ms for a in tasks[name].trajectory().attempts}
        best = tasks[name].optimum_ms / entry["arms"]["default"]["mean_curve"][-1]
        assert any(best == pytest.approx(t) for t in true_times)
    assert "Dirty memory" in (tmp_path / "dirty.md").read_text()


def test_the_sweep_table_names_each_cells_dirt_and_compares_with_the_clean_cell(
    tmp_path: Path,
) -> None:
    import json

    from tunemem.bench.learning.sweep import main

    def cell(name: str, dirt: dict[str, float], default: float) -> None:
        row = {"1": 0.5, "5": 0.8, "10": 0.9, "top_3": 0.7}
        report = {
            "benchmark": "learning",
            "protocol": "lifelong",
            "noise": {"sigma": 0.0, "mislabel": 0.0, **dirt},
            "seeds": 3,
            "budget": 10,
            "machine": {"cpu": "test", "cores": 2},
            "summary_second_half": {"similarity": row, "default": {**row, "10": default}},
        }
        (tmp_path / f"{name}.json").write_text(json.dumps(report))

    cell("clean", {"partial": 0.0, "replayed": 0.0, "single_timings": 0.0}, 0.95)
    cell("partial", {"partial": 0.25}, 0.93)
    main([str(tmp_path)])
    lines = (tmp_path / "sweep.md").read_text().splitlines()
    dirty = next(line for line in lines if "| partial 0.25 | 3 | default |" in line)
    assert dirty.endswith("| +0.000 | -0.020 |")  # @5, @10 against the clean cell
