"""The MCP `audit_transfer` tool: which lessons carry over between chips or backends.

Its arguments are the fields of `TransferQuery`, with that model's descriptions and defaults,
so the tool cannot drift from the HTTP query, the CLI options and the remote client.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver.tools.base import Tool
from pydantic import Field

from tunemem.memory_service.core.schemas.audit import AuditLevel, TransferAuditPublic, TransferQuery
from tunemem.memory_service.core.schemas.lessons import Stage
from tunemem.memory_service.mcp.strict import READ_ONLY, service_errors, strict_tool
from tunemem.memory_service.protocol import MemoryAPI

QUERY = TransferQuery.model_fields


def _described(name: str, **bounds: Any) -> Any:
    return Field(description=QUERY[name].description, **bounds)


def audit_transfer_tool(service: MemoryAPI) -> Tool:
    """The `audit_transfer` tool over `service`."""

    def audit_transfer(
        level: Annotated[AuditLevel | None, _described("level")] = QUERY["level"].default,
        chips: Annotated[list[str] | None, _described("chips")] = None,
        backends: Annotated[list[str] | None, _described("backends")] = None,
        op: Annotated[str | None, _described("op")] = QUERY["op"].default,
        stage: Annotated[Stage | None, _described("stage")] = QUERY["stage"].default,
        min_n: Annotated[int, _described("min_n", ge=1)] = QUERY["min_n"].default,
        toolchain: Annotated[
            dict[str, str] | None,
            Field(
                description='cut by toolchain: {"triton": "3.6"}; values from only the outcomes '
                "gathered under these versions"
            ),
        ] = None,
    ) -> TransferAuditPublic:
        """Which lessons carry over from one chip (or backend) to another.

        For every ordered pair (source, target) of scopes: the lessons with outcomes on
        both and their values (Q) on each, the rank correlation of those values
        (`spearman`), the share judged alike, `helped_source_hurt_target` (lessons to
        distrust on the target), and, where recorded search spaces exist, the fraction of
        the target's optimum that source configurations reach. `lessons` maps the ids
        mentioned to their text. Use it to decide how far to trust lessons learned elsewhere.
        """
        given = {"chips": chips, "backends": backends, "toolchain": toolchain}
        with service_errors():
            query = TransferQuery(
                level=level,
                op=op,
                stage=stage,
                min_n=min_n,
                **{name: value for name, value in given.items() if value is not None},
            )
            return service.audit_transfer(query)

    return strict_tool(audit_transfer, title="Transfer audit", annotations=READ_ONLY)
