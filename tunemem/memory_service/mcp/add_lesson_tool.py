"""The MCP `add_lesson` tool: store a lesson an agent learned."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver.tools.base import Tool
from pydantic import Field

from tunemem.memory_service.core.schemas.lessons import (
    Applicability,
    LessonCreate,
    LessonKind,
    LessonsCreated,
)
from tunemem.memory_service.mcp.strict import service_errors, strict_tool
from tunemem.memory_service.protocol import MemoryAPI


def add_lesson_tool(service: MemoryAPI) -> Tool:
    """The `add_lesson` tool over `service`."""

    def add_lesson(
        kind: Annotated[
            LessonKind,
            Field(
                description='"insight" (why something works), "failure" (what breaks and why), '
                '"exemplar" (a good kernel or configuration), "api" (backend API knowledge)'
            ),
        ],
        text: Annotated[
            str,
            Field(
                min_length=1,
                description="the lesson in one to three sentences, concrete: name the "
                "parameters, sizes and effect measured",
            ),
        ],
        applicability: Annotated[
            Applicability | None,
            Field(
                description="where it applies (op, chips, families, backends, dtypes, models, "
                "scenarios, signature); an empty list means any"
            ),
        ] = None,
        hint: Annotated[
            dict[str, Any] | None,
            Field(description='structured parameters to try, e.g. {"BLOCK_SIZE": 1024}'),
        ] = None,
        code: Annotated[str | None, Field(description="kernel source (exemplars)")] = None,
    ) -> LessonsCreated:
        """Store a lesson you learned, so later attempts (yours or other agents') can use it.

        Adding is idempotent: the same content, or a near-duplicate with the same
        applicability and hint, merges into the existing lesson (its id is then listed in
        `merged`). `ids[0]` is the lesson's id either way. Narrow `applicability` to where the
        lesson was observed (op, chip, dtype); the memory itself learns how far it carries.
        """
        with service_errors():
            where = applicability or Applicability()
            lesson = LessonCreate(kind=kind, text=text, applicability=where, hint=hint, code=code)
            lesson.provenance = {"source": "mcp"}
            return service.add_lessons([lesson])

    return strict_tool(add_lesson, title="Add a lesson")
