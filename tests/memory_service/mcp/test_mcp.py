"""MCP server: real MCP client sessions against the tunemem tools.

In-process sessions (the mcp package's `Client` over an `MCPServer`) run on the shared MiniLM
embedder; one session goes through a RemoteService to the HTTP API (the `--url` path); one
spawns `tunemem mcp`'s command function as a subprocess and talks to it over stdio, with the
hashing embedder so the child starts fast. The lessons are synthetic.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tunemem.memory_service.mcp.server import build_mcp_server

REPO_ROOT = Path(__file__).resolve().parents[3]
EXPECTED_TOOLS = {
    "retrieve_lessons",
    "report_outcome",
    "add_lesson",
    "list_lessons",
    "get_lesson",
    "lesson_history",
    "audit_transfer",
}

# Synthetic lessons, written for these tests.
SOFTMAX_LESSON = {
    "kind": "insight",
    "text": "Row softmax of 4096 columns in bf16: one program per row with BLOCK_SIZE 4096 "
    "and 8 warps keeps the row in registers and was fastest",
    "applicability": {"op": "softmax", "chips": ["h200"], "dtypes": ["bf16"]},
    "hint": {"BLOCK_SIZE": 4096, "num_warps": 8},
}
GEMM_FAILURE = {
    "kind": "failure",
    "text": "bf16 GEMM with BLOCK_K 256 and 4 stages ran out of shared memory and failed to launch",
    "applicability": {"op": "gemm", "backends": ["cuda"]},
    "hint": {"BLOCK_K": 256, "num_stages": 4},
}


def run_session(server: Any, scenario: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        async with Client(server) as client:
            await scenario(client)

    anyio.run(main)


def answer(result: Any) -> Any:
    """A tool's answer: its JSON once, as the one text block (no structured copy beside it)."""
    assert not result.is_error, result
    assert result.structured_content is None, "the answer is carried twice"
    (block,) = result.content
    return json.loads(block.text)


def error_text(result: Any) -> str:
    assert result.is_error, result
    return " ".join(block.text for block in result.content)


async def add_retrieve_report(client: Client) -> dict[str, Any]:
    """Add a lesson, retrieve it for a matching task, report a feasible draft."""
    added = await client.call_tool("add_lesson", SOFTMAX_LESSON)
    assert not added.is_error, added
    lesson_id = answer(added)["ids"][0]
    assert answer(added)["created"] == [lesson_id]

    retrieved = await client.call_tool(
        "retrieve_lessons",
        {
            "op": "softmax",
            "chip": "NVIDIA H200",
            "dtype": "bf16",
            "signature": {"rows": 8192, "cols": 4096},
            "query": "row softmax, long rows",
        },
    )
    assert not retrieved.is_error, retrieved
    body = answer(retrieved)
    assert body["chip"] == "h200" and body["stage"] == "draft"  # the default stage
    assert body["scope_chain"][0] == "chip:h200"
    assert [lesson["id"] for lesson in body["lessons"]] == [lesson_id]
    assert body["lessons"][0]["hint"] == SOFTMAX_LESSON["hint"]

    reported = await client.call_tool(
        "report_outcome",
        {
            "retrieval_id": body["retrieval_id"],
            "compiled": True,
            "correct": True,
            "used": [lesson_id],
            "idempotency_key": "attempt-1",
        },
    )
    assert not reported.is_error, reported
    outcome = answer(reported)
    assert outcome["reward"] == 1.0
    assert outcome["rewards"] == {lesson_id: 1.0}
    value = outcome["values"][lesson_id]
    # the value the next retrieve ranks by: the generalised estimate, named by its heaviest term
    assert value["n"] == 1 and value["value"] > 0.0 and value["value_scope"] == "prior"
    return {"lesson_id": lesson_id, "retrieval_id": body["retrieval_id"], "report": outcome}


