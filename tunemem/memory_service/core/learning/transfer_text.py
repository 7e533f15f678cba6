"""How a retrieved lesson reads on the target: whether it is transferred, its source scope, its
rendered text and glossary (`platforms.render` with the chips' descriptors)."""

from __future__ import annotations

from typing import Any

from tunemem import platforms
from tunemem.memory_service.core.schemas.transfer import GlossaryEntryPublic
from tunemem.memory_service.core.sql.tables import Lesson
from tunemem.retrieval.query import is_transferred, source_scope


def _known_chip(chip: str | None, backend: str) -> platforms.Chip | None:
    if not chip:
        return None
    try:
        resolved = platforms.resolve(chip, backend=backend)
    except ValueError:  # an unknown name, or one of another backend: use the backend alone
        return None
    return resolved if resolved.known else None


def transfer_fields(
    row: Lesson, target_backend: str | None, target_chip: str | None
) -> dict[str, Any]:
    """`transferred`, `source_scope`, `rendered_text` and `glossary` of a retrieved lesson.

    A transferred lesson is rendered from its first backend with the descriptor of its first
    chip (the source side of a caveat) and of the target chip; an error message in its hint
    stays verbatim.
    """
    chips = row.applicability.get("chips") or []
    source_backends = row.applicability.get("backends") or []
    fields: dict[str, Any] = {
        "transferred": is_transferred(target_backend, source_backends),
        "source_scope": source_scope(chips, source_backends),
        "rendered_text": None,
        "glossary": [],
    }
    if fields["transferred"] and target_backend:
        source = source_backends[0]
        example = (row.hint or {}).get("example_error")
        rendered = platforms.render(
            row.text,
            source,
            target_backend,
            source_chip=_known_chip(chips[0] if chips else None, source),
            target_chip=_known_chip(target_chip, target_backend),
            verbatim=(example,) if isinstance(example, str) and example else (),
        )
        fields["rendered_text"] = rendered.text
        fields["glossary"] = [GlossaryEntryPublic(**e.__dict__) for e in rendered.glossary]
    return fields
