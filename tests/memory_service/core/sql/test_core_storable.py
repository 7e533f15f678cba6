"""The store's backstop (issue #22): whatever code path writes, a NUL or a lone surrogate in a
bound string, in a text column or inside a JSON column, is refused with `invalid_text` and the
transaction rolls back; reads and writes of ordinary text, non-ASCII included, are unchanged."""

from __future__ import annotations

import pytest
from sqlalchemy import insert
from sqlmodel import Session, select

from tunemem.memory_service.core.errors import InvalidInput
from tunemem.memory_service.core.sql.tables import Attempt, Lesson


def lesson(**fields: object) -> Lesson:
    base = {"id": "l-1", "kind": "insight", "text": "ok", "content_hash": "0" * 64}
    return Lesson(**{**base, **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "fields",
    [
        {"text": "lone \ud800 surrogate"},
        {"text": "a\x00b"},
        {"hint": {"note": "\udfff"}},
        {"hint": {"\ud800": 1}},
        {"provenance": {"deep": [{"x": "\ud83d"}]}},
    ],
    ids=["text surrogate", "text NUL", "JSON value", "JSON key", "JSON nested"],
)
def test_unstorable_text_never_reaches_the_store(service, fields):
    with Session(service.engine) as session:
        session.add(lesson(**fields))
        with pytest.raises(InvalidInput) as caught:
            session.commit()
        assert caught.value.code == "invalid_text"
    with Session(service.engine) as session:
        assert session.exec(select(Lesson)).all() == []


def test_bulk_inserts_are_checked_too(service):
    rows = [
        {"trajectory_id": "t", "index": i, "error": "\ud800" if i == 3 else "x"} for i in range(5)
    ]
    with Session(service.engine) as session:
        with pytest.raises(InvalidInput):
            session.execute(insert(Attempt), rows)
            session.commit()
    with Session(service.engine) as session:
        assert session.exec(select(Attempt)).all() == []


def test_ordinary_text_round_trips(service):
    text = "Ré-tuile en mémoire partagée: 共有メモリ 🚀, a literal \\u0000 and \\ud800 in code"
    with Session(service.engine) as session:
        session.add(lesson(text=text, hint={"ключ": "значение 🚀"}))
        session.commit()
    with Session(service.engine) as session:
        row = session.exec(select(Lesson)).one()
        assert row.text == text and row.hint == {"ключ": "значение 🚀"}
