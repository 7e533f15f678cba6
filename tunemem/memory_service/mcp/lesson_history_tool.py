"""The MCP `lesson_history` tool: the outcomes behind a lesson's values."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver.tools.base import Tool
from pydantic import Field

from tunemem.memory_service.core.schemas.learning import LessonHistory
from tunemem.memory_service.mcp.strict import READ_ONLY, service_errors, strict_tool
from tunemem.memory_service.protocol import MemoryAPI


def lesson_history_tool(service: MemoryAPI) -> Tool:
    """The `lesson_history` tool over `service`."""

    def lesson_history(
        lesson_id: Annotated[str, Field(description="a lesson id")],
    ) -> LessonHistory:
        """The outcomes that credited a lesson, oldest first, and its values per scope.

        Use it to see why a lesson ranks where it does: every value is explained by these
        outcomes (compiled, correct, latency, reward). Error: `lesson_not_found`.
        """
        with service_errors():
            return service.lesson_history(lesson_id)

    return strict_tool(lesson_history, title="A lesson's outcome history", annotations=READ_ONLY)
