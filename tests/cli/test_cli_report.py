"""`tunemem report`: an outcome without a result is refused; the same command twice counts once."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tunemem.cli.app import app
from tunemem.ingest.readers.native import write_native
from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, TrajectoryRecord

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def synthetic_store(tmp_path: Path) -> list[str]:
    """A store holding one synthetic softmax run (latencies invented for the test)."""
    data = ["--data-dir", str(tmp_path / "store")]
    attempts = [
        AttemptRecord(i, {"BLOCK": block}, latency_ms=1.0 + abs(block - 256) / 256)
        for i, block in enumerate((64, 128, 256, 512, 1024))
    ]
    run = TrajectoryRecord(
        "native",
        "synthetic-run",
        TaskSpec("softmax", "row_softmax", {"N": 4096}, "bf16"),
        ContextSpec("a100", "cuda", chip_raw="NVIDIA A100-SXM4-80GB"),
        attempts,
        synthetic=True,
    )
    write_native([run], tmp_path / "runs.jsonl")
    assert invoke("ingest", str(tmp_path / "runs.jsonl"), "--quiet", *data).exit_code == 0
    return data


def retrieve_id(data: list[str]) -> str:
    got = invoke("retrieve", "--op", "softmax", "--chip", "a100", "-q", "block", "--json", *data)
    return json.loads(got.output)["retrieval_id"]


def test_report_without_a_result_is_refused_and_records_nothing(tmp_path: Path):
    data = synthetic_store(tmp_path)
    rid = retrieve_id(data)
    refused = invoke("report", rid, "--latency-ms", "1.0", *data)
    assert refused.exit_code != 0
    assert "--correct or --incorrect" in refused.output
    rebuilt = invoke("values", "rebuild", *data)
    assert "from 0 outcomes" in rebuilt.output
    # Not compiled, or failed with an error text: no --correct needed.
    assert invoke("report", rid, "--not-compiled", *data).exit_code == 0


def test_the_same_report_twice_counts_once(tmp_path: Path):
    data = synthetic_store(tmp_path)
    rid = retrieve_id(data)
    first = invoke("report", rid, "--correct", "--latency-ms", "1.0", *data)
    assert first.exit_code == 0 and json.loads(first.output)["duplicate"] is False
    again = invoke("report", rid, "--correct", "--latency-ms", "1.0", *data)
    assert again.exit_code == 0
    assert "counted once" in again.output
    assert "from 1 outcomes" in invoke("values", "rebuild", *data).output
    # A different outcome of the same retrieval is another report.
    other = invoke("report", rid, "--incorrect", *data)
    assert other.exit_code == 0
    assert "from 2 outcomes" in invoke("values", "rebuild", *data).output


def test_report_help_shows_what_correct_means():
    shown = invoke("report", "--help")
    assert shown.exit_code == 0 and "required unless" in shown.output


def test_correct_and_incorrect_together_are_refused_and_record_nothing(tmp_path: Path):
    """Both flags used to be accepted, the last one winning (issue 31)."""
    data = synthetic_store(tmp_path)
    rid = retrieve_id(data)
    for flags in (["--correct", "--incorrect"], ["--incorrect", "--correct"]):
        refused = invoke("report", rid, *flags, "--latency-ms", "1.0", *data)
        assert refused.exit_code == 2, refused.output
        assert "--correct and --incorrect" in " ".join(refused.output.split())
    assert "from 0 outcomes" in invoke("values", "rebuild", *data).output


def test_a_typed_report_is_stored_as_hand_entered(tmp_path: Path):
    """Issue 36: numbers a person typed are kept apart from a tool's measurements."""
    from sqlmodel import select

    from tunemem.memory_service.core.settings import Settings
    from tunemem.memory_service.core.sql.tables import Outcome
    from tunemem.memory_service.service import MemoryService

    data = synthetic_store(tmp_path)
    rid = retrieve_id(data)
    assert invoke("report", rid, "--correct", "--latency-ms", "1.0", *data).exit_code == 0
    service = MemoryService(Settings(data_dir=tmp_path / "store", index="memory"))
    try:
        with service.store.session() as session:
            rows = list(session.exec(select(Outcome)))
    finally:
        service.close()
    assert [(o.origin, o.device_reported) for o in rows] == [("hand-entered", None)]


def test_report_takes_the_configuration_and_timings(tmp_path: Path):
    data = synthetic_store(tmp_path)
    rid = retrieve_id(data)
    config = json.dumps({"BLOCK": 256})
    args = ["--correct", "--config", config, "--timing-ms", "1.0", "--timing-ms", "1.02"]
    answer = invoke("report", rid, *args, *data)
    assert answer.exit_code == 0, answer.output
    body = json.loads(answer.output)
    assert body["credit"] and set(body["credit"].values()) <= {"followed", "not_followed"}
    bad = invoke("report", rid, "--correct", "--config", "{block", *data)
    assert bad.exit_code != 0 and "--config is not JSON" in bad.output
    outside = invoke(
        "report",
        rid,
        "--correct",
        "--latency-ms",
        "5",
        "--timing-ms",
        "1.0",
        "--timing-ms",
        "1.1",
        *data,
    )
    assert outside.exit_code != 0 and "outside its timings" in outside.output
    assert "from 1 outcomes" in invoke("values", "rebuild", *data).output
