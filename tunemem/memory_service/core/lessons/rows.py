"""Lesson helpers: content hashing, deterministic ids, embedding text, table <-> API mapping."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import ValidationError

from tunemem.memory_service.core.schemas.lessons import Applicability, LessonCreate, LessonPublic
from tunemem.memory_service.core.sql.stored_types import note_damaged
from tunemem.memory_service.core.sql.tables import Lesson

_NAMESPACE = uuid.UUID("6f1c1e9a-3b7e-4c55-9a43-0c7f5bb1d2e4")


def normalise_applicability(app: Applicability) -> dict[str, Any]:
    """Lower-cased, sorted, de-duplicated lists so equal conditions compare equal."""
    data = app.model_dump()
    for key, value in data.items():
        if isinstance(value, list):
            data[key] = sorted({str(v).strip().lower() for v in value if str(v).strip()})
        elif isinstance(value, str):
            data[key] = value.strip().lower() or None
    return data


def content_hash(lesson: LessonCreate) -> str:
    from tunemem.ingest.records import stable_hash

    return stable_hash(
        {
            "kind": lesson.kind,
            "text": " ".join(lesson.text.split()),
            "hint": lesson.hint,
            "code": lesson.code,
            "applicability": normalise_applicability(lesson.applicability),
        },
        length=64,
    )


def lesson_id(tenant: str, digest: str) -> str:
    """Deterministic UUID: the same lesson in the same tenant always gets the same id."""
    return str(uuid.uuid5(_NAMESPACE, f"{tenant}:{digest}"))


def applicability_text(app: dict[str, Any], skip_in: str = "") -> str:
    """The applicability as words, leaving out values the lesson text already names."""
    named = skip_in.lower()
    parts = []
    for key in ("op", "kernel", "chips", "families", "backends", "models", "scenarios", "dtypes"):
        value = app.get(key)
        values = value if isinstance(value, list) else [value] if value else []
        missing = [str(v) for v in values if str(v).lower() not in named]
        if missing:
            parts.append(f"{key}: {', '.join(missing)}")
    return "; ".join(parts)


def embedding_text(kind: str, text: str, app: dict[str, Any]) -> str:
    # Embedding cost grows with length (the bundled model runs on CPU), so conditions the
    # text already states are not repeated.
    conditions = applicability_text(app, skip_in=text)
    return f"{kind}: {text}" + (f"\napplies to {conditions}" if conditions else "")


def list_column(values: list[str]) -> str:
    return "," + ",".join(values) + ("," if values else "")


def to_row(tenant: str, lesson: LessonCreate, digest: str, creator: str | None) -> Lesson:
    app = normalise_applicability(lesson.applicability)
    provenance = dict(lesson.provenance)
    if creator:
        provenance.setdefault("creator", creator)
    return Lesson(
        id=lesson_id(tenant, digest),
        tenant=tenant,
        kind=lesson.kind,
        text=lesson.text,
        hint=lesson.hint,
        code=lesson.code,
        content_hash=digest,
        applicability=app,
        op=app.get("op") or "",
        chips=list_column(app["chips"]),
        backends=list_column(app["backends"]),
        provenance=provenance,
    )


def set_filter_columns(row: Lesson) -> None:
    app = row.applicability
    row.op = app.get("op") or ""
    row.chips = list_column(app.get("chips") or [])
    row.backends = list_column(app.get("backends") or [])


def filter_applicability(op: str, chips: str, backends: str) -> Applicability:
    """The conditions a lesson's filter columns hold (what retrieval filters by)."""
    return Applicability(
        op=op or None,
        chips=[c for c in chips.split(",") if c],
        backends=[b for b in backends.split(",") if b],
    )


def stored_applicability(row: Lesson) -> Applicability:
    """The row's applicability; one a hand edit left unreadable (a field of the wrong type, one
    the API does not have) is noted as a damaged read and rebuilt from the filter columns."""
    try:
        return Applicability.model_validate(row.applicability)
    except ValidationError:
        note_damaged("lesson applicability", row.applicability)
        return filter_applicability(row.op, row.chips, row.backends)


def to_public(row: Lesson) -> LessonPublic:
    return LessonPublic(
        id=row.id,
        kind=row.kind,  # type: ignore[arg-type]
        text=row.text,
        hint=row.hint,
        code=row.code,
        applicability=stored_applicability(row),
        provenance=row.provenance,
        status=row.status,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def index_metadata(row: Lesson) -> dict[str, Any]:
    """What the vector index stores beside a lesson's vector (for filtering recall)."""
    return {
        "tenant": row.tenant,
        "kind": row.kind,
        "op": row.op,
        "backends": row.backends,
    }
