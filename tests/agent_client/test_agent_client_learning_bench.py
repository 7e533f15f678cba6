"""The learning benchmark's scoring (hand-computed numbers) and a quick end-to-end run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("memory_service.http.app")
from bench.learning import (  # noqa: E402
    Chip,
    discover,
    fractions,
    naive_transfer,
    run_learning_bench,
    summarise,
)
from kernels.runners.replay import Recording  # noqa: E402


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
def test_quick_run_writes_json_markdown_and_plot(tmp_path: Path, make_synthetic_cache: Any) -> None:
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


def test_source_order_is_sorted_for_seed_zero_and_permuted_by_other_seeds(
    tmp_path: Path, make_synthetic_cache: Any
) -> None:
    from bench.learning import source_order

    chips = [
        Chip(name, tmp_path / name, Recording(make_synthetic_cache(tmp_path / f"{name}.json.gz")))
        for name in ("w6600", "a100", "mi250x", "a4000")
    ]
    assert [c.chip for c in source_order(chips, 0)] == ["a100", "a4000", "mi250x", "w6600"]
    orders = {tuple(c.chip for c in source_order(chips, seed)) for seed in range(1, 8)}
    names = ["a100", "a4000", "mi250x", "w6600"]
    assert len(orders) > 1 and all(sorted(o) == names for o in orders)
    assert source_order(chips, 3) == source_order(chips, 3)


def test_markdown_reports_held_out_and_development_kernels_apart(tmp_path: Path) -> None:
    from bench.learning_report import write_markdown

    def entry(op: str, value: float) -> dict[str, Any]:
        spread = {"mean": value, "std": 0.0, "min": value, "max": value}
        hits = {"reached": 1, "of": 1, "median": 1, "per_seed": [1]}
        arm = {
            "fraction_at": {str(m): spread for m in (1, 5, 10, 20)},
            "attempts_to_90": hits,
            "attempts_to_95": hits,
            "first_attempt_feasible": 1.0,
        }
        return {"op": op, "arms": {"value": arm}, "naive_transfer": {"x": 0.5}}

    report = {
        "caches": "c",
        "seeds": 1,
        "budget": 20,
        "k": 5,
        "elapsed_s": 1.0,
        "machine": {"cpu": "p", "cores": 2},
        "arms": {"value": {}},
        "development_ops": ["conv"],
        "development_note": "Development kernel: conv.",
        "targets": {"conv/a": entry("conv", 0.5), "dedisp/a": entry("dedisp", 0.9)},
    }
    path = tmp_path / "r.md"
    write_markdown(report, path)
    text = path.read_text()
    held, dev = text.index("## Held-out kernels (dedisp)"), text.index("## Development kernels")
    assert held < dev and "Development kernel: conv." in text
    # Each group's average is over its own targets only.
    assert "| value | 0.900 |" in text[held:dev] and "| value | 0.500 |" in text[dev:]
