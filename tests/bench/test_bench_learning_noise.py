"""Noisy and mislabelled memory (`--noise`, `--mislabel`) on a small SYNTHETIC labelled stream
(invented times, see conftest.py): seeded, deterministic, and only what enters the memory."""

from __future__ import annotations

import gzip
import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tunemem.bench.learning.noise import MemoryNoise
from tunemem.bench.learning.tasks import Task, discover_tasks

pytest.importorskip("tunemem.memory_service.http.app")


@pytest.fixture
def labelled_tasks(synthetic_caches: Path, write_cache: Any) -> list[Task]:
    """Six CUDA tasks (two families x three chips) and one HIP task, alone on its backend."""
    hip = write_cache(
        synthetic_caches / "alpha_kernel" / "MI.json.gz", "alpha_kernel", "NVIDIA A100-PCIE-40GB"
    )
    doc = json.loads(gzip.open(hip).read())
    doc["device_name"] = "AMD Instinct MI250X"
    hip.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return discover_tasks([synthetic_caches])


def test_a_clean_memory_is_told_the_recording_itself(labelled_tasks: list[Task]) -> None:
    memory = MemoryNoise().plan(labelled_tasks, seed=0)
    assert all(memory.trajectory(t) is t.trajectory() for t in labelled_tasks)
    assert memory.mislabelled() == {}


def test_noise_multiplies_each_attempt_by_one_seeded_log_normal_factor(
    labelled_tasks: list[Task],
) -> None:
    noise = MemoryNoise(sigma=0.3)
    first, again, other = (
        noise.plan(labelled_tasks, 1),
        noise.plan(labelled_tasks, 1),
        noise.plan(labelled_tasks, 2),
    )
    logs = []
    for task in labelled_tasks:
        clean, noisy = task.trajectory(), first.trajectory(task)
        assert noisy.context == clean.context  # noise alone never relabels
        assert [a.latency_ms for a in noisy.attempts] == [
            a.latency_ms for a in again.trajectory(task).attempts
        ]
        assert [a.latency_ms for a in noisy.attempts] != [
            a.latency_ms for a in other.trajectory(task).attempts
        ]
        for before, after in zip(clean.attempts, noisy.attempts, strict=True):
            assert after.params == before.params
            factor = after.latency_ms / before.latency_ms
            # the mean and the minimum of one attempt are one measurement: one factor
            assert after.latency_min_ms == pytest.approx(before.latency_min_ms * factor)
            logs.append(math.log(factor))
    # the task's own recording (what the agent measures) is untouched
    assert labelled_tasks[0].trajectory().attempts[0].latency_ms == pytest.approx(
        labelled_tasks[0].recording.latency_of(labelled_tasks[0].trajectory().attempts[0].params)
    )
    assert len(logs) == sum(len(t.trajectory().attempts) for t in labelled_tasks) == 72
    assert abs(statistics.fmean(logs)) < 0.1 and 0.2 < statistics.stdev(logs) < 0.4


def test_mislabel_relabels_a_seeded_fraction_within_the_backend(
    labelled_tasks: list[Task],
) -> None:
    plan = MemoryNoise(mislabel=0.5).plan(labelled_tasks, seed=3)
    wrong = plan.mislabelled()
    assert len(wrong) == round(0.5 * 7)  # of all seven runs, among the six that can be
    assert wrong == MemoryNoise(mislabel=0.5).plan(labelled_tasks, seed=3).mislabelled()
    by_name = {t.name: t for t in labelled_tasks}
    cuda_chips = {t.chip for t in labelled_tasks if t.recording.context.backend == "cuda"}
    for name, chip in wrong.items():
        task = by_name[name]
        told = plan.trajectory(task)
        assert chip != task.chip and chip in cuda_chips
        assert (told.context.chip, told.context.backend) == (chip, "cuda")
        assert told.context.chip_raw != task.trajectory().context.chip_raw
        # mislabelling alone keeps the times
        assert [a.latency_ms for a in told.attempts] == [
            a.latency_ms for a in task.trajectory().attempts
        ]
    everything = MemoryNoise(mislabel=1.0).plan(labelled_tasks, seed=0).mislabelled()
    assert "alpha/mi250x" not in everything and len(everything) == 6  # alone on HIP
    seeds = {
        tuple(sorted(MemoryNoise(mislabel=0.5).plan(labelled_tasks, s).mislabelled()))
        for s in range(8)
    }
    assert len(seeds) > 1


