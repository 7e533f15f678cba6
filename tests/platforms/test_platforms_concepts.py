"""Tests of the concept map: rendering lessons across backends and translating hints."""

from __future__ import annotations

import pytest

from platforms import BACKENDS, render, translate_params
from platforms.concepts import CONCEPTS, concept_table

LESSON = (
    "Stage the tiles in shared memory and sync with __syncthreads(); "
    "tensor cores need 16-wide tiles; keep one warp per SM row."
)


def test_concept_map_covers_every_backend() -> None:
    assert len(CONCEPTS) >= 12
    ids = {c.id for c in CONCEPTS}
    assert {"shared_memory", "warp", "matrix_unit", "compute_unit", "async_copy"} <= ids
    for concept in CONCEPTS:
        assert set(concept.terms) <= set(BACKENDS)
    for row in concept_table():
        assert row["cuda"] or row["concept"] in {"compiler"}


def test_same_backend_is_unchanged() -> None:
    rendered = render(LESSON, "cuda", "cuda")
    assert rendered.text == LESSON and rendered.substitutions == []


def test_cuda_to_hip() -> None:
    rendered = render(LESSON, "cuda", "hip")
    assert rendered.text == (
        "Stage the tiles in LDS and sync with __syncthreads(); "
        "matrix cores need 16-wide tiles; keep one wavefront per CU row."
    )
    assert ("shared memory", "LDS") in rendered.substitutions
    assert ("tensor cores", "matrix cores") in rendered.substitutions
    assert ("warp", "wavefront") in rendered.substitutions
    assert ("SM", "CU") in rendered.substitutions


def test_cuda_to_ascend() -> None:
    text = render("Use cp.async into shared memory; tensor cores do the GEMM.", "cuda", "ascend")
    assert text.text == (
        "Use MTE (memory transfer engine) into Unified Buffer (UB); Cube units do the GEMM."
    )


@pytest.mark.parametrize("target", ["hip", "ascend", "xpu"])
def test_round_trip_of_preferred_terms(target: str) -> None:
    there = render(LESSON, "cuda", target)
    back = render(there.text, target, "cuda")
    assert back.text == LESSON


def test_whole_words_only() -> None:
    text = "SMEM SMs SMALL warpspeed num_warps=4 SM-level"
    rendered = render(text, "cuda", "hip")
    assert rendered.text == "LDS CUs SMALL warpspeed num_warps=4 CU-level"


def test_case_is_preserved() -> None:
    assert render("Shared memory first.", "cuda", "hip").text == "LDS first."
    assert render("LDS first. LDS is small", "hip", "cuda").text == (
        "Shared memory first. Shared memory is small"
    )
    assert render("avoid SHARED MEMORY spills", "cuda", "xpu").text == (
        "avoid SHARED LOCAL MEMORY (SLM) spills"
    )


def test_warp_width_changes_only_where_stated() -> None:
    rendered = render("a warp of 32 threads; 32 elements per row", "cuda", "hip")
    assert rendered.text == "a wavefront of 64 threads; 32 elements per row"
    assert ("warp of 32", "warp of 64") in rendered.substitutions
    assert render("reduce over 32 threads", "cuda", "hip").text == "reduce over 64 threads"
    # RDNA runs HIP in wave32: the chip's width overrides the backend's.
    assert render("a warp of 32", "cuda", "hip", target_warp_size=32).text == ("a wavefront of 32")
    # Ascend has no fixed warp width, so the number is left alone.
    assert "32" in render("a warp of 32", "cuda", "ascend").text


def test_unknown_backend_rejected() -> None:
    with pytest.raises(ValueError, match="valid backends"):
        render("x", "cuda", "opencl")


def test_translate_params() -> None:
    cuda_hint = {"BLOCK_SIZE_M": 64, "num_warps": 4, "num_stages": 3, "maxnreg": 128}
    assert translate_params(cuda_hint, "cuda", "hip") == {
        "BLOCK_SIZE_M": 64,
        "num_warps": 4,
        "num_stages": 3,
    }
    amd_hint = {"BLOCK_SIZE_N": 128, "num_warps": 8, "waves_per_eu": 2, "kpack": 2}
    assert translate_params(amd_hint, "hip", "cuda") == {"BLOCK_SIZE_N": 128, "num_warps": 8}
    assert translate_params(amd_hint, "hip", "hip") == amd_hint
    assert translate_params(amd_hint, "hip", "hip") is not amd_hint
