"""The MCP `get_lesson` tool: one lesson in full, with its values per stage and scope."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver.tools.base import Tool
from pydantic import Field

from tunemem.memory_service.core.schemas.lessons import LessonDetail
from tunemem.memory_service.mcp.strict import READ_ONLY, service_errors, strict_tool
from tunemem.memory_service.protocol import MemoryAPI


def get_lesson_tool(service: MemoryAPI) -> Tool:
    """The `get_lesson` tool over `service`."""

    def get_lesson(
        lesson_id: Annotated[str, Field(description="a lesson id")],
    ) -> LessonDetail:
        """One lesson in full, with its learned values per stage and scope.

        `values` lists (stage, scope, n, q): q is the lesson's running reward in that scope
        (chip:..., family:..., backend:..., global) from n outcomes. Error:
        `lesson_not_found`.
        """
        with service_errors():
            return service.get_lesson(lesson_id)

    return strict_tool(get_lesson, title="Show a lesson", annotations=READ_ONLY)
