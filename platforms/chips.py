"""Chip descriptors: the `Chip` dataclass and the registry loaded once from `chips.json`.

Figures are published vendor numbers (see each chip's `source`); a figure that is not published
is stored as null rather than estimated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

VENDORS = ("nvidia", "amd", "huawei", "intel", "generic")


@dataclass(frozen=True)
class Chip:
    """One accelerator (or host CPU) as the memory service sees it.

    `id` is the short normalised id used in scopes ("h200"); an unknown device has
    `id="unknown:<slug>"`, `known=False` and no family.
    """

    id: str
    name: str
    vendor: str
    family: str | None
    backend: str
    compute_units: int | None = None
    onchip_mem_kb_per_unit: float | None = None
    mem_bandwidth_gbs: float | None = None
    peak_bf16_tflops: float | None = None
    peak_fp32_tflops: float | None = None
    warp_size: int | None = None
    source: str = ""
    # The matrix-multiply unit's name on this architecture (None: the architecture has none,
    # or, for a generic CPU, it depends on the part); filled from `MATRIX_UNITS` by family.
    matrix_unit: str | None = None
    known: bool = True
    aliases: tuple[str, ...] = ()


# Matrix-multiply units per architecture family, from the vendors' architecture documents:
# NVIDIA's Turing to Blackwell whitepapers (Tensor Cores), AMD's CDNA2-4 whitepapers (Matrix
# Cores, MFMA instructions), AMD's RDNA3/RDNA4 architecture briefs (AI Accelerators, WMMA
# instructions; the RDNA2 ISA has dot-product instructions but no matrix unit), Huawei's DaVinci
# AI Core (Cube Unit beside the Vector and Scalar units), Intel's Xe2 (XMX engines). A generic
# x86 descriptor has none recorded: AMX and VNNI depend on the CPU model.
MATRIX_UNITS: dict[str, str | None] = {
    "nvidia-turing": "Tensor Cores",
    "nvidia-ampere": "Tensor Cores",
    "nvidia-ada": "Tensor Cores",
    "nvidia-hopper": "Tensor Cores",
    "nvidia-blackwell": "Tensor Cores",
    "nvidia-blackwell-rtx": "Tensor Cores",
    "amd-cdna2": "Matrix Cores (MFMA)",
    "amd-cdna3": "Matrix Cores (MFMA)",
    "amd-cdna4": "Matrix Cores (MFMA)",
    "amd-rdna2": None,
    "amd-rdna3": "AI Accelerators (WMMA)",
    "amd-rdna4": "AI Accelerators (WMMA)",
    "huawei-davinci": "Cube Unit",
    "intel-xe2": "XMX engines",
    "x86": None,
}


def _chip_from_json(row: dict[str, Any]) -> Chip:
    fields = dict(row)
    fields["aliases"] = tuple(fields.get("aliases", ()))
    fields.setdefault("matrix_unit", MATRIX_UNITS.get(fields.get("family") or ""))
    return Chip(known=True, **fields)


@cache
def _registry() -> dict[str, Chip]:
    text = resources.files("platforms").joinpath("chips.json").read_text(encoding="utf-8")
    rows = json.loads(text)["chips"]
    return {chip.id: chip for chip in map(_chip_from_json, rows)}


def get_chip(chip_id: str) -> Chip:
    """The known chip with this exact id; KeyError naming the known ids otherwise."""
    try:
        return _registry()[chip_id]
    except KeyError:
        known = ", ".join(sorted(_registry()))
        raise KeyError(
            f"no chip with id {chip_id!r}; known ids: {known}. "
            "Use platforms.resolve(name) to map a device name to an id."
        ) from None


def all_chips() -> list[Chip]:
    """Every known chip, in registry order."""
    return list(_registry().values())


def chips_in_family(family: str) -> list[Chip]:
    """Known chips of one architecture family (e.g. "nvidia-hopper"); empty if none."""
    return [chip for chip in _registry().values() if chip.family == family]


def all_families() -> list[str]:
    """Architecture family ids that at least one known chip belongs to, sorted."""
    return sorted({chip.family for chip in _registry().values() if chip.family})
