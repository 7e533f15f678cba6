"""Tests of the chip registry: descriptor sanity, lookups, families and backends."""

from __future__ import annotations

import pytest

from tunemem.platforms import BACKENDS, Backend, Chip, all_chips, chips_in_family, get_chip
from tunemem.platforms.backends import get_backend
from tunemem.platforms.chips import VENDORS, all_families

REQUIRED_CHIPS = (
    "a100",
    "a4000",
    "mi250x",
    "w6600",
    "h100",
    "h200",
    "b200",
    "mi300x",
    "ascend-910b",
    "x86-cpu",
    "a10g",
    "l40s",
    "l4",
    "mi250",
    "t4",
    "h20",
    "h20-3e",
    "h800",
    "gb200",
    "mi325x",
    "mi355x",
    "r9700",
    "arc-pro-b70",
)


def test_every_known_chip_has_backend_family_and_source() -> None:
    for chip in all_chips():
        assert chip.known
        assert chip.backend in BACKENDS, chip.id
        assert chip.family, chip.id
        assert chip.vendor in VENDORS, chip.id
        assert len(chip.source) > 20, chip.id


def test_figures_are_positive_or_null() -> None:
    for chip in all_chips():
        for figure in (
            chip.compute_units,
            chip.onchip_mem_kb_per_unit,
            chip.mem_bandwidth_gbs,
            chip.peak_bf16_tflops,
            chip.peak_fp32_tflops,
            chip.warp_size,
        ):
            assert figure is None or figure > 0, chip.id
        if None in (chip.compute_units, chip.mem_bandwidth_gbs, chip.peak_bf16_tflops):
            assert "null" in chip.source, f"{chip.id} leaves a figure null without saying so"


@pytest.mark.parametrize("chip_id", REQUIRED_CHIPS)
def test_required_chips_present(chip_id: str) -> None:
    assert get_chip(chip_id).id == chip_id


def test_known_figures_match_datasheets() -> None:
    h100 = get_chip("h100")
    assert (h100.compute_units, h100.peak_bf16_tflops, h100.warp_size) == (132, 989, 32)
    mi250x = get_chip("mi250x")
    assert (mi250x.compute_units, mi250x.warp_size, mi250x.onchip_mem_kb_per_unit) == (220, 64, 64)


def test_get_chip_unknown_id_names_the_fix() -> None:
    with pytest.raises(KeyError, match="resolve"):
        get_chip("NVIDIA A100-PCIE-40GB")


def test_chip_is_frozen() -> None:
    chip = get_chip("a100")
    with pytest.raises(AttributeError):
        chip.id = "b100"  # type: ignore[misc]
    assert isinstance(chip, Chip)


def test_families() -> None:
    hopper = {c.id for c in chips_in_family("nvidia-hopper")}
    assert {"h100", "h200", "h800", "h20"} <= hopper
    assert "a100" not in hopper
    assert {"mi250", "mi250x", "mi210"} <= {c.id for c in chips_in_family("amd-cdna2")}
    assert "mi300x" not in {c.id for c in chips_in_family("amd-cdna2")}
    assert chips_in_family("no-such-family") == []
    assert "huawei-davinci" in all_families()


def test_family_never_spans_backends() -> None:
    for family in all_families():
        assert len({c.backend for c in chips_in_family(family)}) == 1, family


def test_backends() -> None:
    assert BACKENDS == ("cuda", "hip", "ascend", "xpu", "cpu")
    hip = get_backend("hip")
    assert isinstance(hip, Backend) and hip.warp_size == 64 and "HIP" in hip.language
    assert get_backend("cuda").warp_size == 32
    with pytest.raises(KeyError, match="valid backends"):
        get_backend("opencl")


def test_matrix_unit_by_architecture() -> None:
    assert get_chip("h200").matrix_unit == "Tensor Cores"
    assert get_chip("mi300x").matrix_unit == "Matrix Cores (MFMA)"
    assert get_chip("radeon-8060s").matrix_unit == "AI Accelerators (WMMA)"
    assert get_chip("ascend-910b").matrix_unit == "Cube Unit"
    # RDNA2 has no matrix unit; a generic CPU's depends on the part.
    assert get_chip("w6600").matrix_unit is None
    assert get_chip("x86-cpu").matrix_unit is None
    from tunemem.platforms.chips import MATRIX_UNITS

    assert {chip.family for chip in all_chips()} <= set(MATRIX_UNITS), "a family lacks an entry"
