"""The store's own door for text: no statement writes a string that cannot be read back.

The request models, the URL middleware, the ingest checks and the bundle checks refuse a NUL or
a lone UTF-16 surrogate where text enters; this is the backstop beneath all of them, so a door
added later cannot let such text in either. Every INSERT or UPDATE is checked just before it
is executed: a bound string holding a NUL (PostgreSQL cannot store it; SQLite cuts LIKE filters
at it) or a lone surrogate (no UTF-8 can encode it, so every later read would fail) raises
`InvalidInput` (`invalid_text`, a 422), and the transaction rolls back whole. JSON columns are
serialised without ASCII escapes, so a surrogate inside free JSON is seen as one too.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from tunemem.ingest.validate import text_problem
from tunemem.memory_service.core.errors import InvalidInput

_WRITES = ("INSERT", "UPDATE", "insert", "update")


def json_serializer(value: Any) -> str:
    """JSON for the store's JSON columns: characters as they are, so the guard sees them."""
    return json.dumps(value, ensure_ascii=False)


def _check(values: Any) -> None:
    for value in values:
        if type(value) is str and not (value.isascii() and "\x00" not in value):
            problem = text_problem(value, "a value written to the store")
            if problem:
                raise InvalidInput(problem, code="invalid_text")


def guard(
    _conn: Any,
    _cursor: Any,
    statement: str,
    parameters: Any,
    _context: Any,
    _executemany: bool,
) -> None:
    """`before_cursor_execute`: refuse unstorable text in a write's bound parameters."""
    if not statement.lstrip().startswith(_WRITES) or not parameters:
        return
    # One row (a dict or a sequence), or many of them; batched inserts ("insertmanyvalues")
    # may bind one flat sequence whatever `executemany` says, so the shape is looked at.
    rows = parameters if isinstance(parameters, list | tuple) else [parameters]
    for row in rows:
        if isinstance(row, dict):
            _check(row.values())
        elif isinstance(row, list | tuple):
            _check(row)
        else:
            _check((row,))


def install(engine: Engine) -> None:
    """Check every write of `engine` (see the module docstring)."""
    event.listen(engine, "before_cursor_execute", guard)
