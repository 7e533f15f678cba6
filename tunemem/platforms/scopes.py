"""Context scopes: a chip's chain from most specific to global, used for value back-off."""

from __future__ import annotations

from tunemem.platforms.chips import Chip
from tunemem.platforms.resolve import resolve

SCOPE_LEVELS: tuple[str, ...] = ("chip", "family", "backend", "global")
GLOBAL_SCOPE = "global"


def scope_chain(chip: Chip | str) -> list[str]:
    """Scopes of a chip, most specific first: ["chip:h200", "family:nvidia-hopper",
    "backend:cuda", "global"]. An unknown chip has only ["backend:<b>", "global"].

    A string is resolved as a device name or chip id first.
    """
    resolved = chip if isinstance(chip, Chip) else resolve(chip)
    chain: list[str] = []
    if resolved.known:
        chain.append(f"chip:{resolved.id}")
        if resolved.family:
            chain.append(f"family:{resolved.family}")
    chain.append(f"backend:{resolved.backend}")
    chain.append(GLOBAL_SCOPE)
    return chain


def parse_scope(scope: str) -> tuple[str, str | None]:
    """Split "family:nvidia-hopper" into ("family", "nvidia-hopper"); "global" -> ("global", None).

    Raises:
        ValueError: unknown level, or a missing/extra value.
    """
    if scope == GLOBAL_SCOPE:
        return (GLOBAL_SCOPE, None)
    level, sep, value = scope.partition(":")
    if not sep or level not in SCOPE_LEVELS or level == GLOBAL_SCOPE or not value:
        raise ValueError(
            f"bad scope {scope!r}; expected 'global' or '<level>:<value>' with level in "
            f"{', '.join(SCOPE_LEVELS[:-1])}"
        )
    return (level, value)


def format_scope(level: str, value: str | None = None) -> str:
    """Inverse of `parse_scope`: ("chip", "a100") -> "chip:a100"; ("global", None) -> "global"."""
    if level == GLOBAL_SCOPE:
        return GLOBAL_SCOPE
    if level not in SCOPE_LEVELS or not value:
        raise ValueError(f"bad scope level/value {level!r}/{value!r}")
    return f"{level}:{value}"
