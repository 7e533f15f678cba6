"""`tunemem suggest` against the embedded store (synthetic runs written for this test), and
the MCP `suggest` tool over the same facade."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from mcp import Client
from typer.testing import CliRunner

from tunemem.cli.app import app
from tunemem.ingest.readers.native import write_native
from tunemem.ingest.records import AttemptRecord, ContextSpec, TaskSpec, TrajectoryRecord
from tunemem.memory_service.mcp.server import build_mcp_server

runner = CliRunner()
SPACE = {"BLOCK": [64, 128, 256, 512, 1024], "num_warps": [2, 4, 8]}


def synthetic_run() -> TrajectoryRecord:
    """Invented timings: BLOCK=256 with 2 warps is fastest."""
    attempts = [
        AttemptRecord(i, {"BLOCK": b, "num_warps": w}, latency_ms=(1 + abs(b - 256) / 256) * w)
        for i, (b, w) in enumerate((b, w) for b in SPACE["BLOCK"] for w in SPACE["num_warps"])
    ]
    return TrajectoryRecord(
        "native",
        "synthetic-softmax",
        TaskSpec("softmax", "row_softmax", {"N": 4096}, "bf16"),
        ContextSpec("a100", "cuda"),
        attempts,
        synthetic=True,
    )


def test_suggest_command_prints_the_memorys_configurations(tmp_path: Path):
    data = ["--data-dir", str(tmp_path / "store")]
    runs = tmp_path / "runs.jsonl"
    write_native([synthetic_run()], runs)
    assert runner.invoke(app, ["ingest", str(runs), "--quiet", *data]).exit_code == 0
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"params": SPACE}))
    seen = json.dumps([{"config": {"BLOCK": 256, "num_warps": 2}, "latency_ms": 1.0}])
    args = ["suggest", "--space", f"@{space}", "--op", "softmax", "--chip", "A100", "--k", "3"]
    got = runner.invoke(app, [*args, "--observations", seen, "--json", *data])
    assert got.exit_code == 0, got.output
    body = json.loads(got.output)
    configs = [item["config"] for item in body["suggestions"]]
    assert len(configs) == 3 and {"BLOCK": 256, "num_warps": 2} not in configs
    assert body["stage"] == "refine" and body["chip"] == "a100"
    table = runner.invoke(app, [*args, *data])
    assert table.exit_code == 0 and "exemplar" in table.output and "BLOCK=256" in table.output


def test_suggest_command_refuses_bad_input_with_a_message(tmp_path: Path):
    data = ["--data-dir", str(tmp_path / "store")]
    bad_json = runner.invoke(app, ["suggest", "--space", "{oops", *data])
    assert bad_json.exit_code == 2 and "not JSON" in bad_json.output
    no_file = runner.invoke(app, ["suggest", "--space", f"@{tmp_path / 'none.json'}", *data])
    assert no_file.exit_code == 2 and "cannot read" in no_file.output
    empty = runner.invoke(app, ["suggest", "--space", "{}", *data])
    assert empty.exit_code == 2 and "params" in empty.output
    outside = json.dumps([{"config": {"BLOCK": 3, "num_warps": 2}, "latency_ms": 1.0}])
    wrong = runner.invoke(
        app, ["suggest", "--space", json.dumps(SPACE), "--observations", outside, *data]
    )
    assert wrong.exit_code == 2 and "observation_outside_space" in wrong.output


def test_mcp_suggest_tool(service):
    service.ingest([synthetic_run()])

    async def main() -> None:
        async with Client(build_mcp_server(service)) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert "suggest" in tools
            got = await client.call_tool(
                "suggest", {"params": SPACE, "op": "softmax", "chip": "A100", "k": 2}
            )
            assert not got.is_error, got
            (block,) = got.content  # the answer once, as text
            assert got.structured_content is None
            body = json.loads(block.text)
            first = body["suggestions"][0]
            assert first["source"] == "exemplar" and first["config"]["BLOCK"] in SPACE["BLOCK"]
            lesson_ids = [lesson["id"] for lesson in body["suggestions"][0]["lessons"]]
            reported = await client.call_tool(
                "report_outcome",
                {
                    "retrieval_id": body["retrieval_id"],
                    "compiled": True,
                    "correct": True,
                    "used": lesson_ids,
                },
            )
            assert not reported.is_error and set(
                json.loads(reported.content[0].text)["rewards"]
            ) == set(lesson_ids)
            bad = await client.call_tool("suggest", {"params": {"BLOCK": []}})
            assert bad.is_error and "invalid_input" in " ".join(b.text for b in bad.content)

    anyio.run(main)


def test_suggest_command_warns_on_stderr_like_retrieve(tmp_path: Path):
    """An unknown chip is a warning on stderr, as `tunemem retrieve` prints it, so that the
    table (or --json) on stdout stays clean."""
    data = ["--data-dir", str(tmp_path / "store")]
    runs = tmp_path / "runs.jsonl"
    write_native([synthetic_run()], runs)
    assert runner.invoke(app, ["ingest", str(runs), "--quiet", *data]).exit_code == 0
    args = ["--op", "softmax", "--chip", "Quasar-9000", "--backend", "cuda", *data]
    got = runner.invoke(app, ["suggest", "--space", json.dumps(SPACE), *args])
    assert got.exit_code == 0, got.output
    assert "warning:" in got.stderr and "unknown chip" in got.stderr
    assert "unknown chip" not in got.stdout
    retrieved = runner.invoke(app, ["retrieve", "--query", "softmax block size", *args])
    assert retrieved.exit_code == 0 and "warning:" in retrieved.stderr
