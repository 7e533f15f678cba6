"""Tests of the concept map and of hint translation (rendering: test_platforms_rendering)."""

from __future__ import annotations

import pytest

from tunemem.platforms import BACKENDS, translate_params
from tunemem.platforms.concepts import CONCEPTS, concept_table, get_concept


def test_concept_map_covers_every_backend() -> None:
    assert len(CONCEPTS) >= 12
    ids = {c.id for c in CONCEPTS}
    assert {"shared_memory", "warp", "matrix_unit", "compute_unit", "async_copy"} <= ids
    for concept in CONCEPTS:
        assert set(concept.terms) <= set(BACKENDS)
    for row in concept_table():
        assert row["cuda"] or row["concept"] in {"compiler"}


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


def test_rendering_concepts_have_noun_counterparts() -> None:
    """A concept whose nouns render must give every backend a noun, or say what it lacks."""
    for concept in CONCEPTS:
        if not concept.renders:
            continue
        for backend in BACKENDS:
            term = concept.preferred(backend)
            assert (term is not None and not term.api) or backend in concept.absent, (
                concept.id,
                backend,
            )


def test_api_names_are_exact_and_warps_do_not_render() -> None:
    for concept in CONCEPTS:
        for terms in concept.terms.values():
            assert all(t.exact for t in terms if t.api), concept.id
    assert not get_concept("warp").renders and not get_concept("num_warps").renders
    with pytest.raises(KeyError, match="valid concepts"):
        get_concept("warp_size")