def test_bad_noise_is_refused() -> None:
    with pytest.raises(ValueError, match="sigma"):
        MemoryNoise(sigma=-0.1)
    with pytest.raises(ValueError, match="mislabel"):
        MemoryNoise(mislabel=1.5)
    from tunemem.cli.app import app

    result = CliRunner().invoke(app, ["bench", "learning", "--mislabel", "2"])
    assert result.exit_code == 2 and "mislabel" in result.output


@pytest.mark.slow
def test_lifelong_on_a_noisy_mislabelled_memory_scores_true_times(
    synthetic_caches: Path, tmp_path: Path
) -> None:
    from tunemem.bench.learning.run import run_learning_bench

    def run(name: str) -> dict[str, Any]:
        return run_learning_bench(
            [synthetic_caches / "alpha_kernel"],
            protocol="lifelong",
            warmup=[synthetic_caches / "beta_kernel"],
            seeds=1,
            budget=4,
            out=tmp_path / name,
            arms=["similarity", "default"],
            embedder="hashing",
            log=lambda _: None,
            noise=MemoryNoise(sigma=0.3, mislabel=0.5),
        )

    report = run("noisy.json")
    assert {k: report["noise"][k] for k in ("sigma", "mislabel")} == {"sigma": 0.3, "mislabel": 0.5}
    assert len(report["mislabelled"][0]) == 3
    tasks = {t.name: t for t in discover_tasks([synthetic_caches / "alpha_kernel"])}
    for name, entry in report["tasks"].items():
        true_times = {a.latency_ms for a in tasks[name].trajectory().attempts}
        for arm in ("similarity", "default"):
            # the agent's measurements are the recording's own times, never the noisy ones
            best = tasks[name].optimum_ms / entry["arms"][arm]["mean_curve"][-1]
            assert any(best == pytest.approx(t) for t in true_times)
    assert "Noisy memory" in (tmp_path / "noisy.md").read_text()
    assert run("again.json")["tasks"] == report["tasks"]  # seeded: the same run twice


@pytest.mark.slow
def test_loo_on_a_mislabelled_memory(synthetic_caches: Path, tmp_path: Path) -> None:
    from tunemem.bench.learning.run import run_learning_bench

    report = run_learning_bench(
        [synthetic_caches / "alpha_kernel"],
        seeds=2,
        budget=3,
        out=tmp_path / "loo.json",
        arms=["default"],
        embedder="hashing",
        log=lambda _: None,
        noise=MemoryNoise(sigma=0.1, mislabel=0.34),
    )
    assert [len(m) for m in report["mislabelled"]] == [1, 1]
    assert set(report["tasks"]) == {"alpha/a100", "alpha/a4000", "alpha/rtx-3090"}
    assert "Noisy memory" in (tmp_path / "loo.md").read_text()


def test_the_sweep_table_compares_arms_and_cells(tmp_path: Path) -> None:
    from tunemem.bench.learning.sweep import main

    def cell(sigma: float, mislabel: float, default: float) -> None:
        row = {"1": 0.5, "5": 0.8, "10": 0.9, "top_3": 0.7}
        report = {
            "benchmark": "learning",
            "protocol": "lifelong",
            "noise": {"sigma": sigma, "mislabel": mislabel},
            "seeds": 2,
            "budget": 10,
            "machine": {"cpu": "test", "cores": 2},
            "summary_second_half": {
                "similarity": row,
                "default": {**row, "5": default, "10": default},
            },
        }
        (tmp_path / f"c-{sigma}-{mislabel}.json").write_text(json.dumps(report))

    cell(0.0, 0.0, 0.85)
    cell(0.3, 0.0, 0.82)
    (tmp_path / "other.json").write_text(json.dumps({"benchmark": "service"}))
    main([str(tmp_path)])
    lines = (tmp_path / "sweep.md").read_text().splitlines()
    noisy = next(line for line in lines if "| 0.3 | 0.0 |  | 2 | default |" in line)
    # lead over similarity at 5 and 10 attempts, top-3; then the drop from its clean cell
    assert noisy.endswith("| +0.020 | -0.080 | +0.000 | -0.030 | -0.030 |")
    assert len([line for line in lines if line.startswith("| lifelong")]) == 4
