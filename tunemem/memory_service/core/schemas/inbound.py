"""The base of every request model: text that cannot be stored and read back is refused at
the door.

A NUL character or a lone UTF-16 surrogate (`"\\ud800"` in JSON) anywhere in a request, in a
field, a free-JSON value or one of its keys, fails validation (a 422 over HTTP, a tool error
over MCP, a message in the CLI) before the service sees it; so no write can store what a later
read would fail to serve, and no filter is cut short at a NUL.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, model_validator
from pydantic_core import PydanticCustomError

from tunemem.ingest.validate import strings_problem


class Inbound(BaseModel):
    """A request model whose every string, however deeply nested, is storable text."""

    _what: ClassVar[str] = "request"  # how messages name the whole input

    @model_validator(mode="before")
    @classmethod
    def _storable_text(cls, data: Any) -> Any:
        problem = strings_problem(data, cls._what) if isinstance(data, dict) else None
        if problem:
            # Its own error type, so the HTTP door answers `invalid_text` for it.
            raise PydanticCustomError("invalid_text", problem)
        return data
