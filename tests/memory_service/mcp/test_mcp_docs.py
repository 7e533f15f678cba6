"""docs/mcp.md names every tool and each tool's own arguments (its table is checked against
the tools' input schemas), so an agent's author reads the arguments the tools take.

Seen failing first: the page said the tools take the HTTP body's nested `task` / `context`
and did not list `suggest`. That its examples run as printed is tests/test_docs.py's part.
"""

from __future__ import annotations

import re
from pathlib import Path

import anyio
from mcp import Client

from tunemem.memory_service.mcp.server import build_mcp_server

PAGE = Path(__file__).resolve().parents[3] / "docs" / "mcp.md"
ROW = re.compile(r"^\| `(?P<tool>\w+)` \| [^|]+ \| (?P<arguments>[^|]+) \|$", re.M)


def documented() -> dict[str, tuple[set[str], set[str]]]:
    """Per tool on the page: (every argument, the required ones, printed bold)."""
    table = {}
    for row in ROW.finditer(PAGE.read_text()):
        names = re.findall(r"(\*\*)?`(\w+)`", row["arguments"])
        table[row["tool"]] = ({n for _, n in names}, {n for bold, n in names if bold})
    return table


def test_the_page_lists_each_tool_with_its_own_flat_arguments(service):
    server = build_mcp_server(service)
    schemas: dict[str, dict] = {}

    async def scenario() -> None:
        async with Client(server) as client:
            for tool in (await client.list_tools()).tools:
                schemas[tool.name] = tool.input_schema

    anyio.run(scenario)
    table = documented()
    assert set(table) == set(schemas)
    for name, schema in schemas.items():
        arguments, required = table[name]
        assert arguments == set(schema["properties"]), name
        assert required == set(schema.get("required", [])), name
    text = PAGE.read_text()
    assert "flat arguments" in text and "structuredContent" in text
