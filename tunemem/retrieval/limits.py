"""Failure lessons whose cause is a resource limit of their chip (DESIGN section 4).

A configuration that ran out of registers, shared memory or LDS on one chip fails because of
that chip's limit; on a chip with more on-chip memory per compute unit it may well fit. Such
a lesson carries to another chip as "avoid" only where the limit applies (the target has no
more on-chip memory than the source), and then says why; where the target has more, it is
shown as information with the reason, and no search excludes its settings; where either
chip's limit is unknown, it stays a warning that says the limit may not apply.

Pure: the chips' names and on-chip memory in, a verdict and a sentence out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

RESOURCE_CATEGORY = "resources"
# Words of a failure message that name an exhausted resource of the chip.
RESOURCE_WORDS = (
    "out of resources",
    "too many resources",
    "shared memory",
    "registers",
    "lds",
    "local data share",
)


@dataclass(frozen=True)
class LimitCaveat:
    """Whether a resource-limit failure carries to the target as "avoid", and why."""

    applies: bool
    reason: str


def is_resource_limit(kind: str, hint: Mapping[str, Any] | None) -> bool:
    """A failure lesson whose recorded cause is a resource limit of its chip."""
    if kind != "failure" or not hint:
        return False
    if hint.get("error_category") == RESOURCE_CATEGORY:
        return True
    message = str(hint.get("example_error") or "").lower()
    return any(word in message for word in RESOURCE_WORDS)


def limit_caveat(
    source: str, source_kb: float | None, target: str, target_kb: float | None
) -> LimitCaveat:
    """How a failure that hit `source`'s resource limit reads on `target` (another chip)."""
    cause = f"it failed for a resource limit of the {source} (registers, shared memory or LDS)"
    if source_kb is None or target_kb is None:
        return LimitCaveat(
            True,
            f"{cause}; the {target}'s on-chip memory is not known to be larger, so the warning "
            "is kept, but it may not apply there",
        )
    sizes = f"{target_kb:g} KB of on-chip memory per compute unit against {source_kb:g} KB"
    if target_kb > source_kb:
        return LimitCaveat(
            False,
            f"{cause}; the {target} has {sizes}, so the configurations may fit there: "
            "shown as information, not as avoid",
        )
    return LimitCaveat(True, f"{cause}; the {target} has {sizes}, so the limit applies there")
