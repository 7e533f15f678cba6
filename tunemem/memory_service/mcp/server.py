"""MCP server: the memory operations as MCP tools (DESIGN section 6), over one facade.

`build_mcp_server(service)` wraps a `MemoryAPI` (an embedded `MemoryService`, or a
`RemoteService`: a running tunemem server reached over HTTP) in an
`mcp.server.mcpserver.MCPServer` whose tools are thin adapters, one module each
(`*_tool.py`, listed in `TOOLS`): they take flat arguments, build the same request models the
HTTP API takes, call the facade, and answer its response model's JSON once, as text
(`memory_service.mcp.strict`). A `ServiceError` becomes an MCP tool error (`is_error=True`)
whose text carries `"<code>: <message>"`, so an agent sees the same stable code the HTTP API
would send. Tool docstrings become the tool descriptions an LLM reads, so they say when to call
the tool and what to do with its answer. Every tool refuses arguments it does not take.
Adding a tool: a `<name>_tool.py` beside these, and its factory in `TOOLS`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools.base import Tool

from tunemem.memory_service.mcp.add_lesson_tool import add_lesson_tool
from tunemem.memory_service.mcp.audit_tool import audit_transfer_tool
from tunemem.memory_service.mcp.get_lesson_tool import get_lesson_tool
from tunemem.memory_service.mcp.lesson_history_tool import lesson_history_tool
from tunemem.memory_service.mcp.list_lessons_tool import list_lessons_tool
from tunemem.memory_service.mcp.report_tool import report_outcome_tool
from tunemem.memory_service.mcp.retrieve_tool import retrieve_lessons_tool
from tunemem.memory_service.mcp.suggest_tool import suggest_tool
from tunemem.memory_service.protocol import MemoryAPI

SERVER_NAME = "tunemem"
TRANSPORTS = ("stdio", "streamable-http")

INSTRUCTIONS = """\
tunemem is a memory of GPU/NPU kernel-tuning experience whose lessons are ranked by how much
they actually helped before, on this chip, at this stage.

The loop, once per kernel attempt:
1. Before writing or tuning a kernel, call `retrieve_lessons` with the operator, chip and
   stage ("draft" until you have a kernel that compiles and is correct, then "refine").
   Keep the `retrieval_id` it returns.
2. Evaluate your attempt, then call `report_outcome` with that `retrieval_id`, whether it
   compiled, whether it was correct, and its latency (plus the best latency before it, when
   refining). Name the lessons you actually used in `used`. This is how the memory learns.
   To tune a parameter space, `suggest` answers the next configurations to try (untried by
   you, the memory's first); report each one's outcome against its `retrieval_id`.
3. When you find something reusable (a configuration that won, a cause of failure, an API
   detail), call `add_lesson` with precise applicability so it reaches the right tasks.

Lessons of kind "failure" come back as warnings: things to avoid, not to do. Errors are tool
errors whose text carries a stable code, e.g. "retrieval_not_found: no retrieval with id ...".
"""


TOOLS: tuple[Callable[[MemoryAPI], Tool], ...] = (
    retrieve_lessons_tool,
    report_outcome_tool,
    suggest_tool,
    add_lesson_tool,
    list_lessons_tool,
    get_lesson_tool,
    lesson_history_tool,
    audit_transfer_tool,
)


def build_mcp_server(service: MemoryAPI, *, name: str = SERVER_NAME) -> MCPServer:
    """An MCP server whose tools call `service` (embedded MemoryService or RemoteService)."""
    tools = [make(service) for make in TOOLS]
    return MCPServer(name, instructions=INSTRUCTIONS, log_level="WARNING", tools=tools)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_mcp_server(
    service: MemoryAPI, transport: str = "stdio", *, host: str = "127.0.0.1", port: int = 8765
) -> None:
    """Serve the tools over stdio (default) or streamable HTTP at http://host:port/mcp.

    The HTTP endpoint checks no keys, so, like a keyless store, it binds loopback only.
    """
    if transport not in TRANSPORTS:
        raise ValueError(f"unknown transport {transport!r}; valid: {', '.join(TRANSPORTS)}")
    if transport == "streamable-http" and not is_loopback(host):
        raise ValueError(
            f"the MCP HTTP endpoint has no keys: bind it to loopback, not {host!r}; for remote "
            "agents run `tunemem serve` with keys and `tunemem mcp --url` beside each agent"
        )
    server = build_mcp_server(service)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)
