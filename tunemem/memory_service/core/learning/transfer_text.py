"""How a retrieved lesson reads on the target: whether it is transferred, its source scope, its
rendered text and glossary (`platforms.render` with the chips' descriptors)."""

from __future__ import annotations

from typing import Any

from tunemem import platforms
from tunemem.memory_service.core.schemas.transfer import GlossaryEntryPublic
from tunemem.memory_service.core.sql.tables import Lesson
from tunemem.retrieval.limits import is_resource_limit, limit_caveat
from tunemem.retrieval.query import is_transferred, source_scope


def _known_chip(chip: str | None, backend: str | None) -> platforms.Chip | None:
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


def limit_fields(
    row: Lesson, target_backend: str | None, target_chip: str | None
) -> dict[str, Any]:
    """`warning` and `caveat` of a retrieved lesson: a failure from a resource limit of its chip
    warns on another chip only where the limit applies, and says why (`retrieval.limits`)."""
    warning = row.kind == "failure"
    if not warning or not is_resource_limit(row.kind, row.hint) or not target_chip:
        return {"warning": warning, "caveat": None}
    chips = row.applicability.get("chips") or []
    backends = row.applicability.get("backends") or []
    source = _known_chip(chips[0], backends[0] if backends else None) if chips else None
    target = _known_chip(target_chip, target_backend)
    if not chips or chips[0] == target_chip or (source and target and source.id == target.id):
        return {"warning": True, "caveat": None}
    caveat = limit_caveat(
        source.name if source else str(chips[0]),
        source.onchip_mem_kb_per_unit if source else None,
        target.name if target else target_chip,
        target.onchip_mem_kb_per_unit if target else None,
    )
    return {"warning": caveat.applies, "caveat": caveat.reason}
