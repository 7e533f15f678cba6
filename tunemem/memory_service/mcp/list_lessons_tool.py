"""The MCP `list_lessons` tool: browse stored lessons by filters (`LessonFilter`)."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver.tools.base import Tool
from pydantic import Field

from tunemem.memory_service.core.schemas.lessons import LessonFilter, LessonKind, LessonList
from tunemem.memory_service.mcp.strict import READ_ONLY, service_errors, strict_tool
from tunemem.memory_service.protocol import MemoryAPI


def list_lessons_tool(service: MemoryAPI) -> Tool:
    """The `list_lessons` tool over `service`."""

    def list_lessons(
        kind: Annotated[LessonKind | None, Field(description="only this kind")] = None,
        op: Annotated[str | None, Field(description="only lessons for this operator")] = None,
        chip: Annotated[str | None, Field(description="only lessons naming this chip")] = None,
        backend: Annotated[str | None, Field(description="this backend or any")] = None,
        q: Annotated[str | None, Field(description="text contains (case-insensitive)")] = None,
        status: Annotated[
            Literal["active", "archived", "all"], Field(description="lesson status")
        ] = "active",
        limit: Annotated[int, Field(ge=1, le=500, description="page size")] = 20,
        offset: Annotated[int, Field(ge=0, description="page start")] = 0,
    ) -> LessonList:
        """Browse stored lessons by filters, oldest first; `count` is the total matching.

        Use it to inspect what the memory holds. To choose lessons for an attempt, call
        `retrieve_lessons` instead: it ranks by learned value, this does not.
        """
        with service_errors():
            where = LessonFilter(
                kind=kind,
                backend=backend,
                chip=chip,
                op=op,
                q=q,
                status=status,
                limit=limit,
                offset=offset,
            )
            return service.list_lessons(where)

    return strict_tool(list_lessons, title="List lessons", annotations=READ_ONLY)
