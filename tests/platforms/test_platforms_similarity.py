"""Chip similarity from descriptors: hand-computed terms, symmetry, missing figures."""

from __future__ import annotations

import math

import pytest

from tunemem.platforms import get_chip
from tunemem.platforms.chips import Chip
from tunemem.platforms.similarity import WEIGHTS, chip_similarity, similarity_terms


def _chip(chip_id: str, **fields: object) -> Chip:
    base: dict[str, object] = {
        "name": chip_id,
        "vendor": "nvidia",
        "family": "nvidia-ampere",
        "backend": "cuda",
        "compute_units": 100,
        "onchip_mem_kb_per_unit": 100.0,
        "mem_bandwidth_gbs": 1000.0,
        "peak_fp32_tflops": 20.0,
        "warp_size": 32,
    }
    base.update(fields)
    return Chip(id=chip_id, **base)  # type: ignore[arg-type]


def test_terms_by_hand() -> None:
    a = _chip("a")
    b = _chip("b", compute_units=50, mem_bandwidth_gbs=1000.0 * math.e, family="nvidia-turing")
    terms = similarity_terms(a, b)
    assert terms["backend"] == 0.0 and terms["warp_size"] == 0.0
    assert terms["family"] == pytest.approx(1.0)
    assert terms["compute_units"] == pytest.approx(0.5 * math.log(2))
    assert terms["bandwidth"] == pytest.approx(0.5)  # a factor of e, weight 0.5
    assert terms["onchip_mem"] == 0.0 and terms["fp32"] == 0.0
    assert chip_similarity(a, b) == pytest.approx(math.exp(-(1.0 + 0.5 * math.log(2) + 0.5)))
    assert chip_similarity(a, b) == pytest.approx(chip_similarity(b, a))


def test_same_chip_is_one_and_other_backend_costs_its_weight() -> None:
    a = _chip("a")
    assert chip_similarity(a, a) == 1.0
    hip = _chip("h", backend="hip", vendor="amd", family="amd-cdna2", warp_size=64)
    expected = WEIGHTS["backend"] + WEIGHTS["family"] + WEIGHTS["warp_size"]
    assert chip_similarity(a, hip) == pytest.approx(math.exp(-expected))


def test_missing_figure_contributes_nothing() -> None:
    a = _chip("a")
    b = _chip("b", peak_fp32_tflops=None, compute_units=200)
    assert "fp32" not in similarity_terms(a, b)
    assert chip_similarity(a, b) == pytest.approx(math.exp(-0.5 * math.log(2)))


def test_registry_chips_order_as_expected() -> None:
    """Same-die Turing cards are more alike than Turing and Ampere cards."""
    assert chip_similarity("titan-rtx", "rtx-2080-ti") > chip_similarity("titan-rtx", "rtx-3090")
    assert chip_similarity("a100", "a4000") > chip_similarity("a100", "mi250x")
    assert chip_similarity(get_chip("a100"), "NVIDIA A100-PCIE-40GB") == 1.0
