"""Ids as people type them: a whole id, or any unique prefix of one (what a table showed, what
fits in a message). An ambiguous prefix is refused with the ids it matches; nothing is ever
picked among them."""

from __future__ import annotations

import re
from typing import Any, TypeVar

from sqlmodel import Session, col, select

from tunemem.memory_service.core.errors import Conflict, NotFound

MIN_PREFIX = 4
SHOWN_MATCHES = 5
_ID_CHARACTERS = re.compile(r"^[0-9a-z-]+$")

Row = TypeVar("Row")


def find(
    session: Session, model: type[Row], given: str, tenant: str, *, what: str, code: str
) -> Row:
    """The tenant's row whose id is `given` or starts with it.

    Raises:
        NotFound: no such id (with `code`), or a prefix shorter than MIN_PREFIX characters.
        Conflict: `ambiguous_id` when the prefix starts several ids; the message lists them.
    """
    row: Any = session.get(model, given)
    if row is not None and row.tenant == tenant:
        return row  # type: ignore[no-any-return]
    prefix = given.strip().lower()
    if len(prefix) >= MIN_PREFIX and _ID_CHARACTERS.match(prefix):
        id_column: Any = model.id  # type: ignore[attr-defined]
        tenant_column: Any = model.tenant  # type: ignore[attr-defined]
        matches = session.exec(
            select(model)
            .where(col(id_column).startswith(prefix), tenant_column == tenant)
            .order_by(col(id_column))
            .limit(SHOWN_MATCHES + 1)
        ).all()
        if len(matches) == 1:
            return matches[0]
        if matches:
            ids = [match.id for match in matches[:SHOWN_MATCHES]]  # type: ignore[attr-defined]
            more = ", ..." if len(matches) > SHOWN_MATCHES else ""
            raise Conflict(
                f"{what} id prefix {given!r} matches several {what}s: {', '.join(ids)}{more}; "
                "give more characters",
                code="ambiguous_id",
            )
    hint = f" (a prefix needs at least {MIN_PREFIX} characters)" if len(prefix) < MIN_PREFIX else ""
    raise NotFound(f"no {what} with id {given}{hint}", code=code)