def test_tools_are_listed_with_descriptions_and_schemas(make_service):
    server = build_mcp_server(make_service())

    async def scenario(client: Client) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert EXPECTED_TOOLS <= set(tools)
        for tool in tools.values():
            assert tool.description and len(tool.description) > 80, tool.name
            # no output schema: with one, MCP requires a structured copy of every answer
            assert tool.output_schema is None, tool.name
        retrieve = tools["retrieve_lessons"].input_schema
        assert not retrieve.get("required")  # stage defaults to draft, as in the CLI
        assert retrieve["properties"]["stage"]["enum"] == ["draft", "refine"]
        assert retrieve["properties"]["stage"]["default"] == "draft"
        report = tools["report_outcome"].input_schema
        assert set(report["required"]) == {"retrieval_id", "compiled"}
        assert tools["list_lessons"].annotations.read_only_hint is True
        assert "retrieval_id" in tools["retrieve_lessons"].description

    run_session(server, scenario)


def test_add_retrieve_report_and_inspect(make_service):
    service = make_service()
    server = build_mcp_server(service)

    async def scenario(client: Client) -> None:
        done = await add_retrieve_report(client)
        lesson_id = done["lesson_id"]

        again = await client.call_tool(
            "report_outcome",
            {
                "retrieval_id": done["retrieval_id"],
                "compiled": True,
                "correct": True,
                "used": [lesson_id],
                "idempotency_key": "attempt-1",
            },
        )
        assert answer(again)["duplicate"] is True
        assert answer(again)["outcome_id"] == done["report"]["outcome_id"]

        merged = await client.call_tool("add_lesson", SOFTMAX_LESSON)
        assert answer(merged)["merged"] == [lesson_id]

        shown = await client.call_tool("get_lesson", {"lesson_id": lesson_id})
        scopes = {(v["stage"], v["scope"]): v["n"] for v in answer(shown)["values"]}
        assert scopes[("draft", "chip:h200")] == 1 and scopes[("draft", "global")] == 1

        history = await client.call_tool("lesson_history", {"lesson_id": lesson_id})
        outcomes = answer(history)["outcomes"]
        assert [o["retrieval_id"] for o in outcomes] == [done["retrieval_id"]]
        assert outcomes[0]["reporter"] == "mcp"

        await client.call_tool("add_lesson", GEMM_FAILURE)
        listed = await client.call_tool("list_lessons", {"kind": "failure"})
        assert answer(listed)["count"] == 1
        assert answer(listed)["data"][0]["text"] == GEMM_FAILURE["text"]

    run_session(server, scenario)
    # The tools wrote through the facade: the outcome log holds exactly one outcome.
    assert service.counts()["outcomes"] == 1


def test_service_errors_become_tool_errors_with_their_code(make_service):
    service = make_service()
    server = build_mcp_server(service)

    async def scenario(client: Client) -> None:
        unknown = await client.call_tool(
            "report_outcome",
            {"retrieval_id": "no-such-retrieval", "compiled": True, "correct": True},
        )
        assert "retrieval_not_found" in error_text(unknown)
        assert "no-such-retrieval" in error_text(unknown)

        done = await add_retrieve_report(client)
        stranger = await client.call_tool(
            "report_outcome",
            {"retrieval_id": done["retrieval_id"], "compiled": False, "used": ["not-returned"]},
        )
        assert "lesson_not_in_retrieval" in error_text(stranger)

        missing = await client.call_tool("get_lesson", {"lesson_id": "missing-lesson"})
        assert "lesson_not_found" in error_text(missing)

        bad_stage = await client.call_tool("retrieve_lessons", {"stage": "polish", "op": "gemm"})
        assert bad_stage.is_error
        negative = await client.call_tool(
            "report_outcome",
            {
                "retrieval_id": done["retrieval_id"],
                "compiled": True,
                "correct": True,
                "latency_ms": -1.0,
            },
        )
        assert "latency_ms" in error_text(negative)

    run_session(server, scenario)
    # Rejected calls changed nothing: only the one good report is in the log.
    assert service.counts()["outcomes"] == 1


def test_tools_over_a_remote_service_keep_the_http_error_codes(client):
    from tunemem.memory_service.remote import RemoteService

    remote = RemoteService("http://testserver")
    remote._client = client  # the FastAPI TestClient is an httpx.Client for the same API
    server = build_mcp_server(remote)

    async def scenario(mcp_client: Client) -> None:
        await add_retrieve_report(mcp_client)
        unknown = await mcp_client.call_tool(
            "report_outcome",
            {"retrieval_id": "no-such-retrieval", "compiled": True, "correct": True},
        )
        assert "retrieval_not_found" in error_text(unknown)

    run_session(server, scenario)


