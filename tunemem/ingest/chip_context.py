"""Device names to normalised chip contexts, through `platforms.resolve`, memoised.

Readers call `chip_context` once per file (never per attempt): a name the registry knows
becomes its chip id ("NVIDIA A100-PCIE-40GB" -> "a100"); an unknown name becomes an explicit
`unknown:<slug>` chip whose backend is inferred from vendor words; a name that says nothing
(empty, no vendor, or not a string at all) becomes chip `unknown` with backend `unknown`.
`settle_chip` settles what a record states where no reader did (native lines, uploads).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from tunemem.platforms import BACKENDS, UnknownChipError, resolve
from tunemem.platforms.names import slug

if TYPE_CHECKING:
    from tunemem.ingest.records import ContextSpec

UNKNOWN_CHIP = "unknown"
UNKNOWN_BACKEND = "unknown"


@dataclass(frozen=True)
class ChipContext:
    """What a reader needs about a device: normalised id, backend, family, raw name."""

    chip: str
    backend: str
    family: str | None
    known: bool
    raw: str | None


def chip_context(raw: object, backend: str | None = None) -> ChipContext:
    """Resolve a device name as read from a file; never raises for an unknown device.

    A `raw` that is not a string (a number or an object in a malformed file) names no device.
    """
    if not isinstance(raw, str):
        raw = None
    if backend is not None and not isinstance(backend, str):
        backend = None
    return _chip_context(raw, backend)


@lru_cache(maxsize=4096)
def _chip_context(raw: str | None, backend: str | None) -> ChipContext:
    name = (raw or "").strip()
    if not name:
        return ChipContext(UNKNOWN_CHIP, backend or UNKNOWN_BACKEND, None, False, raw)
    try:
        chip = resolve(name, backend)
    except UnknownChipError:
        return ChipContext(UNKNOWN_CHIP, backend or UNKNOWN_BACKEND, None, False, raw)
    except ValueError:
        # The caller's backend hint contradicts a known chip: trust the registry.
        chip = resolve(name)
    return ChipContext(chip.id, chip.backend, chip.family, chip.known, raw)


def chip_context_with_fallback(raw: object, fallback: str | None) -> tuple[ChipContext, str]:
    """Resolve `raw`; if it is empty or unknown, try `fallback` (e.g. a file-name stem).

    Returns the context and where the chip came from: "device_name", "file_name" or "none".
    The raw name kept is always what the file said (`raw`), so nothing is hidden.
    """
    primary = chip_context(raw)
    if primary.known:
        return primary, "device_name"
    if fallback:
        secondary = chip_context(fallback)
        if secondary.known:
            return ChipContext(
                secondary.chip, secondary.backend, secondary.family, True, primary.raw
            ), "file_name"
    return primary, "device_name" if (primary.raw or "").strip() else "none"


@lru_cache(maxsize=4096)
def settled_chip(name: str, backend: str | None) -> ChipContext:
    """The registry's verdict on a chip as a record states it (a native file's line, an
    uploaded trajectory), where readers of other formats have not settled it already.

    A known name becomes its chip id; a named device the registry does not know is kept
    apart as `unknown:<slug>` (its backend the record's, when valid, else `unknown`), so
    the store accepts it and the ingest summary lists it among the unknown chips; a record's
    backend that contradicts a known chip gives way to the registry. Never raises.
    """
    hint = backend if backend in BACKENDS else None
    try:
        chip = resolve(name, hint)
    except UnknownChipError:
        return ChipContext(f"unknown:{slug(name)}", hint or UNKNOWN_BACKEND, None, False, name)
    except ValueError:  # the record's backend contradicts a known chip: trust the registry
        chip = resolve(name)
    return ChipContext(chip.id, chip.backend, chip.family, chip.known, name)


def settle_chip(context: ContextSpec) -> None:
    """Put a record's chip as the registry names it (`settled_chip`), keeping the name as
    written in `chip_raw`. A chip already settled (an id, `unknown`, `unknown:<slug>`) is
    left exactly as it is, so a record's id does not change by passing through here again."""
    if context.chip == UNKNOWN_CHIP or context.chip.startswith("unknown:"):
        return
    settled = settled_chip(context.chip, context.backend)
    if (settled.chip, settled.backend) != (context.chip, context.backend):
        context.chip_raw = context.chip_raw or context.chip
        context.chip, context.backend = settled.chip, settled.backend
