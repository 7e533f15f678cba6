"""`tunemem mcp`: serve the memory operations as MCP tools to an agent framework.

Over stdio by default (the agent's MCP client launches `tunemem mcp` as a subprocess), or over
streamable HTTP at http://HOST:PORT/mcp. The tools call the embedded store, or a running
tunemem server given `--url`. In stdio mode stdout carries the protocol, so every message of
this command goes to stderr.
"""

from __future__ import annotations

from typing import Annotated

import typer

from tunemem.cli.common import (
    ApiKeyOpt,
    DataDirOpt,
    UrlOpt,
    err,
    fail,
    open_service,
    settings_for,
)


def mcp(
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    transport: Annotated[
        str, typer.Option(help="stdio (launched by the MCP client) or streamable-http")
    ] = "stdio",
    host: Annotated[
        str, typer.Option(help="bind address for streamable-http (loopback only: no keys)")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port for streamable-http")] = 8765,
    api_key: ApiKeyOpt = None,
) -> None:
    """Serve retrieve_lessons, report_outcome, add_lesson ... as MCP tools."""
    # Imported here so that other tunemem commands do not pay for the mcp package.
    from tunemem.memory_service.mcp.server import TRANSPORTS, is_loopback, run_mcp_server

    if transport not in TRANSPORTS:
        fail(f"unknown transport {transport!r}; valid: {', '.join(TRANSPORTS)}")
    if transport == "streamable-http" and not is_loopback(host):
        fail(f"the MCP HTTP endpoint has no keys; bind it to loopback (127.0.0.1), not {host}")
    where = url or f"embedded store {settings_for(data_dir).data_dir}"
    with open_service(url, data_dir, api_key=api_key) as service:
        if transport == "stdio":
            err.print(f"tunemem MCP server on stdio ({where})")
        else:
            err.print(f"tunemem MCP server on http://{host}:{port}/mcp ({where})")
        run_mcp_server(service, transport, host=host, port=port)