def test_stdio_subprocess_session(tmp_path):
    """`tunemem mcp`'s command function as a child process, spoken to over stdio."""
    data_dir = tmp_path / "mcp-store"
    launch = (
        "from pathlib import Path; from tunemem.cli.mcp import mcp; "
        f"mcp(url=None, data_dir=Path({str(data_dir)!r}), transport='stdio')"
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", launch],
        env={"TUNEMEM_EMBEDDER": "hashing", "HF_HUB_OFFLINE": "1"},
        cwd=str(REPO_ROOT),
    )

    async def scenario(client: Client) -> None:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert EXPECTED_TOOLS <= names
        await add_retrieve_report(client)
        unknown = await client.call_tool(
            "report_outcome",
            {"retrieval_id": "no-such-retrieval", "compiled": True, "correct": True},
        )
        assert "retrieval_not_found" in error_text(unknown)

    run_session(params, scenario)
    assert (data_dir / "tunemem.db").exists()


SOFTMAX_PAIR = [
    {
        "kind": "insight",
        "text": "Row softmax: load the whole row in one block and reduce max and sum in registers",
        "applicability": {"op": "softmax"},
    },
    {
        "kind": "insight",
        "text": "Row softmax: split long rows across programs and combine partial sums "
        "with atomics",
        "applicability": {"op": "softmax"},
    },
]


async def credit(client: Client, chip: str, lesson_id: str, feasible: bool) -> None:
    """One draft retrieval on `chip` and a report that credits only `lesson_id`."""
    found = await client.call_tool(
        "retrieve_lessons", {"stage": "draft", "op": "softmax", "chip": chip, "k": 2}
    )
    body = answer(found)
    assert lesson_id in [lesson["id"] for lesson in body["lessons"]]
    reported = await client.call_tool(
        "report_outcome",
        {
            "retrieval_id": body["retrieval_id"],
            "compiled": feasible,
            "correct": feasible,
            "used": [lesson_id],
        },
    )
    assert not reported.is_error, reported


async def audit_scenario(client: Client) -> None:
    """Both lessons help on the H200; the split-row one fails on the A100: the audit says so."""
    added = await client.call_tool("add_lesson", SOFTMAX_PAIR[0])
    whole_row = answer(added)["ids"][0]
    added = await client.call_tool("add_lesson", SOFTMAX_PAIR[1])
    split_row = answer(added)["ids"][0]
    for lesson_id in (whole_row, split_row):
        await credit(client, "H200", lesson_id, feasible=True)
    await credit(client, "A100", whole_row, feasible=True)
    await credit(client, "A100", split_row, feasible=False)

    audited = await client.call_tool(
        "audit_transfer", {"level": "chip", "chips": ["h200", "a100"], "op": "softmax"}
    )
    assert not audited.is_error, audited
    audit = answer(audited)
    assert set(audit["scopes"]) == {"h200", "a100"}
    pair = next(p for p in audit["pairs"] if p["source"] == "h200" and p["target"] == "a100")
    assert pair["n_common"] == 2
    assert [item["lesson_id"] for item in pair["helped_source_hurt_target"]] == [split_row]
    assert audit["lessons"][split_row]["text"] == SOFTMAX_PAIR[1]["text"]

    bad = await client.call_tool("audit_transfer", {"level": "chip", "chips": ["no-such-gpu"]})
    assert bad.is_error


def test_audit_transfer_tool_on_the_embedded_store(make_service):
    """The assertions live in `audit_scenario` (shared by both transports)."""
    run_session(build_mcp_server(make_service()), audit_scenario)


def test_audit_transfer_tool_through_a_server(client):
    """The assertions live in `audit_scenario`; here the tools reach the service over HTTP."""
    from tunemem.memory_service.remote import RemoteService

    assert client.get("/v1/audit/transfer").status_code == 200  # api.py mounts the audit route
    remote = RemoteService("http://testserver")
    remote._client = client
    run_session(build_mcp_server(remote), audit_scenario)


@pytest.mark.parametrize("transport", ["sse", "websocket"])
def test_unknown_transport_is_refused(transport, make_service):
    from tunemem.memory_service.mcp.server import run_mcp_server

    with pytest.raises(ValueError, match="streamable-http"):
        run_mcp_server(make_service(), transport)


