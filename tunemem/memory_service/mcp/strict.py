"""Tools that refuse arguments they do not take, in the API's words.

The MCP SDK's tools ignore unknown arguments, so an agent that sends the HTTP body's nested
`task`/`context` to `retrieve_lessons` gets an answer for no chip at all, and a missing or
ill-typed argument comes back as pydantic's multi-line report. `StrictTool` checks the
arguments first: an unknown one, a missing one or a wrong value is a tool error whose text
reads like the HTTP API's `invalid_request` ("invalid_request: unknown argument 'task'; ...").
The input schema says `additionalProperties: false`, so a client can know before calling.
`service_errors` turns the facade's errors into tool errors carrying the API's stable code.

A tool's answer is its response model's JSON once, as one compact text block: no
`structuredContent` beside it. MCP clients hand an agent's model the text content (Claude
Code forwards `structuredContent` instead when there is one, so a client shows one of the two,
and some show both): the text alone is what every client reads, and nothing is paid twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.types import TextContent, ToolAnnotations
from pydantic import BaseModel, ValidationError

from tunemem.memory_service.core.errors import ServiceError

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def _problem(error: Any) -> str:
    where = ".".join(str(part) for part in error.get("loc", ())) or "arguments"
    if error.get("type") == "missing":
        return f"missing argument {where!r}"
    return f"{where}: {error.get('msg')}"


class StrictTool(Tool):
    """A tool whose arguments are checked against its parameters before it runs."""

    def check(self, arguments: dict[str, Any]) -> None:
        """Raise a ToolError naming every unknown argument, or the first invalid one."""
        known = list(self.parameters.get("properties", {}))
        unknown = sorted(set(arguments) - set(known))
        if unknown:
            names = ", ".join(repr(name) for name in unknown)
            raise ToolError(
                f"invalid_request: unknown argument{'s' if len(unknown) > 1 else ''} {names} "
                f"for {self.name}; it takes {', '.join(known)} (flat arguments: not the HTTP "
                "body's nested objects)"
            )
        try:
            self.fn_metadata.validate_arguments(arguments)
        except ValidationError as exc:
            problems = "; ".join(_problem(error) for error in exc.errors())
            raise ToolError(f"invalid_request: {problems}") from exc

    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> Any:
        self.check(arguments)
        result = await super().run(arguments, context, convert_result=False)
        if isinstance(result, BaseModel):  # the answer's JSON, once and compact
            result = TextContent(type="text", text=result.model_dump_json())
        return self.fn_metadata.convert_result(result) if convert_result else result


def strict_tool(fn: Callable[..., Any], **options: Any) -> StrictTool:
    """`Tool.from_function` for a StrictTool, with the schema closed to other properties and
    the answer as text only (no output schema, no structured copy)."""
    tool = StrictTool.from_function(fn, structured_output=False, **options)
    assert isinstance(tool, StrictTool)  # from_function builds `cls`
    tool.parameters["additionalProperties"] = False
    return tool


@contextmanager
def service_errors() -> Iterator[None]:
    """Turn the facade's errors (and request-model validation) into MCP tool errors."""
    try:
        yield
    except ServiceError as exc:
        raise ToolError(f"{exc.code}: {exc.message}") from exc
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in e['loc']) or 'input'}: {e['msg']}"
            for e in exc.errors()
        )
        raise ToolError(f"invalid_input: {problems}") from exc
