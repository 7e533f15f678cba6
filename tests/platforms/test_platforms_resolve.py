"""Tests of device-name resolution: the spellings tools report, near misses, unknown names."""

from __future__ import annotations

import pytest

from tunemem.platforms import UnknownChipError, resolve
from tunemem.platforms.resolve import backend_of, family_of

SPELLINGS = {
    "NVIDIA A100-PCIE-40GB": "a100",
    "NVIDIA A100-SXM4-80GB": "a100",
    "NVIDIA_A100_80GB_PCIe": "a100",
    "A100": "a100",
    "a100": "a100",
    "NVIDIA_H100_80GB_HBM3": "h100",
    "NVIDIA H100 80GB HBM3": "h100",
    "NVIDIA_H100_PCIe": "h100-pcie",
    "AMD Instinct MI250X": "mi250x",
    "MI250X": "mi250x",
    "MI250": "mi250",
    "AMD Instinct MI250X/MI250": "mi250",
    "H100_Modal": "h100",
    "A100_modal": "a100",
    "L40S_modal": "l40s",
    "AMD_Instinct_MI300X": "mi300x",
    "AMD_Instinct_MI325_OAM": "mi325x",
    "Intel(R)_Arc(TM)_Pro_B70_Graphics": "arc-pro-b70",
    "AMD Radeon PRO W6600": "w6600",
    "NVIDIA RTX A4000": "a4000",
    "gfx90a": "mi250x",
    "gfx942": "mi300x",
    "Ascend910B": "ascend-910b",
    "Ascend 910B2": "ascend-910b",
    "NVIDIA H20-3e": "h20-3e",
    "h20-3e": "h20-3e",
    "Tesla T4": "t4",
    "NVIDIA GeForce RTX 4090": "rtx-4090",
    "x86": "x86-cpu",
}


@pytest.mark.parametrize(("name", "chip_id"), sorted(SPELLINGS.items()))
def test_resolves_spelling(name: str, chip_id: str) -> None:
    assert resolve(name).id == chip_id


@pytest.mark.parametrize(
    ("name", "expected", "wrong"),
    [
        ("H100", "h100", "h10"),
        ("A10G", "a10g", "a100"),
        ("NVIDIA A10", "a10", "a100"),
        ("H20", "h20", "h200"),
        ("NVIDIA_H20", "h20", "h200"),
        ("L4", "l4", "l40s"),
        ("NVIDIA L20", "l20", "l20y"),
        ("MI300X", "mi300x", "mi308x"),
    ],
)
def test_never_a_wrong_chip(name: str, expected: str, wrong: str) -> None:
    chip = resolve(name)
    assert chip.id == expected and chip.id != wrong


@pytest.mark.parametrize("name", ["H10", "NVIDIA H10", "A1000X", "NVIDIA_H100X"])
def test_near_miss_is_not_resolved_to_a_neighbour(name: str) -> None:
    try:
        chip = resolve(name)
    except UnknownChipError:
        return
    assert not chip.known


@pytest.mark.parametrize(
    ("name", "backend"),
    [
        ("NVIDIA Quantum Widget 9000", "cuda"),
        ("GeForce GTX 1099", "cuda"),
        ("AMD Instinct MI999", "hip"),
        ("gfx1100", "hip"),
        ("Huawei Ascend 950", "ascend"),
        ("Intel Arc A799 Graphics", "xpu"),
        ("Intel(R) Xeon(R) Platinum 8480+", "cpu"),
        ("AMD EPYC 9654", "cpu"),
    ],
)
def test_unknown_names_infer_backend(name: str, backend: str) -> None:
    chip = resolve(name)
    assert not chip.known
    assert chip.id.startswith("unknown:")
    assert chip.family is None
    assert chip.backend == backend


def test_unknown_slug_is_stable() -> None:
    assert resolve("NVIDIA Quantum Widget 9000").id == "unknown:nvidia-quantum-widget-9000"


def test_unknown_name_without_vendor_needs_backend() -> None:
    with pytest.raises(UnknownChipError, match="--backend") as refused:
        resolve("Frobnicator 3")
    assert "did you mean" not in str(refused.value)  # nothing near: no guess
    assert issubclass(UnknownChipError, ValueError)
    chip = resolve("Frobnicator 3", backend="cpu")
    assert (chip.known, chip.backend) == (False, "cpu")


def test_backend_argument_is_checked() -> None:
    assert resolve("A100", backend="cuda").id == "a100"
    with pytest.raises(ValueError, match="not a hip device"):
        resolve("A100", backend="hip")
    with pytest.raises(ValueError, match="valid backends"):
        resolve("A100", backend="opencl")


def test_family_and_backend_helpers() -> None:
    assert family_of("NVIDIA H200") == "nvidia-hopper"
    assert backend_of("MI250X") == "hip"
    assert family_of(resolve("AMD Instinct MI999")) is None


@pytest.mark.parametrize(
    ("typo", "meant"),
    # A1OO / H2OO: letters typed for the digits they look like (issue 39, first hour).
    [("H2000", "h200"), ("h20O", "h20"), ("A1OO", "a100"), ("H2OO", "h200")],
)
def test_a_typo_without_a_vendor_is_refused_with_the_names_it_may_mean(typo, meant) -> None:
    """A typo that names a vendor is served with "did you mean" in its warning; one that names
    none was refused without it, advising `backend=` where the CLI flag is --backend (issue
    31): the refusal now names the near chips and the backend as each door takes it."""
    with pytest.raises(UnknownChipError) as refused:
        resolve(typo)
    text = str(refused.value)
    assert "did you mean" in text and meant in text.split("did you mean", 1)[1]
    assert "--backend" in text and "backend=" not in text


@pytest.mark.parametrize(("typo", "first"), [("A1OO", "a100"), ("a10O", "a100"), ("H1OO", "h100")])
def test_letters_that_look_like_digits_offer_the_chip_first(typo, first) -> None:
    from tunemem.platforms.resolve import close_chips

    assert close_chips(typo)[0] == first
