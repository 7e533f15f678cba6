"""Service benchmark on a tiny SYNTHETIC store: result structure, ordered percentiles, files.

No timing is asserted; the numbers come from `tunemem bench service`, not from this test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.service import markdown, run_service_bench
from bench.service_load import percentiles, request_plan
from bench.service_store import synthetic_lessons, synthetic_values


@pytest.fixture(scope="module")
def tiny_result(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("bench")
    result = run_service_bench(
        [300], out, ["memory", "chroma"], requests=24, concurrency=2, probe_minilm=False
    )
    return result, out


def test_every_case_measures_both_endpoints_without_errors(tiny_result: tuple) -> None:
    result, _ = tiny_result
    assert [(r["lessons"], r["index"], r["mode"]) for r in result["runs"]] == [
        (300, "memory", "embedded"),
        (300, "chroma", "embedded"),
    ]
    for run in result["runs"]:
        assert run["errors"] == 0
        assert run["requests"] == 48  # 24 retrieve + 24 report
        assert run["retrieve_ms"]["n"] == run["report_ms"]["n"] == 24
        assert run["retrieve_cached_ms"]["n"] + run["retrieve_fresh_ms"]["n"] == 24
        assert run["build"]["value_rows"] > 0
        assert run["peak_rss_mb"] >= run["rss_after_build_mb"] > 0
        for key in ("retrieve_ms", "report_ms"):
            p = run[key]
            assert 0 < p["p50"] <= p["p95"] <= p["p99"]


def test_result_is_labelled_synthetic_and_written(tiny_result: tuple) -> None:
    result, out = tiny_result
    assert "SYNTHETIC" in result["synthetic"]
    assert "not measured" in result["server_mode"]
    saved = json.loads((out / "service.json").read_text())
    assert saved["runs"] == json.loads(json.dumps(result["runs"]))
    table = (out / "service.md").read_text()
    assert "| 300 | memory | embedded |" in table and "SYNTHETIC" in table


def test_synthetic_lessons_are_unique_and_deterministic() -> None:
    rows = synthetic_lessons(0, 200, seed=7)
    again = synthetic_lessons(0, 200, seed=7)
    stamps = ("created_at", "updated_at")
    assert [{k: v for k, v in r.items() if k not in stamps} for r in rows] == [
        {k: v for k, v in r.items() if k not in stamps} for r in again
    ]
    assert len({r["id"] for r in rows}) == len({r["content_hash"] for r in rows}) == 200
    assert all(r["provenance"]["synthetic"] for r in rows)
    values = synthetic_values(rows, 0.5, seed=1)
    scopes = {v["scope"] for v in values}
    assert "global" in scopes and any(s.startswith("chip:") for s in scopes)
    assert {v["lesson_id"] for v in values} <= {r["id"] for r in rows}


def test_request_plan_mixes_cached_and_fresh_queries() -> None:
    plan = request_plan(200, 0.5, seed=3)
    fresh = [p["body"]["query"] for p in plan if not p["cached"]]
    cached = [p["body"]["query"] for p in plan if p["cached"]]
    assert fresh and cached
    assert len(set(fresh)) == len(fresh)  # every fresh text is new
    assert len(set(cached)) <= 32  # repeats from the hot set


def test_percentiles_of_known_values() -> None:
    p = percentiles([float(v) for v in range(1, 101)])
    assert (p["p50"], p["p95"], p["p99"]) == (50.5, 95.05, 99.01)
    assert percentiles([]) == {"n": 0}


def test_markdown_renders_a_row_per_run(tiny_result: tuple) -> None:
    result, _ = tiny_result
    rows = [line for line in markdown(result).splitlines() if line.startswith("| 300 |")]
    assert len(rows) == 2


def test_cli_command_runs_from_a_script_main(tmp_path: Path) -> None:
    """`bench_service` registered in a typer app whose module is __main__ (as `tunemem` is)."""
    import os
    import subprocess
    import sys

    repo_root = Path(__file__).resolve().parents[2]  # this checkout's code, not an install

    script = tmp_path / "cli.py"
    script.write_text(
        "import typer\n"
        "from bench.service import bench_service\n"
        "app = typer.Typer()\n"
        "app.command('service')(bench_service)\n"
        "app.command('other')(lambda: None)\n"
        "app()\n"
    )
    out = tmp_path / "results"
    done = subprocess.run(
        [
            sys.executable,
            str(script),
            "service",
            "--sizes",
            "200",
            "--index",
            "memory",
            "--requests",
            "6",
            "--concurrency",
            "2",
            "--out",
            str(out),
            "--name",
            "tiny",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(repo_root)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    saved = json.loads((out / "tiny.json").read_text())
    assert [(r["lessons"], r["index"], r["errors"]) for r in saved["runs"]] == [(200, "memory", 0)]
    assert "--name tiny" in saved["command"]
