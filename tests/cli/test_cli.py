"""The `tunemem` command line against the embedded store, through typer's runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tunemem.cli.app import app
from tunemem.ingest.readers.native import write_native
from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, TrajectoryRecord

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.mark.parametrize(
    "command",
    [
        ["--help"],
        ["serve", "--help"],
        ["retrieve", "--help"],
        ["report", "--help"],
        ["suggest", "--help"],
        ["lessons", "list", "--help"],
        ["lessons", "show", "--help"],
        ["lessons", "archive", "--help"],
        ["lessons", "stale", "--help"],
        ["values", "rebuild", "--help"],
        ["reindex", "--help"],
        ["ingest", "--help"],
        ["bench", "ingest", "--help"],
        ["bench", "learning", "--help"],
        ["agent", "run", "--help"],
        ["audit", "transfer", "--help"],
        ["bench", "service", "--help"],
        ["bench", "kernels", "--help"],
        ["bench", "live", "--help"],
        ["bench", "autotune", "--help"],
        ["bench", "tuners", "--help"],
        ["bench", "moe", "--help"],
        ["tune", "moe", "--help"],
        ["keys", "create", "--help"],
        ["export", "--help"],
        ["import", "--help"],
        ["mcp", "--help"],
    ],
)
def test_every_command_has_help(command):
    result = invoke(*command)
    # Typer prints "Usage:"; the benchmarks that also run as `python -m` print their argparse
    # parser's "usage:" (tests/cli/test_cli_bench_options.py).
    assert result.exit_code == 0 and "usage:" in result.output.lower()


def synthetic_run(source: str, slow: float) -> TrajectoryRecord:
    """Synthetic trajectory (values invented for the test): BLOCK=256 is fastest."""
    attempts = [
        AttemptRecord(
            i,
            {"BLOCK": block, "num_warps": warps},
            latency_ms=slow * (1 + abs(block - 256) / 256) * (1 + warps / 32),
        )
        for i, (block, warps) in enumerate(
            (b, w) for b in (64, 128, 256, 512, 1024) for w in (2, 4, 8)
        )
    ]
    attempts.append(
        AttemptRecord(
            len(attempts),
            {"BLOCK": 4096, "num_warps": 1},
            compiled=False,
            correct=None,
            error_category="compile",
            error="out of shared memory",
        )
    )
    return TrajectoryRecord(
        "native",
        source,
        TaskSpec("softmax", "row_softmax", {"N": 4096}, "bf16"),
        ContextSpec("a100", "cuda", chip_raw="NVIDIA A100-SXM4-80GB"),
        attempts,
        synthetic=True,
    )


def test_embedded_flow_ingest_retrieve_report_rebuild(tmp_path: Path):
    data = ["--data-dir", str(tmp_path / "store")]
    runs = tmp_path / "runs.jsonl"
    write_native([synthetic_run("run-a", 1.0), synthetic_run("run-b", 2.0)], runs)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(runs.read_text().splitlines()[0] + "\n{not json\n")

    first = invoke("ingest", str(runs), "--quiet", *data)
    assert first.exit_code == 0, first.output
    assert "added 2" in first.output
    again = invoke("ingest", str(runs), "--quiet", *data)
    assert again.exit_code == 0 and "added 0, skipped 2" in again.output

    rejects = tmp_path / "rejects.jsonl"
    partial = invoke("ingest", str(bad), "--quiet", "--rejects", str(rejects), *data)
    assert partial.exit_code == 0 and "rejected 1" in partial.output
    assert json.loads(rejects.read_text().splitlines()[0])["reason"]

    listed = invoke("lessons", "list", "--op", "softmax", "--json", *data)
    count = json.loads(listed.output)["count"]
    assert count >= 2

    got = invoke(
        "retrieve",
        "--op",
        "softmax",
        "--chip",
        "H200",
        "--query",
        "row softmax block size",
        "--json",
        *data,
    )
    retrieval = json.loads(got.output)
    assert retrieval["scope_chain"][0] == "chip:h200" and retrieval["lessons"]
    reported = invoke("report", retrieval["retrieval_id"], "--correct", *data)
    assert reported.exit_code == 0 and json.loads(reported.output)["reward"] == 1.0

    rebuilt = invoke("values", "rebuild", *data)
    assert "from 1 outcomes" in rebuilt.output
    indexed = invoke("reindex", *data)
    assert f"indexed {count}" in indexed.output

    shown = invoke("lessons", "show", retrieval["lessons"][0]["id"], "--history", *data)
    assert json.loads(shown.output)["history"][0]["reward"] == 1.0


def test_cli_errors_exit_non_zero_with_a_message(tmp_path: Path):
    data = ["--data-dir", str(tmp_path / "store")]
    unknown = invoke("report", "no-such-retrieval", "--correct", *data)
    assert unknown.exit_code != 0 and "retrieval_not_found" in unknown.output
    missing = invoke("ingest", str(tmp_path / "nope.json"), *data)
    assert missing.exit_code != 0 and "no such file" in missing.output
    wrong_format = invoke("ingest", str(tmp_path), "--format", "csv", *data)
    assert wrong_format.exit_code != 0 and "valid" in wrong_format.output
    bad_sig = invoke("retrieve", "--signature", "{oops", *data)
    assert bad_sig.exit_code != 0 and "not JSON" in bad_sig.output
    nothing = tmp_path / "empty.jsonl"
    nothing.write_text("{broken\n")
    only_bad = invoke(
        "ingest", str(nothing), "--quiet", "--rejects", str(tmp_path / "r.jsonl"), *data
    )
    assert only_bad.exit_code == 1


def test_stale_lessons_by_toolchain(tmp_path: Path):
    """The real H200 softmax run (triton 3.6.0): stale against 3.7, current against 3.6."""
    data = ["--data-dir", str(tmp_path / "store")]
    run = Path(__file__).resolve().parents[2] / "bench" / "results" / "h200" / "softmax.jsonl"
    assert invoke("ingest", str(run), "--quiet", *data).exit_code == 0
    count = json.loads(invoke("lessons", "list", "--json", *data).output)["count"]

    stale = invoke("lessons", "stale", "--toolchain", "triton=3.7", "--json", *data)
    assert stale.exit_code == 0, stale.output
    listed = json.loads(stale.output)
    assert listed["count"] == count > 0 and listed["toolchain"] == {"triton": "3.7"}
    changed = listed["data"][0]["evidence"][0]["changed"]
    assert changed == [{"component": "triton", "evidence": "3.6.0", "current": "3.7"}]
    table = invoke("lessons", "stale", "--toolchain", "triton=3.7", *data)
    assert "triton 3.6.0" in table.output and f"{count} stale against triton 3.7" in table.output
    current = invoke("lessons", "stale", "--toolchain", "triton=3.6", "--json", *data)
    assert json.loads(current.output)["count"] == 0
    # With no toolchain, the newest recorded versions are the yardstick: nothing is stale.
    assert json.loads(invoke("lessons", "stale", "--json", *data).output)["count"] == 0

    got = invoke(
        "retrieve",
        "--op",
        "softmax",
        "--chip",
        "H200",
        "--toolchain",
        "triton=3.7.0",
        "--json",
        *data,
    )
    assert all(lesson["stale"] for lesson in json.loads(got.output)["lessons"])
    bad = invoke("lessons", "stale", "--toolchain", "triton", *data)
    assert bad.exit_code != 0 and "component=version" in bad.output
