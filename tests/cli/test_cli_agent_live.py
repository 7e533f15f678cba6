"""`tunemem agent run --runner cpu|cuda` on a tiny shape, reporting to a live service over HTTP.

The cpu runner compiles and checks the Triton kernel in the interpreter, so this runs in CI:
feasibility comes from the harness, no latency is reported, and every outcome reaches the
memory service through its HTTP API. The cuda case runs only where a GPU is visible.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

import tunemem.kernels.runners.cpu  # noqa: F401  (switches Triton to the interpreter first)
from tunemem.agent_client import MemoryClient
from tunemem.bench.common.memory_server import LiveService
from tunemem.cli.app import app
from tunemem.ingest.readers import native

runner = CliRunner()


@pytest.fixture
def service() -> Iterator[str]:
    live = LiveService({"index": "memory", "embedder": "hashing"})
    try:
        yield live.url
    finally:
        live.close()


def counts(url: str) -> dict[str, int]:
    with MemoryClient(url) as client:
        return client.health()["counts"]


def test_cpu_run_decides_feasibility_and_reports_no_latency(service: str, tmp_path: Path) -> None:
    saved = tmp_path / "run.jsonl"
    args = ["agent", "run", "--runner", "cpu", "--kernel", "softmax", "--shape", "tiny-5x37"]
    result = runner.invoke(
        app,
        [*args, "--budget", "3", "--url", service, "--trajectory", str(saved), "--json"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.output[result.output.index("{") :])
    attempts = body["attempts"]
    assert len(attempts) == 3
    assert all(a["latency_ms"] is None for a in attempts)  # nothing invented
    assert any(a["feasible"] for a in attempts)
    assert all(a["feasible"] == (a["error_category"] is None) for a in attempts)
    assert body["evidence"]["interpreter"] is True and body["evidence"]["timed"] is False
    assert body["evidence"]["template_hash"] and body["evidence"]["toolchain"]["triton"]
    after = counts(service)
    assert after["retrievals"] >= 3 and after["outcomes"] == 3
    assert after["trajectories"] == 1  # the finished run was written back
    (record,) = list(native.read(saved))
    assert record.context.backend == "cpu" and record.task.op == "softmax"
    assert [a.latency_ms for a in record.attempts] == [None, None, None]
    assert record.evidence["runner"] == "cpu"


def test_cpu_run_says_so_instead_of_a_latency(service: str) -> None:
    args = [
        "agent",
        "run",
        "--runner",
        "cpu",
        "--kernel",
        "rmsnorm",
        "--dims",
        "tokens=3,hidden=40",
    ]
    result = runner.invoke(app, [*args, "--budget", "2", "--url", service])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "feasibility only" in text and "no latency" in text
    assert " ms" not in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--runner", "cpu"], "needs --kernel"),
        (["--runner", "cpu", "--kernel", "conv"], "unknown kernel task"),
        (["--runner", "cpu", "--kernel", "softmax", "--shape", "nope"], "has no shape"),
        (["--runner", "cpu", "--kernel", "softmax", "--dims", "rows=4,cols=x"], "not an integer"),
        (["--runner", "cpu", "--kernel", "softmax", "--dims", "rows=4"], "missing ['cols']"),
        (["--runner", "cpu", "--kernel", "softmax", "--task", "x.json"], "--task is for"),
        (["--runner", "replay", "--kernel", "softmax"], "--runner replay takes --task"),
        (["--runner", "tpu"], "unknown runner"),
    ],
)
def test_bad_live_options_fail_with_a_message_and_change_nothing(
    service: str, args: list[str], message: str
) -> None:
    before = counts(service)
    result = runner.invoke(app, ["agent", "run", *args, "--budget", "1", "--url", service])
    assert result.exit_code != 0
    assert message in " ".join(result.output.split())
    assert counts(service) == before


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_cuda_run_reports_latency_distribution(service: str) -> None:
    args = ["agent", "run", "--runner", "cuda", "--kernel", "softmax"]
    result = runner.invoke(app, [*args, "--budget", "2", "--url", service, "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.output[result.output.index("{") :])
    timed = [a for a in body["attempts"] if a["feasible"]]
    assert timed and all(a["metrics"]["latency_median_ms"] > 0 for a in timed)
    assert body["evidence"]["gpu"]
