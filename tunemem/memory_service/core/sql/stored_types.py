"""Column types that read a hand-damaged value as empty instead of failing the read.

Every door checks what it writes, but a store edited by hand (or written before a check) may
hold a lesson hint that is a JSON list, parameters that are no JSON at all, or a latency that is
text. Read through the plain JSON and float types, one such row fails every request that
touches it with a 500, and the tenant cannot even list its lessons to find it. These types read
it as the column's empty value instead (None, or `{}` / `[]` where the column holds no null),
note the read in the request's collector (`damaged_reads`: retrieve and suggest turn it into
one warning) and log it once per column and process. `tunemem doctor`, which reads the columns
as stored (not through these types), names each such row and `--fix` repairs it.

Writes are unchanged: the types store what the plain JSON and float types store (a nullable
JSON column stores None as SQL NULL), and the schema (the DDL, the migrations) is the same.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from sqlalchemy import JSON, Float
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

log = logging.getLogger(__name__)

_collector: ContextVar[list[str] | None] = ContextVar("damaged_reads", default=None)
_logged: set[str] = set()
_logged_lock = threading.Lock()

DOCTOR_ADVICE = "`tunemem doctor` names them and `tunemem doctor --fix` repairs them"


@contextmanager
def damaged_reads() -> Iterator[list[str]]:
    """Collect the damaged values read inside the block (one entry per value, naming its
    column). A block inside another shares the outer block's list."""
    outer = _collector.get()
    if outer is not None:
        yield outer
        return
    collected: list[str] = []
    token = _collector.set(collected)
    try:
        yield collected
    finally:
        _collector.reset(token)


def damage_warning(damaged: list[str]) -> str | None:
    """The one warning an answer carries for the damaged values it read, or None."""
    if not damaged:
        return None
    columns = ", ".join(sorted(set(damaged)))
    return (
        f"{len(damaged)} stored value(s) of this tenant could not be read as stored ({columns})"
        f" and were read as empty or left out; {DOCTOR_ADVICE}"
    )


def note_damaged(column: str, value: Any) -> None:
    """Note one stored value read as empty (or left out) because it could not be read."""
    collected = _collector.get()
    if collected is not None:
        collected.append(column)
    with _logged_lock:
        if column in _logged:
            return
        _logged.add(column)
    log.warning(
        "a stored %s could not be read as stored (%r) and was read as empty; %s "
        "(said once per column and process)",
        column,
        str(value)[:60],
        DOCTOR_ADVICE,
    )


def _is_item(value: Any, items: str) -> bool:
    if items == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, str)


class StoredJSON(TypeDecorator[Any]):
    """JSON whose value must be a `shape` (dict or list; a list of `items`, "text" or
    "number", where given); anything else, unparsable text included, reads as empty (None
    where `nullable`; see the module)."""

    impl = JSON
    cache_ok = True

    def __init__(
        self, column: str, shape: type = dict, nullable: bool = False, items: str | None = None
    ) -> None:
        # A nullable column stores None as SQL NULL, not as the JSON text `null`: rows from
        # before the column (NULL) and rows written since then read and filter alike.
        super().__init__(none_as_null=nullable)
        self.column = column
        self.shape = shape
        self.nullable = nullable
        self.items = items

    def _empty(self) -> Any:
        return None if self.nullable else self.shape()

    @property
    def empty(self) -> Any:
        """What a value this column cannot read is read as (and what doctor writes)."""
        return self._empty()

    def accepts(self, value: Any) -> bool:
        """Whether a parsed stored value is read as it is (None is, where nullable)."""
        if value is None:
            return self.nullable
        if not isinstance(value, self.shape):
            return False
        listed: Any = value
        return not self.items or all(_is_item(item, self.items) for item in listed)

    # The JSON type's own result processor raises on text that is no JSON before
    # `process_result_value` would see it, so this type wraps that processor itself.
    def result_processor(self, dialect: Dialect, coltype: Any) -> Callable[[Any], Any]:
        load = self.impl_instance.result_processor(dialect, coltype)

        def process(value: Any) -> Any:
            if value is None:
                return None
            stored = value
            if load is not None:
                try:
                    value = load(value)
                except (ValueError, TypeError):
                    note_damaged(self.column, stored)
                    return self._empty()
            if not self.accepts(value):
                note_damaged(self.column, stored)
                return self._empty()
            return value

        return process


class StoredFloat(TypeDecorator[Any]):
    """A float column whose stored value that is no number (text written by hand) reads as
    `empty` (None unless given; see the module)."""

    impl = Float
    cache_ok = True

    def __init__(self, column: str, empty: float | None = None) -> None:
        super().__init__()
        self.column = column
        self.empty = empty

    @staticmethod
    def number(value: Any) -> float | None:
        """The stored value as a number, or None when it is none (text, say)."""
        if isinstance(value, float | int) and not isinstance(value, bool):
            return float(value)
        try:
            number = float(value)
        except (TypeError, ValueError):
            return None
        return number if math.isfinite(number) else None

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if value is None or (isinstance(value, float | int) and not isinstance(value, bool)):
            return value
        number = self.number(value)
        if number is not None:
            return number
        note_damaged(self.column, value)
        return self.empty
