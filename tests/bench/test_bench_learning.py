"""The learning benchmark: scoring by hand, task grouping, and both protocols on a small
SYNTHETIC stream (invented times, see conftest.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tunemem.bench.learning.lifelong import stream_order
from tunemem.bench.learning.summary import fractions, summarise
from tunemem.bench.learning.tasks import TaskDataError, discover_tasks, naive_transfer

pytest.importorskip("tunemem.memory_service.http.app")


def test_fractions_are_best_so_far_over_the_optimum() -> None:
    curve = [None, 4.0, 5.0, 2.0]
    assert fractions(curve, optimum=1.0, budget=6) == [0.0, 0.25, 0.25, 0.5, 0.5, 0.5]


def test_summary_milestones_thresholds_feasibility_and_top_k() -> None:
    runs = [
        {"curve": [None, 1.1, 1.0], "top_1": 0.5, "top_3": 1.0, "top_5": 1.0},
        {"curve": [1.05, 2.0, 1.2], "top_1": 0.7, "top_3": 0.7, "top_5": 0.9},
    ]
    summary = summarise(runs, optimum=1.0, budget=3)
    assert summary["fraction_at"]["1"]["mean"] == pytest.approx((0 + 1 / 1.05) / 2)
    assert summary["fraction_at"]["5"]["mean"] == pytest.approx((1.0 + 1 / 1.05) / 2)
    assert summary["attempts_to_90"]["per_seed"] == [2, 1]
    assert summary["attempts_to_95"]["per_seed"] == [3, 1]
    assert summary["first_attempt_feasible"] == 0.5
    assert summary["top_1"]["mean"] == pytest.approx(0.6)
    assert summary["top_5"]["mean"] == pytest.approx(0.95)


def test_tasks_group_by_parameter_space_not_op_alone(tmp_path: Path, write_cache: Any) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    write_cache(tmp_path / "a" / "A100.json.gz", "alpha_kernel", "NVIDIA A100-PCIE-40GB")
    write_cache(tmp_path / "a" / "A4000.json.gz", "alpha_kernel", "NVIDIA RTX A4000")
    # same op name, another parameter space (SYNTHETIC, beta's parameters)
    other = write_cache(tmp_path / "b" / "A100.json.gz", "beta_kernel", "NVIDIA A100-PCIE-40GB")
    doc = json.loads(gzip.open(other).read())
    doc["kernel_name"] = "alpha_kernel"
    other.write_bytes(gzip.compress(json.dumps(doc).encode()))
    tasks = discover_tasks([tmp_path])
    names = [t.name for t in tasks]
    assert len({t.family for t in tasks}) == 2
    assert all(t.family.startswith("alpha~") for t in tasks)
    assert len(names) == len(set(names)) == 3
    a100 = next(t for t in tasks if t.chip == "a100" and len(t.recording.param_names) == 2)
    # the naive transfer line only pairs tasks of one family
    line = naive_transfer(a100, tasks)
    assert set(line) <= {"a4000"}


def test_a_cache_that_yields_nothing_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "empty.json"
    bad.write_text(json.dumps({"tune_params_keys": ["bx"], "cache": {"1,2": {"time": 1.0}}}))
    with pytest.raises(TaskDataError, match="empty.json"):
        discover_tasks([tmp_path])
    from tunemem.cli.app import app

    result = CliRunner().invoke(app, ["bench", "learning", "--caches", str(tmp_path)])
    assert result.exit_code == 2
    assert "empty.json" in result.output and "Traceback" not in result.output


def test_stream_order_is_seeded(synthetic_caches: Path) -> None:
    tasks = discover_tasks([synthetic_caches])
    assert stream_order(tasks, 3) == stream_order(tasks, 3)
    orders = {tuple(t.name for t in stream_order(tasks, s)) for s in range(6)}
    assert len(orders) > 1 and all(sorted(o) == sorted(t.name for t in tasks) for o in orders)


@pytest.mark.slow
def test_lifelong_protocol_on_a_synthetic_stream(synthetic_caches: Path, tmp_path: Path) -> None:
    from tunemem.bench.learning.run import run_learning_bench

    warm = synthetic_caches / "beta_kernel"
    out = tmp_path / "results" / "lifelong.json"
    report = run_learning_bench(
        [synthetic_caches / "alpha_kernel"],
        protocol="lifelong",
        warmup=[warm],
        seeds=2,
        budget=4,
        out=out,
        arms=["random", "similarity", "generalised", "default"],
        embedder="hashing",
        log=lambda _: None,
    )
    data = json.loads(out.read_text())
    assert set(data["summary"]) == {"random", "similarity", "generalised", "default"}
    for arm in ("similarity", "generalised", "default"):
        assert set(data["summary"][arm]) >= {"1", "5", "10", "20", "top_1", "top_3", "top_5"}
    # warm-up tasks run first and are not scored; scored tasks are the alpha ones
    assert report["n_warmup"] == 3 and set(report["tasks"]) == {
        "alpha/a100",
        "alpha/a4000",
        "alpha/rtx-3090",
    }
    # every stream position of the scored tasks is reported, per arm
    assert all(len(curve) == 3 for curve in report["by_position"].values())
    assert out.with_suffix(".md").read_text().startswith("# Learning benchmark (replay, lifelong)")
    assert out.with_suffix(".png").stat().st_size > 1000


@pytest.mark.slow
def test_lifelong_tunes_a_task_before_its_cache_is_in_memory(
    synthetic_caches: Path, tmp_path: Path
) -> None:
    """Without warm-up the first task of a stream meets an empty memory: nothing to rank."""
    from tunemem.bench.learning.run import run_learning_bench

    report = run_learning_bench(
        [synthetic_caches / "alpha_kernel"],
        protocol="lifelong",
        seeds=1,
        budget=3,
        out=tmp_path / "l.json",
        arms=["similarity"],
        embedder="hashing",
        log=lambda _: None,
    )
    first = stream_order(discover_tasks([synthetic_caches / "alpha_kernel"]), 0)[0]
    assert report["tasks"][first.name]["arms"]["similarity"]["top_1"]["mean"] == 0.0
    later = [n for n in report["tasks"] if n != first.name]
    assert any(report["tasks"][n]["arms"]["similarity"]["top_1"]["mean"] > 0 for n in later)


@pytest.mark.slow
def test_loo_protocol_quick_run(synthetic_caches: Path, tmp_path: Path) -> None:
    from tunemem.bench.learning.run import run_learning_bench

    out = tmp_path / "loo.json"
    report = run_learning_bench(
        [synthetic_caches / "alpha_kernel"],
        seeds=1,
        budget=3,
        out=out,
        arms=["random", "generalised"],
        embedder="hashing",
        log=lambda _: None,
    )
    assert set(report["tasks"]) == {"alpha/a100", "alpha/a4000", "alpha/rtx-3090"}
    assert set(json.loads(out.read_text())["summary"]["generalised"]) >= {"5", "top_3"}
    assert out.with_suffix(".md").read_text().startswith("# Learning benchmark (replay, leave")


@pytest.mark.slow
def test_lifelong_stream_holding_one_family_and_chip_twice(
    synthetic_caches: Path, tmp_path: Path, write_cache: Any
) -> None:
    """A GPU re-tuned: a warm-up cache and a scored cache of the same (family, chip) from two
    sources. Each run has its own id, so the report step's idempotency keys never collide."""
    from tunemem.bench.learning.run import run_learning_bench

    warm = tmp_path / "retuned"
    warm.mkdir()
    again = write_cache(warm / "A100-again.json.gz", "alpha_kernel", "NVIDIA A100-PCIE-40GB")
    doc = json.loads(gzip.open(again).read())
    for entry in doc["cache"].values():  # the second tune measured slightly slower times
        entry["time"] *= 1.1
        entry["times"] = [entry["time"]]
    again.write_bytes(gzip.compress(json.dumps(doc).encode()))
    report = run_learning_bench(
        [synthetic_caches / "alpha_kernel"],
        protocol="lifelong",
        warmup=[warm],
        seeds=1,
        budget=4,
        out=tmp_path / "twice.json",
        arms=["default"],
        embedder="hashing",
        log=lambda _: None,
    )
    assert report["n_warmup"] == 1 and "alpha/a100" in report["tasks"]
    curve = report["tasks"]["alpha/a100"]["arms"]["default"]["mean_curve"]
    assert len(curve) == 4 and curve[-1] > 0
