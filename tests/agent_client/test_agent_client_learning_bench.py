"""The learning benchmark's scoring (hand-computed numbers) and a quick end-to-end run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("memory_service.api")
from kernels.runners.replay import Recording  # noqa: E402
from memory_service.bench.learning import (  # noqa: E402
    Chip,
    discover,
    fractions,
    naive_transfer,
    run_learning_bench,
    summarise,
)


def test_fractions_are_best_so_far_over_the_optimum() -> None:
    curve = [None, 4.0, 5.0, 2.0]
    assert fractions(curve, optimum=1.0, budget=6) == [0.0, 0.25, 0.25, 0.5, 0.5, 0.5]


def test_summary_milestones_thresholds_and_first_feasibility() -> None:
    runs = [{"curve": [None, 1.1, 1.0]}, {"curve": [1.05, 2.0, 1.2]}]
    summary = summarise(runs, optimum=1.0, budget=3)
    assert summary["fraction_at"]["1"]["mean"] == pytest.approx((0 + 1 / 1.05) / 2)
    assert summary["fraction_at"]["5"]["mean"] == pytest.approx((1.0 + 1 / 1.05) / 2)
    assert summary["attempts_to_90"]["per_seed"] == [2, 1]
    assert summary["attempts_to_95"]["per_seed"] == [3, 1]
    assert summary["first_attempt_feasible"] == 0.5


def test_naive_transfer_tries_each_source_best_once(
    tmp_path: Path, make_synthetic_cache: Any
) -> None:
    a100 = make_synthetic_cache(tmp_path / "A100.json.gz")
    a4000 = make_synthetic_cache(tmp_path / "A4000.json.gz", "NVIDIA RTX A4000")
    found = discover([tmp_path])
    assert sorted(found["synthetic"]) == ["a100", "a4000"]
    target = Chip("a4000", a4000, Recording(a4000))
    line = naive_transfer(target, [Chip("a100", a100, Recording(a100))])
    assert line == {"a100": 1.0}  # the same synthetic landscape: the best transfers exactly


@pytest.mark.slow
def test_quick_run_writes_json_markdown_and_plot(
    tmp_path: Path, make_synthetic_cache: Any
) -> None:
    caches = tmp_path / "caches"
    caches.mkdir()
    make_synthetic_cache(caches / "A100.json.gz")
    make_synthetic_cache(caches / "A4000.json.gz", "NVIDIA RTX A4000")
    out = tmp_path / "results" / "learning.json"
    report = run_learning_bench(
        caches, [], seeds=1, budget=4, out=out, quick=True, log=lambda _: None
    )
    assert set(report["targets"]) == {"synthetic/a100", "synthetic/a4000"}
    entry = report["targets"]["synthetic/a4000"]
    assert set(entry["arms"]) == {"random", "similarity", "value", "value_backoff"}
    assert entry["arms"]["value_backoff"]["first_attempt_feasible"] == 1.0
    assert json.loads(out.read_text())["budget"] == 4
    assert out.with_suffix(".md").read_text().startswith("# Learning benchmark")
    assert out.with_suffix(".png").stat().st_size > 1000
