"""What a retrieve answer says about its own request (its `warnings`): today, a chip name the
platforms registry does not know."""

from __future__ import annotations

from tunemem import platforms
from tunemem.memory_service.core.schemas.learning import ContextIn


def context_warnings(context: ContextIn, chip: str | None, chain: list[str]) -> list[str]:
    """A chip name the registry does not know is served as an unknown chip of its backend: say so,
    with the nearest known names, as ingest does for unknown devices."""
    if not context.chip or chip is not None:
        return []
    near = platforms.close_chips(context.chip)
    hint = f"; did you mean {', '.join(near)}?" if near else ""
    return [
        f"unknown chip {context.chip!r}: ranked as an unknown {chain[0].split(':')[-1]} chip "
        f"(scopes {' → '.join(chain)}), so no chip or family values apply{hint}"
    ]