def test_http_transport_binds_loopback_only(make_service):
    from tunemem.memory_service.mcp.server import is_loopback, run_mcp_server

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")
    with pytest.raises(ValueError, match="loopback"):
        run_mcp_server(make_service(), "streamable-http", host="0.0.0.0")


def test_mcp_command_refuses_bad_transport_and_public_bind(tmp_path):
    import typer
    from typer.testing import CliRunner

    from tunemem.cli.mcp import mcp

    app = typer.Typer()
    app.command()(mcp)
    runner = CliRunner()
    store = str(tmp_path / "unused")
    bad = runner.invoke(app, ["--transport", "websocket", "--data-dir", store])
    assert bad.exit_code == 2 and "streamable-http" in bad.output
    public = runner.invoke(
        app, ["--transport", "streamable-http", "--host", "0.0.0.0", "--data-dir", store]
    )
    assert public.exit_code == 2 and "loopback" in public.output
    assert not (tmp_path / "unused").exists()  # refused before opening a store


def test_unknown_and_missing_arguments_read_like_api_errors(make_service):
    service = make_service()
    server = build_mcp_server(service)

    async def scenario(client: Client) -> None:
        nested = await client.call_tool(
            "retrieve_lessons",
            {"stage": "draft", "task": {"op": "gemm"}, "context": {"chip": "H200"}},
        )
        text = error_text(nested)
        assert nested.is_error and text.startswith("invalid_request: unknown arguments")
        assert "'context', 'task'" in text and "op, chip" in text
        missing = await client.call_tool("report_outcome", {"compiled": True})
        assert error_text(missing) == "invalid_request: missing argument 'retrieval_id'"
        wrong = await client.call_tool("retrieve_lessons", {"stage": "polish"})
        assert error_text(wrong).startswith("invalid_request: stage: Input should be")
        assert "pydantic" not in error_text(wrong) and "\n" not in error_text(wrong)
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert all(t.input_schema.get("additionalProperties") is False for t in tools.values())

    run_session(server, scenario)
    assert service.counts()["retrievals"] == 0  # refused calls reached nothing


def test_an_answer_is_its_json_once_in_compact_text(make_service):
    """Seen failing first: every answer carried its JSON twice (structured and as indented
    text), doubling what an agent's model reads."""
    server = build_mcp_server(make_service())

    async def scenario(client: Client) -> None:
        added = await client.call_tool("add_lesson", SOFTMAX_LESSON)
        assert added.structured_content is None
        (block,) = added.content
        assert block.type == "text" and "\n" not in block.text  # compact, not indented
        assert json.loads(block.text)["created"] == json.loads(block.text)["ids"]

    run_session(server, scenario)


def test_audit_transfer_tool_takes_the_query_of_every_door(make_service):
    """Seen failing first: the MCP audit had no `toolchain` and its own defaults. Its
    arguments are `TransferQuery`'s, with the same defaults; a toolchain cut reaches the
    service and is echoed; a bad one is refused in the API's words."""
    from tunemem.memory_service.core.schemas.audit import TransferQuery

    server = build_mcp_server(make_service())

    async def scenario(client: Client) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        schema = tools["audit_transfer"].input_schema["properties"]
        for name, field in TransferQuery.model_fields.items():
            assert name in schema, name
            if not field.is_required() and field.default_factory is None:
                assert schema[name].get("default") == field.default, name
            assert (
                schema[name]["description"].startswith((field.description or "")[:20])
                or name == "toolchain"
            )
        cut = await client.call_tool("audit_transfer", {"toolchain": {"triton": "3.6"}})
        assert answer(cut)["toolchain"] == {"triton": "3.6"}
        assert answer(cut)["level"] == "chip" and answer(cut)["stage"] == "draft"
        backends = await client.call_tool("audit_transfer", {"backends": ["cuda", "hip"]})
        assert answer(backends)["level"] == "backend"  # as the HTTP query infers it
        bad = await client.call_tool("audit_transfer", {"toolchain": {"triton": ""}})
        assert "invalid_input: toolchain: bad toolchain" in error_text(bad)

    run_session(server, scenario)
